"""A bot is a folder plus a command: submitted with --dir, copied and hashed, checked at every
launch; and a tournament refuses to run its bots unsandboxed unless it says so."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from referee.bots.sandbox import probe
from referee.tournament import botfiles
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.submit import SubmissionError, submit
from tests.tournament.conftest import fails, flat, ok, snapshot

needs_sandbox = pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")

#: A bot of two files: its strategy lives in a module beside the main file.
MAIN = """\
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import sdk
from strategy import choose

class TwoFiles(sdk.Bot):
    name = "twofiles"
    version = "1"
    author = "a test"

    def act(self, view):
        return choose(view)

sdk.run(TwoFiles)
"""
STRATEGY = """\
def choose(view):
    return view.legal_actions[0]
"""


#: The folder bot's command: this Python (a bare ``python`` works only in an activated venv).
RUN_MAIN = f"{shlex.quote(sys.executable)} main.py"


def two_file_bot(where: Path) -> Path:
    """A bot folder with ``main.py`` and ``lib/strategy.py``."""
    where.mkdir()
    (where / "main.py").write_text(MAIN)
    (where / "lib").mkdir()
    (where / "lib" / "strategy.py").write_text(STRATEGY)
    return where


def small(folder: Path, sandbox: str = "auto") -> Path:
    """A new 2-seat tournament of one deal and short matches."""
    rules = TournamentSettings().rules.with_options({"max_rounds": 3})
    TournamentStore.create(folder, TournamentSettings(rules=rules, table_size=2, games=1, seed=5, sandbox=sandbox)).close()
    return folder


@needs_sandbox
def test_a_folder_bot_is_copied_hashed_played_and_refused_once_changed(tmp_path: Path) -> None:
    src = two_file_bot(tmp_path / "src")
    t = small(tmp_path / "t")
    ok("submit", t, RUN_MAIN, "--dir", src, "--name", "two")
    ok("submit", t, "greedy")
    copy = t / "bots" / "two"
    assert (copy / "lib" / "strategy.py").read_text() == STRATEGY
    with TournamentStore.open(t) as store:
        entry = store.bot("two")
        assert entry is not None and entry.kind == "folder" and entry.sha256 == botfiles.folder_sha256(copy)
    # The original may change or go: the tournament plays its copy.
    (src / "lib" / "strategy.py").write_text("raise SystemExit('edited')\n")
    ran = ok("tournament", "run", t)
    assert "2 matches" in flat(ran.stderr + ran.stdout) or "played 2" in flat(ran.stderr + ran.stdout)
    # A changed copy is never run.
    (copy / "lib" / "strategy.py").write_text(STRATEGY + "# changed\n")
    t2 = tmp_path / "t2"
    small(t2)
    ok("submit", t2, RUN_MAIN, "--dir", two_file_bot(tmp_path / "src2"), "--name", "two")
    ok("submit", t2, "greedy")
    (t2 / "bots" / "two" / "main.py").write_text(MAIN + "\n# tampered\n")
    result = subprocess.run(
        [sys.executable, "-c", "from referee.cli import main; main()", "tournament", "run", str(t2)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    text = flat(result.stdout + result.stderr)
    assert "changed since it was submitted" in text, text
    assert "tampered" not in text


def test_a_folder_over_the_limit_or_linking_out_is_refused_and_nothing_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = two_file_bot(tmp_path / "src")
    t = small(tmp_path / "t", sandbox="off")
    before = snapshot(t)
    monkeypatch.setattr(botfiles, "MAX_FOLDER_BYTES", 100)
    with TournamentStore.open(t) as store, pytest.raises(SubmissionError, match=r"holds 0\.0 MiB; a bot folder may hold at most 0 MiB"):
        submit(store, RUN_MAIN, bot_dir=src)
    monkeypatch.undo()
    (src / "escape").symlink_to("/etc/hostname")
    with TournamentStore.open(t) as store, pytest.raises(SubmissionError, match="escape is a link to /etc/hostname, outside"):
        submit(store, RUN_MAIN, bot_dir=src)
    after = snapshot(t)
    assert {k for k in after if k.startswith("bots/")} == {k for k in before if k.startswith("bots/")}
    assert {k: v for k, v in after.items() if not k.startswith("tournament.db")} == {
        k: v for k, v in before.items() if not k.startswith("tournament.db")
    }
    with TournamentStore.open(t) as store:
        assert store.bots() == []


def test_a_tournament_inside_the_bot_folder_is_not_copied(tmp_path: Path) -> None:
    src = two_file_bot(tmp_path / "src")
    t = small(src / "league", sandbox="off")
    ok("submit", t, RUN_MAIN, "--dir", src, "--name", "two")
    copy = t / "bots" / "two"
    assert (copy / "main.py").exists() and not (copy / "league").exists()


def test_submit_dir_errors_name_the_problem(tmp_path: Path) -> None:
    t = small(tmp_path / "t", sandbox="off")
    fails("submit", t, RUN_MAIN, "--dir", tmp_path / "nope", message="no such folder")
    fails("submit", t, "greedy", "--dir", tmp_path, message="--dir goes with a command or a file of the bot's, not a sample bot")


def test_without_a_sandbox_run_refuses_unless_the_tournament_says_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where bubblewrap is missing, a tournament made with the default refuses its bots (and
    says how to enable the sandbox), one made with --sandbox off runs, and its standings say
    the bots ran unsandboxed."""
    on, off = tmp_path / "on", tmp_path / "off"
    real_path = os.environ["PATH"]
    ok("tournament", "new", on, "-n", 1, "--rule", "max_rounds=2")
    ok("tournament", "new", off, "-n", 1, "--rule", "max_rounds=2", "--sandbox", "off")
    sandboxed_here = probe().available
    if sandboxed_here:  # bots submitted where the sandbox works, to run where it does not
        for bot in ("greedy", "random"):
            ok("submit", on, bot)
    before = snapshot(on)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    probe.cache_clear()
    try:
        fails("submit", on, "threshold", message="apt-get install bubblewrap")
        if sandboxed_here:
            refused = fails("tournament", "run", on, message="bots cannot be sandboxed on this machine")
            assert "--sandbox off" in flat(refused.stderr)
        assert snapshot(on) == before
        for bot in ("greedy", "random"):
            ok("submit", off, bot)
        ok("tournament", "run", off)
        data = json.loads(ok("standings", off, "--json").stdout)
    finally:
        monkeypatch.setenv("PATH", real_path)
        probe.cache_clear()
    assert data["unsandboxed"] is True and data["settings"]["sandbox"] == "off"
    assert "bots ran unsandboxed" in flat(ok("standings", off).stdout)
