"""A round, rule by rule, on stacked decks (docs/rules.md): natural 31, knocking, the
discard rule, blitz, the last lap after a knock, max_turns_per_round."""

from __future__ import annotations

from typing import Any

import pytest

from referee.game import (
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    ActionRecord,
    DealRecord,
    IllegalActionError,
    Phase,
    RoundEnd,
    RoundResult,
    Rules,
    card,
    cards,
    discard,
)
from tests.game.helpers import (
    check_legality,
    hand_of,
    idle_turn,
    idle_until_round_ends,
    play,
    stacked_deck,
    stacked_match,
)

# ---------------------------------------------------------------- the deal


def test_deal_and_first_turn() -> None:
    deck = stacked_deck(
        3, hands={0: "Ah 5c 9d", 1: "Ks 2h 3h", 2: "7c 7d 8s"}, upcard="Qd", stock="4s 6h"
    )
    m = stacked_match(3, deck)
    assert (m.round_no, m.dealer, m.current, m.turn) == (1, 2, 0, 0)
    assert hand_of(m, 0) == {"Ah", "5c", "9d"}
    assert m.pile == [card("Qd")]
    assert m.stock[-1] == card("4s")
    recs = m.take_records()
    assert recs == [
        DealRecord(
            1, 2, tuple(deck), (cards("Ah 5c 9d"), cards("Ks 2h 3h"), cards("7c 7d 8s")), card("Qd")
        )
    ]


# ---------------------------------------------------------------- natural 31


def test_one_natural_31_every_other_player_loses_one() -> None:
    m = stacked_match(3, stacked_deck(3, hands={1: "Ah Kh Qh"}))
    # Round 1 ended at the deal; round 2 is dealt and waiting.
    assert m.round_no == 2 and m.dealer == 0 and m.current == 1
    (r,) = m.rounds
    assert r.end is RoundEnd.NATURAL_31
    assert r.thirty_one == (1,)
    assert r.lives_lost == {0: 1, 2: 1}
    assert r.tokens_after == (2, 3, 2) and m.tokens == [2, 3, 2]
    assert not r.showdown and r.turns == 0 and r.knocker is None
    assert r.values[1] == 31
    kinds = [type(x).__name__ for x in m.take_records()]
    assert kinds == ["DealRecord", "RoundResult", "DealRecord"]


@pytest.mark.parametrize(
    ("loss", "tokens"), [(None, (3, 1, 3, 1)), (1, (3, 2, 3, 2)), (3, (3, 0, 3, 0))]
)
def test_two_naturals_others_lose_simultaneous_31_loss(
    loss: int | None, tokens: tuple[int, ...]
) -> None:
    opts: dict[str, Any] = {} if loss is None else {"simultaneous_31_loss": loss}
    m = stacked_match(4, stacked_deck(4, hands={0: "As Ks Qs", 2: "Ad Kd Jd"}), **opts)
    (r,) = m.rounds
    assert r.end is RoundEnd.NATURAL_31
    assert r.thirty_one == (0, 2)
    assert r.lives_lost == {1: loss or 2, 3: loss or 2}
    assert r.tokens_after == tokens
    assert m.seats_in == [0, 1, 2, 3]  # on the bus at 0


def test_three_naturals() -> None:
    m = stacked_match(4, stacked_deck(4, hands={0: "As Ks Qs", 1: "Ac Tc Jc", 3: "Ad Kd Jd"}))
    (r,) = m.rounds
    assert r.thirty_one == (0, 1, 3)
    assert r.lives_lost == {2: 2}


def test_naturals_can_eliminate_and_share_a_placing() -> None:
    m = stacked_match(
        4,
        stacked_deck(4, hands={0: "As Ks Qs", 2: "Ad Kd Jd"}),
        simultaneous_31_loss=3,
        bus=False,
    )
    (r,) = m.rounds
    assert r.eliminated == (1, 3)
    assert m.seats_in == [0, 2]
    assert m.placings == (1, 3, 1, 3)
    assert not m.over


