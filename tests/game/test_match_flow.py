"""Lives, the bus, sudden death, placings, max_rounds and the dealer (docs/rules.md)."""

from __future__ import annotations

from typing import Any

import pytest

from referee.game import Card, DealRecord, Match, MatchEnd, RoundEnd
from tests.game.helpers import idle_until_round_ends, play, stacked_deck, stacked_match

THIRTY_ONE = "Ah Kh Qh"


def natural(players: int, seat: int, dealer: int, seats_in: list[int] | None = None) -> list[Card]:
    """A deck that deals ``seat`` a 31 (everyone else loses a life at the deal)."""
    return stacked_deck(players, hands={seat: THIRTY_ONE}, dealer=dealer, seats_in=seats_in)


# ---------------------------------------------------------------- the bus


def test_bus_fourth_lost_life_eliminates() -> None:
    m = stacked_match(
        2, {1: natural(2, 1, 1), 2: natural(2, 1, 0), 3: natural(2, 1, 1), 4: natural(2, 1, 0)}
    )
    assert m.over and m.end is MatchEnd.LAST_PLAYER and m.winner == 1
    assert [r.tokens_after for r in m.rounds] == [(2, 3), (1, 3), (0, 3), (0, 3)]
    assert [r.eliminated for r in m.rounds] == [(), (), (), (0,)]
    assert m.placings == (2, 1)


def test_bus_zero_tokens_is_still_in() -> None:
    m = stacked_match(3, {1: natural(3, 0, 2), 2: natural(3, 1, 0)}, lives=1)
    r1, r2 = m.rounds[:2]
    assert r1.tokens_after == (1, 0, 0) and r1.eliminated == ()
    assert r2.tokens_after == (0, 0, 0) and r2.eliminated == (2,)
    assert m.seats_in == [0, 1] and not m.over
    assert m.placings == (1, 1, 3)


def test_no_bus_zero_tokens_eliminates() -> None:
    m = stacked_match(3, {1: natural(3, 0, 2), 2: natural(3, 1, 0)}, lives=2, bus=False)
    r1, r2 = m.rounds[:2]
    assert r1.tokens_after == (2, 1, 1) and r1.eliminated == ()
    assert r2.tokens_after == (1, 1, 0) and r2.eliminated == (2,)
    assert m.seats_in == [0, 1]


def knocker_alone_lowest(**options: Any) -> Match:
    deck = stacked_deck(3, hands={0: "2c 3d 4h", 1: "9s 6s 2d", 2: "Td 5d 3c"})
    m = stacked_match(3, deck, knock_ban="none", **options)
    play(m, "0: knock")
    idle_until_round_ends(m)
    return m


def test_losing_two_at_one_token_eliminates() -> None:
    m = knocker_alone_lowest(lives=1)
    (r,) = m.rounds
    assert r.lives_lost == {0: 2}
    assert r.eliminated == (0,) and r.tokens_after[0] == 0
    assert m.seats_in == [1, 2]


def test_losing_two_at_two_tokens_rides_the_bus() -> None:
    m = knocker_alone_lowest(lives=2)
    (r,) = m.rounds
    assert r.eliminated == () and r.tokens_after == (0, 2, 2)


def test_losing_two_at_two_tokens_without_bus_eliminates() -> None:
    m = knocker_alone_lowest(lives=2, bus=False)
    (r,) = m.rounds
    assert r.eliminated == (0,) and r.tokens_after[0] == 0


def test_family_rules_no_bus() -> None:
    m = stacked_match(
        2, {1: natural(2, 1, 1), 2: natural(2, 1, 0), 3: natural(2, 1, 1)}, rules=None, bus=False
    )
    assert m.over and m.winner == 1 and len(m.rounds) == 3
    assert m.rounds[-1].eliminated == (0,)


# ---------------------------------------------------------------- sudden death


