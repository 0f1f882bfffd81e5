"""The tests' one waiting helper: it returns what the condition found, and a wait that cannot
end well fails naming what was awaited and what was last seen."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.polling import poll_until, poll_until_async


def test_returns_the_first_true_value() -> None:
    counter = itertools.count()
    assert poll_until("the third ask", lambda: max(0, next(counter) - 1), interval_s=0) == 1


def test_a_timeout_names_what_was_awaited_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"waiting for the answer \(waited 0 s; last seen: \[\]\); it is late"):
        poll_until("the answer", list, timeout_s=0, detail=lambda: "it is late")


def test_an_ended_source_stops_the_wait_at_once_after_one_last_ask() -> None:
    asks: list[int] = []
    with pytest.raises(AssertionError, match="what should have brought it has ended"):
        poll_until("the event", lambda: asks.append(1), timeout_s=600, while_=lambda: False)
    assert len(asks) == 1
    # An event that came just before the end counts.
    assert poll_until("the event", lambda: "came", timeout_s=600, while_=lambda: False) == "came"


def test_the_async_wait_lets_the_loop_bring_the_event() -> None:
    async def go() -> str:
        box: list[str] = []
        asyncio.get_running_loop().call_later(0.01, box.append, "done")
        return await poll_until_async("the callback", lambda: box and box[0], timeout_s=600, interval_s=0.001)

    assert asyncio.run(go()) == "done"
    with pytest.raises(AssertionError, match="waiting for nothing"):
        asyncio.run(poll_until_async("nothing", lambda: None, timeout_s=0))
