"""No bot process plays two matches of one deal: the rotations of a deal deal the same cards,
and a process kept running could remember them (:func:`referee.tournament.runner._remembers`).

A real tournament (``thirtyone`` CLI, bot processes in the tournament's sandbox, gRPC,
SQLite, worker processes) of ``memo`` (``tests/tournament/bots/memo.py``, which prints a token
of its process at every match start) against a sample bot. The bots' output of every match
is kept, so the test reads which process played which match, and the schedule says which
deal each match is.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from referee.tournament.runner import log_name
from referee.tournament.schedule import schedule_for
from referee.tournament.store import TournamentStore

from .conftest import SANDBOX, ok

MEMO = Path(__file__).resolve().parent / "bots" / "memo.py"
TOKEN = re.compile(r"^MEMO ([0-9a-f]{32})$", re.MULTILINE)


@pytest.fixture(scope="module")
def submit_from(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the memo bot (its working folder when it runs), readable by the
    user bots run as when the tests run as root."""
    folder = tmp_path_factory.mktemp("memo-cwd")
    shutil.copy(MEMO, folder / MEMO.name)
    folder.chmod(0o755)
    (folder / MEMO.name).chmod(0o644)
    return folder


def processes(folder: Path) -> dict[str, list[int]]:
    """The memo bot's processes: token -> the deal seeds of the matches it played."""
    with TournamentStore.open(folder, readonly=True) as store:
        schedule = schedule_for(store.settings, [b.name for b in store.bots()])
    played: dict[str, list[int]] = defaultdict(list)
    for m in schedule:
        out = folder / "output" / log_name(m.key).removesuffix(".jsonl")
        texts = [p.read_text() for p in out.glob("seat*-memo.txt")]
        tokens = [t for text in texts for t in TOKEN.findall(text)]
        assert len(tokens) == 1, f"match {m.key}: the memo bot said {tokens} (its output: {texts})"
        played[tokens[0]].append(m.seed)
    return played


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bot_process_never_plays_a_deal_twice(jobs: int, tmp_path: Path, submit_from: Path) -> None:
    folder = tmp_path / "t"
    ok("tournament", "new", folder, "--table-size", 2, "--games", 4, "--seed", 2026, "--sandbox", SANDBOX)
    with contextlib.chdir(submit_from):  # a command bot runs in the folder it was submitted from
        ok("submit", folder, f"{sys.executable} {MEMO.name}", "--name", "memo")
    ok("submit", folder, "random")
    ok("tournament", "run", folder, "-j", jobs)
    played = processes(folder)
    assert sum(len(seeds) for seeds in played.values()) == 8  # 4 deals x 2 rotations
    for token, seeds in played.items():
        assert len(seeds) == len(set(seeds)), f"process {token} played one deal twice: {seeds}"
    # Processes are still kept from one deal to the next: two rotations need two processes
    # at least, and each worker needs no more than two.
    assert 2 <= len(played) <= 2 * jobs, dict(played)
