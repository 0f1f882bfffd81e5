"""``thirtyone replay``: rendering, seat views, rounds, stepping, verification, and clean
errors (never a traceback) for every kind of bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app
from tests.replay.conftest import lines_of, write_lines

runner = CliRunner()


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def tournament(logs: dict[str, Path], tmp_path: Path) -> Path:
    """A tournament folder's logs under logs/, without a database (``--verify`` checks a
    database against its logs when there is one: tests/replay/test_verify_db.py)."""
    folder = tmp_path / "tour"
    (folder / "logs").mkdir(parents=True)
    write_lines(folder / "logs" / "r1_t1_g1.jsonl", lines_of(logs["standard"]))
    write_lines(folder / "logs" / "r1_t1_g2.jsonl", lines_of(logs["specials"]))
    return folder


def test_replay_a_log(logs: dict[str, Path]) -> None:
    result = runner.invoke(app, ["replay", str(logs["standard"])])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Match fixture-standard" in out and "seed 7" in out
    assert "Round 1" in out and "Round 4" in out and "#1 bob wins" in out
    assert "\x1b[" not in out  # no colour when not a terminal


def test_replay_a_seat(logs: dict[str, Path]) -> None:
    result = runner.invoke(app, ["replay", str(logs["standard"]), "--seat", "2"])
    assert result.exit_code == 0, result.output
    assert "as seen by #2 carol" in result.stdout and "seed 7" not in result.stdout


def test_replay_from_a_round(logs: dict[str, Path]) -> None:
    result = runner.invoke(app, ["replay", str(logs["standard"]), "--round", "3"])
    assert result.exit_code == 0, result.output
    assert "Round 3" in result.stdout and "Round 2" not in result.stdout and "wins" in result.stdout


def test_step_does_not_wait_without_a_terminal(logs: dict[str, Path]) -> None:
    result = runner.invoke(app, ["replay", str(logs["standard"]), "--step"], input="")
    assert result.exit_code == 0, result.output
    assert "wins" in result.stdout and "Enter" not in result.output


def test_replay_a_match_of_a_tournament(tournament: Path) -> None:
    for name in ("r1/t1/g2", "r1_t1_g2", "r1_t1_g2.jsonl", "fixture-specials"):
        result = runner.invoke(app, ["replay", str(tournament), name])
        assert result.exit_code == 0, f"{name}: {result.output}"
        assert "Match fixture-specials" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tour}"], "name the match to replay"),
        (["{tour}", "r9/t9/g9"], "no log of match 'r9/t9/g9'"),
        (["{log}", "r1/t1/g1"], "is a log file"),
        (["{log}", "--seat", "7"], "--seat 7: the match has seats 0 to 2"),
        (["{log}", "--round", "12"], "--round 12: the log has rounds 1 to 4"),
        (["{tmp}/missing.jsonl"], "no such file or folder"),
        (["--verify", "{log}", "--seat", "1"], "takes no --seat"),
    ],
)
def test_usage_errors(tournament: Path, logs: dict[str, Path], tmp_path: Path, args: list[str], message: str) -> None:
    fill = {"tour": str(tournament), "log": str(logs["standard"]), "tmp": str(tmp_path)}
    result = runner.invoke(app, ["replay", *(a.format(**fill) for a in args)])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split()) and "Traceback" not in result.output


# ---------------------------------------------------------------- verification


def test_verify_a_log(logs: dict[str, Path]) -> None:
    result = runner.invoke(app, ["replay", "--verify", str(logs["specials"])])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok ") and "5 rounds, seat 1 (bob) won" in result.stdout


def test_verify_a_tampered_log(logs: dict[str, Path], tmp_path: Path) -> None:
    lines = lines_of(logs["standard"])
    lines[6] = lines[6].replace('"drawnCard": "3h"', '"drawnCard": "4h"')
    path = write_lines(tmp_path / "t.jsonl", lines)
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 1, result.output
    out = " ".join(result.stdout.split())
    assert "diverged" in out and "line 7 (round 1, turn 2, seat 2 draw stock)" in out and "drew 4h" in out
    # Rendering it shows the match up to there, then the divergence, and fails too.
    shown = runner.invoke(app, ["replay", str(path)])
    assert shown.exit_code == 1 and "turn 1" in shown.stdout and "line 7" in " ".join(shown.stderr.split())


def test_verify_an_incomplete_log(logs: dict[str, Path], tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cut.jsonl", lines_of(logs["standard"])[:25])
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 3, result.output
    assert "incomplete" in result.stdout and "stops after round 2 turn 2 (line 25" in " ".join(result.stdout.split())
    # Rendering an incomplete log is no error; it says where the log stops.
    shown = runner.invoke(app, ["replay", str(path)])
    assert shown.exit_code == 0 and "incomplete: the log stops after round 2 turn 2" in " ".join(shown.stdout.split())


def test_verify_a_tournament_folder(tournament: Path) -> None:
    result = runner.invoke(app, ["replay", "--verify", str(tournament)])
    assert result.exit_code == 0, result.output
    assert "r1_t1_g1.jsonl" in result.stdout and "2 logs: 2 ok, 0 diverged, 0 unreadable, 0 incomplete" in result.stdout
    bad = tournament / "logs" / "r1_t1_g3.jsonl"
    write_lines(bad, lines_of(tournament / "logs" / "r1_t1_g1.jsonl")[:-3])
    (tournament / "logs" / "r1_t1_g4.jsonl").write_text('{"header": \n', encoding="utf-8")
    result = runner.invoke(app, ["replay", "--verify", str(tournament)])
    assert result.exit_code == 2, result.output  # unreadable outranks incomplete
    assert "4 logs: 2 ok, 0 diverged, 1 unreadable, 1 incomplete" in result.stdout
    one = runner.invoke(app, ["replay", "--verify", str(tournament), "r1/t1/g2"])
    assert one.exit_code == 0 and "fixture-specials" not in one.stdout and "r1_t1_g2.jsonl" in one.stdout


def test_verify_an_empty_folder(tmp_path: Path) -> None:
    result = runner.invoke(app, ["replay", "--verify", str(tmp_path)])
    assert result.exit_code == 2 and "no match logs" in result.stderr


# ---------------------------------------------------------------- bad input, never a traceback


def _bad_inputs(lines: list[str]) -> dict[str, tuple[str, int]]:
    """Name -> (file text, the line the error must name)."""
    cut_inside = [*lines[:9], lines[9][:60], *lines[10:]]
    schema = [lines[0].replace('"schemaVersion": 1', '"schemaVersion": 9'), *lines[1:]]
    card = [*lines[:2], lines[2].replace('"drawnCard": "6h"', '"drawnCard": "XX"'), *lines[3:]]
    header_later = [lines[1], lines[0], *lines[2:]]
    return {
        "corrupt JSON": ("\n".join(cut_inside) + "\n", 10),
        "unknown schema version": ("\n".join(schema) + "\n", 1),
        "not a card": ("\n".join(card) + "\n", 3),
        "header not first": ("\n".join(header_later) + "\n", 1),
        "not JSON at all": ("this is not a match log\n", 1),
    }


@pytest.mark.parametrize("case", ["corrupt JSON", "unknown schema version", "not a card", "header not first", "not JSON at all"])
@pytest.mark.parametrize("verify", [False, True])
def test_bad_input_is_a_clean_error(logs: dict[str, Path], tmp_path: Path, case: str, verify: bool) -> None:
    text, line = _bad_inputs(lines_of(logs["standard"]))[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["replay", *(["--verify"] if verify else []), str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert f"{path}:{line}" in "".join(result.stderr.split()).replace("error:", "") or f"{path}:{line}" in result.stderr


def test_the_console_script_pipes_plain_text(logs: dict[str, Path], tmp_path: Path) -> None:
    """Through a pipe and an ASCII-only encoding: no colour, no symbols, no traceback."""
    exe = Path(sys.executable).with_name("thirtyone")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "100"}
    done = subprocess.run([str(exe), "replay", str(logs["specials"]), "--seat", "1"], capture_output=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("ascii")
    assert "As Ks Qs  31  dealt 31" in text and "\x1b" not in text
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"header": {"schemaVersion": 1}}\n\xff\n')
    done = subprocess.run([str(exe), "replay", "--verify", str(bad)], capture_output=True, env=env, timeout=300)
    assert done.returncode == 2 and b"Traceback" not in done.stderr and b"bad.jsonl" in done.stderr
