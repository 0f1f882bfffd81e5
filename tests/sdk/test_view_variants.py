"""The View's helpers for the variants (docs/rules.md, "Variants"), against values worked out by
hand on stacked positions, and the action constructors ``sdk.swap_upcard``, ``sdk.swap_widow``,
``sdk.CALL`` and ``sdk.SWAP_HAND``."""

from __future__ import annotations

import dataclasses
from itertools import combinations

import pytest

import sdk
from referee.game import (
    DECK,
    Action,
    ActionKind,
    DummyState,
    Match,
    Phase,
    Rules,
    card,
    cards,
    hand_value,
)
from sdk.view import View, mean_hand_value, share_of_hands_below


def stacked(rules: Rules, players: int = 3, **fields: object) -> View:
    """The first decision of a match with some observation fields replaced."""
    m = Match(players, rules, seed=1)
    return View(dataclasses.replace(m.observation(m.current), **fields))  # type: ignore[arg-type]


def test_action_constructors_take_cards_or_text() -> None:
    assert sdk.swap_upcard("5c") == Action(ActionKind.SWAP_UPCARD, card("5c")) == sdk.swap_upcard(card("5c"))
    assert sdk.swap_upcard("10h") == sdk.swap_upcard("Th")
    assert sdk.swap_widow("2c", "KH") == Action(ActionKind.SWAP_WIDOW, card("2c"), card("Kh"))
    assert str(sdk.swap_widow(card("2c"), "Kh")) == "swap widow 2c Kh"
    assert Action(ActionKind.CALL) == sdk.CALL and Action(ActionKind.SWAP_HAND) == sdk.SWAP_HAND
    with pytest.raises(ValueError, match="not a card"):
        sdk.swap_widow("2c", "Kx")
    with pytest.raises(TypeError):
        sdk.swap_upcard(5)  # type: ignore[arg-type]


def test_dealers_option() -> None:
    view = stacked(Rules(dealer_option=True), hand=cards("Ah Kh 5c"), discard_pile=cards("Qh"))
    assert view.phase is Phase.DEALER_OPTION and view.is_dealer_option
    assert view.upcard == card("Qh") and view.value == 21
    # Ah Kh Qh = 31 (a blitz); Qh Kh 5c = 20; Ah Qh 5c = 21.
    assert view.value_if_upcard_swap("5c") == 31
    assert view.value_if_upcard_swap(card("Ah")) == 20
    assert view.value_if_upcard_swap("Kh") == 21
    assert view.best_upcard_swap() == (card("5c"), 31)
    # Equal values: the cheapest card goes.
    tie = stacked(Rules(dealer_option=True), hand=cards("2c 3d 9s"), discard_pile=cards("4h"))
    # 4h with 3d 9s: 9; with 2c 9s: 9; with 2c 3d: 4. Both 9s: the cheaper 2c goes.
    assert tie.best_upcard_swap() == (card("2c"), 9)
    assert "dealer's option" in repr(view)
    with pytest.raises(ValueError, match="up-card swap"):
        view.value_if_upcard_swap("Qh")


def test_widow() -> None:
    rules = Rules.preset("bicycle")
    view = stacked(rules, hand=cards("Ah 9h 2c"), widow=cards("Kh 7d 3s"))
    assert view.widow_game and view.widow == cards("Kh 7d 3s") and view.upcard is None
    assert view.value == 20
    assert view.value_if_widow_swap("2c", "Kh") == 30  # Ah 9h Kh
    assert view.value_if_widow_swap("9h", "Kh") == 21  # Ah Kh 2c
    assert view.value_if_widow_swap("Ah", "7d") == 9  # 9h 7d 2c
    swaps = view.widow_swaps()
    assert len(swaps) == 9 and max(swaps.values()) == 30
    assert view.best_widow_swap() == (card("2c"), card("Kh"), 30)
    # Equal values: the cheapest hand card goes, the dearest widow card comes.
    tie = stacked(rules, hand=cards("2c 3d 4s"), widow=cards("5h 6h 7h"))
    assert tie.best_widow_swap() == (card("2c"), card("7h"), 7)
    with pytest.raises(ValueError, match="widow swap"):
        view.value_if_widow_swap("Kh", "2c")
    stock = stacked(Rules())
    assert not stock.widow_game and stock.widow == ()
    with pytest.raises(ValueError, match="no widow"):
        stock.best_widow_swap()
    with pytest.raises(ValueError, match="no up-card"):
        view.best_upcard_swap()


def test_dummy_state_taker_and_face_up_hand() -> None:
    m = Match(3, Rules(dummy=True), seed=2)
    first = m.current
    view = View(m.observation(first))
    assert view.dummy_state is DummyState.FACE_DOWN and view.dummy_face_down
    assert view.can_swap_hand and view.dummy_taker is None and view.face_up == ()
    old = m.hand(first)
    m.apply(sdk.SWAP_HAND)
    nxt = View(m.observation(m.current))
    assert nxt.dummy_state is DummyState.TAKEN and not nxt.dummy_face_down
    assert nxt.dummy_taker == first and nxt.face_up == old
    assert not nxt.can_swap_hand and sdk.SWAP_HAND not in nxt.legal_actions
    plain = View(Match(3, Rules(), seed=2).observation(0))
    assert plain.dummy_state is DummyState.NONE and not plain.can_swap_hand


def test_call_only_on_the_first_turn() -> None:
    m = Match(3, Rules(under_the_gun=True), seed=3)
    view = View(m.observation(m.current))
    assert view.turn == 0 and view.can_call
    m.apply(sdk.DRAW_STOCK)
    m.apply(sdk.discard(View(m.observation(m.current)).best_discard()[0]))
    assert not View(m.observation(m.current)).can_call
    assert not View(Match(3, Rules(), seed=3).observation(0)).can_call


def test_chips_pot_and_rounds() -> None:
    m = Match(3, Rules(scoring="pot", ante=2), seed=4)
    view = View(m.observation(m.current))
    assert view.playing_for_pot
    assert view.chips == (-2, -2, -2) and view.my_chips == -2 and view.pot == 6
    assert view.rounds_in_match == 9 and view.rounds_left == 8  # 3 x 3 seats, this is round 1
    lives = View(Match(3, Rules(), seed=4).observation(0))
    assert not lives.playing_for_pot and lives.pot == 0 and lives.my_chips == 0
    assert lives.rounds_in_match == 0 and lives.rounds_left is None


def test_mean_and_share_of_random_hands() -> None:
    for rules in (Rules(), Rules(three_of_a_kind="off"), Rules.preset("cadillac")):
        values = [hand_value(h, rules) for h in combinations(DECK, 3)]
        assert mean_hand_value(rules) == pytest.approx(sum(values) / len(values))
        for v in (12, 19, 21, 30.5):
            assert share_of_hands_below(v, rules) == pytest.approx(sum(x < v for x in values) / len(values))
    assert 13 < mean_hand_value(Rules()) < 13.2
    assert stacked(Rules(dummy=True)).mean_hand_value == mean_hand_value(Rules())
