"""The dealer's option on the up-card (docs/rules.md, "Variants"), sentence by sentence."""

from __future__ import annotations

import pytest

from referee.game import (
    CALL,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    ActionRecord,
    EventKind,
    IllegalActionError,
    Phase,
    PublicEvent,
    RoundEnd,
    Rules,
    card,
    swap_upcard,
)
from referee.game.knowledge import knowledge
from tests.game.helpers import idle_turn, play, stacked_deck, stacked_match

OPTION = Rules(dealer_option=True)
# Seat 2 deals round 1; seat 0 plays first.
DEALER_HAND = "Ah Kh 2c"


def test_the_dealer_decides_before_the_first_turn() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qd"), OPTION)
    assert m.phase is Phase.DEALER_OPTION and m.current == 2 and m.turn == 0
    assert list(m.legal_actions()) == [PASS, *(swap_upcard(c) for c in m.hands[2])]
    # Seat 0 may not act yet; the dealer may do nothing else.
    with pytest.raises(IllegalActionError, match="seat 2's turn"):
        play(m, "0: draw stock")
    for a in (DRAW_STOCK, DRAW_DISCARD, KNOCK, CALL):
        assert "dealer must first swap" in (m.why_illegal(a) or "")
    assert "not in the dealer's hand" in (m.why_illegal(swap_upcard(card("Qd"))) or "")


def test_keeping_the_hand_is_a_public_pass_and_not_a_turn() -> None:
    m = stacked_match(
        3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qd"), OPTION, max_turns_per_round=2
    )
    m.take_records()
    play(m, "2: pass")
    assert m.phase is Phase.TURN_START and m.current == 0
    assert m.turn == 0 and m.hand(2) == tuple(card(c) for c in DEALER_HAND.split())
    assert m.history == [PublicEvent(EventKind.DEALER_PASS, 2)]
    assert m.take_records() == [ActionRecord(1, 0, 2, PASS, None)]
    for s in range(3):
        assert m.observation(s).history == (PublicEvent(EventKind.DEALER_PASS, 2),)
    # It does not lift knock_ban=first_turn ...
    assert KNOCK not in m.legal_actions()
    # ... nor count towards max_turns_per_round: two turns still follow.
    idle_turn(m)
    assert m.round_no == 1
    idle_turn(m)
    (r,) = m.rounds
    assert r.end is RoundEnd.MAX_TURNS and r.turns == 2


def test_a_swap_puts_the_card_up_and_the_up_card_in_the_dealers_hand() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qd"), OPTION)
    m.take_records()
    play(m, "2: swap upcard 2c")
    assert set(m.hand(2)) == {card("Ah"), card("Kh"), card("Qd")}
    assert m.pile == [card("2c")]
    ev = PublicEvent(EventKind.SWAP_UPCARD, 2, card("2c"), card("Qd"))
    assert m.history == [ev]
    assert m.take_records() == [ActionRecord(1, 0, 2, swap_upcard(card("2c")), card("2c"), card("Qd"))]
    # Everyone sees both cards; the other seats know the dealer holds the old up-card.
    for s in (0, 1):
        obs = m.observation(s)
        assert obs.history == (ev,) and obs.discard_pile == (card("2c"),)
        k = knowledge(obs)
        assert card("Qd") in k.known[2] and {card("Qd"), card("2c")} <= k.seen
        assert k.upcard == card("Qd")
    assert m.turn == 0 and m.current == 0
    # The new up-card may be taken on the first turn like any up-card.
    assert DRAW_DISCARD in m.legal_actions()
    play(m, "0: draw discard", f"0: discard {m.hands[0][0]}")
    assert card("2c") in m.hand(0)


def test_a_swap_to_31_is_a_blitz() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qh"), OPTION)
    play(m, "2: swap upcard 2c")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.thirty_one == (2,) and r.turns == 0
    assert r.lives_lost == {0: 1, 1: 1}
    assert m.round_no == 2


def test_no_option_after_a_natural() -> None:
    # Seat 0 is dealt 31: the round ends at the deal, before the dealer's option.
    m = stacked_match(3, stacked_deck(3, hands={0: "As Ks Qs", 2: DEALER_HAND}, upcard="Qh"), OPTION)
    (r,) = m.rounds
    assert r.end is RoundEnd.NATURAL_31 and r.thirty_one == (0,) and r.turns == 0
    recs = m.take_records()
    assert not any(isinstance(x, ActionRecord) for x in recs)
    # The next round has its own option, for its own dealer (seat 0).
    assert m.round_no == 2 and m.phase is Phase.DEALER_OPTION and m.current == 0


def test_the_dealers_later_first_turn_is_still_its_first_under_first_lap() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: "Ah Kh 9c"}, upcard="Qd"), OPTION, knock_ban="first_lap")
    play(m, "2: swap upcard 9c")
    idle_turn(m)
    idle_turn(m)
    assert m.current == 2 and KNOCK not in m.legal_actions()
    idle_turn(m)
    assert m.current == 0 and KNOCK in m.legal_actions()


def test_a_swap_does_not_stop_a_call() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qd"), OPTION, under_the_gun=True)
    play(m, "2: swap upcard 2c")
    assert CALL in m.legal_actions()
    play(m, "0: call")
    (r,) = m.rounds
    assert r.end is RoundEnd.CALL and r.knocker == 0


def test_the_option_is_once_only() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qd"), OPTION)
    play(m, "2: pass")
    idle_turn(m)
    idle_turn(m)
    assert m.current == 2
    reason = m.why_illegal(swap_upcard(card("Ah")))
    assert reason is not None and "once" in reason
    with pytest.raises(IllegalActionError, match="no dealer's option"):
        stacked_match(3, stacked_deck(3)).apply(swap_upcard(card("2c")))


def test_a_dealer_who_forfeits_at_the_option() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qd"), OPTION)
    m.forfeit(2, "timeout")
    assert m.phase is Phase.TURN_START and m.current == 0 and m.turn == 0
    assert sorted(m.cards_in_play()) == sorted(set(m.cards_in_play())) and len(m.cards_in_play()) == 52


def test_a_waiting_seat_forfeits_at_the_option() -> None:
    m = stacked_match(3, stacked_deck(3, hands={2: DEALER_HAND}, upcard="Qd"), OPTION)
    m.forfeit(0, "crash")
    assert m.phase is Phase.DEALER_OPTION and m.current == 2
    play(m, "2: pass")
    assert m.current == 1
