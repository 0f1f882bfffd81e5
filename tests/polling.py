"""Waiting for an event in a test: one helper, so that every wait has a generous overall
deadline and a message that says what never happened, and none is a fixed sleep.

A busy machine (CI right after a session, other work beside the tests) makes every event
late, never early: a test waits for the event itself (a socket exists, a line is printed, a
process is gone) and fails only when it has not come long after it should have.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: The overall deadline of a wait unless a test says otherwise: far beyond what any event
#: takes on a quiet machine, so that only an event that never comes fails the test.
DEFAULT_TIMEOUT_S = 30.0


def poll_until(
    condition: Callable[[], T],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.05,
    message: str | Callable[[], str] = "the condition never held",
    while_: Callable[[], object] | None = None,
) -> T:
    """Call ``condition`` until it returns something true, and return that.

    Raises :class:`AssertionError` with ``message`` (a text, or a function giving one, called
    only on failure) when ``timeout_s`` passes first, or, with ``while_``, as soon as
    ``while_()`` is false (the process that should bring the event has ended: waiting longer
    cannot help). ``condition`` is always tried once more after ``while_`` turns false, so
    that an event that came just before the end counts.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        going = while_ is None or bool(while_())
        value = condition()
        if value:
            return value
        if not going:
            text = message() if callable(message) else message
            raise AssertionError(f"{text} (and what should have brought it has ended)")
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"{text} (waited {timeout_s:g} s)")
        time.sleep(interval_s)


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
        poll_until(lambda: not [p for p in pids if alive(p)], timeout_s=timeout_s)
    return [p for p in pids if alive(p)]


def wait_for_path(path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S, while_: Callable[[], object] | None = None) -> Path:
    """Wait until ``path`` exists (a socket a bot binds, a file a process writes)."""
    poll_until(path.exists, timeout_s=timeout_s, message=f"{path} never appeared", while_=while_)
    return path
