"""The ladder keeps a version's process for no more than one rotation of a table: a table is
one deal, played in every seat rotation, and a process kept for the next rotation could
remember the cards (runner._remembers). Real ladder runs (in this process, two workers), real
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
from referee.tournament.runner import TaskResult, output_dir_of
from referee.tournament.settings import TournamentSettings
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


def test_no_version_s_process_plays_two_rotations_of_a_table(tmp_path: Path) -> None:
    folder = tmp_path / "arena"
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off")))
    with ArenaStore.open(folder) as store:
        user, _ = add_user(store, "alice")
        for i in range(3):
            v = accept_upload(store, user, f"memo{i}.py", MEMO.read_bytes() + f"# version {i}\n".encode())
            store.set_status(v.id, "active")
    ladder = _Watched(folder, 2, seed=5)
    run_ladder_until(ladder, "the ladder to play 12 matches", lambda: len(ladder.played) >= 12)
    tables: dict[str, list[str]] = defaultdict(list)  # process token -> the tables it played
    for key in ladder.played:
        texts = [p.read_text() for p in output_dir_of(folder, key).glob("seat*.txt")]
        tokens = [t for text in texts for t in TOKEN.findall(text)]
        assert len(tokens) == 2, f"match {key}: the bots said {tokens} (their output: {texts})"
        for t in tokens:
            tables[t].append(key.split("-r")[0])
    assert sum(key.endswith("-r1") for key in ladder.played) >= 4, ladder.played  # both rotations played
    for token, played in tables.items():
        assert len(played) == len(set(played)), f"process {token} played one table twice: {played}"
