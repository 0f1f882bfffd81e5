"""A version's failures to start are counted in the store: a ladder that restarts does not
forgive them. Real ladder runs (in this process), real bot processes, real SQLite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from referee.ladder.accounts import add_user
from referee.ladder.loop import Ladder
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, create
from referee.ladder.uploads import accept_upload
from referee.tournament.settings import TournamentSettings
from referee.tournament.tasks import TaskResult
from tests.arena.conftest import SAMPLES, run_ladder_until

pytestmark = pytest.mark.timeout(600)

#: A bot that dies before it serves anything.
BROKEN = b"import sys\nsys.exit(3)\n"


def _run_until(folder: Path, done: Callable[[ArenaStore], bool]) -> None:
    """Run the ladder until ``done`` says so (asked of a store of its own), then stop it."""

    def check() -> bool:
        with ArenaStore.open(folder, readonly=True) as s:
            return done(s)

    run_ladder_until(Ladder(folder, 1), "the ladder to get there", check)


class _StopAtAFailure(Ladder):
    """A ladder that asks itself to stop as soon as it has stored a failure to start: a
    watcher polling the store from outside may see several (a bot that dies at once fails
    fast), and the first run must end before the version is disqualified."""

    def _result(self, store: ArenaStore, r: TaskResult) -> None:
        super()._result(store, r)
        if r.start_failures:
            self.stopping.set()


def _failures(store: ArenaStore, vid: int) -> int:
    return int(store._one("SELECT start_failures FROM versions WHERE id = ?", (vid,))[0])


def _stopped_with_a_failure(folder: Path, vid: int) -> bool:
    with ArenaStore.open(folder, readonly=True) as s:
        return _failures(s, vid) >= 1


def test_start_failures_survive_a_restart_of_the_ladder(tmp_path: Path) -> None:
    most = 4
    folder = tmp_path / "arena"
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off", max_start_failures=most)))
    with ArenaStore.open(folder) as store:
        # Two owners: one owner's versions never share a table (the arena's default).
        user, _ = add_user(store, "alice")
        good = accept_upload(store, user, "greedy.py", (SAMPLES / "greedy.py").read_bytes())
        bad = accept_upload(store, add_user(store, "bob")[0], "broken.py", BROKEN)
        for v in (good, bad):
            store.set_status(v.id, "active")
    run_ladder_until(_StopAtAFailure(folder, 1), "the first failure to start", lambda: _stopped_with_a_failure(folder, bad.id))
    with ArenaStore.open(folder) as store:
        before = _failures(store, bad.id)
        assert 1 <= before < most and store.version(bad.id).status == "active", before
    # After the restart the ladder goes on counting from the stored count.
    _run_until(folder, lambda s: s.version(bad.id).status == "disqualified")
    with ArenaStore.open(folder) as store:
        v = store.version(bad.id)
        assert f"failed to start {most} times in a row" in v.reason, v.reason
        assert _failures(store, bad.id) == most
        assert store.version(good.id).status == "active" and _failures(store, good.id) == 0
