"""The sandbox's probe: tried once per process, however many bots start at once.

These run the real probe (bubblewrap where it is installed, its absence where it is not): what
is checked is how often it is tried, not what it finds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from referee.bots import sandbox
from referee.bots.sandbox import SandboxStatus, probe


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SandboxStatus]]:
    """Every real try of the sandbox, in order; the probe starts afresh and is reset after."""
    tries: list[SandboxStatus] = []
    real = sandbox._try_sandbox

    def counting() -> SandboxStatus:
        status = real()
        tries.append(status)
        return status

    monkeypatch.setattr(sandbox, "_try_sandbox", counting)
    probe.cache_clear()
    yield tries
    probe.cache_clear()


def test_bots_starting_together_try_the_sandbox_once(counted: list[SandboxStatus]) -> None:
    # A worker starts a match's three bots at once, each asking from its own thread.
    n = 4
    together = threading.Barrier(n)
    got: list[SandboxStatus] = []

    def ask() -> None:
        together.wait()
        got.append(probe())

    threads = [threading.Thread(target=ask) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(counted) == 1
    assert len(got) == n and all(g is counted[0] for g in got)
    assert probe() is counted[0] and len(counted) == 1


def test_a_worker_takes_the_result_its_parent_found(counted: list[SandboxStatus]) -> None:
    found = SandboxStatus(False, "found by the parent", None, "", False, "")
    assert probe.known() is None
    probe.adopt(found)
    assert probe() is found and probe.known() is found
    assert counted == []
    # A result already known is kept: the parent's is only a stand-in for trying.
    probe.adopt(SandboxStatus(True, "", "/usr/bin/bwrap", "", False, ""))
    assert probe() is found


def test_forgetting_the_result_tries_again(counted: list[SandboxStatus]) -> None:
    first = probe()
    probe.cache_clear()
    second = probe()
    assert len(counted) == 2 and counted == [first, second]