@pytest.mark.parametrize("hand", ["Ac Ad Ah", "Ks Qs Js", "As Ks 9s", "Ah Kd Qs"])
def test_no_natural_without_a_real_31(hand: str) -> None:
    m = stacked_match(3, stacked_deck(3, hands={0: hand}), three_aces=31)
    assert m.round_no == 1 and not m.rounds


# ---------------------------------------------------------------- knock bans


def test_knock_ban_first_turn() -> None:
    m = stacked_match(3)
    assert m.rules.knock_ban == "first_turn"
    assert set(m.legal_actions()) == {DRAW_STOCK, DRAW_DISCARD}
    with pytest.raises(IllegalActionError) as e:
        m.apply(KNOCK)
    assert "first_turn" in str(e.value) and e.value.seat == 0 and e.value.action == KNOCK
    idle_turn(m)
    assert KNOCK in m.legal_actions()
    play(m, "1: knock")
    assert m.knocker == 1


def test_knock_ban_first_turn_applies_to_every_round() -> None:
    m = stacked_match(3, {1: stacked_deck(3, hands={0: "Ah Kh Qh"})})
    assert m.round_no == 2 and m.current == 1 and m.turn == 0
    assert KNOCK not in m.legal_actions()
    idle_turn(m)
    assert KNOCK in m.legal_actions()


def test_knock_ban_none() -> None:
    m = stacked_match(3, knock_ban="none")
    assert set(m.legal_actions()) == {KNOCK, DRAW_STOCK, DRAW_DISCARD}
    play(m, "0: knock")
    assert m.knocker == 0 and m.current == 1


def test_knock_ban_first_lap() -> None:
    m = stacked_match(3, knock_ban="first_lap")
    for seat in (0, 1, 2):
        assert m.current == seat
        assert KNOCK not in m.legal_actions()
        with pytest.raises(IllegalActionError, match="first_lap"):
            m.apply(KNOCK)
        idle_turn(m)
    assert m.current == 0
    assert KNOCK in m.legal_actions()
    idle_turn(m)
    play(m, "1: knock")
    assert m.knocker == 1


def test_knock_ban_first_lap_counts_turns_per_seat_each_round() -> None:
    m = stacked_match(2, knock_ban="first_lap", max_turns_per_round=3)
    idle_until_round_ends(m)
    assert m.round_no == 2 and m.current == 1
    assert KNOCK not in m.legal_actions()  # seat 1's first turn of round 2
    idle_turn(m)
    assert KNOCK not in m.legal_actions()  # seat 0's first turn of round 2
    idle_turn(m)
    assert KNOCK in m.legal_actions()


# ---------------------------------------------------------------- min_knock


@pytest.mark.parametrize(
    ("hand", "min_knock", "flush", "may"),
    [
        ("Kh Qh 2c", 21, False, False),  # 20 < 21
        ("Ad Kd 2c", 21, False, True),  # exactly 21
        ("Ad Kd 9d", 21, False, True),
        ("2h 3h 4h", 21, False, False),  # a flush of 9, flushes not allowed
        ("2h 3h 4h", 21, True, True),  # a flush may knock below min_knock
        ("Kh Qh 2c", 21, True, False),  # not a flush
        ("7s 7h 7d", 21, False, True),  # a triple is worth 30.5
        ("9c 5c 4h", 17, False, False),  # 14
        ("9c 5c 3c", 17, False, True),  # 17
        ("Kh Qh 2c", 20.5, False, False),
        ("2c 3d 4h", 0, False, True),  # default: any hand
    ],
)
def test_min_knock(hand: str, min_knock: float, flush: bool, may: bool) -> None:
    m = stacked_match(
        2,
        stacked_deck(2, hands={0: hand}),
        knock_ban="none",
        min_knock=min_knock,
        flush_may_knock=flush,
    )
    assert (KNOCK in m.legal_actions()) == may
    if may:
        m.apply(KNOCK)
        assert m.knocker == 0
    else:
        with pytest.raises(IllegalActionError) as e:
            m.apply(KNOCK)
        assert "min_knock" in str(e.value)
        assert m.knocker is None


