"""The results store: secrets kept private (folder 0700, database and logs 0600), a damaged
database refused before anything is written, every database error a clear message, and
``standings``, ``bots`` and ``replay --verify`` reading a tournament in a read-only folder.

Tests run as root here, where ``chmod a-w`` stops nobody. A read-only folder is made the way
the kernel enforces for root too: a read-only bind mount, in a private mount namespace
(``unshare --map-root-user --mount``), with the command run inside it as a real process.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from referee.log import LogWriter
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import DB_NAME, StoreError, TournamentStore

from .conftest import SANDBOX, fails, left_as_is, ok
from .faulty import copy_of, entry, faulty_played


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return faulty_played(tmp_path_factory)


# ---------------------------------------------------------------- secrets


def test_a_new_tournament_is_private_to_its_owner(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask, under which files come out world-readable
    try:
        folder = tmp_path / "t"
        empty = tmp_path / "empty"
        empty.mkdir(mode=0o755)
        for f in (folder, empty):
            with TournamentStore.create(f, TournamentSettings(seed=5, sandbox=SANDBOX)) as store:
                store.add_bot(entry("random", "sample", "random"))
                # While it is open, SQLite's -wal and -shm files exist: they hold the same secrets.
                wal, shm = f / f"{DB_NAME}-wal", f / f"{DB_NAME}-shm"
                assert wal.exists() and shm.exists()
                assert (mode(wal), mode(shm)) == (0o600, 0o600)
            assert mode(f) == 0o700
            assert mode(f / "logs") == 0o700
            assert mode(f / "bots") == 0o700
            assert mode(f / DB_NAME) == 0o600
        # Opened again later (a run, a submit): SQLite makes new WAL files as private.
        with TournamentStore.open(folder) as store:
            store.disqualify("random", "test")
            assert mode(folder / f"{DB_NAME}-wal") == 0o600
    finally:
        os.umask(old)


def test_every_match_log_is_private(played: Path) -> None:
    logs = sorted((played / "logs").glob("*.jsonl"))
    assert len(logs) == 5
    assert {mode(p) for p in logs} == {0o600}


def test_the_log_writer_makes_an_existing_log_private(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("old\n")
    path.chmod(0o644)
    with LogWriter(path):
        pass
    assert mode(path) == 0o600
    assert path.read_text() == ""


# ---------------------------------------------------------------- a damaged database


def _damage(db: Path) -> None:
    """Random bytes over the whole last page (a page of stored matches), in the middle of the
    database's pages: the damage a bad disk or a stray write does."""
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) >= 4 * page and len(data) % page == 0
    data[-page:] = random.Random(11).randbytes(page)
    db.write_bytes(bytes(data))
    # The damage is real: SQLite's own check finds it (as rows, or as an error).
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA quick_check").fetchall() != [("ok",)]
    except sqlite3.DatabaseError:
        pass
    finally:
        conn.close()


def test_a_damaged_database_is_refused_and_never_written(played: Path, tmp_path: Path) -> None:
    folder = copy_of(played, tmp_path / "t")
    assert not (folder / f"{DB_NAME}-wal").exists()  # closed cleanly: everything is in the file
    db = folder / DB_NAME
    _damage(db)
    damaged = db.read_bytes()
    message = f"{db} is not a readable tournament database (it is damaged"
    with left_as_is(folder):
        for argv in (["submit", folder, "greedy"], ["withdraw", folder, "random"], ["standings", folder],
                     ["standings", folder, "--json"], ["standings", folder, "--csv"], ["bots", folder],
                     ["tournament", "run", folder]):
            fails(*argv, message=message)
        with pytest.raises(StoreError, match="it is damaged"):
            TournamentStore.open(folder)
        with pytest.raises(StoreError, match="it is damaged"):
            TournamentStore.open(folder, readonly=True)
    assert db.read_bytes() == damaged


def test_a_missing_table_is_a_clear_error_not_a_traceback(played: Path, tmp_path: Path) -> None:
    folder = copy_of(played, tmp_path / "t")
    conn = sqlite3.connect(folder / DB_NAME)
    conn.execute("DROP TABLE disqualified")
    conn.commit()
    conn.close()
    with left_as_is(folder):
        for argv in (["standings", folder], ["standings", folder, "--json"]):
            fails(*argv, message="database error (no such table: disqualified); the database was left as it is")


def test_reading_standings_leaves_the_folder_as_it_was(played: Path, tmp_path: Path) -> None:
    # A read-only connection cannot remove the WAL files it makes; the store tidies them.
    folder = copy_of(played, tmp_path / "t")
    with left_as_is(folder):
        ok("standings", folder)
        ok("bots", folder)
        ok("replay", "--verify", folder)
    assert not (folder / f"{DB_NAME}-wal").exists()
    assert not (folder / f"{DB_NAME}-shm").exists()


def test_a_read_only_store_writes_nothing(played: Path, tmp_path: Path) -> None:
    folder = copy_of(played, tmp_path / "t")
    with TournamentStore.open(folder, readonly=True) as store:
        with pytest.raises(StoreError, match="readonly database"):
            store.disqualify("random", "no")
        assert store.disqualified() == {}


# ---------------------------------------------------------------- a read-only folder


def _can_mount_read_only(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir()
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c",
         f'mount --bind -o ro "{probe}" "{probe}" && ! touch "{probe}/x" 2>/dev/null'],
        capture_output=True, check=False,
    )
    return r.returncode == 0


def _in_read_only(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``thirtyone ARGS`` run as a real process that sees ``folder`` mounted read-only."""
    script = (
        f'mount --bind -o ro "{folder}" "{folder}" && touch "{folder}/x" 2>/dev/null && exit 99; '
        f'exec "{sys.executable}" -c "import sys; from referee.cli import main; sys.argv[0] = \'thirtyone\'; main()" "$@"'
    )
    return subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c", script, "sh", *args],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200"}, timeout=120,
    )


@pytest.mark.slow  # four CLI processes in a read-only mount; the store itself read-only is quick (above)
def test_standings_bots_and_verify_work_on_a_read_only_folder(played: Path, tmp_path: Path) -> None:
    if not _can_mount_read_only(tmp_path):
        pytest.skip("this machine cannot make a read-only bind mount in a user namespace")
    folder = copy_of(played, tmp_path / "t")
    want = json.loads(ok("standings", folder, "--json").stdout)
    with left_as_is(folder):
        r = _in_read_only(folder, "standings", str(folder), "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == want
        r = _in_read_only(folder, "bots", str(folder))
        assert r.returncode == 0, r.stderr
        assert "garbage" in r.stdout
        r = _in_read_only(folder, "replay", "--verify", str(folder))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "5 rows checked against their logs, all agree" in r.stdout
    # A damaged database in a read-only folder: the same clear error, no traceback.
    _damage(folder / DB_NAME)
    r = _in_read_only(folder, "standings", str(folder))
    assert r.returncode == 2
    assert "it is damaged" in r.stderr and "Traceback" not in r.stderr


def test_a_folder_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file, not a folder")
    fails("tournament", "new", tmp_path / "file" / "t", message=f"cannot create a tournament in {tmp_path / 'file' / 't'}")
    assert (tmp_path / "file").read_text() == "a file, not a folder"