def test_sudden_death_nobody_is_eliminated() -> None:
    deck1 = stacked_deck(2, hands={0: "Th 5h 2c", 1: "9s 6s 2d"})
    m = stacked_match(2, {1: deck1, 2: natural(2, 1, 0)}, lives=1, bus=False, max_turns_per_round=2)
    idle_until_round_ends(m)
    r1, r2 = m.rounds
    assert r1.end is RoundEnd.MAX_TURNS and r1.lives_lost == {0: 1, 1: 1}
    assert r1.sudden_death and r1.eliminated == ()
    assert r1.tokens_after == (0, 0)
    # At 0 tokens the next loss eliminates, even with bus=false.
    assert r2.end is RoundEnd.NATURAL_31 and r2.eliminated == (0,)
    assert m.over and m.winner == 1 and m.placings == (2, 1)


def test_sudden_death_on_the_bus_with_a_knocker() -> None:
    deck = stacked_deck(3, hands={0: "Th 5h 2c", 1: "9s 6s 2d", 2: "Td 5d 3c"})
    # Everyone starts at 1 life and loses more than that: the knocker 2, the others 1 each.
    m = stacked_match(3, deck, lives=1, knock_ban="none")
    m2 = stacked_match(3, deck, lives=1, knock_ban="none", bus=False)
    for mm in (m, m2):
        play(mm, "0: knock")
        idle_until_round_ends(mm)
    assert m.rounds[0].lives_lost == {0: 2, 1: 1, 2: 1}
    assert not m.rounds[0].sudden_death and m.rounds[0].eliminated == (0,)  # 1 and 2 ride the bus
    assert m2.rounds[0].sudden_death and m2.rounds[0].eliminated == ()
    assert m2.rounds[0].tokens_after == (0, 0, 0) and m2.seats_in == [0, 1, 2]


def test_sudden_death_when_everyone_on_the_bus_loses() -> None:
    decks = {
        1: natural(3, 0, 2),
        2: natural(3, 1, 0),
        3: stacked_deck(3, hands={0: "Th 5h 2c", 1: "9s 6s 2d", 2: "Td 5d 3c"}, dealer=1),
    }
    m = stacked_match(3, decks, lives=1, max_turns_per_round=3, simultaneous_31_loss=1)
    # Round 1: 1 and 2 to 0 tokens; round 2: 0 to 0 tokens, 2 out.
    assert m.rounds[1].eliminated == (2,)
    assert m.seats_in == [0, 1] and m.tokens[:2] == [0, 0]
    idle_until_round_ends(m)
    r3 = m.rounds[2]
    assert r3.lives_lost == {0: 1, 1: 1}
    assert r3.sudden_death and r3.eliminated == () and m.seats_in == [0, 1]


def test_no_sudden_death_when_one_survives() -> None:
    deck = stacked_deck(3, hands={0: "Ah Kh 2c", 1: "9s 6s 2d", 2: "Td 5d 3c"})
    m = stacked_match(3, deck, lives=1, bus=False, max_turns_per_round=3)
    idle_until_round_ends(m)
    (r,) = m.rounds
    assert not r.sudden_death and r.eliminated == (1, 2)
    assert m.over and m.winner == 0 and m.end is MatchEnd.LAST_PLAYER
    assert m.placings == (1, 2, 2)


# ---------------------------------------------------------------- placings


def test_shared_placings_1_2_2_4() -> None:
    round1 = stacked_deck(4, hands={0: "Ah Kh 2c", 1: "As Ks 2d", 2: "Ad Kd 3c", 3: "2h 3s 4d"})
    round2 = stacked_deck(
        4, hands={0: "Ah Kh 2c", 1: "2h 3s 4d", 2: "2s 3h 4c"}, dealer=0, seats_in=[0, 1, 2]
    )
    m = stacked_match(4, {1: round1, 2: round2}, lives=1, bus=False, max_turns_per_round=4)
    idle_until_round_ends(m)
    assert m.rounds[0].eliminated == (3,)
    assert m.placings == (1, 1, 1, 4)
    assert (m.dealer, m.current) == (0, 1)
    idle_until_round_ends(m)
    assert m.rounds[1].eliminated == (1, 2)
    assert m.over and m.winner == 0
    assert m.placings == (1, 2, 2, 4)


def test_placings_while_running() -> None:
    m = stacked_match(3)
    assert m.placings == (1, 1, 1) and m.winner is None and not m.over


# ---------------------------------------------------------------- max_rounds


