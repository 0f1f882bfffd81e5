"""Knocking under the gun (``CALL``; docs/rules.md, "Variants"), sentence by sentence."""

from __future__ import annotations

import pytest

from referee.game import (
    CALL,
    KNOCK,
    EventKind,
    IllegalActionError,
    PublicEvent,
    RoundEnd,
    Rules,
    swap_widow,
)
from tests.game.helpers import idle_turn, play, stacked_deck, stacked_match

UTG = Rules(under_the_gun=True)
HANDS = {0: "2c 3d 5h", 1: "Ah Kh 4c", 2: "As Ks 4d"}


def test_call_under_knock_ban_and_min_knock() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS), UTG, min_knock=21)
    assert m.turn == 0 and CALL in m.legal_actions() and KNOCK not in m.legal_actions()
    m.take_records()
    play(m, "0: call")
    (r,) = m.rounds
    # An immediate showdown; nobody else had a turn; the caller scored as the knocker.
    assert r.end is RoundEnd.CALL and r.showdown and r.knocker == 0 and r.turns == 1
    assert r.values == {0: 5, 1: 21, 2: 21}
    assert r.lives_lost == {0: 2}  # knocker_alone_loss
    assert m.round_no == 2


@pytest.mark.parametrize(("tied", "loss"), [("double", 2), ("safe", 0), ("single", 1)])
def test_knocker_tied_applies_to_the_caller(tied: str, loss: int) -> None:
    hands = {0: "Ah Kh 4c", 1: "As Ks 4d", 2: "Ad Kd 4h"}
    m = stacked_match(3, stacked_deck(3, hands=hands), UTG, knocker_tied=tied)
    play(m, "0: call")
    (r,) = m.rounds
    expected = {1: 1, 2: 1} | ({0: loss} if loss else {})
    assert r.lives_lost == expected


def test_call_only_on_the_very_first_turn() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS), UTG)
    idle_turn(m)
    assert m.current == 1 and CALL not in m.legal_actions()
    with pytest.raises(IllegalActionError, match="first turn"):
        play(m, "1: call")
    with pytest.raises(IllegalActionError, match="under_the_gun=false"):
        play(stacked_match(3, stacked_deck(3, hands=HANDS)), "0: call")


def test_call_and_knock_are_distinct_when_both_are_allowed() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS), UTG, knock_ban="none")
    acts = m.legal_actions()
    assert CALL in acts and KNOCK in acts
    play(m, "0: knock")
    assert m.history[-1] == PublicEvent(EventKind.KNOCK, 0) and m.round_no == 1


def test_call_is_public_and_counts_as_a_turn() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS), UTG, max_turns_per_round=1)
    play(m, "0: call")
    (r,) = m.rounds
    assert r.end is RoundEnd.CALL and r.turns == 1


def test_call_in_the_widow_game() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, widow="9c 9d 9h"), UTG, draw="widow")
    acts = m.legal_actions()
    assert CALL in acts and swap_widow(*m.hands[0][:1], m.widow[0]) in acts
    play(m, "0: call")
    assert m.rounds[0].end is RoundEnd.CALL
