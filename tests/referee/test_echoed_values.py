"""An error that echoes a value someone typed, a file held or a bot sent shows it cut short:
a 4,000-digit number is "a number of 4001 digits", never 4 KB of digits; a number past what
Python reads (4,300 digits) is an error, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee import wire
from referee.game.errors import shown, shown_in
from tests.replay.fixtures import FIXTURES, write_fixture
from tests.tournament.conftest import fails

BIG = "9" * 4000
HUGE = "9" * 5000


def _short(stderr: str) -> None:
    assert len(stderr) < 400, f"{len(stderr)} characters: {stderr[:200]}..."


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("tournament", "new", "{tmp}/t", "--games", BIG), "--games must be a whole number from 1 to 100000, got a number of 4001 digits"),
        (("tournament", "new", "{tmp}/t", "--seed", BIG), "--seed must be a whole number from 0 to 2**64-1, got a number of 4001 digits"),
        (("tournament", "new", "{tmp}/t", "--rule", f"lives={BIG}"), "rule option 'lives' got a number of 4001 digits"),
        (("tournament", "new", "{tmp}/t", "--sandbox", "x" * 5000), "(5000 characters)"),
        (("match", "random", "greedy", "--rule", f"lives={BIG}"), "rule option 'lives' got a number of 4001 digits"),
        (("serve", "{tmp}", "--port", BIG, "--no-open"), "--port must be a whole number from 0 to 65535, got a number of 4001 digits"),
    ],
)
def test_an_option_echoes_a_huge_value_cut_short(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = fails(*(a.replace("{tmp}", str(tmp_path)) for a in args), message=message)
    _short(result.stderr)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (f"games = {BIG}\n", "got a number of 4001 digits"),
        (f"seed = {HUGE}\n", "not valid TOML: it holds a number of more than 4300 digits"),
        (f"[time_control]\nbudget_ms = {BIG}\n", "budget_ms must be 0..3600000 ms, got <a number of 4000 digits>"),
        (f"[limits]\nmemory_mb = {BIG}\n", "got <a number of 4000 digits>"),
        (f"[rules]\nlives = {BIG}\n", "rule option 'lives' got a number of 4001 digits"),
        (f'challengers = ["{"x" * 9000}", 1]\n', "(9007 characters)"),
    ],
)
def test_a_settings_file_echoes_a_huge_value_cut_short(toml: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(toml)
    result = fails("tournament", "new", tmp_path / "t", "--config", tmp_path / "s.toml", message=message)
    _short(result.stderr)


def test_a_rules_file_of_a_number_past_what_python_reads_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "r.toml").write_text(f"[rules]\nlives = {HUGE}\n")
    result = fails("match", "random", "greedy", "--rules-file", tmp_path / "r.toml", message="it holds a number of more than 4300 digits")
    _short(result.stderr)


@pytest.mark.parametrize(("where", "field"), [(0, "seed"), (0, "maxStrikes"), (1, "round")])
def test_a_log_echoes_a_huge_number_cut_short(where: int, field: str, tmp_path: Path) -> None:
    standard = write_fixture(tmp_path / "standard.jsonl", FIXTURES["standard"])
    lines = standard.read_text().splitlines()
    record = json.loads(lines[where])
    (record["header"] if where == 0 else record["event"])[field] = BIG
    lines[where] = json.dumps(record)
    log = tmp_path / "big.jsonl"
    log.write_text("\n".join(lines) + "\n")
    for extra in ((), ("--verify",)):
        result = fails("replay", log, *extra, message=f"Failed to parse {field} field")
        assert "<a number of 4000 digits>" in result.stderr
        _short(result.stderr)
    result = fails("replay", standard, "--seat", BIG, message="--seat a number of 4001 digits")
    _short(result.stderr)


def test_a_bots_huge_card_is_echoed_cut_short() -> None:
    with pytest.raises(wire.WireError) as caught:
        wire.card_from_pb("A" * 1_000_000)
    assert "(1000000 characters)" in str(caught.value) and len(str(caught.value)) < 300


def test_shown_cuts_only_what_is_long() -> None:
    assert shown(12345) == "12345" and shown("Ah") == "'Ah'" and shown(-(10**80)) == "a negative number of 81 digits"
    assert shown(10**5000) == "a number of 5001 digits"  # past what str() writes out
    assert shown([10**5000]) == "a list too large to show"
    assert shown_in("bad value 123 in x") == "bad value 123 in x"
    assert shown_in("value " + "7" * 100 + ".") == "value <a number of 100 digits>."
