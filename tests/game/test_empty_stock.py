"""An empty stock (docs/rules.md, "An empty stock"): reshuffle and showdown modes."""

from __future__ import annotations

import pytest

from referee.game import (
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    EventKind,
    IllegalActionError,
    Match,
    Phase,
    PublicEvent,
    RestockRecord,
    RoundEnd,
    Rules,
    card,
    cards,
)
from tests.game.helpers import idle_turn, play, stacked_deck, stacked_match


def run_down_stock(m: Match, leave: int = 0) -> None:
    """Idle turns until ``leave`` stock cards are left at a turn start (under reshuffle, an
    empty stock is refilled before the turn starts: ``leave=0`` then means "until the first
    restock")."""
    restocks = sum(1 for e in m.history if e.kind is EventKind.RESTOCK)
    r = m.round_no
    while len(m.stock) > leave:
        idle_turn(m)
        assert m.round_no == r
        if sum(1 for e in m.history if e.kind is EventKind.RESTOCK) > restocks:
            break
    assert m.phase is Phase.TURN_START


# ---------------------------------------------------------------- reshuffle


def test_reshuffle_at_the_start_of_the_turn_that_finds_the_stock_empty() -> None:
    deck = stacked_deck(2, hands={0: "Ah Kh 2c", 1: "9s 8s 2d"}, upcard="3c")
    m = stacked_match(2, deck)
    script = m.chance_script  # type: ignore[attr-defined]
    assert len(m.stock) == 45
    run_down_stock(m, leave=1)
    assert m.turn == 44 and m.current == 0
    play(m, "0: draw stock")
    # The stock has run out, but no turn has started yet: no reshuffle.
    assert m.stock == [] and script.restock_calls == []
    assert all(e.kind is not EventKind.RESTOCK for e in m.history)
    last = m.drawn
    assert last is not None
    pile_before = list(m.pile)
    m.take_records()
    play(m, f"0: discard {last}")
    # Seat 1's turn starts: the pile less its top is the new stock; the top stays.
    assert m.current == 1 and m.phase is Phase.TURN_START
    assert m.pile == [last]
    ((rnd, index, given),) = script.restock_calls
    assert (rnd, index) == (1, 0)
    assert list(given) == pile_before  # bottom first, the upcard first of all
    assert given[0] == card("3c")
    assert sorted(m.stock) == sorted(pile_before)
    assert len(m.stock) == 45
    assert m.history[-1] == PublicEvent(EventKind.RESTOCK, 1)
    recs = m.take_records()
    assert RestockRecord(1, 0, given) in recs
    assert len(m.cards_in_play()) == 52 and len(set(m.cards_in_play())) == 52
    # A turn goes on normally, knock included.
    assert set(m.legal_actions()) == {KNOCK, DRAW_STOCK, DRAW_DISCARD}


def test_new_stock_order_is_top_first_as_recorded() -> None:
    deck = stacked_deck(2, upcard="3c")
    pile = [card("3c"), *deck[7:]]  # upcard, then every stock card discarded in turn
    order = list(reversed(pile[:-1]))
    m = stacked_match(2, deck, restocks={(1, 0): order})
    run_down_stock(m)
    assert m.stock[-1] == order[0]  # the top
    play(m, "1: draw stock")
    assert m.drawn == order[0]
    recs = m.take_records()
    assert RestockRecord(1, 0, tuple(order)) in recs


def test_second_restock_gets_the_next_index() -> None:
    m = stacked_match(2, stacked_deck(2))
    script = m.chance_script  # type: ignore[attr-defined]
    run_down_stock(m)
    idle_turn(m)
    run_down_stock(m)
    idle_turn(m)
    assert [c[:2] for c in script.restock_calls] == [(1, 0), (1, 1)]
    assert m.round_no == 1


def test_reshuffle_during_the_last_lap() -> None:
    deck = stacked_deck(3, hands={0: "Ah Kh 2c", 1: "9s 8s 2d", 2: "Td 5d 3c"})
    m = stacked_match(3, deck)
    script = m.chance_script  # type: ignore[attr-defined]
    run_down_stock(m, leave=1)
    assert m.current == 2
    play(m, "2: knock")
    idle_turn(m)  # seat 0 draws the last card
    assert script.restock_calls and m.current == 1
    assert DRAW_STOCK in m.legal_actions() and KNOCK not in m.legal_actions()
    idle_turn(m)
    assert m.round_no == 2
    assert m.rounds[0].end is RoundEnd.KNOCK


