"""Verification: whole logs verify; every kind of tampering is caught at the right line;
logs cut short verify as incomplete; unreadable logs say where and why."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.log import replay_log
from referee.replay import build_replay, load_log
from referee.replay.verify import (
    MatchNotFound,
    Verdict,
    Verification,
    exit_code,
    find_match_log,
    log_files,
    verify_folder,
    verify_log,
)
from tests.replay.conftest import lines_of, write_lines

Record = dict[str, Any]


def _records(path: Path) -> list[Record]:
    return [json.loads(line) for line in lines_of(path)]


def _write(path: Path, records: list[Record]) -> Path:
    return write_lines(path, [json.dumps(r) for r in records])


def _find(records: list[Record], pred: Callable[[Record], bool], nth: int = 0) -> int:
    """The index (line number - 1) of the nth record matching ``pred``."""
    hits = [i for i, r in enumerate(records) if pred(r)]
    return hits[nth]


def _event(kind: str) -> Callable[[Record], bool]:
    return lambda r: kind in r.get("event", {})


def _action(kind: str) -> Callable[[Record], bool]:
    return lambda r: r.get("event", {}).get("action", {}).get("action", {}).get("kind") == f"ACTION_KIND_{kind}"


# ---------------------------------------------------------------- whole logs


@pytest.mark.parametrize("name", ["standard", "specials", "long", "pagat"])
def test_whole_logs_verify(logs: dict[str, Path], name: str) -> None:
    v = verify_log(logs[name])
    assert v.verdict is Verdict.OK, v.detail
    assert v.match_id == f"fixture-{name}" and v.divergence is None
    # The same result as referee.log's own replay.
    footer = load_log(logs[name]).footer
    assert footer is not None and replay_log(logs[name]).placings == footer.placings
    assert "placings " + " ".join(map(str, footer.placings)) in v.detail


def test_a_real_referee_log_verifies(tmp_path: Path) -> None:
    """A log written by referee.match (in-process bots over gRPC) replays and verifies."""
    from referee.match import MatchConfig, run_match

    path = tmp_path / "real.jsonl"
    run_match(["greedy", "random", "threshold"], seed=7, config=MatchConfig(), log_path=path)
    assert verify_log(path).verdict is Verdict.OK
    for seat in range(3):
        assert build_replay(load_log(path), seat).ok


# ---------------------------------------------------------------- tampering


def _deal_hand_card(rs: list[Record]) -> int:
    i = _find(rs, _event("deal"))
    hand = rs[i]["event"]["deal"]["hands"][0]["cards"]
    hand[0] = "2c" if hand[0] != "2c" else "3c"
    return i


def _deal_deck_duplicate(rs: list[Record]) -> int:
    i = _find(rs, _event("deal"), nth=1)
    deck = rs[i]["event"]["deal"]["deck"]
    deck[40] = deck[41]
    return i


def _drawn_card(rs: list[Record]) -> int:
    i = _find(rs, _action("DRAW_STOCK"), nth=3)
    act = rs[i]["event"]["action"]
    act["drawnCard"] = "2c" if act["drawnCard"] != "2c" else "3c"
    return i


def _life_count(rs: list[Record]) -> int:
    i = _find(rs, _event("roundEnd"))
    rs[i]["event"]["roundEnd"]["livesLost"][0]["count"] += 1
    return i


def _tokens(rs: list[Record]) -> int:
    i = _find(rs, _event("roundEnd"), nth=1)
    rs[i]["event"]["roundEnd"]["tokensAfter"][1] += 1
    return i


def _value(rs: list[Record]) -> int:
    i = _find(rs, _event("roundEnd"), nth=2)
    rs[i]["event"]["roundEnd"]["values"][0]["value"] += 1
    return i


def _knocker(rs: list[Record]) -> int:
    i = _find(rs, _event("roundEnd"), nth=1)
    del rs[i]["event"]["roundEnd"]["knocker"]
    return i


def _reason(rs: list[Record]) -> int:
    i = _find(rs, _event("roundEnd"))
    rs[i]["event"]["roundEnd"]["reason"] = "ROUND_END_REASON_MAX_TURNS"
    return i


def _removed_event(rs: list[Record]) -> int:
    i = _find(rs, _action("DISCARD"), nth=5)
    del rs[i]
    return i  # the next line now holds that line number


def _swapped_actions(rs: list[Record]) -> int:
    i = _find(rs, _action("DRAW_STOCK"), nth=2)
    rs[i], rs[i + 1] = rs[i + 1], rs[i]
    return i


def _changed_action(rs: list[Record]) -> int:
    i = _find(rs, _action("DRAW_STOCK"), nth=4)
    rs[i]["event"]["action"]["action"]["kind"] = "ACTION_KIND_DRAW_DISCARD"
    return i


def _knock_moved(rs: list[Record]) -> int:
    i = _find(rs, _action("KNOCK"))
    rs[i]["event"]["action"]["seat"] = (rs[i]["event"]["action"].get("seat", 0) + 1) % 3
    return i


def _deal_out_of_order(rs: list[Record]) -> int:
    i = _find(rs, _event("deal"), nth=1)
    rs[i], rs[i + 1] = rs[i + 1], rs[i]
    return i


def _extra_round_end(rs: list[Record]) -> int:
    i = _find(rs, _event("roundEnd"))
    rs.insert(i + 1, json.loads(json.dumps(rs[i])))
    return i + 1


def _placing(rs: list[Record]) -> int:
    p = rs[-1]["footer"]["placings"]
    p[0], p[1] = p[1], p[0]
    return len(rs) - 1


def _footer_rounds(rs: list[Record]) -> int:
    rs[-1]["footer"]["rounds"] += 1
    return len(rs) - 1


def _footer_decisions(rs: list[Record]) -> int:
    rs[-1]["footer"]["seats"][2]["decisions"] += 1
    return len(rs) - 1


def _removed_31(rs: list[Record]) -> int:
    i = _find(rs, _event("thirtyOne"))
    del rs[i]
    return i


def _blitz_seat(rs: list[Record]) -> int:
    i = _find(rs, _event("thirtyOne"), nth=1)
    rs[i]["event"]["thirtyOne"]["seats"] = [2]
    return i


def _fault_strike(rs: list[Record]) -> int:
    i = _find(rs, _event("fault"), nth=1)
    rs[i]["event"]["fault"]["fault"]["strike"] = 1
    return i


def _referee_action_without_fault(rs: list[Record]) -> int:
    i = _find(rs, _event("fault"))
    del rs[i]
    return i  # the referee's action now follows no fault


def _removed_forfeit(rs: list[Record]) -> int:
    i = _find(rs, _event("forfeit"))
    del rs[i]
    return i


TAMPERING: list[tuple[str, str, Callable[[list[Record]], int], str]] = [
    ("a card of a dealt hand", "standard", _deal_hand_card, "deal.hands[0].cards[0]"),
    ("a card twice in a deck", "standard", _deal_deck_duplicate, "not an order of the 52 expected cards"),
    ("a drawn card", "standard", _drawn_card, "the game model has"),
    ("a life count", "standard", _life_count, "roundEnd.livesLost[0].count"),
    ("a token count", "standard", _tokens, "roundEnd.tokensAfter[1]"),
    ("a hand value", "standard", _value, "roundEnd.values[0].value"),
    ("a round-end reason", "standard", _reason, "roundEnd.reason"),
    ("a knocker removed", "standard", _knocker, "roundEnd.knocker is absent in the log; the game model gives 2"),
    ("a removed action", "standard", _removed_event, "waits for seat"),
    ("two swapped actions", "standard", _swapped_actions, "is illegal"),
    ("an action changed", "standard", _changed_action, "from the discard pile"),
    ("a knock by another seat", "standard", _knock_moved, "waits for seat"),
    ("a deal out of order", "standard", _deal_out_of_order, "the deal of round 2 first"),
    ("an extra event", "standard", _extra_round_end, "the deal of round 2 first"),
    ("a placing", "standard", _placing, "placings"),
    ("the number of rounds", "standard", _footer_rounds, "rounds in the log"),
    ("a decision count", "standard", _footer_decisions, "decisions"),
    ("a removed 31", "specials", _removed_31, "the 31 of round 1"),
    ("the seat of a blitz", "specials", _blitz_seat, "thirtyOne.seats[0]"),
    ("a fault's strike", "specials", _fault_strike, "strike 1; this is fault number 2"),
    ("a removed fault", "specials", _referee_action_without_fault, "no fault before it"),
    ("a removed forfeit", "specials", _removed_forfeit, "instead of its forfeit"),
]


def _caught_at_its_line(
    logs: dict[str, Path], tmp_path: Path, what: str, name: str, edit: Callable[[list[Record]], int], message: str
) -> None:
    """Edit one line of the log ``name``; the verifier must stop at that line, saying ``message``."""
    records = _records(logs[name])
    index = edit(records)
    path = _write(tmp_path / f"{name}.jsonl", records)
    v = verify_log(path)
    assert v.verdict is Verdict.DIVERGED, f"{what}: {v.detail}"
    assert v.divergence is not None
    assert v.divergence.at.line == index + 1, f"{what}: {v.detail}"
    assert message in v.divergence.message, f"{what}: {v.detail}"
    assert f"line {index + 1} (" in v.detail


@pytest.mark.parametrize(("what", "name", "edit", "message"), TAMPERING, ids=[t[0] for t in TAMPERING])
def test_tampering_is_caught_at_its_line(
    logs: dict[str, Path], tmp_path: Path, what: str, name: str, edit: Callable[[list[Record]], int], message: str
) -> None:
    _caught_at_its_line(logs, tmp_path, what, name, edit, message)


def test_a_divergence_names_round_turn_and_event(logs: dict[str, Path], tmp_path: Path) -> None:
    records = _records(logs["standard"])
    index = _drawn_card(records)
    v = verify_log(_write(tmp_path / "t.jsonl", records))
    assert v.divergence is not None
    at = v.divergence.at
    event = records[index]["event"]
    assert (at.round_no, at.turn) == (event["round"], event.get("turn", 0))
    assert at.event == f"seat {event['action']['seat']} draw stock"
    assert str(v.divergence).startswith(f"line {index + 1} (round {at.round_no}, turn {at.turn}, seat ")


def test_the_replay_stops_at_the_divergence(logs: dict[str, Path], tmp_path: Path) -> None:
    records = _records(logs["standard"])
    index = _life_count(records)
    replay = build_replay(load_log(_write(tmp_path / "t.jsonl", records)))
    assert replay.divergence is not None and not replay.ok
    assert replay.steps and max(s.at.line for s in replay.steps) < index + 1


# ---------------------------------------------------------------- logs cut short


@pytest.mark.parametrize(("name", "every"), [("specials", 1), ("long", 4)])
def test_every_cut_at_a_line_verifies_as_far_as_it_goes(logs: dict[str, Path], tmp_path: Path, name: str, every: int) -> None:
    lines = lines_of(logs[name])
    for n in range(1, len(lines), every):
        path = write_lines(tmp_path / f"cut{n}.jsonl", lines[:n])
        v = verify_log(path)
        assert v.verdict is Verdict.INCOMPLETE, f"cut after line {n}: {v.detail}"
        assert f"(line {n}," in v.detail or (n == 1 and "after the header (line 1)" in v.detail)
        for seat in (None, 0):
            replay = build_replay(load_log(path), seat)  # renders as far as it goes
            assert replay.divergence is None and not replay.complete
    assert verify_log(write_lines(tmp_path / "whole.jsonl", lines)).verdict is Verdict.OK


def test_a_cut_mid_line_is_incomplete(logs: dict[str, Path], tmp_path: Path) -> None:
    text = logs["standard"].read_text(encoding="utf-8")
    cut = tmp_path / "cut.jsonl"
    line_20 = sum(len(line) + 1 for line in text.splitlines()[:19])
    cut.write_text(text[: line_20 + 25], encoding="utf-8")
    v = verify_log(cut)
    assert v.verdict is Verdict.INCOMPLETE
    assert "stops after round 1 turn 8 (line 19" in v.detail
    assert any("line 20 is cut short" in n for n in v.notes)


def test_a_match_aborted_before_the_first_deal(logs: dict[str, Path], tmp_path: Path) -> None:
    header = lines_of(logs["standard"])[0]
    footer = {"footer": {"placings": [1, 1, 1], "reason": "MATCH_END_REASON_ABORTED", "rounds": 1, "seats": [{"seat": s} for s in range(3)]}}
    v = verify_log(write_lines(tmp_path / "aborted.jsonl", [header, json.dumps(footer)]))
    assert v.verdict is Verdict.OK, v.detail
    assert "aborted" in v.detail and any("before the first deal" in n for n in v.notes)


def test_a_match_aborted_mid_round(logs: dict[str, Path], tmp_path: Path) -> None:
    records = _records(logs["standard"])[:12]  # the header, the deal, 5 turns of round 1
    seats: list[Record] = [{"seat": s, "decisions": 0, "totalLatencyUs": 0, "maxLatencyUs": 0} for s in range(3)]
    for r in records:
        act = r.get("event", {}).get("action")
        if act:
            st = seats[act.get("seat", 0)]
            st["decisions"] += 1
            st["totalLatencyUs"] += act["latencyUs"]
            st["maxLatencyUs"] = max(st["maxLatencyUs"], act["latencyUs"])
    records.append({"footer": {"placings": [1, 1, 1], "reason": "MATCH_END_REASON_ABORTED", "rounds": 1, "seats": seats}})
    v = verify_log(_write(tmp_path / "aborted.jsonl", records))
    assert v.verdict is Verdict.OK, v.detail
    assert any("aborted the match in round 1, turn 5" in n for n in v.notes)
    records[-1]["footer"]["placings"] = [1, 2, 2]
    assert verify_log(_write(tmp_path / "aborted2.jsonl", records)).verdict is Verdict.DIVERGED


# ---------------------------------------------------------------- unreadable logs


def _corrupt_json(lines: list[str]) -> int:
    lines[9] = lines[9][:50]  # a line cut short inside the file
    return 10


def _schema_version(lines: list[str]) -> int:
    lines[0] = lines[0].replace('"schemaVersion": 1', '"schemaVersion": 7')
    return 1


def _bad_card(lines: list[str]) -> int:
    lines[2] = lines[2].replace('"drawnCard": "6h"', '"drawnCard": "Zz"')
    return 3


def _no_payload(lines: list[str]) -> int:
    lines[4] = json.dumps({"event": {"round": 1, "turn": 1}})
    return 5


def _after_footer(lines: list[str]) -> int:
    lines.append(lines[5])
    return len(lines)


def _blank_line(lines: list[str]) -> int:
    lines[6] = ""
    return 7


UNREADABLE: list[tuple[str, Callable[[list[str]], int], str]] = [
    ("corrupt JSON", _corrupt_json, "not a log record"),
    ("an unknown schema version", _schema_version, "schema version 7"),
    ("a card that is not a card", _bad_card, "'Zz' is not a card"),
    ("an event with no payload", _no_payload, "no payload"),
    ("a line after the footer", _after_footer, "after the footer"),
    ("an empty line", _blank_line, "empty line"),
]


@pytest.mark.parametrize(("what", "edit", "message"), UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_unreadable_logs_name_file_and_line(
    logs: dict[str, Path], tmp_path: Path, what: str, edit: Callable[[list[str]], int], message: str
) -> None:
    lines = lines_of(logs["standard"])
    line = edit(lines)
    path = write_lines(tmp_path / "bad.jsonl", lines)
    v = verify_log(path)
    assert v.verdict is Verdict.UNREADABLE, f"{what}: {v.detail}"
    assert f"{path}:{line}" in v.detail and message in v.detail, v.detail


def test_files_that_are_not_logs(logs: dict[str, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    binary = tmp_path / "binary.jsonl"
    # A whole header first: lines are read in order, so line 1 must be right to get to line 2.
    binary.write_bytes(logs["standard"].read_bytes().split(b"\n")[0] + b"\n\xff\xfe\n")
    missing = tmp_path / "missing.jsonl"
    for path, message in ((empty, "empty"), (binary, f"{binary}:2: not UTF-8"), (missing, "cannot read")):
        v = verify_log(path)
        assert v.verdict is Verdict.UNREADABLE and message in v.detail, v.detail


# ---------------------------------------------------------------- folders and exit codes


def test_a_folder_of_logs(logs: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "tournament"
    (folder / "logs").mkdir(parents=True)
    lines = lines_of(logs["standard"])
    write_lines(folder / "logs" / "r1_t1_g1.jsonl", lines)
    write_lines(folder / "logs" / "r1_t1_g2.jsonl", lines[:20])
    (folder / "tournament.db").write_text("not a log")
    results = verify_folder(folder)
    assert [(r.path.name, r.verdict) for r in results] == [("r1_t1_g1.jsonl", Verdict.OK), ("r1_t1_g2.jsonl", Verdict.INCOMPLETE)]
    assert exit_code(results) == 3
    # A folder that holds the logs itself works too.
    assert [p.name for p in log_files(folder / "logs")] == ["r1_t1_g1.jsonl", "r1_t1_g2.jsonl"]


def test_exit_codes_go_by_the_most_serious_verdict() -> None:
    def v(verdict: Verdict) -> Verification:
        return Verification(Path("x"), verdict, "", 0, "")

    assert exit_code([]) == 0
    assert exit_code([v(Verdict.OK), v(Verdict.OK)]) == 0
    assert exit_code([v(Verdict.OK), v(Verdict.INCOMPLETE)]) == 3
    assert exit_code([v(Verdict.INCOMPLETE), v(Verdict.UNREADABLE)]) == 2
    assert exit_code([v(Verdict.UNREADABLE), v(Verdict.DIVERGED), v(Verdict.OK)]) == 1


def test_finding_a_match_in_a_tournament_folder(logs: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "t"
    (folder / "logs").mkdir(parents=True)
    lines = lines_of(logs["standard"])
    a = write_lines(folder / "logs" / "r1_t1_g1.jsonl", lines)
    b = write_lines(folder / "logs" / "r1_t1_g2.jsonl", [lines[0].replace("fixture-standard", "other-id"), *lines[1:]])
    assert find_match_log(folder, "r1/t1/g1") == a  # the match key
    assert find_match_log(folder, "r1_t1_g2") == b  # the file's stem
    assert find_match_log(folder, "r1_t1_g2.jsonl") == b  # its name
    assert find_match_log(folder, "other-id") == b  # the header's match id
    with pytest.raises(MatchNotFound, match="there are: r1_t1_g1, r1_t1_g2"):
        find_match_log(folder, "r9/t9/g9")
    write_lines(folder / "logs" / "copy.jsonl", lines)
    with pytest.raises(MatchNotFound, match=r"2 logs .* have match id 'fixture-standard'"):
        find_match_log(folder, "fixture-standard")
    with pytest.raises(MatchNotFound, match="no match logs"):
        find_match_log(tmp_path / "nothing-here", "x")


# ---------------------------------------------------------------- the variants (docs/rules.md, "Variants")


@pytest.mark.parametrize("name", ["option", "dummy", "bicycle", "cadillac"])
def test_variant_logs_verify(logs: dict[str, Path], name: str) -> None:
    v = verify_log(logs[name])
    assert v.verdict is Verdict.OK, v.detail
    assert v.match_id == f"fixture-{name}" and v.divergence is None
    for seat in (None, 0, 1):
        assert build_replay(load_log(logs[name]), seat).ok


@pytest.mark.parametrize("name", ["real-bicycle", "real-mix"])
def test_real_variant_logs_verify_and_replay_in_every_view(real_logs: dict[str, Path], name: str) -> None:
    """Logs written by referee.match for the variants (the widow and the pot; the dummy, the
    dealer's option and the call for a pot) verify, and replay from every point of view."""
    v = verify_log(real_logs[name])
    assert v.verdict is Verdict.OK, v.detail
    assert "chips" in v.detail
    for seat in (None, 0, 1, 2):
        assert build_replay(load_log(real_logs[name]), seat).ok


def _widow_card(rs: list[Record]) -> int:
    i = _find(rs, _event("deal"), nth=1)
    deal = rs[i]["event"]["deal"]
    used = set(deal["widow"]) | {c for h in deal["hands"] for c in h["cards"]}
    deal["widow"][1] = next(c for c in deal["deck"] if c not in used)  # an unused card of the deck
    return i


def _widow_swap_taken(rs: list[Record]) -> int:
    i = _find(rs, _action("SWAP_WIDOW"), nth=2)
    act = rs[i]["event"]["action"]
    deal = rs[_find(rs, _event("deal"))]["event"]["deal"]
    act["action"]["widowCard"] = next(c for c in deal["deck"][-10:] if c != act["action"]["widowCard"])
    act["takenCards"] = [act["action"]["widowCard"]]
    return i


def _dummy_card(rs: list[Record]) -> int:
    i = _find(rs, _event("deal"))
    deal = rs[i]["event"]["deal"]
    deal["dummy"][0] = deal["deck"][-1]
    return i


def _dummy_taken(rs: list[Record]) -> int:
    i = _find(rs, _action("SWAP_HAND"))
    act = rs[i]["event"]["action"]
    taken = act["takenCards"]
    act["takenCards"] = [*taken[:2], "2c" if "2c" not in taken else "3c"]
    return i


def _ante(rs: list[Record]) -> int:
    i = _find(rs, _event("ante"), nth=1)
    rs[i]["event"]["ante"]["paid"][0]["count"] += 1
    return i


def _pot_award(rs: list[Record]) -> int:
    i = _find(rs, _event("potAward"))
    won = rs[i]["event"]["potAward"]["won"]
    won[0]["seat"] = (won[0].get("seat", 0) + 1) % 3
    return i


def _pot_remainder(rs: list[Record]) -> int:
    i = _find(rs, _event("potAward"), nth=1)
    rs[i]["event"]["potAward"]["remainder"] = rs[i]["event"]["potAward"].get("remainder", 0) + 1
    return i


def _chips_after(rs: list[Record]) -> int:
    i = _find(rs, _event("roundEnd"), nth=1)
    rs[i]["event"]["roundEnd"]["chipsAfter"][2] -= 1
    return i


def _footer_chips(rs: list[Record]) -> int:
    rs[-1]["footer"]["chips"][0] += 1
    return len(rs) - 1


def _dealer_swap_card(rs: list[Record]) -> int:
    i = _find(rs, _action("SWAP_UPCARD"))
    act = rs[i]["event"]["action"]
    act["takenCards"] = ["2c" if act["takenCards"][0] != "2c" else "3c"]
    return i


def _call_removed_ban(rs: list[Record]) -> int:
    i = _find(rs, _action("CALL"))
    act = rs[i]["event"]["action"]
    act["action"]["kind"] = "ACTION_KIND_KNOCK"
    return i


VARIANT_TAMPERING: list[tuple[str, str, Callable[[list[Record]], int], str]] = [
    ("a widow card of a deal", "bicycle", _widow_card, "deal.widow[1] is"),
    ("the widow card a swap takes", "bicycle", _widow_swap_taken, "is not in the widow"),
    ("a dummy card of a deal", "dummy", _dummy_card, "deal.dummy[0] is"),
    ("the cards a dummy swap takes", "dummy", _dummy_taken, "swap hand took"),
    ("an ante", "bicycle", _ante, "ante.paid[0].count is 2 in the log; the game model gives 1"),
    ("the winner of a pot", "bicycle", _pot_award, "potAward.won[0].seat"),
    ("a pot's remainder", "dummy", _pot_remainder, "potAward.remainder"),
    ("a chips figure after a round", "dummy", _chips_after, "roundEnd.chipsAfter[2]"),
    ("a chips figure in the footer", "bicycle", _footer_chips, "chips [1, 1, -2] in the log"),
    ("the up-card a dealer's swap takes", "option", _dealer_swap_card, "swap upcard 9s took 2c"),
    ("a call made a knock", "option", _call_removed_ban, "is illegal"),
]


@pytest.mark.parametrize(("what", "name", "edit", "message"), VARIANT_TAMPERING, ids=[t[0] for t in VARIANT_TAMPERING])
def test_variant_tampering_is_caught_at_its_line(
    logs: dict[str, Path], tmp_path: Path, what: str, name: str, edit: Callable[[list[Record]], int], message: str
) -> None:
    _caught_at_its_line(logs, tmp_path, what, name, edit, message)


def test_a_pot_match_verifies_with_its_chips(logs: dict[str, Path]) -> None:
    v = verify_log(logs["bicycle"])
    assert v.verdict is Verdict.OK
    footer = load_log(logs["bicycle"]).footer
    assert footer is not None and footer.reason == "pot_rounds" and len(footer.chips) == 3
    assert v.detail.endswith("chips " + " ".join(f"{c:+d}" if c else "0" for c in footer.chips))
