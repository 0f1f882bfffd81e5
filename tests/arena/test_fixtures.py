"""The arena fixture itself: a served arena leaves no process behind, whether its start
fails or its server dies first and leaves its children (the ladder, workers, bots) orphaned.
Real ``arena serve`` processes."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable

import pytest

import tests.arena.conftest as conftest
from tests.arena.conftest import Arena, descendants
from tests.polling import wait_gone

pytestmark = pytest.mark.timeout(900)


def test_a_server_killed_alone_leaves_children_that_the_arena_still_kills(arena_factory: Callable[..., Arena]) -> None:
    a = arena_factory()
    a.serve("-j", "2")
    assert a.proc is not None
    below = descendants(a.proc.pid)
    assert below, "the service started no process (its ladder's workers)"
    # The server alone dies (as a crash would): what it started is orphaned, not gone.
    os.kill(a.proc.pid, signal.SIGKILL)
    a.proc.wait(timeout=60)
    left = a.started()
    # (What the fixture once missed: it stopped only a server that still ran.)
    assert left, "nothing outlived the server: this test shows nothing"
    a.kill()
    assert a.proc is None
    assert wait_gone(below | left, timeout_s=120) == []


def test_a_service_that_cannot_start_fails_with_its_output_and_leaves_nothing(
    arena_factory: Callable[..., Arena], monkeypatch: pytest.MonkeyPatch
) -> None:
    a = arena_factory()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(conftest, "free_port", lambda: port)
        seen: list[int] = []
        started = a.started

        def watched() -> set[int]:
            now = started()
            seen.extend(now)
            return now

        monkeypatch.setattr(a, "started", watched)
        with pytest.raises(AssertionError, match="arena serve exited") as e:
            a.serve()
    assert "address already in use" in str(e.value).lower() or "error" in str(e.value).lower(), e.value
    assert a.proc is None
    assert wait_gone(seen, timeout_s=120) == []
