"""The dummy hand (docs/rules.md, "Variants"), sentence by sentence."""

from __future__ import annotations

import pytest

from referee.game import (
    DRAW_DISCARD,
    KNOCK,
    PASS,
    SWAP_HAND,
    DealRecord,
    DummyState,
    EventKind,
    IllegalActionError,
    Phase,
    PublicEvent,
    RestockRecord,
    RoundEnd,
    Rules,
    card,
    cards,
)
from referee.game.knowledge import knowledge
from tests.game.helpers import idle_turn, play, stacked_deck, stacked_match

DUMMY = Rules(dummy=True)
HANDS = {0: "2c 3d 5h", 1: "Ah Kh 4c", 2: "As Ks 4d"}


def test_the_dummy_is_dealt_after_the_hands_and_before_the_up_card() -> None:
    deck = stacked_deck(3, hands=HANDS, dummy="Jc Qc 9c", upcard="Td", stock="8s")
    assert deck[9:13] == list(cards("Jc Qc 9c Td"))
    m = stacked_match(3, deck, DUMMY)
    assert m.dummy == list(cards("Jc Qc 9c")) and m.pile == [card("Td")]
    assert m.stock[-1] == card("8s") and len(m.stock) == 52 - 9 - 3 - 1
    (deal,) = m.take_records()
    assert isinstance(deal, DealRecord) and deal.dummy == tuple(cards("Jc Qc 9c"))
    assert deal.upcard == card("Td")


def test_natural_31s_are_checked_on_the_players_hands_only() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, dummy="Ac Kc Qc"), DUMMY)
    assert m.round_no == 1 and not m.rounds


def test_swap_on_the_first_turn_is_the_whole_turn() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, dummy="Jc Qc 9c"), DUMMY)
    acts = m.legal_actions()
    assert SWAP_HAND in acts and KNOCK not in acts  # knock_ban=first_turn: a swap is no knock
    m.take_records()
    play(m, "0: swap hand")
    assert m.hand(0) == tuple(cards("Jc Qc 9c"))
    assert m.face_up == list(cards("2c 3d 5h")) and m.dummy == [] and m.dummy_taker == 0
    assert m.turn == 1 and m.current == 1 and m.phase is Phase.TURN_START
    assert m.history == [PublicEvent(EventKind.SWAP_HAND, 0)]
    # The dummy is used up.
    assert SWAP_HAND not in m.legal_actions()
    with pytest.raises(IllegalActionError, match="already taken"):
        play(m, "1: swap hand")
    # Who sees what: the taker its new hand; everyone the old hand; nobody else the dummy.
    mine, theirs = m.observation(0), m.observation(1)
    assert mine.hand == tuple(cards("Jc Qc 9c"))
    for obs in (mine, theirs):
        assert obs.dummy_state is DummyState.TAKEN and obs.dummy_taker == 0
        assert obs.face_up == tuple(cards("2c 3d 5h"))
    assert not set(cards("Jc Qc 9c")) & set(repr(theirs).split("'"))
    k = knowledge(theirs)
    assert set(cards("2c 3d 5h")) <= k.public and not k.known[0]
    assert set(cards("Jc Qc 9c")) <= k.hidden


def test_a_face_down_dummy_is_nobodys() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, dummy="Jc Qc 9c"), DUMMY)
    for s in range(3):
        obs = m.observation(s)
        assert obs.dummy_state is DummyState.FACE_DOWN and obs.dummy_taker is None and obs.face_up == ()
        assert set(cards("Jc Qc 9c")) <= knowledge(obs).hidden
    assert Rules().dummy is False
    assert stacked_match(3, stacked_deck(3)).observation(0).dummy_state is DummyState.NONE


def test_a_swap_to_31_is_a_blitz() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, dummy="Ac Kc Qc"), DUMMY)
    play(m, "0: swap hand")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.thirty_one == (0,) and r.turns == 1
    assert r.face_up == tuple(cards("2c 3d 5h")) and r.dummy_taker == 0


def test_swap_in_the_last_lap_after_a_knock() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, dummy="Jc Qc 9c"), DUMMY, knock_ban="none")
    play(m, "0: knock")
    assert SWAP_HAND in m.legal_actions()
    play(m, "1: swap hand")
    assert m.turns_left == 1
    idle_turn(m)
    (r,) = m.rounds
    assert r.end is RoundEnd.KNOCK and r.hands[1] == tuple(cards("Jc Qc 9c"))
    assert r.values == {0: 5, 1: 29, 2: 21}
    assert r.lives_lost == {0: 2}


def test_swap_beside_draw_discard_and_pass_at_an_empty_stock_under_showdown() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, dummy="Jc Qc 9c"), DUMMY, empty_stock="showdown")
    while m.stock:
        idle_turn(m)
    assert m.round_no == 1
    assert list(m.legal_actions()) == [DRAW_DISCARD, PASS, SWAP_HAND]
    s = m.current
    play(m, "swap hand")
    assert m.dummy_taker == s and m.round_no == 1
    assert list(m.legal_actions()) == [DRAW_DISCARD, PASS]


def test_under_reshuffle_the_restock_comes_first_and_never_holds_the_face_up_hand() -> None:
    m = stacked_match(3, stacked_deck(3, hands=HANDS, dummy="Jc Qc 9c"), DUMMY)
    while not any(e.kind is EventKind.RESTOCK for e in m.history):
        idle_turn(m)
    # The turn that found the stock empty restocked before its player chose anything.
    assert m.history[-1].kind is EventKind.RESTOCK and m.stock
    assert SWAP_HAND in m.legal_actions()
    play(m, "swap hand")
    face_up = set(m.face_up)
    assert len(face_up) == 3
    # Play on through another restock: the face-up cards never join the pile or a stock.
    m.take_records()
    restocks = 0
    while m.round_no == 1:
        assert not face_up & set(m.pile) and not face_up & set(m.stock)
        idle_turn(m)
        restocks += sum(isinstance(x, RestockRecord) for x in m.take_records())
    assert restocks >= 1
    assert set(m.rounds[0].face_up) == face_up
