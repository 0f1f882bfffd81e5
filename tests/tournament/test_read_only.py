"""A tournament on a read-only folder: ``tournament run`` and ``submit`` say it is read-only
(not that the database is damaged), and leave it as it is; reading it still works.

As root, file modes stop no write, so the folder is made read-only the way it is for anyone:
a read-only bind mount, in a private mount namespace of the command's own (``unshare -m``).
As another user, its modes make it read-only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from referee.tournament.settings import TournamentSettings
from referee.tournament.store import DB_NAME, BotEntry, StoreError, TournamentStore, now
from tests.tournament.conftest import db_dump, left_as_is

ROOT = Path(__file__).resolve().parents[2]
READ_ONLY = "is read-only"


def _can_mount() -> str | None:
    """Why a read-only bind mount cannot be made here (None: it can)."""
    if shutil.which("unshare") is None:
        return "no unshare (util-linux)"
    done = subprocess.run(["unshare", "-m", "mount", "--bind", "/", "/mnt"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"unshare -m cannot mount here: {done.stderr.strip()}"


def _thirtyone_read_only(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``thirtyone ARGS`` with ``folder`` read-only for it."""
    cmd = [sys.executable, "-c", "from referee.cli import main; main()", *args]
    if os.geteuid() != 0:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    why = _can_mount()
    if why is not None:
        pytest.skip(why)
    f = str(folder)
    script = f'mount --bind "{f}" "{f}" && mount -o remount,bind,ro "{f}" && exec "$@"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *cmd], capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.fixture
def tournament(tmp_path: Path) -> Path:
    """A new tournament (no bots yet), read-only for its user when that is not root."""
    folder = tmp_path / "t"
    TournamentStore.create(folder, TournamentSettings(table_size=2, games=1, seed=3)).close()
    if os.geteuid() != 0:
        for p in (folder / DB_NAME, folder):
            p.chmod(0o500 if p.is_dir() else 0o400)
    return folder


@pytest.mark.parametrize("command", [("tournament", "run"), ("submit",)])
def test_a_command_that_writes_says_the_folder_is_read_only(tournament: Path, command: tuple[str, ...]) -> None:
    args = [*command, str(tournament)] + (["random"] if command == ("submit",) else [])
    with left_as_is(tournament):
        done = _thirtyone_read_only(tournament, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "damaged" not in done.stderr
    assert f"{tournament / DB_NAME} {READ_ONLY}" in " ".join(done.stderr.split()), done.stderr
    if command == ("submit",):
        # Reading it is still fine.
        done = _thirtyone_read_only(tournament, "standings", str(tournament), "--json")
        assert done.returncode == 0, done.stderr


def test_a_write_sqlite_refuses_as_read_only_is_said_so(tmp_path: Path) -> None:
    # SQLite's own refusal ("attempt to write a readonly database"), as a user without
    # write permission meets it: here from a read-only connection to the database.
    folder = tmp_path / "t"
    TournamentStore.create(folder, TournamentSettings()).close()
    conn = sqlite3.connect(f"file:{folder / DB_NAME}?mode=ro", uri=True, isolation_level=None)
    store = TournamentStore(folder, conn)
    entry = BotEntry("b", "sample", "random", ".", "random", None, "random", "1", "", now())
    before = db_dump(folder)
    with pytest.raises(StoreError, match=READ_ONLY) as caught:
        store.add_bot(entry)
    store.close()
    assert "damaged" not in str(caught.value) and "database error" not in str(caught.value)
    assert db_dump(folder) == before
