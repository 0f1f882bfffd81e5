"""``referee.log.replay_log`` is the verifier's walk: everything ``thirtyone replay --verify``
catches, it catches at the same line (a deleted 31, a tampered fault, a bad deck, the
footer's counts); a match aborted before its first deal replays as complete and empty; and a
file that is not UTF-8 is a :class:`LogError` naming the line, not a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.faults import LogError, ReplayError
from referee.log import iter_log, read_log, replay_log, walk_log
from tests.replay.conftest import lines_of, write_lines
from tests.replay.test_verify import TAMPERING, _event, _find, _records, _write

Record = dict[str, Any]


def _replay_error(path: Path) -> str:
    with pytest.raises(ReplayError) as info:
        replay_log(path)
    return str(info.value)


@pytest.mark.parametrize(("what", "name", "edit", "message"), TAMPERING, ids=[t[0] for t in TAMPERING])
def test_replay_log_catches_what_the_verifier_catches(
    logs: dict[str, Path], tmp_path: Path, what: str, name: str, edit: Callable[[list[Record]], int], message: str
) -> None:
    records = _records(logs[name])
    index = edit(records)
    path = _write(tmp_path / f"{name}.jsonl", records)
    error = _replay_error(path)
    assert error.startswith(f"{path}:{index + 1}: "), f"{what}: {error}"
    assert message in error, f"{what}: {error}"


def test_a_deleted_31_line(logs: dict[str, Path], tmp_path: Path) -> None:
    records = _records(logs["specials"])
    i = _find(records, _event("thirtyOne"), nth=1)  # the blitz of round 2
    del records[i]
    error = _replay_error(_write(tmp_path / "no31.jsonl", records))
    # The line that now holds that number is the round end; the model wants the 31 first.
    assert f"no31.jsonl:{i + 1}: round 2, turn 1, round end: " in error
    assert "the game model gives the 31 of round 2 (seats 1) first" in error


def _fault_line(records: list[Record], nth: int) -> tuple[int, Record]:
    i = _find(records, _event("fault"), nth=nth)
    fault: Record = records[i]["event"]["fault"]["fault"]
    return i, fault


def _strike(records: list[Record]) -> tuple[int, str]:
    i, fault = _fault_line(records, 1)
    fault["strike"] = 1
    return i, "strike 1; this is fault number 2 of seat 3"


def _seat(records: list[Record]) -> tuple[int, str]:
    i, fault = _fault_line(records, 1)
    fault["seat"] = 2
    return i, "a fault of seat 2 at round 3 turn 9; the game model waits for seat 3"


def _not_forfeited(records: list[Record]) -> tuple[int, str]:
    i, fault = _fault_line(records, 2)
    fault["forfeited"] = False
    return i, "a fault that does not forfeit the seat must name the action the referee plays"


def _default_action(records: list[Record]) -> tuple[int, str]:
    i, fault = _fault_line(records, 0)
    action = fault["defaultAction"]
    action["card"] = "Kd" if action["card"] != "Kd" else "Qd"  # a card of the hand, but not the one played
    # The fault line alone is consistent; the referee's action after it is not.
    return i + 1, f"the fault at line {i + 1} says it plays discard {action['card']}"


FAULT_EDITS: list[tuple[str, Callable[[list[Record]], tuple[int, str]]]] = [
    ("a strike count", _strike),
    ("the faulting seat", _seat),
    ("a forfeiting fault that does not forfeit", _not_forfeited),
    ("the referee's default action", _default_action),
]


@pytest.mark.parametrize(("what", "edit"), FAULT_EDITS, ids=[f[0] for f in FAULT_EDITS])
def test_a_tampered_fault_line(
    logs: dict[str, Path], tmp_path: Path, what: str, edit: Callable[[list[Record]], tuple[int, str]]
) -> None:
    records = _records(logs["specials"])
    index, message = edit(records)
    path = _write(tmp_path / "fault.jsonl", records)
    error = _replay_error(path)
    assert error.startswith(f"{path}:{index + 1}: "), f"{what}: {error}"
    assert message in error, f"{what}: {error}"


def test_a_bad_deck_is_reported_at_its_own_line(logs: dict[str, Path], tmp_path: Path) -> None:
    records = _records(logs["standard"])
    i = _find(records, _event("deal"), nth=1)
    deck = records[i]["event"]["deal"]["deck"]
    deck[40] = deck[41]
    path = _write(tmp_path / "deck.jsonl", records)
    error = _replay_error(path)
    # At the deal's own line, not at the round end before it (the model asks for the deck then).
    assert error.startswith(f"{path}:{i + 1}: round 2, turn 0, deal: the deal of round 2 is not an order of the 52")


def test_the_footer_counts_are_checked_at_the_footer_line(logs: dict[str, Path], tmp_path: Path) -> None:
    records = _records(logs["specials"])
    records[-1]["footer"]["seats"][3]["faults"] = 2
    path = _write(tmp_path / "footer.jsonl", records)
    assert read_log(path).footer_line == len(records)
    error = _replay_error(path)
    assert error.startswith(f"{path}:{len(records)}: footer: seat 3 has 2 faults in the log's footer; its events show 3")


def _aborted_before_deal(logs: dict[str, Path], tmp_path: Path, placings: list[int]) -> Path:
    header = lines_of(logs["standard"])[0]
    footer = {"footer": {"placings": placings, "reason": "MATCH_END_REASON_ABORTED", "rounds": 1, "seats": [{"seat": s} for s in range(3)]}}
    return write_lines(tmp_path / "aborted.jsonl", [header, json.dumps(footer)])


def test_a_match_aborted_before_the_first_deal_is_complete_and_empty(logs: dict[str, Path], tmp_path: Path) -> None:
    path = _aborted_before_deal(logs, tmp_path, [1, 1, 1])
    assert read_log(path).footer_line == 2
    result = replay_log(path)
    assert result.complete and result.match is None
    assert result.rounds == () and result.placings == (1, 1, 1) and result.winner is None
    assert any("before the first deal" in n for n in result.notes)
    # Still checked: such a match places every seat 1.
    bad = _aborted_before_deal(logs, tmp_path, [1, 2, 2])
    assert _replay_error(bad).startswith(f"{bad}:2: footer: a match aborted before the first deal has every seat placed 1")


def test_a_file_that_is_not_utf8(logs: dict[str, Path], tmp_path: Path) -> None:
    lines = [line.encode() for line in lines_of(logs["standard"])]
    lines[4] = lines[4].replace(b'"round": 1', b'"round": \xff1')
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    for read in (read_log, replay_log, walk_log, lambda p: list(iter_log(p))):
        with pytest.raises(LogError, match=r"latin\.jsonl:5: not UTF-8 text \(byte \d+ of the line\)"):
            read(path)
    # The lines before it are read before the error.
    got = []
    with pytest.raises(LogError):
        for n, _ in iter_log(path):
            got.append(n)
    assert got == [1, 2, 3, 4]


def test_a_last_line_cut_inside_a_character_is_a_cut_line(logs: dict[str, Path], tmp_path: Path) -> None:
    lines = lines_of(logs["standard"])
    path = tmp_path / "cut.jsonl"
    # The referee died writing a line that holds a two-byte character, after its first byte.
    path.write_bytes("".join(line + "\n" for line in lines[:6]).encode() + b'{"event": {"round": 1, "fault": {"fault": {"message": "caf\xc3')
    log = read_log(path)
    assert len(log.events) == 5 and log.footer is None and log.footer_line is None
    assert any("line 7 is cut short" in n for n in log.notes)
    result = replay_log(log)
    assert not result.complete and result.match is not None
