"""``signals_deferred`` holds SIGINT and SIGTERM back for the commit of a result, even when
the kernel gives the signal to another thread (Python still runs the handler in the main
thread), and delivers it once the block is over."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from referee.tournament.runner import signals_deferred


class _Stop(Exception):
    """What the test's SIGTERM handler raises."""


@pytest.fixture
def sigterm_raises() -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise _Stop(signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


class _Sender:
    """A thread started before the block, as the ladder's validation thread is (a thread
    started inside it would inherit the main thread's mask), that sends SIGTERM to the
    process when told: having SIGTERM unblocked, it may be the thread the kernel gives it
    to, the case a mask in the main thread alone does not cover."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.sent = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.go.wait()
        os.kill(os.getpid(), signal.SIGTERM)
        self.sent.set()

    def send(self) -> None:
        self.go.set()
        self.sent.wait()
        self.thread.join()


def test_a_signal_that_comes_in_the_block_is_delivered_after_it(sigterm_raises: None) -> None:
    steps: list[str] = []
    sender = _Sender()
    with pytest.raises(_Stop), signals_deferred():
        sender.send()
        steps.append("after the signal")
        # Many bytecode boundaries, each a point where a pending handler would run.
        steps.extend(str(i) for i in range(10_000))
        steps.append("end of the block")
    assert steps[0] == "after the signal" and steps[-1] == "end of the block"


def test_the_handlers_are_put_back_when_nothing_came(sigterm_raises: None) -> None:
    mine = signal.getsignal(signal.SIGTERM)
    sender = _Sender()
    with signals_deferred():
        pass
    assert signal.getsignal(signal.SIGTERM) is mine
    with pytest.raises(_Stop):
        sender.send()
        for _ in range(10_000):
            pass


def test_a_worker_thread_neither_defers_nor_swaps_handlers(sigterm_raises: None) -> None:
    seen: list[object] = []

    def work() -> None:
        with signals_deferred():
            seen.append(signal.getsignal(signal.SIGTERM))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [signal.getsignal(signal.SIGTERM)]