def test_no_reshuffle_when_the_round_ends_as_the_stock_runs_out() -> None:
    m = stacked_match(2, stacked_deck(2))
    script = m.chance_script  # type: ignore[attr-defined]
    run_down_stock(m, leave=1)
    play(m, "0: knock")
    idle_turn(m)  # seat 1 takes the last card: the round is over
    assert m.round_no == 2 and script.restock_calls == []


# ---------------------------------------------------------------- showdown mode


@pytest.mark.parametrize(
    "rules", [Rules.preset("pagat"), Rules.build("standard", {"empty_stock": "showdown"})]
)
def test_showdown_mode_only_draw_discard_or_pass(rules: Rules) -> None:
    deck = stacked_deck(2, hands={0: "Ah Kh 2c", 1: "9s 8s 2d"})
    m = stacked_match(2, deck, rules)
    script = m.chance_script  # type: ignore[attr-defined]
    run_down_stock(m)
    assert m.current == 1 and m.stock == []
    assert set(m.legal_actions()) == {DRAW_DISCARD, PASS}
    with pytest.raises(IllegalActionError, match="stock is empty"):
        m.apply(DRAW_STOCK)
    with pytest.raises(IllegalActionError, match="empty"):
        m.apply(KNOCK)
    play(m, "1: pass")
    assert script.restock_calls == []
    (r,) = m.rounds
    assert r.end is RoundEnd.EMPTY_STOCK and r.showdown and r.knocker is None
    assert r.lives_lost == {1: 1}
    assert r.turns == 46


def test_showdown_mode_draw_discard_then_pass() -> None:
    deck = stacked_deck(2, hands={0: "Ah Kh 2c", 1: "9s 8s 2d"})
    m = stacked_match(2, deck, Rules.preset("pagat"))
    run_down_stock(m)
    top = m.pile[-1]
    play(m, "1: draw discard", "1: discard 2d")
    assert top in m.hand(1)
    assert m.current == 0 and set(m.legal_actions()) == {DRAW_DISCARD, PASS}
    play(m, "0: pass")
    assert m.rounds[0].end is RoundEnd.EMPTY_STOCK


def test_pass_is_illegal_while_the_stock_has_cards() -> None:
    for rules in (Rules.preset("pagat"), Rules()):
        m = stacked_match(2, stacked_deck(2), rules)
        with pytest.raises(IllegalActionError, match="passing"):
            m.apply(PASS)


@pytest.mark.parametrize(("knocker_hand", "expected"), [("2h 3d 4c", {2: 2}), ("9h 6h 2s", {1: 1})])
def test_showdown_mode_pass_in_the_last_lap_keeps_the_knocker(
    knocker_hand: str, expected: dict[int, int]
) -> None:
    deck = stacked_deck(3, hands={0: "Ah Kh 2c", 1: "9s 6s 2d", 2: knocker_hand})
    m = stacked_match(3, deck, Rules.preset("pagat"))
    run_down_stock(m, leave=1)
    play(m, "2: knock")
    idle_turn(m)  # seat 0 draws the last card
    assert m.current == 1 and m.stock == []
    assert set(m.legal_actions()) == {DRAW_DISCARD, PASS}
    play(m, "1: pass")
    (r,) = m.rounds
    assert r.end is RoundEnd.EMPTY_STOCK and r.knocker == 2 and r.showdown
    assert r.lives_lost == expected  # pagat: knocker alone loses 2; tied is safe


def test_showdown_mode_stock_runs_out_mid_lap_and_the_lap_goes_on() -> None:
    deck = stacked_deck(3, hands={0: "Ah Kh 2c", 1: "9s 6s 2d", 2: "Td 5d 3c"})
    m = stacked_match(3, deck, Rules.preset("pagat"))
    run_down_stock(m, leave=1)
    play(m, "2: knock")
    idle_turn(m)
    play(m, "1: draw discard", "1: discard 2d")
    assert m.round_no == 2
    assert m.rounds[0].end is RoundEnd.KNOCK
    assert set(m.rounds[0].hands[1]) == set(cards("9s 6s")) | {m.rounds[0].hands[1][-1]}
