"""The commitment check of an arena download re-derives every shuffle from the revealed seed,
restocks included, on a real match's log (two real bot processes, written by the referee).

The tampered log differs only where the ordinary verification cannot look: the order of the
last two cards of a restocked stock that the round ended before reaching. It replays to the
same match card for card, so ``--verify`` calls it ``ok``; only the seed shows that the
order was not the one committed to.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app
from referee.ladder.fairness import check_commitment, commitment
from referee.log import read_log

THIRTYONE = [sys.executable, "-c", "from referee.cli import main; main()"]
#: No one may knock (only a 31 ends a round early), so the round runs to its 200 turns and
#: the stock runs out, twice: seed 1 restocks at turns 79 and 174.
RULES = ["--rule", "min_knock=31", "--rule", "max_rounds=1"]


@pytest.fixture(scope="module")
def real_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The log of a real match of two random bots with restocks."""
    log = tmp_path_factory.mktemp("commitment") / "match.jsonl"
    r = subprocess.run(
        [*THIRTYONE, "match", "random", "random", *RULES, "--seed", "1", "--log", str(log), "--sandbox", "off"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return log


def lines_of(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def last_restock(lines: list[dict[str, Any]]) -> int:
    """The index of the log's last restock line, checked to leave its last two cards undrawn."""
    at = max(i for i, line in enumerate(lines) if "restock" in line.get("event", {}))
    stock = lines[at]["event"]["restock"]["stock"]
    later = [line["event"] for line in lines[at + 1 :] if "event" in line]
    draws = sum(1 for e in later if e.get("action", {}).get("action", {}).get("kind") == "ACTION_KIND_DRAW_STOCK")
    assert all(e["round"] == lines[at]["event"]["round"] for e in later if "deal" not in e)
    assert draws < len(stock) - 2, (draws, len(stock))  # its last two cards are never drawn
    return at


def verify(log: Path, committed: str) -> Result:
    """``thirtyone replay LOG --verify`` with the commitment beside it, as a download has."""
    Path(str(log) + ".arena.json").write_text(json.dumps({"commitment": committed}))
    return CliRunner().invoke(app, ["replay", str(log), "--verify"])


def test_an_untouched_log_with_restocks_matches_its_commitment(real_log: Path, tmp_path: Path) -> None:
    log = tmp_path / "match.jsonl"
    log.write_text(real_log.read_text())
    lines = lines_of(log)
    restocks = sum(1 for line in lines if "restock" in line.get("event", {}))
    assert restocks >= 1
    last_restock(lines)
    seed = read_log(log).header.seed
    check = check_commitment(log, commitment(seed))
    assert check.ok, check.detail
    assert f"and its {restocks} restock" in check.detail, check.detail
    r = verify(log, commitment(seed))
    assert r.exit_code == 0, r.output
    assert "matches its commitment" in r.stdout and "restock" in r.stdout, r.stdout


def test_a_restock_reordered_where_no_one_drew_fails_the_commitment(real_log: Path, tmp_path: Path) -> None:
    lines = lines_of(real_log)
    at = last_restock(lines)
    event = lines[at]["event"]
    stock = event["restock"]["stock"]
    stock[-2], stock[-1] = stock[-1], stock[-2]
    log = tmp_path / "match.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    seed = read_log(log).header.seed
    index = event["restock"].get("index", 0)
    expected = f"restock {index} of round {event['round']} (line {at + 1}, turn {event['turn']}) is not the order its seed gives"
    check = check_commitment(log, commitment(seed))
    assert not check.ok and expected in check.detail, check.detail
    r = verify(log, commitment(seed))
    assert r.exit_code == 1, r.output
    # The match itself replays: only the commitment check sees the tampering.
    assert r.stdout.startswith("ok "), r.stdout
    assert "diverged commitment" in r.stdout and expected in r.stdout, r.stdout
