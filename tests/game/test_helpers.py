"""The stacked-deck helper itself: the scenarios of the other tests rely on it."""

from __future__ import annotations

import pytest

from referee.game import DECK, Match, RecordedChance, cards, is_thirty_one
from tests.game.helpers import FILLER, ScriptedChance, deal_order, stacked_deck, stacked_match


def test_layout_round_one() -> None:
    deck = stacked_deck(
        3, hands={0: "Ah Kh Qh", 1: "2c 3c 4c", 2: "5d 6d 7d"}, upcard="9s", stock="Ts Js"
    )
    assert sorted(deck) == list(DECK)
    # One card at a time from the dealer's left (seat 0 in round 1).
    assert deck[:9] == list(cards("Ah 2c 5d Kh 3c 6d Qh 4c 7d"))
    assert deck[9:12] == list(cards("9s Ts Js"))


def test_the_model_deals_what_was_stacked() -> None:
    deck = stacked_deck(4, hands={1: "As Ks 2d", 3: "7c"}, upcard="9h", stock="3d 8s")
    m = Match(4, chance=RecordedChance({1: deck}))
    assert set(m.hand(1)) == set(cards("As Ks 2d"))
    assert cards("7c")[0] in m.hand(3)
    assert m.pile == list(cards("9h"))
    assert m.stock[-1] == cards("3d")[0] and m.stock[-2] == cards("8s")[0]
    assert len(m.stock) == 52 - 12 - 1
    assert m.current == 0 and m.dealer == 3


def test_other_dealer_and_seats_in() -> None:
    assert deal_order(4, 3) == [0, 1, 2, 3]
    assert deal_order(4, 1) == [2, 3, 0, 1]
    assert deal_order(5, 1, seats_in=[1, 2, 4]) == [2, 4, 1]
    deck = stacked_deck(5, hands={4: "Ah Kh 2c"}, dealer=1, seats_in=[1, 2, 4])
    assert [deck[1], deck[4], deck[7]] == list(cards("Ah Kh 2c"))
    with pytest.raises(ValueError, match="dealer"):
        deal_order(4, 2, seats_in=[0, 1])
    with pytest.raises(ValueError, match="seat 3"):
        stacked_deck(4, hands={3: "Ah"}, dealer=1, seats_in=[0, 1, 2])


def test_bad_stacks() -> None:
    with pytest.raises(ValueError, match="Ah"):
        stacked_deck(2, hands={0: "Ah Kh 2c"}, upcard="Ah")
    with pytest.raises(ValueError, match="three"):
        stacked_deck(2, hands={0: "Ah Kh 2c 3c"})


@pytest.mark.parametrize("players", range(2, 10))
def test_filler_deals_no_31_at_any_table(players: int) -> None:
    k = players
    for deck in (list(FILLER), stacked_deck(players)):
        for j in range(k):
            assert not is_thirty_one([deck[j], deck[j + k], deck[j + 2 * k]])
    m = stacked_match(players)
    assert m.round_no == 1 and not m.rounds


def test_scripted_chance_records_restocks() -> None:
    ch = ScriptedChance(restocks={(1, 0): list(cards("3c 2c"))})
    assert ch.restock(1, 0, list(cards("2c 3c"))) == list(cards("3c 2c"))
    assert ch.restock(1, 1, list(cards("4c 5c"))) == list(cards("4c 5c"))
    assert [c[:2] for c in ch.restock_calls] == [(1, 0), (1, 1)]
