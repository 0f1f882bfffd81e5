"""The widow (``draw="widow"``; docs/rules.md, "Variants"), sentence by sentence."""

from __future__ import annotations

import pytest

from referee.game import (
    KNOCK,
    ActionRecord,
    DealRecord,
    EventKind,
    IllegalActionError,
    PublicEvent,
    RoundEnd,
    Rules,
    card,
    cards,
    swap_widow,
)
from referee.game.knowledge import knowledge
from tests.game.helpers import play, stacked_deck, stacked_match

WIDOW = Rules(draw="widow")
HANDS = {0: "2c 3d 5h", 1: "Ah Kh 4c", 2: "As Ks 4d"}


def widow_match(**options: object):  # type: ignore[no-untyped-def]
    return stacked_match(3, stacked_deck(3, hands=HANDS, widow="Qh 9c 9d"), WIDOW, **options)


def test_the_deal_three_face_up_no_up_card_stock_or_pile() -> None:
    m = widow_match()
    assert m.widow == list(cards("Qh 9c 9d"))
    assert m.stock == [] and m.pile == [] and len(m.unused) == 52 - 9 - 3
    (deal,) = m.take_records()
    assert isinstance(deal, DealRecord)
    assert deal.upcard is None and deal.widow == tuple(cards("Qh 9c 9d"))
    assert len(deal.deck) == 52  # the whole shuffled deck is still recorded
    obs = m.observation(1)
    assert obs.widow == tuple(cards("Qh 9c 9d")) and obs.stock_size == 0 and obs.discard_pile == ()
    k = knowledge(obs)
    assert set(cards("Qh 9c 9d")) <= k.public and not k.public & k.hidden
    assert k.upcard is None
    # The unused cards are hidden from every seat.
    assert set(m.unused) <= k.hidden


def test_knock_or_swap_and_nothing_else() -> None:
    m = widow_match(knock_ban="none")
    acts = list(m.legal_actions())
    assert acts == [KNOCK, *(swap_widow(h, w) for h in m.hands[0] for w in m.widow)]
    for text, words in [
        ("draw stock", "widow game"),
        ("draw discard", "widow game"),
        ("pass", "widow game"),
        ("discard 2c", "no discarding"),
        ("swap widow Ah 9c", "not in the hand"),
        ("swap widow 2c Ah", "not in the widow"),
        ("swap hand", "no dummy"),
    ]:
        with pytest.raises(IllegalActionError, match=words):
            play(m, text)
    # knock_ban applies: no knock on the first turn by default.
    assert KNOCK not in widow_match().legal_actions()


def test_a_swap_is_public_and_any_widow_card_may_be_taken() -> None:
    m = widow_match()
    m.take_records()
    play(m, "0: swap widow 2c Qh")
    assert set(m.hand(0)) == set(cards("Qh 3d 5h")) and set(m.widow) == set(cards("2c 9c 9d"))
    ev = PublicEvent(EventKind.SWAP_WIDOW, 0, card("2c"), card("Qh"))
    assert m.history == [ev]
    assert m.take_records() == [ActionRecord(1, 0, 0, swap_widow(card("2c"), card("Qh")), card("2c"), card("Qh"))]
    k = knowledge(m.observation(1))
    assert card("Qh") in k.known[0] and card("2c") in k.public
    # The card just put there may be taken by the next player.
    play(m, "1: swap widow 4c 2c")
    assert card("2c") in m.hand(1) and card("4c") in m.widow


def test_a_swap_to_31_is_a_blitz() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, widow="Qh 9c 9d"), WIDOW)
    play(m, "0: swap widow 2c 9c", "1: swap widow 4c Qh")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.thirty_one == (1,) and r.turns == 2
    assert set(r.widow) == set(cards("2c 4c 9d"))


def test_natural_31s_are_checked_on_the_players_hands_only() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, widow="Ac Kc Qc"), WIDOW)
    assert not m.rounds


def test_after_a_knock_one_more_turn_each_then_the_showdown() -> None:
    m = widow_match(knock_ban="none")
    play(m, "0: knock", "1: swap widow 4c 9c")
    assert m.round_no == 1 and m.turns_left == 1
    play(m, "2: swap widow 4d 9d")
    (r,) = m.rounds
    assert r.end is RoundEnd.KNOCK and r.knocker == 0 and r.turns == 3
    assert r.values == {0: 5, 1: 21, 2: 21} and r.lives_lost == {0: 2}


def test_max_turns_per_round_ends_an_endless_round() -> None:
    m = widow_match(max_turns_per_round=4)
    play(m, "0: swap widow 2c Qh", "1: swap widow 4c 2c", "2: swap widow 4d 4c", "0: swap widow 3d 4d")
    (r,) = m.rounds
    assert r.end is RoundEnd.MAX_TURNS and r.showdown and r.turns == 4 and r.knocker is None


def test_empty_stock_does_not_apply() -> None:
    m = widow_match(empty_stock="reshuffle")
    for _ in range(30):
        if m.round_no != 1:
            break
        s = m.current
        play(m, f"swap widow {m.hands[s][0]} {m.widow[0]}")
        assert not any(e.kind is EventKind.RESTOCK for e in m.history)
