"""Small things a bot author or an organiser meets at the command line (issue 37), through
real processes: piped output unpadded, help that says what goes to stdout, a password read
from a pipe, and a manual that asks no one for fonts.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from referee.ladder.accounts import check_password
from referee.ladder.store import ArenaStore
from tests.arena.conftest import CLI, cli

ROOT = Path(__file__).resolve().parents[2]


def test_doctor_into_a_pipe_pads_no_line() -> None:
    done = subprocess.run([*CLI, "doctor"], capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("sandbox ") for line in lines), done.stdout
    assert [line for line in lines if line != line.rstrip()] == []


def test_remote_submit_help_says_the_version_id_goes_to_stdout() -> None:
    text = " ".join(cli("remote", "submit", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert "Prints the new version's id on stdout" in text, text
    assert "--check" in text


def test_arena_user_password_reads_one_line_from_a_pipe(tmp_path: Path) -> None:
    folder = tmp_path / "arena"
    cli("arena", "init", str(folder), "--sandbox", "off")
    cli("arena", "user", "add", str(folder), "ann")
    done = cli("arena", "user", "password", str(folder), "ann", input="correct-Horse-7 battery\n")
    assert "GetPassWarning" not in done.stderr and "password of ann set" in done.stderr
    with ArenaStore.open(folder) as store:
        assert check_password(store, store.user_named("ann"), "correct-Horse-7 battery")
    # Nothing on the pipe: said, nothing changed.
    empty = cli("arena", "user", "password", str(folder), "ann", input="", check=False)
    assert empty.returncode == 2 and "no password given on standard input" in empty.stderr


def test_the_manual_asks_google_for_no_fonts() -> None:
    # The Material theme loads Roboto from fonts.googleapis.com unless told not to.
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    theme = text.split("\ntheme:\n", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"^  font: false$", theme, flags=re.M), theme
