"""``check-bot`` and the manual (docs/writing-a-bot.md) agree on SIGTERM: a bot that exits, whatever its code, within
the referee's grace passes the line (the code is said); only one still running fails it.
A real bot process, the real check, the real command."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app

NONCOMPLIANT = Path(__file__).resolve().parent / "bots" / "noncompliant.py"


def test_a_bot_that_exits_1_on_sigterm_keeps_the_contract() -> None:
    bot = shlex.join([sys.executable, str(NONCOMPLIANT), "--mode", "sigterm_exit_1"])
    result = CliRunner().invoke(app, ["check-bot", bot, "--json", "--sandbox", "off", "--budget-ms", "2000"])
    report = json.loads(result.stdout)
    sigterm = next(r for r in report["checks"] if r["key"] == "sigterm")
    assert sigterm["status"] == "pass", sigterm
    assert sigterm["reason"].startswith("exited with code 1 ") and "after SIGTERM" in sigterm["reason"]
    assert result.exit_code == 0, result.output
    assert report["passed"] is True