def test_min_knock_uses_the_hand_at_turn_start() -> None:
    # Seat 0 improves to 21 by its discard; on its next turn it may knock.
    deck = stacked_deck(2, hands={0: "Ad 3c 2s"}, upcard="Kd", stock="4h 5h")
    m = stacked_match(2, deck, knock_ban="none", min_knock=21)
    assert KNOCK not in m.legal_actions()
    play(m, "0: draw discard", "0: discard 3c")
    idle_turn(m)
    assert m.value(0) == 21
    play(m, "0: knock")


# ---------------------------------------------------------------- the discard rule


def test_taken_discard_may_not_go_back_the_same_turn() -> None:
    deck = stacked_deck(2, hands={0: "Ah 5c 9d"}, upcard="Kh")
    m = stacked_match(2, deck)
    play(m, "0: draw discard")
    assert m.phase is Phase.DISCARD and m.drawn == card("Kh")
    assert set(m.legal_actions()) == {discard(c) for c in cards("Ah 5c 9d")}
    with pytest.raises(IllegalActionError) as e:
        play(m, "discard Kh")
    assert "Kh" in str(e.value) and "discard pile" in str(e.value)
    for a in ("knock", "draw stock", "draw discard", "pass", "discard 2c"):
        with pytest.raises(IllegalActionError):
            play(m, a)
    play(m, "discard 5c")
    assert m.pile[-1] == card("5c") and hand_of(m, 0) == {"Ah", "Kh", "9d"}


def test_a_card_drawn_from_the_stock_may_go_straight_back() -> None:
    m = stacked_match(2, stacked_deck(2, stock="Kh"))
    play(m, "0: draw stock")
    assert discard(card("Kh")) in m.legal_actions()
    play(m, "0: discard Kh")


def test_taken_discard_may_go_on_a_later_turn() -> None:
    deck = stacked_deck(2, hands={0: "Ah 5c 9d"}, upcard="Kh", stock="2s 3s")
    m = stacked_match(2, deck)
    play(m, "0: draw discard", "0: discard 5c")
    idle_turn(m)  # seat 1 draws 2s and throws it
    play(m, "0: draw stock")
    assert discard(card("Kh")) in m.legal_actions()
    play(m, "0: discard Kh")


def test_taking_back_ones_own_earlier_discard() -> None:
    deck = stacked_deck(2, hands={0: "Ah Kh 5c"}, upcard="2d", stock="9h")
    m = stacked_match(2, deck)
    play(m, "0: draw stock", "0: discard 5c", "1: knock")
    assert m.pile[-1] == card("5c")
    assert DRAW_DISCARD in m.legal_actions()
    play(m, "0: draw discard")
    assert m.drawn == card("5c")
    play(m, "0: discard Ah")
    assert m.round_no == 2
    assert set(m.rounds[0].hands[0]) == set(cards("Kh 9h 5c"))


# ---------------------------------------------------------------- blitz


def test_blitz_ends_the_round_at_once() -> None:
    deck = stacked_deck(3, hands={0: "Ah Kh 2c"}, upcard="Qh")
    m = stacked_match(3, deck)
    play(m, "0: draw discard", "0: discard 2c")
    assert m.round_no == 2
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ
    assert r.thirty_one == (0,)
    assert r.lives_lost == {1: 1, 2: 1}
    assert not r.showdown and r.knocker is None and r.turns == 1
    assert set(r.hands[0]) == set(cards("Ah Kh Qh"))
    assert r.values[0] == 31


def test_blitz_from_the_stock() -> None:
    deck = stacked_deck(3, hands={1: "As Ts 4d"}, stock="3c Js")
    m = stacked_match(3, deck)
    idle_turn(m)
    play(m, "1: draw stock", "1: discard 4d")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.thirty_one == (1,)
    assert r.lives_lost == {0: 1, 2: 1}


