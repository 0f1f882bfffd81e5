"""Ctrl-C and SIGTERM stop a long run cleanly: the commands that play many matches share this."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class Stopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a run; ``code`` is the exit status it asks for (128 + signal)."""

    def __init__(self, code: int) -> None:
        super().__init__()
        self.code = code


def _interrupt(signum: int, frame: object) -> None:
    # One stop is enough: a second Ctrl-C while the workers are being stopped must not
    # break that cleanup with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Stopped(128 + signum)


@contextmanager
def signals_stop() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Stopped`; the handlers are restored after."""
    previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def exit_code(e: KeyboardInterrupt) -> int:
    """The exit status for a stop: 130 for Ctrl-C, 143 for SIGTERM."""
    return e.code if isinstance(e, Stopped) else 130
