"""A full disk is the referee's problem, said as such: never charged to a bot, nothing stored
lost, and the next run (with space again) plays what is missing."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.game import Rules
from referee.timecontrol import TimeControl
from referee.tournament.settings import TournamentSettings

from .conftest import (
    SANDBOX,
    cli,
    db_dump,
    flat,
    make_tournament,
    ok,
    scheduled_keys,
    stored_matches,
)

SMALL = TournamentSettings(
    table_size=2,
    games=1,
    seed=3,
    rules=Rules(max_rounds=2, max_turns_per_round=20),
    time_control=TimeControl(budget_ms=100, bank_ms=200, grace_ms=50),
    sandbox=SANDBOX,
)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A small file system of its own (a tmpfs; needs the right to mount, else skipped)."""
    where = tmp_path / "disk"
    where.mkdir()
    opts = "size=4m,nr_inodes=200"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a small file system here (needs root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path, leave: int) -> list[Path]:
    """Use up the file system's files (inodes) but ``leave``: then the run can open its
    database (a WAL and its index), its lock and its ``running/`` folder, and nothing more;
    the first new file of a match fails with ENOSPC, as on a full disk."""
    (disk / "fill").mkdir()
    made = []
    try:
        while True:
            p = disk / "fill" / str(len(made))
            p.touch()
            made.append(p)
    except OSError as e:
        assert "No space left" in str(e)
    for p in made[-leave:]:
        p.unlink()
    return made[:-leave]


def test_a_full_disk_is_reported_as_such_and_charged_to_no_bot(small_disk: Path) -> None:
    folder = make_tournament(small_disk / "t", SMALL, ["random", "greedy"])
    before = db_dump(folder)
    filler = fill(small_disk, 4)
    result = cli("tournament", "run", folder)
    text = flat(result.stderr)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "the disk is full" in text, text
    assert "fix the bot" not in text
    for p in filler:
        p.unlink()
    assert stored_matches(folder) == []
    # Nothing stored was changed (bar the runner's own record of the failure).
    assert [line for line in db_dump(folder) if "infra_failures" not in line and "start_failures" not in line] == [
        line for line in before if "infra_failures" not in line and "start_failures" not in line
    ]
    ok("tournament", "run", folder)
    assert len(stored_matches(folder)) == len(scheduled_keys(folder))
