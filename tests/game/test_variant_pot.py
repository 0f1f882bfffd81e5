"""Playing for a pot (docs/rules.md, "Variants"), sentence by sentence."""

from __future__ import annotations

from referee.game import (
    DealRecord,
    Match,
    MatchEnd,
    RoundEnd,
    RoundResult,
    Rules,
    cards,
)
from tests.game.helpers import idle_turn, play, stacked_deck, stacked_match

POT = Rules(scoring="pot", knock_ban="none")
LOW = {2: "2d 3h 5c"}


def test_antes_at_the_deal_before_natural_31s() -> None:
    m = stacked_match(3, stacked_deck(3, hands={0: "As Ks Qs"}), POT, ante=2)
    deal, first = m.take_records()[:2]
    assert isinstance(deal, DealRecord)
    assert deal.antes == (2, 2, 2) and deal.pot_carried == 0 and deal.pot == 6
    # The natural wins the pot at once: its antes were in it.
    assert isinstance(first, RoundResult) and first.end is RoundEnd.NATURAL_31
    assert first.winners == (0,) and first.pot == 6 and first.chips_won == (6, 0, 0)
    assert first.carried == 0 and first.chips_after == (4, -2, -2)
    assert first.lives_lost == {} and first.tokens_after == (3, 3, 3)
    # Round 2 is dealt with antes again.
    assert m.chips == [2, -4, -4] and m.pot == 6


def test_several_naturals_share_the_pot_and_the_remainder_is_carried() -> None:
    deck = stacked_deck(3, hands={0: "As Ks Qs", 1: "Ah Kh Jh"})
    m = stacked_match(3, deck, POT)
    (r,) = m.rounds
    assert r.winners == (0, 1) and r.pot == 3 and r.chips_won == (1, 1, 0) and r.carried == 1
    # Whatever their cards: Q-high and J-high 31s share alike.
    deal2 = [x for x in m.take_records() if isinstance(x, DealRecord)][1]
    assert deal2.pot_carried == 1 and deal2.pot == 4 and m.pot == 4


def test_a_tie_goes_to_the_highest_card_all_three_counting() -> None:
    # docs/rules.md's example: K♦ 9♦ A♣ beats K♠ 9♠ 2♣ at 19.
    hands = {0: "Kd 9d Ac", 1: "Ks 9s 2c", **LOW}
    m = stacked_match(3, stacked_deck(3, hands=hands), POT, three_of_a_kind="off")
    play(m, "0: knock")
    idle_turn(m)
    idle_turn(m)
    (r,) = m.rounds
    assert r.end is RoundEnd.KNOCK and r.values == {0: 19, 1: 19, 2: 5}
    assert r.winners == (0,) and r.chips_won == (3, 0, 0) and r.chips_after == (2, -1, -1)
    assert r.high_card_tie_break
    # The same, the other way round: the winner need not be the knocker.
    m = stacked_match(3, stacked_deck(3, hands={0: "Ks 9s 2c", 1: "Kd 9d Ac", **LOW}), POT)
    play(m, "0: knock")
    idle_turn(m)
    idle_turn(m)
    assert m.rounds[0].winners == (1,)


def test_second_and_third_cards_break_ties_and_equal_hands_share() -> None:
    hands = {0: "Kd 9d 4c", 1: "Ks 9s 3c", **LOW}
    m = stacked_match(3, stacked_deck(3, hands=hands), POT)
    play(m, "0: knock")
    idle_turn(m)
    idle_turn(m)
    assert m.rounds[0].winners == (0,)
    # Rank for rank equal: the pot is shared, the odd chip carried.
    hands = {0: "Kd 9d 4c", 1: "Ks 9s 4h", **LOW}
    m = stacked_match(3, stacked_deck(3, hands=hands), POT)
    play(m, "0: knock")
    idle_turn(m)
    idle_turn(m)
    (r,) = m.rounds
    assert r.winners == (0, 1) and r.chips_won == (1, 1, 0) and r.carried == 1
    assert m.pot == 1 + 3  # carried, plus round 2's antes


