"""Card text on the wire is exactly rank then suit (or ``10`` for ``T``): anything else a bot
sends is MALFORMED, naming the text (issue #12, item 9).

People's input stays lenient (:meth:`Card.parse`); the referee does not guess what a bot meant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from referee import wire
from referee.game import DECK, card
from referee.match import MatchConfig, run_match

from .conftest import hostile

NOT_CARDS = ["ah", "AH", "aH", " 2c", "Ah ", "2c\n", "10H", "10", "1h", "T", "Ahh", "", "A♥"]


@pytest.mark.parametrize("text", NOT_CARDS)
def test_wire_refuses_all_but_the_canonical_text(text: str) -> None:
    with pytest.raises(wire.WireError) as info:
        wire.card_from_pb(text, "action.card")
    assert f"action.card: {text!r} is not a card" in str(info.value)


def test_wire_reads_every_canonical_card_and_the_ten_alias() -> None:
    assert [wire.card_from_pb(c.text) for c in DECK] == list(DECK)
    assert [wire.card_from_pb(f"10{s}") for s in "cdhs"] == [card(f"T{s}") for s in "cdhs"]


def test_people_may_still_type_loosely() -> None:
    # The CLI and the SDK's helpers read what people type; the strictness is the wire's.
    assert card("ah") == card(" Ah ") == card("AH") == card("Ah")
    assert card("10h") == card("Th")


def test_bots_sending_loose_card_text_get_malformed_faults(tmp_path: Path) -> None:
    # One real match over gRPC: each hostile seat sends its text once, at its first discard;
    # the last seat writes every ten it discards as "10x", which the referee must accept.
    loose = ["ah", "AH", " 2c", "Ah "]
    record = tmp_path / "tens.txt"
    bots = [hostile("card_text", "--card", text) for text in loose]
    bots.append(hostile("card_text", "--card", "ten", "--record", str(record), name="tens"))
    out = run_match(bots, seed=3, config=MatchConfig(max_strikes=3), log_path=tmp_path / "match.jsonl")

    for seat, text in enumerate(loose):
        faults = out.seats[seat].faults
        assert [f.kind for f in faults] == ["malformed"], (seat, faults)
        assert f"{text!r} is not a card" in faults[0].message
    # "10x" is a card: played as the ten it names, never a fault.
    sent = record.read_text().split()
    assert sent and all(t[:2] == "10" and len(t) == 3 for t in sent)
    assert out.seats[4].faults == ()
