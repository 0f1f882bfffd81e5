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


@contextmanager
def ctrl_c_interrupts() -> Iterator[None]:
    """Within the block, Ctrl-C (SIGINT) raises KeyboardInterrupt, as in a process started the
    usual way; the handler is restored after.

    A process started with SIGINT ignored (``thirtyone ... &`` from a script or a CI job: a
    shell without job control starts background commands so) keeps it ignored, and then
    ``asyncio.Runner``, which turns Ctrl-C into a cancellation of its main task only when it
    finds Python's own handler in place, installs nothing: the signal is dropped and the run
    plays on. A command that asks for Ctrl-C to stop it puts the handler back first.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def exit_code(e: KeyboardInterrupt) -> int:
    """The exit status for a stop: 130 for Ctrl-C, 143 for SIGTERM."""
    return e.code if isinstance(e, Stopped) else 130
