"""A pool whose workers are slow to come up, as on a machine loaded many times over its cores:
each worker's interpreter waits before it runs the real worker. In a module of its own, which
a spawned worker can import without the tests' fixtures."""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection
from typing import Any

from referee.tournament import pool, worker


def _late_worker(conn: Connection, parent: int, delay_s: float) -> None:
    time.sleep(delay_s)  # the boot being simulated: nothing is said until the worker is up
    worker.worker_main(conn, parent)


class SlowBootPool(pool.LocalPool):
    """A :class:`LocalPool` whose every worker takes ``boot_s`` before it starts."""

    def __init__(self, jobs: int, *, boot_s: float, **kw: Any) -> None:
        super().__init__(jobs, **kw)
        self.boot_s = boot_s

    def _spawn(self, ctx: Any) -> Any:
        mine, theirs = ctx.Pipe(duplex=True)
        p = ctx.Process(target=_late_worker, args=(theirs, os.getpid(), self.boot_s), daemon=False)
        p.start()
        theirs.close()
        return pool.Slot(p, mine)