def test_a_blitz_wins_the_pot() -> None:
    m = stacked_match(3, stacked_deck(3, hands={0: "Ah Kh 2c"}, upcard="Qh"), POT)
    play(m, "0: draw discard", "0: discard 2c")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.winners == (0,) and r.chips_won == (3, 0, 0)


def test_a_call_and_the_widow_for_a_pot() -> None:
    hands = {0: "Kd 9d Ac", 1: "Ks 9s 2c", **LOW}
    rules = Rules.preset("bicycle").with_options({"under_the_gun": True})
    m = stacked_match(3, stacked_deck(3, hands=hands, widow="7h 8h 9h"), rules)
    play(m, "0: call")
    (r,) = m.rounds
    assert r.end is RoundEnd.CALL and r.winners == (0,) and r.widow == tuple(cards("7h 8h 9h"))


def test_the_match_is_pot_rounds_long_and_placed_by_net_chips() -> None:
    m = Match(4, Rules.preset("bicycle"), seed=11)
    assert m.round_limit == 12  # pot_rounds=0: three times the seats
    while not m.over:
        m.apply(m.legal_actions()[0])
    assert m.end is MatchEnd.POT_ROUNDS and len(m.rounds) == 12
    # Chips after the last round are nobody's: the net chips sum to minus what is left.
    assert sum(m.chips) == -m.pot
    assert m.placings == tuple(1 + sum(c > x for c in m.chips) for x in m.chips)
    firsts = [s for s in range(4) if m.placings[s] == 1]
    assert m.winner == (firsts[0] if len(firsts) == 1 else None)
    # Lives play no part: nobody was eliminated, tokens untouched.
    assert m.tokens == [3] * 4 and all(m.alive)


def test_a_tie_for_first_has_no_winner() -> None:
    # Two rounds; each seat wins one pot of 2: 0 net chips each.
    deals = {1: stacked_deck(2, hands={0: "As Ks Qs"}), 2: stacked_deck(2, hands={1: "As Ks Qs"}, dealer=0)}
    m = stacked_match(2, deals, POT, pot_rounds=2)
    assert m.over and m.end is MatchEnd.POT_ROUNDS
    assert m.chips == [0, 0] and m.placings == (1, 1) and m.winner is None
    deals = {1: stacked_deck(2, hands={0: "As Ks Qs"}), 2: stacked_deck(2, hands={0: "Ah Kh Qh"}, dealer=0)}
    m = stacked_match(2, deals, POT, pot_rounds=2)
    assert m.chips == [2, -2] and m.placings == (1, 2) and m.winner == 0


def test_a_forfeit_under_the_pot() -> None:
    m = stacked_match(4, stacked_deck(4, hands={0: "Kd 9d Ac", 1: "As Ks 4d"}), POT, pot_rounds=3)
    m.forfeit(1, "timeout")
    # Its ante stays in the pot; its hand is out of the showdown.
    assert m.pot == 4 and m.chips == [-1, -1, -1, -1]
    play(m, "0: knock")
    idle_turn(m)
    idle_turn(m)
    (r,) = m.rounds
    assert 1 not in r.hands and r.winners == (0,) and r.chips_won == (4, 0, 0, 0)
    # It pays no more antes.
    assert m.chips == [3 - 1, -1, -2, -2] and m.pot == 3
    # Later forfeits place above earlier ones, all below the seats that stayed in.
    m.forfeit(3, "crash")
    assert m.placings[0] == 1 and m.placings[2] == 2 and m.placings[3] == 3 and m.placings[1] == 4
    # Forfeits that leave one seat end the match: it wins.
    m.forfeit(2, "crash")
    assert m.over and m.end is MatchEnd.LAST_PLAYER and m.winner == 0
    assert m.rounds[-1].end is RoundEnd.ABANDONED and m.rounds[-1].winners == ()
    assert m.placings == (1, 4, 2, 3)


def test_lives_options_are_unused_under_the_pot() -> None:
    m = stacked_match(3, stacked_deck(3, hands={0: "2c 3d 4h"}), POT, lives=1, bus=False, knocker_alone_loss=5)
    play(m, "0: knock")
    idle_turn(m)
    idle_turn(m)
    (r,) = m.rounds
    assert r.lives_lost == {} and r.eliminated == () and all(m.alive)
