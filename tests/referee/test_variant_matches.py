"""Real matches under each variant (docs/rules.md, "Variants"): sample bots as processes over
gRPC, through the referee, into a log that walks through the game model without its seed;
a tampered variant log is caught at its line; faults in the variants' new decisions get
their default actions; plain logs still read as they did."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.bots import close_bots, start_bots
from referee.game import Rules
from referee.log import SCHEMA_VERSION, VARIANT_SCHEMA_VERSION, read_log, replay_log, walk_log
from referee.match import MatchConfig, MatchOutcome, play_match
from referee.tournament.tasks import outcome_to_result

from .conftest import FAST_TC, hostile, run

# Its module fixtures start bot processes: its tests share one test process, to start them once.
pytestmark = pytest.mark.xdist_group("test_variant_matches")

VARIANTS: dict[str, Rules] = {
    "dealer_option": Rules(dealer_option=True),
    "under_the_gun": Rules(under_the_gun=True),
    "dummy": Rules(dummy=True),
    "widow": Rules(draw="widow"),
    "pot": Rules(scoring="pot", pot_rounds=5, ante=2),
    "cadillac": Rules.preset("cadillac"),
    "bicycle": Rules.preset("bicycle"),
    "all_three": Rules.build("pagat", {"dummy": True, "dealer_option": True, "under_the_gun": True}),
    "plain": Rules(),
}


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[MatchOutcome, Path]]:
    """One match per variant, seats random, greedy, random (the sample bots, started once)."""
    folder = tmp_path_factory.mktemp("variant-logs")

    async def go() -> dict[str, tuple[MatchOutcome, Path]]:
        handles = await start_bots(["random", "greedy"])
        try:
            r, g = handles
            out = {}
            for i, (name, rules) in enumerate(VARIANTS.items()):
                path = folder / f"{name}.jsonl"
                outcome = await play_match([r, g, r], seed=100 + i, config=MatchConfig(rules=rules), log_path=path)
                out[name] = (outcome, path)
            return out
        finally:
            await close_bots(handles)

    return run(go())


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _events(path: Path) -> list[dict[str, Any]]:
    return [x["event"] for x in _lines(path) if "event" in x]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_variant_plays_to_the_end_and_its_log_verifies_without_the_seed(
    name: str, played: dict[str, tuple[MatchOutcome, Path]]
) -> None:
    outcome, path = played[name]
    assert outcome.faults == ()
    log = read_log(path)
    assert log.header.rules == VARIANTS[name]
    assert log.header.schema_version == (SCHEMA_VERSION if name in ("plain", "cadillac") else VARIANT_SCHEMA_VERSION)
    walk = walk_log(log)
    assert walk.divergence is None, str(walk.divergence)
    result = replay_log(path)
    assert result.complete and result.placings == outcome.placings and result.winner == outcome.winner
    assert [r.end for r in result.rounds] == [r.end for r in outcome.rounds]
    footer = log.footer
    assert footer is not None
    pot = VARIANTS[name].scoring == "pot"
    assert footer.chips == outcome.chips and (len(footer.chips) == 3) == pot
    assert footer.pot_left == outcome.pot_left
    if pot:
        assert outcome.reason == "pot_rounds" and footer.rounds == (VARIANTS[name].pot_rounds or 9)
        assert sum(outcome.chips) == -outcome.pot_left
        seats = outcome_to_result(outcome)["seats"]
        assert [s["chips"] for s in seats] == list(outcome.chips)
    else:
        assert "chips" not in outcome_to_result(outcome)["seats"][0]


def test_the_variants_decisions_all_occur(played: dict[str, tuple[MatchOutcome, Path]]) -> None:
    kinds: Counter[str] = Counter()
    phases: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    for name, (_, path) in played.items():
        if name == "plain":
            continue
        for ev in _events(path):
            payload = next(k for k in ev if k not in ("round", "turn"))
            lines[payload] += 1
            if payload == "action":
                kinds[ev["action"]["action"]["kind"]] += 1
                phases[ev["action"]["phase"]] += 1
    for kind in ("SWAP_UPCARD", "CALL", "SWAP_HAND", "SWAP_WIDOW", "PASS", "KNOCK", "DISCARD"):
        assert kinds[f"ACTION_KIND_{kind}"] > 0, kinds
    assert phases["PHASE_DEALER_OPTION"] > 0 and phases["PHASE_UNSPECIFIED"] == 0
    assert lines["ante"] == lines["potAward"] > 0


def test_pot_lines_in_order(played: dict[str, tuple[MatchOutcome, Path]]) -> None:
    outcome, path = played["pot"]
    events = _events(path)
    for i, ev in enumerate(events):
        if "deal" in ev:
            assert "ante" in events[i + 1]
            paid = events[i + 1]["ante"]["paid"]
            assert all(p["count"] == 2 for p in paid)
        if "roundEnd" in ev:
            assert "potAward" in events[i - 1]
            assert ev["roundEnd"]["chipsAfter"] == list(outcome.rounds[ev["round"] - 1].chips_after)


def test_the_match_summary_shows_net_chips(played: dict[str, tuple[MatchOutcome, Path]]) -> None:
    from rich.console import Console

    from referee.cli.match import render_outcome

    outcome, _ = played["bicycle"]
    console = Console(width=200, record=True, color_system=None)
    console.print(render_outcome(outcome))
    text = console.export_text()
    assert "net chips" in text and "chips after" in text and "pot won" in text
    assert " ".join(f"{c:+d}" for c in outcome.chips) in text


# ---------------------------------------------------------------- tampering


def _first(lines: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> int:
    return next(i for i, x in enumerate(lines) if test(x))


def _action(kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda x: x.get("event", {}).get("action", {}).get("action", {}).get("kind") == f"ACTION_KIND_{kind}"


def _tamper_widow(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, lambda x: "deal" in x.get("event", {}))
    widow = lines[i]["event"]["deal"]["widow"]
    widow[0], widow[1] = widow[1], widow[0]
    return i


def _tamper_ante(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, lambda x: "ante" in x.get("event", {}))
    lines[i]["event"]["ante"]["paid"][1]["count"] = 0
    return i


def _tamper_chips_after(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, lambda x: "roundEnd" in x.get("event", {}))
    lines[i]["event"]["roundEnd"]["chipsAfter"][0] += 1
    return i


def _tamper_award(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, lambda x: "potAward" in x.get("event", {}))
    lines[i]["event"]["potAward"]["remainder"] += 1
    return i


def _tamper_footer_chips(lines: list[dict[str, Any]]) -> int:
    lines[-1]["footer"]["chips"][0] -= 1
    return len(lines) - 1


def _tamper_taken(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, _action("SWAP_WIDOW"))
    lines[i]["event"]["action"]["takenCards"] = ["2c"]
    return i


def _tamper_swap_widow_card(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, _action("SWAP_WIDOW"))
    deal = next(x for x in reversed(lines[:i]) if "deal" in x.get("event", {}))
    # The deck's last card: the widow game never deals it.
    lines[i]["event"]["action"]["action"]["widowCard"] = deal["event"]["deal"]["deck"][51]
    return i


def _tamper_phase(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, _action("SWAP_WIDOW"))
    lines[i]["event"]["action"]["phase"] = "PHASE_DISCARD"
    return i


def _tamper_no_phase(lines: list[dict[str, Any]]) -> int:
    i = _first(lines, _action("SWAP_WIDOW"))
    del lines[i]["event"]["action"]["phase"]
    return i


TAMPERS = {
    "a widow card": (_tamper_widow, "deal.widow[0]"),
    "an ante": (_tamper_ante, "ante.paid[1].count is 0 in the log; the game model gives 1"),
    "chips after a round": (_tamper_chips_after, "roundEnd.chipsAfter[0]"),
    "a pot's remainder": (_tamper_award, "potAward.remainder"),
    "the footer's chips": (_tamper_footer_chips, "chips ["),
    "a swap's taken card": (_tamper_taken, "took 2c"),
    "a widow card swapped": (_tamper_swap_widow_card, "is illegal"),
    "a decision's phase": (_tamper_phase, "in phase DISCARD"),
    "a missing phase (version 2)": (_tamper_no_phase, "names no phase"),
}


@pytest.mark.parametrize("what", list(TAMPERS))
def test_a_tampered_bicycle_log_is_caught_at_its_line(
    what: str, played: dict[str, tuple[MatchOutcome, Path]], tmp_path: Path
) -> None:
    _, path = played["bicycle"]
    lines = _lines(path)
    tamper, words = TAMPERS[what]
    index = tamper(lines)
    walk = walk_log(_write(tmp_path / "bad.jsonl", lines))
    assert walk.divergence is not None, what
    assert walk.divergence.at.line == index + 1, str(walk.divergence)
    assert words in walk.divergence.message, str(walk.divergence)


def test_a_tampered_dummy_swap_is_caught(played: dict[str, tuple[MatchOutcome, Path]], tmp_path: Path) -> None:
    _, path = played["dummy"]
    lines = _lines(path)
    i = _first(lines, _action("SWAP_HAND"))
    lines[i]["event"]["action"]["takenCards"][0] = "2c" if lines[i]["event"]["action"]["takenCards"][0] != "2c" else "3c"
    walk = walk_log(_write(tmp_path / "bad.jsonl", lines))
    assert walk.divergence is not None and walk.divergence.at.line == i + 1
    d = next(j for j, x in enumerate(lines) if "deal" in x.get("event", {}))
    lines = _lines(path)
    lines[d]["event"]["deal"]["dummy"] = lines[d]["event"]["deal"]["dummy"][::-1]
    walk = walk_log(_write(tmp_path / "bad2.jsonl", lines))
    assert walk.divergence is not None and walk.divergence.at.line == d + 1
    assert "deal.dummy[0]" in walk.divergence.message


def test_a_tampered_dealers_option_is_caught(played: dict[str, tuple[MatchOutcome, Path]], tmp_path: Path) -> None:
    _, path = played["dealer_option"]
    lines = _lines(path)
    i = _first(lines, _action("SWAP_UPCARD"))
    lines[i]["event"]["action"]["takenCards"] = []
    walk = walk_log(_write(tmp_path / "bad.jsonl", lines))
    assert walk.divergence is not None and walk.divergence.at.line == i + 1
    assert "took none" in walk.divergence.message


# ---------------------------------------------------------------- older logs


_ADDED = {"phase", "takenCards", "dummy", "widow", "potWinners", "highCardTieBreak", "chipsAfter", "chips", "potLeft", "widowCard"}


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in _ADDED}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def test_a_plain_log_as_an_older_referee_wrote_it_still_verifies(
    played: dict[str, tuple[MatchOutcome, Path]], tmp_path: Path
) -> None:
    outcome, path = played["plain"]
    lines = _lines(path)
    assert lines[0]["header"]["schemaVersion"] == 1
    old = [_strip(x) for x in lines]
    # The header's rules lose the variants' fields too, as an older referee wrote them.
    for key in ("dealerOption", "underTheGun", "draw", "scoring", "potRounds", "ante"):
        old[0]["header"]["rules"].pop(key)
    result = replay_log(_write(tmp_path / "old.jsonl", old))
    assert result.complete and result.placings == outcome.placings


# ---------------------------------------------------------------- faults in the new decisions


def test_default_actions_in_the_variants_new_decisions(tmp_path: Path) -> None:
    """A bot that answers garbage is played for by the referee: PASS at the dealer's option;
    in the widow game a knock if legal, else the widow swap leaving the best hand; then it
    forfeits, and the pot match goes on without it."""

    async def go() -> tuple[MatchOutcome, MatchOutcome]:
        handles = await start_bots([hostile("random", "--seed", 3), hostile("garbage")])
        try:
            r, bad = handles
            option = await play_match(
                [r, r, bad], seed=7, config=MatchConfig(rules=Rules(dealer_option=True), time_control=FAST_TC),
                log_path=tmp_path / "option.jsonl",
            )
            widow = await play_match(
                [bad, r, r], seed=8,
                config=MatchConfig(rules=Rules.build("bicycle", {"knock_ban": "first_lap"}), time_control=FAST_TC),
                log_path=tmp_path / "widow.jsonl",
            )
            return option, widow
        finally:
            await close_bots(handles)

    option, widow = run(go())
    # Only the garbage bot's faults: on a busy machine a well-behaved bot may miss one of
    # these short deadlines too (one strike, not a forfeit), and that is not what is tested.
    first = next(f for f in option.faults if f.seat == 2)
    assert str(first.default_action) == "pass"  # seat 2 deals round 1
    assert option.seats[2].forfeited
    bad_faults = [f for f in widow.faults if f.seat == 0]
    assert widow.seats[0].forfeited and len(bad_faults) == 3
    played_for = [str(f.default_action) for f in bad_faults if f.default_action is not None]
    assert played_for and played_for[0].startswith("swap widow")  # first lap: no knock yet
    assert widow.placings[0] == 3 and widow.reason == "pot_rounds" and len(widow.chips) == 3
    for name in ("option.jsonl", "widow.jsonl"):
        walk = walk_log(tmp_path / name)
        assert walk.divergence is None, str(walk.divergence)


def test_default_action_choices() -> None:
    from referee.game import KNOCK, PASS, Match, hand_value
    from referee.match import default_action

    m = Match(3, Rules(dealer_option=True), seed=1)
    assert default_action(m) is PASS
    m = Match(3, Rules.preset("bicycle"), seed=1)
    assert default_action(m) == KNOCK  # knock_ban none: knocking keeps the hand
    m.apply(KNOCK)
    a = default_action(m)
    hand = m.hand(m.current)
    best = max(hand_value([a2.widow_card if c == a2.card else c for c in hand], m.rules) for a2 in m.legal_actions())  # type: ignore[misc]
    assert hand_value([a.widow_card if c == a.card else c for c in hand], m.rules) == best  # type: ignore[misc]
    m = Match(3, Rules(under_the_gun=True, dummy=True), seed=1)
    assert str(default_action(m)) == "draw stock"


def test_bots_are_told_their_chips_at_the_end(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"

    async def go() -> MatchOutcome:
        handles = await start_bots([hostile("spy", "--record", str(record))])
        try:
            return await play_match(handles * 2, seed=3, config=MatchConfig(rules=Rules.preset("bicycle")))
        finally:
            await close_bots(handles)

    outcome = run(go())
    assert len(outcome.chips) == 2 and outcome.reason == "pot_rounds"
    # The spy records decision requests: under the pot each carries every seat's chips.
    from google.protobuf import json_format
    from thirtyone.v1 import bot_pb2

    requests = [json_format.Parse(line, bot_pb2.DecisionRequest()) for line in record.read_text().splitlines()]
    assert requests and all(len(r.observation.chips) == 2 and r.observation.rounds_in_match == 6 for r in requests)
    assert all(len(r.observation.widow) == 3 for r in requests)

