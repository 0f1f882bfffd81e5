"""Text from a log reaches a terminal escaped: a crafted log's names, sources, fault messages
and forfeit reasons hold terminal escapes (set the window title, clear the screen, colour),
and ``thirtyone replay`` (each view, ``--verify`` of a log and of a folder, its errors,
``--bot-output``) prints them as visible ``\\x1b`` text, into a real pipe as well."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.text import printable
from tests.tournament.conftest import cli

ROOT = Path(__file__).resolve().parents[2]
#: An OSC title, a clear screen, a colour, a C1 CSI, a bell, a right-to-left override.
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\x9b2J\u202e"
#: What a terminal could obey: C0 and C1 controls (a newline aside), DEL, the bidi override.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]")


def _crafted(src: Path, dest: Path) -> Path:
    records: list[dict[str, Any]] = [json.loads(line) for line in src.read_text().splitlines()]
    header = records[0]["header"]
    header["matchId"] = "m" + EVIL
    for seat in header["seats"]:
        seat["label"] = seat["label"] + EVIL
        seat["author"] = EVIL
        seat["source"] = "src" + EVIL
    for r in records[1:]:
        event = r.get("event", {})
        if "fault" in event:
            event["fault"]["fault"]["message"] += EVIL
        if "forfeit" in event:
            event["forfeit"]["reason"] += EVIL
    dest.write_text("".join(json.dumps(r) + "\n" for r in records))
    return dest


@pytest.fixture
def crafted(logs: dict[str, Path], tmp_path: Path) -> Path:
    """The specials fixture (faults, a forfeit) with escapes in every text."""
    return _crafted(logs["specials"], tmp_path / "crafted.jsonl")


def piped(*args: object) -> subprocess.CompletedProcess[str]:
    """The command as a process of its own, its output a real pipe."""
    cmd = [sys.executable, "-c", "from referee.cli import main; main()", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)


def _clean(stdout: str, stderr: str, *, raw: re.Pattern[str] = RAW) -> str:
    both = stdout + stderr
    assert "Traceback" not in both, both
    assert not raw.search(both), repr(raw.search(both))
    return both


def test_a_replay_into_a_pipe_shows_a_logs_escapes_as_text(crafted: Path) -> None:
    done = piped("replay", crafted)
    assert done.returncode == 0, done.stderr
    shown = _clean(done.stdout, done.stderr)
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in shown and "\\x9b2J" in shown and "\\u202e" in shown


@pytest.mark.parametrize("view", [["--seat", "3"], ["--seat", "0", "--round", "2"]])
def test_each_view_shows_a_logs_escapes_as_text(crafted: Path, view: list[str]) -> None:
    done = cli("replay", crafted, *view)
    assert done.exit_code == 0, done.output
    shown = _clean(done.stdout, done.stderr)
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in shown and "\\x9b2J" in shown and "\\u202e" in shown


def test_a_verification_shows_them_as_text(crafted: Path) -> None:
    for target in (crafted, crafted.parent):
        done = cli("replay", target, "--verify")
        assert done.exit_code == 0, done.output
        assert "\\x1b]0;pwned" in _clean(done.stdout, done.stderr)


def test_an_error_about_a_crafted_log_shows_them_as_text(crafted: Path, tmp_path: Path) -> None:
    records = crafted.read_text().splitlines()
    footer = json.loads(records[-1])
    footer["footer"]["winner"] = (footer["footer"]["winner"] + 1) % 4
    bad = tmp_path / "diverges.jsonl"
    bad.write_text("\n".join([*records[:-1], json.dumps(footer)]) + "\n")
    for args in ((bad,), (bad, "--verify"), (tmp_path, "--verify"), (bad, "--round", "99")):
        done = cli("replay", *args)
        assert done.exit_code != 0
        _clean(done.stdout, done.stderr)


def test_a_bots_output_is_shown_with_its_lines_and_no_escape(crafted: Path, tmp_path: Path) -> None:
    folder = tmp_path / "t"
    (folder / "logs").mkdir(parents=True)
    log = crafted.rename(folder / "logs" / "m.jsonl")
    (folder / "output" / "m").mkdir(parents=True)
    (folder / "output" / "m" / "seat0-a.txt").write_text(f"line one{EVIL}\nline\ttwo\n")
    done = cli("replay", log, "--bot-output", "0")
    assert done.exit_code == 0, done.output
    _clean(done.stdout, done.stderr, raw=re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]"))
    assert done.stdout == "line one\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m\\x9b2J\\u202e\nline\ttwo\n"


def test_printable_escapes_every_control_and_only_those() -> None:
    assert printable("Ah ♠ é 名前 🂡") == "Ah ♠ é 名前 🂡"
    assert printable("a\x1b[2Jb\nc\x7f\x85") == "a\\x1b[2Jb\\nc\\x7f\\x85"
    assert printable("two\nlines\x1b", keep="\n") == "two\nlines\\x1b"
    every = "".join(map(chr, range(0x2100)))
    once = printable(every)
    assert not RAW.search(once) and printable(once) == once
