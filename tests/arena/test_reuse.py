"""The ladder keeps a version's process for no more than one rotation of a table: a table is
one deal, played in every seat rotation, and a process kept for the next rotation could
remember the cards (worker.remembers). It keeps it for the same rotation of the other
tables of a series (several deals per start). Real ladder runs (in this process, one or two workers), real
bot processes, real SQLite: every version is the memo bot (tests/tournament/bots/memo.py),
which prints a token of its process at every match start."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from referee.ladder.accounts import add_user
from referee.ladder.loop import Ladder
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, create
from referee.ladder.uploads import accept_upload
from referee.tournament.settings import TournamentSettings
from referee.tournament.tasks import TaskResult, output_dir_of
from tests.arena.conftest import REPO, run_ladder_until

pytestmark = pytest.mark.timeout(600)

MEMO = REPO / "tests" / "tournament" / "bots" / "memo.py"
TOKEN = re.compile(r"^MEMO ([0-9a-f]{32})$", re.MULTILINE)


class _Watched(Ladder):
    """A ladder that notes the keys of the matches it has stored."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.played: list[str] = []

    def _result(self, store: ArenaStore, r: TaskResult) -> None:
        super()._result(store, r)
        if r.ok and not r.retrying:
            self.played.append(r.key)


def _arena(tmp_path: Path, versions: int, **settings: int) -> Path:
    """An arena of ``versions`` active memo bots, unsandboxed (the rule is the runner's)."""
    folder = tmp_path / "arena"
    # One user's versions, so that owner may share a table (the arena's default forbids it).
    settings.setdefault("same_owner_tables", 1)
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off"), **settings))
    with ArenaStore.open(folder) as store:
        user, _ = add_user(store, "alice")
        for i in range(versions):
            v = accept_upload(store, user, f"memo{i}.py", MEMO.read_bytes() + f"# version {i}\n".encode())
            store.set_status(v.id, "active")
    return folder


def _tables_by_process(folder: Path, played: list[str]) -> dict[str, list[str]]:
    """Process token -> the tables it played a match of, in the order played, checking on the
    way that no process played two rotations of one table."""
    tables: dict[str, list[str]] = defaultdict(list)
    for key in played:
        texts = [p.read_text() for p in output_dir_of(folder, key).glob("seat*.txt")]
        tokens = [t for text in texts for t in TOKEN.findall(text)]
        assert len(tokens) == 2, f"match {key}: the bots said {tokens} (their output: {texts})"
        for t in tokens:
            tables[t].append(key.split("-r")[0])
    for token, seen in tables.items():
        assert len(seen) == len(set(seen)), f"process {token} played one table twice: {seen}"
    return tables


def test_no_version_s_process_plays_two_rotations_of_a_table(tmp_path: Path) -> None:
    folder = _arena(tmp_path, 3)
    ladder = _Watched(folder, 2, seed=5)
    run_ladder_until(ladder, "the ladder to play 12 matches", lambda: len(ladder.played) >= 12)
    _tables_by_process(folder, ladder.played)
    assert sum(key.endswith("-r1") for key in ladder.played) >= 4, ladder.played  # both rotations played


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_version_s_process_plays_one_rotation_of_each_table_of_its_series(tmp_path: Path, jobs: int) -> None:
    # Six versions, so that a new choice rarely seats the versions of the last: what a
    # process plays beyond one table, it plays because of the series.
    folder = _arena(tmp_path, 6, placement_tables=0, series_tables=4)
    ladder = _Watched(folder, jobs, seed=5)
    run_ladder_until(ladder, "the ladder to play 16 matches", lambda: len(ladder.played) >= 16)
    tables = _tables_by_process(folder, ladder.played)
    with ArenaStore.open(folder) as store:
        # A series is one choice of versions for four tables in a row (tables 1-4, 5-8, ...).
        seats = {m.table_id: sorted(m.seats) for key in ladder.played for m in [store.match(key)]}
        for tid in seats:
            first = store.matches_of_table((tid - 1) // 4 * 4 + 1)[0]
            assert seats[tid] == sorted(first.seats), f"table {tid} seats {seats[tid]}, its series {first.seats}"
    # A series of four tables, two seats: each worker's bots play the first rotation of all
    # four, then bots started again the second; eight matches for four starts. Without the
    # series (or taking the rotations table by table) each table needs its own.
    per_process = [len(t) for t in tables.values()]
    assert sum(per_process) / len(per_process) >= 2.5, dict(tables)
