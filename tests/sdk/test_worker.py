"""The bot's worker thread (sdk.server.CallWorker): a call that returns at once is taken
straight from the thread, a slower one is awaited with the event loop free, and either way
the result or the exception comes back, in order, from a thread that is not the loop's."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

from sdk.server import QUICK_WAIT_S, CallWorker

#: Room for a thread to be scheduled on a machine that is busy: the tests wait for events,
#: and this bounds only how long a broken hand-over may hang before the test fails.
ROOM_S = 60.0


def test_a_quick_call_comes_back_from_the_bots_thread() -> None:
    async def main() -> tuple[str, str]:
        worker = CallWorker("bot", None)
        try:
            return await worker.call(lambda: threading.current_thread().name), threading.current_thread().name
        finally:
            worker.close()

    on_worker, on_loop = asyncio.run(main())
    assert on_worker == "bot" and on_loop != "bot"


def test_a_slow_call_leaves_the_loop_free_while_it_runs() -> None:
    # The call waits until the loop itself lets it go: were the loop blocked for the whole
    # call, the call would wait until ROOM_S and say so.
    async def main() -> str:
        worker = CallWorker("bot", None)
        go = threading.Event()

        def slow() -> str:
            return "released by the loop" if go.wait(ROOM_S) else "the loop was blocked"

        try:
            task = asyncio.create_task(worker.call(slow))
            await asyncio.sleep(QUICK_WAIT_S * 5)  # past the quick wait: the call is awaited
            go.set()
            return await asyncio.wait_for(task, ROOM_S)
        finally:
            worker.close()

    assert asyncio.run(main()) == "released by the loop"


def test_exceptions_come_back_on_either_path() -> None:
    async def main() -> None:
        worker = CallWorker("bot", None)
        go = threading.Event()

        def quick() -> None:
            raise ValueError("at once")

        def slow() -> None:
            go.wait(ROOM_S)
            raise KeyError("after a while")

        try:
            with pytest.raises(ValueError, match="at once"):
                await worker.call(quick)
            task = asyncio.create_task(worker.call(slow))
            await asyncio.sleep(QUICK_WAIT_S * 5)
            go.set()
            with pytest.raises(KeyError, match="after a while"):
                await asyncio.wait_for(task, ROOM_S)
        finally:
            worker.close()

    asyncio.run(main())


def test_calls_ending_around_the_quick_wait_all_come_back_in_order() -> None:
    # Calls that end just before, at, or just after the quick wait runs out: the outcome is
    # handed over exactly once whichever side gets there first (none lost, none twice).
    rng = random.Random(5)
    pauses = [rng.uniform(0, 2 * QUICK_WAIT_S) for _ in range(150)]
    ran: list[int] = []

    def call(i: int) -> int:
        time.sleep(pauses[i])
        ran.append(i)
        return i * 7

    async def main() -> list[int]:
        worker = CallWorker("bot", None)
        try:
            return [await asyncio.wait_for(worker.call(lambda i=i: call(i)), ROOM_S) for i in range(len(pauses))]
        finally:
            worker.close()

    assert asyncio.run(main()) == [i * 7 for i in range(len(pauses))]
    assert ran == list(range(len(pauses)))


def test_a_call_cancelled_while_awaited_leaves_the_worker_usable() -> None:
    # A stream cancelled (the referee gone) while its bot thinks: the late outcome is dropped
    # and the next call is answered.
    async def main() -> int:
        worker = CallWorker("bot", None)
        go = threading.Event()
        try:
            task = asyncio.create_task(worker.call(lambda: go.wait(ROOM_S)))
            await asyncio.sleep(QUICK_WAIT_S * 5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            go.set()
            return await asyncio.wait_for(worker.call(lambda: 2), ROOM_S)
        finally:
            worker.close()

    assert asyncio.run(main()) == 2


def test_after_a_slow_call_the_next_is_awaited_until_one_is_quick_again() -> None:
    # A bot that thinks (Monte Carlo) is not waited for, blocked, on every decision: only
    # while its calls come back quickly.
    async def main() -> list[bool]:
        worker = CallWorker("bot", None)
        go = threading.Event()
        seen = [worker._quick]
        try:
            task = asyncio.create_task(worker.call(lambda: go.wait(ROOM_S)))
            await asyncio.sleep(QUICK_WAIT_S * 5)
            go.set()
            assert await asyncio.wait_for(task, ROOM_S)
            seen.append(worker._quick)
            # A call that returns at once (tried again should the machine pause the thread
            # in it): blocked waits again.
            for _ in range(100):
                assert await asyncio.wait_for(worker.call(lambda: 3), ROOM_S) == 3
                if worker._quick:
                    break
            seen.append(worker._quick)
            return seen
        finally:
            worker.close()

    assert asyncio.run(main()) == [True, False, True]