@pytest.mark.parametrize("alone_loss", [2, 3])
def test_blitz_in_the_last_lap_costs_the_knocker_one_too(alone_loss: int) -> None:
    deck = stacked_deck(3, hands={2: "As Ts 4d"}, stock="3c Js")
    m = stacked_match(3, deck, knocker_alone_loss=alone_loss)
    idle_turn(m)  # seat 0 draws 3c and throws it
    play(m, "1: knock", "2: draw stock", "2: discard 4d")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.knocker == 1 and r.thirty_one == (2,)
    assert r.lives_lost == {0: 1, 1: 1}
    assert r.tokens_after == (2, 2, 3)
    assert not r.showdown


def test_discarding_a_card_of_a_31_held_among_four_is_no_blitz() -> None:
    deck = stacked_deck(3, hands={0: "Ah Kh 2c"}, upcard="Qh")
    m = stacked_match(3, deck)
    play(m, "0: draw discard", "0: discard Kh")
    assert m.round_no == 1 and not m.rounds
    assert hand_of(m, 0) == {"Ah", "Qh", "2c"}
    assert m.current == 1


def test_a_triple_is_no_blitz() -> None:
    deck = stacked_deck(3, hands={0: "Ac Ad 2h"}, upcard="Ah")
    m = stacked_match(3, deck, three_aces=33)
    play(m, "0: draw discard", "0: discard 2h")
    assert m.round_no == 1 and m.value(0) == 33


# ---------------------------------------------------------------- after a knock


def test_one_knock_then_one_turn_each_then_showdown() -> None:
    deck = stacked_deck(
        4,
        hands={0: "9c 5c 4h", 1: "Ah Kh 2c", 2: "Ks Qs 3d", 3: "8d 7d 2s"},
        upcard="3h",
    )
    m = stacked_match(4, deck, knock_ban="none")
    idle_turn(m)
    play(m, "1: knock")
    assert m.knocker == 1
    assert m.observation(2).turns_left_after_knock == 3
    seen = []
    while m.round_no == 1:
        seen.append(m.current)
        assert KNOCK not in m.legal_actions()
        with pytest.raises(IllegalActionError, match="already knocked"):
            m.apply(KNOCK)
        idle_turn(m)
    assert seen == [2, 3, 0]
    (r,) = m.rounds
    assert r.end is RoundEnd.KNOCK and r.knocker == 1 and r.showdown
    assert r.turns == 5
    assert r.values == {0: 14, 1: 21, 2: 20, 3: 15}
    assert r.lives_lost == {0: 1}
    assert set(r.hands[1]) == set(cards("Ah Kh 2c"))  # the knocker's hand is frozen


def test_knock_on_the_first_turn_gives_everyone_else_one_turn() -> None:
    m = stacked_match(3, knock_ban="none")
    play(m, "0: knock")
    idle_turn(m)
    assert m.current == 2
    idle_turn(m)
    assert m.round_no == 2 and m.rounds[0].turns == 3


def test_records_of_a_round() -> None:
    deck = stacked_deck(2, hands={0: "Ah Kh 2c", 1: "9s 8s 2d"}, upcard="3c", stock="4d")
    m = stacked_match(2, deck)
    m.take_records()
    play(m, "0: draw stock", "0: discard 4d", "1: knock", "0: draw discard", "0: discard 2c")
    recs = m.take_records()
    actions = [r for r in recs if isinstance(r, ActionRecord)]
    assert [(a.turn, a.seat, str(a.action), a.card) for a in actions] == [
        (0, 0, "draw stock", card("4d")),
        (0, 0, "discard 4d", card("4d")),
        (1, 1, "knock", None),
        (2, 0, "draw discard", card("4d")),
        (2, 0, "discard 2c", card("2c")),
    ]
    results = [r for r in recs if isinstance(r, RoundResult)]
    assert len(results) == 1 and results[0].lives_lost == {1: 2}  # the knocker, alone lowest


