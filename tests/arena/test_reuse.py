"""The ladder plays every rotation of a table on the worker that started its bots: the pool
hands a free worker a new table rather than the next rotation of a table another worker is
at. Real ladder runs (in this process, two workers), real bot processes, real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.ladder.accounts import add_user
from referee.ladder.loop import Ladder
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, create
from referee.ladder.uploads import accept_upload
from referee.tournament.runner import TaskResult
from referee.tournament.settings import TournamentSettings
from tests.arena.conftest import SAMPLES, run_ladder_until

pytestmark = pytest.mark.timeout(600)


class _Watched(Ladder):
    """A ladder that notes each result's start-up time, as its worker reported it."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.startup: dict[str, float] = {}

    def _result(self, store: ArenaStore, r: TaskResult) -> None:
        if r.ok and not r.retrying:
            self.startup[r.key] = r.startup_s
        super()._result(store, r)


def test_every_rotation_of_a_table_is_played_where_its_bots_run(tmp_path: Path) -> None:
    folder = tmp_path / "arena"
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off")))
    with ArenaStore.open(folder) as store:
        user, _ = add_user(store, "alice")
        for i, name in enumerate(["greedy", "random", "threshold", "greedy"]):
            v = accept_upload(store, user, f"{name}{i}.py", (SAMPLES / f"{name}.py").read_bytes())
            store.set_status(v.id, "active")
    ladder = _Watched(folder, 2, seed=5)
    want = 12  # six tables of two rotations

    run_ladder_until(ladder, "the ladder to play 12 matches", lambda: len(ladder.startup) >= want)
    second = {k: s for k, s in ladder.startup.items() if k.endswith("-r1")}
    assert len(second) >= want // 2 - 2, ladder.startup
    # The second rotation of every table found its bots running: started once per table.
    assert all(s == 0.0 for s in second.values()), second