def test_max_rounds_places_by_tokens() -> None:
    m = stacked_match(3, natural(3, 0, 2), max_rounds=1)
    assert m.over and m.end is MatchEnd.MAX_ROUNDS and m.winner is None
    assert m.tokens == [3, 2, 2]
    assert m.placings == (1, 2, 2)
    assert m.legal_actions() == () and m.current_seat is None


def test_max_rounds_unequal_tokens() -> None:
    deck = stacked_deck(4, hands={0: "2c 3d 4h", 1: "9s 6s 2d", 2: "Td 5d 3c", 3: "Ks Qs 9h"})
    m = stacked_match(4, deck, knock_ban="none", max_rounds=1)
    play(m, "0: knock")
    idle_until_round_ends(m)
    assert m.end is MatchEnd.MAX_ROUNDS
    assert m.tokens == [1, 3, 3, 3]
    assert m.placings == (4, 1, 1, 1)


def test_max_rounds_players_in_above_those_out() -> None:
    decks = {1: natural(4, 0, 3), 2: natural(4, 1, 0)}
    m = stacked_match(4, decks, lives=1, max_rounds=2)
    assert m.over and m.end is MatchEnd.MAX_ROUNDS and m.winner is None
    assert m.rounds[1].eliminated == (2, 3)
    assert m.tokens == [0, 0, 0, 0]
    assert m.placings == (1, 1, 3, 3)


def test_max_rounds_with_a_fresh_elimination_ranks_tokens_above_the_out() -> None:
    decks = {1: natural(3, 0, 2)}
    m = stacked_match(3, decks, lives=1, bus=False, max_rounds=1)
    # Round 1 leaves only seat 0: a winner, even though max_rounds is reached too.
    assert m.over and m.end is MatchEnd.LAST_PLAYER and m.winner == 0
    assert m.placings == (1, 2, 2)


def test_match_over_refuses_actions() -> None:
    m = stacked_match(3, natural(3, 0, 2), max_rounds=1)
    with pytest.raises(Exception, match="over"):
        play(m, "draw stock")


# ---------------------------------------------------------------- the dealer


def test_dealer_rotates_and_skips_eliminated_seats() -> None:
    # Round 1: seats 2, 3 and 4 are dealt 31; 0 and 1 lose 10 lives and are out.
    round1 = stacked_deck(5, hands={2: "Ah Kh Qh", 3: "As Ks Qs", 4: "Ad Kd Qd"})
    m = stacked_match(5, {1: round1}, simultaneous_31_loss=10, lives=5, max_turns_per_round=1)
    assert m.seats_in == [2, 3, 4]
    assert m.placings == (4, 4, 1, 1, 1)
    dealers: list[int] = []
    first: list[int] = []
    for _ in range(5):
        recs = m.take_records()
        deal = [r for r in recs if isinstance(r, DealRecord)][-1]
        assert deal.hands[0] == () and deal.hands[1] == ()
        dealers.append(m.dealer)
        first.append(m.current)
        assert deal.dealer == m.dealer
        idle_until_round_ends(m)
    assert dealers == [2, 3, 4, 2, 3]
    assert first == [3, 4, 2, 3, 4]
    assert [r.dealer for r in m.rounds[:6]] == [4, 2, 3, 4, 2, 3]


def test_deal_after_an_elimination_starts_left_of_the_new_dealer() -> None:
    round1 = stacked_deck(4, hands={0: "2h 3s 4d", 1: "Ah Kh 2c", 2: "As Ks 2d", 3: "Ad Kd 3c"})
    round2 = stacked_deck(
        4,
        hands={2: "Tc 9c 2s", 3: "Jh 8h 3d", 1: "Qs 7s 4c"},
        upcard="5h",
        dealer=1,
        seats_in=[1, 2, 3],
    )
    m = stacked_match(4, {1: round1, 2: round2}, lives=1, bus=False, max_turns_per_round=4)
    idle_until_round_ends(m)
    assert m.rounds[0].eliminated == (0,)
    assert m.dealer == 1 and m.current == 2
    assert {str(c) for c in m.hand(2)} == {"Tc", "9c", "2s"}
    assert {str(c) for c in m.hand(3)} == {"Jh", "8h", "3d"}
    assert {str(c) for c in m.hand(1)} == {"Qs", "7s", "4c"}
    assert m.hand(0) == ()
    assert [str(c) for c in m.pile] == ["5h"]