# ---------------------------------------------------------------- showdown losses

KNOCKS_FIRST: dict[str, Any] = {"knock_ban": "none"}


def showdown(hands: dict[int, str], rules: Rules | None = None, **options: Any) -> RoundResult:
    """Seat 0 knocks on the first turn; every other seat draws and throws; the showdown."""
    n = len(hands)
    m = stacked_match(n, stacked_deck(n, hands=hands), rules, **(KNOCKS_FIRST | options))
    play(m, "0: knock")
    idle_until_round_ends(m)
    assert m.rounds[0].end is RoundEnd.KNOCK
    return m.rounds[0]


def test_lowest_non_knocker_loses_one() -> None:
    r = showdown({0: "Ah Kh 2c", 1: "9s 8s 2d", 2: "Tc 5c 3d"})
    assert r.values == {0: 21, 1: 17, 2: 15}
    assert r.lives_lost == {2: 1}


def test_tied_non_knockers_all_lose_one() -> None:
    r = showdown({0: "Ah Kh 2c", 1: "9s 6s 2d", 2: "Tc 5c 3d"})
    assert r.lives_lost == {1: 1, 2: 1}


@pytest.mark.parametrize(
    ("opts", "loss"), [({}, 2), ({"knocker_alone_loss": 3}, 3), ({"knocker_alone_loss": 1}, 1)]
)
def test_knocker_alone_at_lowest(opts: dict[str, Any], loss: int) -> None:
    r = showdown({0: "2c 3d 4h", 1: "9s 6s 2d", 2: "Tc 5c 3c"}, **opts)
    assert r.lives_lost == {0: loss}
    assert r.tokens_after[0] == 3 - loss


def test_family_knocker_alone_loses_one() -> None:
    r = showdown({0: "2c 3d 4h", 1: "9s 6s 2d", 2: "Tc 5c 3c"}, Rules.preset("family"))
    assert r.lives_lost == {0: 1}


@pytest.mark.parametrize(
    ("tied", "alone", "expected"),
    [
        ("double", 2, {0: 2, 1: 1}),
        ("safe", 2, {1: 1}),
        ("single", 2, {0: 1, 1: 1}),
        ("double", 3, {0: 3, 1: 1}),
        ("single", 1, {0: 1, 1: 1}),
    ],
)
def test_knocker_tied_at_lowest(tied: str, alone: int, expected: dict[int, int]) -> None:
    r = showdown(
        {0: "Th 5h 2c", 1: "9s 6s 2d", 2: "Kd Qd 3c"}, knocker_tied=tied, knocker_alone_loss=alone
    )
    assert r.values == {0: 15, 1: 15, 2: 20}
    assert r.lives_lost == expected


@pytest.mark.parametrize(
    ("tied", "expected"),
    [("double", {0: 2, 1: 1, 2: 1}), ("safe", {1: 1, 2: 1}), ("single", {0: 1, 1: 1, 2: 1})],
)
def test_everyone_tied(tied: str, expected: dict[int, int]) -> None:
    r = showdown({0: "Th 5h 2c", 1: "9s 6s 2d", 2: "Td 5d 3c"}, knocker_tied=tied)
    assert r.lives_lost == expected


def test_knocker_not_lowest_loses_nothing() -> None:
    r = showdown({0: "Ah Kh 2c", 1: "9s 6s 2d", 2: "Td 5d 3c"})
    assert 0 not in r.lives_lost


@pytest.mark.parametrize(
    ("toak", "expected"), [("30.5", {1: 1}), ("30", {0: 1, 1: 1}), ("off", {0: 1})]
)
def test_showdown_values_follow_the_rules_in_force(toak: str, expected: dict[int, int]) -> None:
    deck = stacked_deck(2, hands={0: "7s 7h 7d", 1: "Ks Qs Js"})
    m = stacked_match(2, deck, max_turns_per_round=2, three_of_a_kind=toak)
    idle_until_round_ends(m)
    assert m.rounds[0].lives_lost == expected


