"""``thirtyone analyse``: a log, a tournament's match, a folder's habits, JSON, and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.analysis.decisions import analyse_log
from referee.cli.app import app
from tests.replay.fixtures import Plan, write_fixture

runner = CliRunner()


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A tournament folder's logs under logs/: two matches of two seats."""
    logs = tmp_path / "tour" / "logs"
    logs.mkdir(parents=True)
    write_fixture(logs / "r1_t1_g1.jsonl", Plan(names=("alice", "bob"), seed=3, knock_at=(22, 27), match_id="m-one"))
    write_fixture(logs / "r1_t1_g2.jsonl", Plan(names=("bob", "alice"), seed=4, knock_at=(27, 22), match_id="m-two"))
    return tmp_path / "tour"


def test_analyse_a_match_of_a_folder_with_its_luck(folder: Path) -> None:
    result = runner.invoke(app, ["analyse", str(folder), "r1/t1/g1", "--samples", "6", "--luck"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "Decisions of m-one" in text
    assert "best (seat's view)" in text and "best (deal's view)" in text
    assert "Per seat: expected lives given away" in text
    assert "Luck of the cards" in text and "adjusted" in text


def test_analyse_json_of_one_seat(folder: Path) -> None:
    log = folder / "logs" / "r1_t1_g2.jsonl"
    result = runner.invoke(app, ["analyse", str(log), "--seat", "1", "--view", "seat", "--samples", "4", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["views"] == ["seat"] and doc["unit"] == "lives"
    assert doc["decisions"] and {d["seat"] for d in doc["decisions"]} == {1}
    first = doc["decisions"][0]["views"]["seat"]
    assert {"best", "loss", "se", "flag", "kind", "actions"} <= set(first)
    assert [s["label"] for s in doc["summaries"]["seat"]] == ["bob", "alice"]


def test_analyse_a_folder_sums_each_bot(folder: Path) -> None:
    result = runner.invoke(app, ["analyse", str(folder), "--samples", "4", "--view", "seat", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["matches"] == 2
    bots = {b["bot"]: b for b in doc["bots"]}
    assert set(bots) == {"alice", "bob"}
    assert all(b["seats"] == 2 and b["decisions"] > 0 for b in bots.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{log}", "--seat", "7"], "--seat 7: the match has seats 0 to 1"),
        (["{log}", "--view", "mine"], "--view 'mine': seat, deal or both"),
        (["{log}", "--samples", "1"], "--samples 1: at least 2"),
        (["{tour}", "r9/t9/g9"], "no log of match 'r9/t9/g9'"),
        (["{tmp}/missing.jsonl"], "no such file or folder"),
    ],
)
def test_usage_errors(folder: Path, tmp_path: Path, args: list[str], message: str) -> None:
    fill = {"tour": str(folder), "log": str(folder / "logs" / "r1_t1_g1.jsonl"), "tmp": str(tmp_path)}
    result = runner.invoke(app, ["analyse", *(a.format(**fill) for a in args)])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split()) and "Traceback" not in result.output


def test_replay_analyse_judges_under_each_step_and_a_seat_sees_only_its_own(folder: Path) -> None:
    log = folder / "logs" / "r1_t1_g1.jsonl"
    whole = runner.invoke(app, ["replay", str(log), "--analyse", "--samples", "4"])
    assert whole.exit_code == 0, whole.output
    assert "seat's view:" in whole.stdout and "deal's view:" in whole.stdout
    seat = runner.invoke(app, ["replay", str(log), "--analyse", "--samples", "4", "--seat", "1"])
    assert seat.exit_code == 0, seat.output
    assert "deal's view" not in seat.stdout
    judged = [line for line in seat.stdout.splitlines() if "seat's view:" in line]
    mine = analyse_log(log, seats=[1], views=["seat"], samples=4).decisions
    assert len(judged) == len(mine) > 0
