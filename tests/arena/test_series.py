"""The ladder's series: one choice of versions for several tables in a row, their matches fed
rotation by rotation. The ladder's own feed on a real store, with no bot started (a feed only
builds tasks); tests/arena/test_reuse.py plays series with real processes."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from referee.ladder.accounts import add_user
from referee.ladder.loop import Ladder
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, create
from referee.ladder.uploads import accept_upload
from referee.tournament.settings import TournamentSettings
from referee.tournament.tasks import MatchTask


def _arena(tmp_path: Path, versions: int = 3, **settings: int) -> tuple[Ladder, ArenaStore]:
    folder = tmp_path / "arena"
    # One user's versions, so that owner may share a table (the arena's default forbids it).
    settings.setdefault("same_owner_tables", 1)
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off"), **settings))
    store = ArenaStore.open(folder)
    user, _ = add_user(store, "alice")
    for i in range(versions):
        v = accept_upload(store, user, f"bot{i}.py", b"print('hi')\n")
        store.set_status(v.id, "active")
    return Ladder(folder, 1, seed=3), store


def _keys(feed: Iterator[MatchTask], n: int) -> list[str]:
    return [t.match.key for t in itertools.islice(feed, n)]


def _seats(store: ArenaStore, table_id: int) -> list[int]:
    return sorted(store.matches_of_table(table_id)[0].seats)


def test_a_series_is_one_choice_of_versions_for_its_tables_fed_rotation_by_rotation(tmp_path: Path) -> None:
    ladder, store = _arena(tmp_path, placement_tables=0, series_tables=4)
    with store:
        feed = ladder._feed(store)
        assert _keys(feed, 8) == [f"0000000{t}-r{r}" for r in (0, 1) for t in (1, 2, 3, 4)]
        assert len({tuple(_seats(store, t)) for t in (1, 2, 3, 4)}) == 1
        assert store.counts()["tables"] == 4  # each table scheduled only when its first rotation was wanted
        assert _keys(feed, 1) == ["00000005-r0"]  # the series done: a new choice


def test_a_placement_table_stands_alone(tmp_path: Path) -> None:
    # New versions (no table yet): the first choices are placement tables, a series of one each.
    ladder, store = _arena(tmp_path, placement_tables=3, series_tables=4)
    with store:
        assert _keys(ladder._feed(store), 4) == ["00000001-r0", "00000001-r1", "00000002-r0", "00000002-r1"]
        assert [p for (p,) in store._all("SELECT placement FROM ladder_tables ORDER BY id")] == [1, 1]


def test_a_series_of_one_is_a_table_at_a_time(tmp_path: Path) -> None:
    ladder, store = _arena(tmp_path, placement_tables=0, series_tables=1)
    with store:
        assert _keys(ladder._feed(store), 4) == ["00000001-r0", "00000001-r1", "00000002-r0", "00000002-r1"]


def test_a_paused_ladder_schedules_no_more_tables_of_its_series(tmp_path: Path) -> None:
    ladder, store = _arena(tmp_path, placement_tables=0, series_tables=4)
    with store:
        feed = ladder._feed(store)
        assert _keys(feed, 2) == ["00000001-r0", "00000002-r0"]
        store.set_meta("paused", "1")
        # What is scheduled is played out, both deals in every rotation; then the feed ends.
        assert list(t.match.key for t in feed) == ["00000001-r1", "00000002-r1"]
        assert store.counts()["tables"] == 2


def test_a_version_that_leaves_the_ladder_ends_its_series(tmp_path: Path) -> None:
    ladder, store = _arena(tmp_path, versions=4, placement_tables=0, series_tables=4)
    with store:
        feed = ladder._feed(store)
        assert _keys(feed, 2) == ["00000001-r0", "00000002-r0"]
        seated = _seats(store, 1)
        store.set_status(seated[0], "withdrawn", "withdrawn by its owner")
        # The deals begun are played in every rotation; no third table of those versions.
        assert _keys(feed, 3) == ["00000001-r1", "00000002-r1", "00000003-r0"]
        assert seated[0] not in _seats(store, 3)


def test_a_task_read_ahead_is_handed_out_with_the_versions_disqualified_since(tmp_path: Path) -> None:
    ladder, store = _arena(tmp_path, placement_tables=0, series_tables=4)
    with store:
        task = next(ladder._feed(store))
        assert task.absent == ()
        assert ladder._refresh(store, task) is task  # nothing changed: the same task
        gone = store.matches_of_table(1)[0].seats[1]
        store.set_status(gone, "disqualified", "by an admin")
        label = store.version(gone).label
        assert ladder._refresh(store, task).absent == (label,)