# ---------------------------------------------------------------- max_turns_per_round


def test_max_turns_ends_the_round_with_a_showdown() -> None:
    deck = stacked_deck(2, hands={0: "Ah Kh 2c", 1: "9s 8s 2d"})
    m = stacked_match(2, deck, max_turns_per_round=5)
    for _ in range(4):
        idle_turn(m)
    assert m.round_no == 1 and m.turn == 4
    idle_turn(m)
    assert m.round_no == 2
    (r,) = m.rounds
    assert r.end is RoundEnd.MAX_TURNS and r.showdown and r.turns == 5 and r.knocker is None
    assert r.lives_lost == {1: 1}


def test_max_turns_counts_a_knock_and_keeps_the_knocker() -> None:
    deck = stacked_deck(2, hands={0: "2c 3d 4h", 1: "9s 8s 2d"})
    m = stacked_match(2, deck, max_turns_per_round=1, knock_ban="none")
    play(m, "0: knock")
    (r,) = m.rounds
    assert r.end is RoundEnd.MAX_TURNS and r.knocker == 0 and r.turns == 1
    assert r.lives_lost == {0: 2}


def test_max_turns_cuts_the_last_lap_short() -> None:
    deck = stacked_deck(3, hands={0: "Ah Kh 2c", 1: "2s 3d 4h", 2: "9s 8s 2d"})
    m = stacked_match(3, deck, max_turns_per_round=3, knock_ban="none")
    idle_turn(m)
    play(m, "1: knock")
    idle_turn(m)  # seat 2: the third turn
    assert m.round_no == 2
    (r,) = m.rounds
    assert r.end is RoundEnd.MAX_TURNS and r.knocker == 1 and r.turns == 3
    assert r.lives_lost == {1: 2}


def test_blitz_by_the_last_seat_of_the_lap_is_a_blitz_not_a_showdown() -> None:
    deck = stacked_deck(3, hands={0: "As Ts 4d", 1: "2c 3d 4h"}, stock="3c 5c Js")
    m = stacked_match(3, deck)
    idle_turn(m)  # seat 0 throws 3c
    play(m, "1: knock")
    idle_turn(m)  # seat 2 throws 5c
    play(m, "0: draw stock", "0: discard 4d")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.knocker == 1 and r.thirty_one == (0,)
    assert r.lives_lost == {1: 1, 2: 1}


def test_blitz_on_the_turn_that_reaches_max_turns() -> None:
    deck = stacked_deck(2, hands={0: "Ah Kh 2c"}, upcard="Qh")
    m = stacked_match(2, deck, max_turns_per_round=1)
    play(m, "0: draw discard", "0: discard 2c")
    (r,) = m.rounds
    assert r.end is RoundEnd.BLITZ and r.lives_lost == {1: 1}


def test_legal_actions_match_checked_apply_at_crafted_states() -> None:
    states = []
    m = stacked_match(3, stacked_deck(3, hands={0: "Ah 5c 9d"}, upcard="Kh"), min_knock=21)
    states.append(("first turn", m))
    m = stacked_match(3, stacked_deck(3, hands={0: "Ah 5c 9d"}, upcard="Kh"))
    play(m, "0: draw discard")
    states.append(("after taking the discard", m))
    m = stacked_match(3, knock_ban="none")
    play(m, "0: knock")
    states.append(("last lap", m))
    m = stacked_match(3, knock_ban="first_lap")
    idle_turn(m)
    states.append(("first lap", m))
    m = stacked_match(2, stacked_deck(2), Rules.preset("pagat"))
    while m.stock:
        idle_turn(m)
    states.append(("empty stock, showdown mode", m))
    m = stacked_match(2, stacked_deck(2))
    while len(m.stock) > 1:
        idle_turn(m)
    play(m, "draw stock")
    states.append(("stock just ran out", m))
    for name, st in states:
        assert not st.over, name
        check_legality(st)
