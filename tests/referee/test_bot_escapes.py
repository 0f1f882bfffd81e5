"""A bot's own text reaches the organiser's terminal escaped: ``thirtyone match`` (the faults'
"what happened" and the bot's last words) and ``check-bot`` (its last output) show a bot's
terminal escapes as ``\\x1b``, never send them, as ``submit`` and ``replay`` already did.
The bot runs unsandboxed (it is ours, in the test's private folder): the sandbox is not what
is tested."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app

runner = CliRunner()

#: What the bot writes: a terminal title, a clear screen, and a bidirectional override.
ESCAPES = "\x1b]0;owned\x07\x1b[2J\u202eevil"

#: A bot (the sample random bot) that writes escapes on stderr, and before its first answer
#: writes them again and dies.
ESCAPER = f"""
import os, sys
import sample_bots.random, sdk
sys.stderr.write({ESCAPES!r} + " at start\\n"); sys.stderr.flush()

class Escaper(sample_bots.random.RandomBot):
    name = "escaper"

    def act(self, view):
        sys.stderr.write({ESCAPES!r} + " dying\\n"); sys.stderr.flush()
        os._exit(3)

sdk.run(Escaper)
"""


def _bot(tmp_path: Path) -> str:
    path = tmp_path / "escaper.py"
    path.write_text(ESCAPER)
    return "escaper=" + shlex.join([sys.executable, str(path)])


def _no_escapes(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, repr(text)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202eevil" in text, text


def test_match_shows_a_bots_escapes_escaped(tmp_path: Path) -> None:
    result = runner.invoke(app, ["match", _bot(tmp_path), "random", "--log", str(tmp_path / "m.jsonl"), "--seed", "3", "--sandbox", "off"])
    assert result.exit_code == 0, result.output
    assert "last output of #0 escaper:" in " ".join(result.stdout.split())
    _no_escapes(result.stdout)


def test_check_bot_shows_a_bots_escapes_escaped(tmp_path: Path) -> None:
    result = runner.invoke(app, ["check-bot", _bot(tmp_path), "--sandbox", "off"])
    assert result.exit_code == 1, result.output
    _no_escapes(result.stdout)
