"""Waiting for an event in a test: one helper, so that every wait has a generous overall
deadline and a message that names what was awaited, and none is a fixed sleep.

A busy machine (CI right after a session, other work beside the tests) makes every event
late, never early: a test waits for the event itself (a socket exists, a line is printed, a
process is gone) and fails only when it has not come long after it should have.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: The overall deadline of a wait unless a test says otherwise: far beyond what any event
#: takes on a quiet machine, so that only an event that never comes fails the test (a wait
#: that passes costs only the event's own time; a long deadline costs only a failing test).
DEFAULT_TIMEOUT_S = 120.0
#: How often the condition is asked unless a test says otherwise.
DEFAULT_INTERVAL_S = 0.05


class _Wait:
    """One wait's bookkeeping, shared by :func:`poll_until` and :func:`poll_until_async`."""

    def __init__(
        self, what: str, timeout_s: float, while_: Callable[[], object] | None, detail: Callable[[], object] | None
    ) -> None:
        self.what, self.timeout_s, self.while_, self.detail = what, timeout_s, while_, detail
        self.deadline = time.monotonic() + timeout_s
        self.last: object = None

    def going(self) -> bool:
        return self.while_ is None or bool(self.while_())

    def failure(self, going: bool) -> AssertionError:
        why = f"waited {self.timeout_s:g} s" if going else "and what should have brought it has ended"
        text = f"timed out waiting for {self.what} ({why}; last seen: {self.last!r})"
        if self.detail is not None:
            text += f"; {self.detail()}"
        return AssertionError(text)

    def check(self, value: object, going: bool) -> bool:
        """Whether the wait is over with ``value``; raises once it cannot end well."""
        self.last = value
        if value:
            return True
        if not going or time.monotonic() > self.deadline:
            raise self.failure(going)
        return False


def poll_until(
    what: str,
    condition: Callable[[], T],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
    while_: Callable[[], object] | None = None,
    detail: Callable[[], object] | None = None,
) -> T:
    """Call ``condition`` until it returns something true, and return that.

    ``what`` names the awaited event as in "waiting for ``what``" ("the service to answer",
    "every bot to be gone"). Raises :class:`AssertionError` naming it, with the condition's
    last value and ``detail()`` if given (called only on failure), when ``timeout_s`` passes
    first, or, with ``while_``, as soon as ``while_()`` is false (the process that should
    bring the event has ended: waiting longer cannot help). ``condition`` is always asked once
    more after ``while_`` turns false, so that an event that came just before the end counts.
    """
    wait = _Wait(what, timeout_s, while_, detail)
    while True:
        going = wait.going()
        value = condition()
        if wait.check(value, going):
            return value
        time.sleep(interval_s)


async def poll_until_async(
    what: str,
    condition: Callable[[], T],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
    while_: Callable[[], object] | None = None,
    detail: Callable[[], object] | None = None,
) -> T:
    """:func:`poll_until` inside a running event loop: the loop goes on between the asks
    (the event may be what the loop itself brings about)."""
    wait = _Wait(what, timeout_s, while_, detail)
    while True:
        going = wait.going()
        value = condition()
        if wait.check(value, going):
            return value
        await asyncio.sleep(interval_s)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie runs nothing, so it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    # The state follows the command name, which is in parentheses and may hold spaces.
    return stat[stat.rindex(")") + 2] not in "ZX"


def wait_gone(pids: Iterable[int], timeout_s: float = DEFAULT_TIMEOUT_S) -> list[int]:
    """Wait until every pid is gone; return those still alive at the timeout (so that a test
    asserts ``wait_gone(pids) == []`` and its failure names them)."""
    pids = list(pids)
    with suppress(AssertionError):
        poll_until("every process to be gone", lambda: not [p for p in pids if alive(p)], timeout_s=timeout_s)
    return [p for p in pids if alive(p)]


def wait_for_path(path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S, while_: Callable[[], object] | None = None) -> Path:
    """Wait until ``path`` exists (a socket a bot binds, a file a process writes)."""
    poll_until(f"{path} to appear", path.exists, timeout_s=timeout_s, while_=while_)
    return path
