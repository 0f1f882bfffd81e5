"""Hand values (docs/rules.md): the golden examples and a brute-force cross-check."""

from __future__ import annotations

import itertools
import random

import pytest

from referee.game import (
    DECK,
    Rules,
    best_discard,
    card,
    cards,
    hand_value,
    is_flush,
    is_thirty_one,
    value_table,
)

# An independent formulation: work from the text form only.
_POINTS = {"2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9}
_POINTS.update({"T": 10, "J": 10, "Q": 10, "K": 10, "A": 11})

TOAK = ("30.5", "30", "off")
ACES = (None, 32.5, 33)


def brute_value(texts: tuple[str, str, str], toak: str, three_aces: float | None) -> float:
    ranks = [t[0] for t in texts]
    if toak != "off" and ranks[0] == ranks[1] == ranks[2]:
        if ranks[0] == "A" and three_aces is not None:
            return three_aces
        return 30.5 if toak == "30.5" else 30.0
    return max(sum(_POINTS[t[0]] for t in texts if t[1] == suit) for suit in "cdhs")


def brute_is_31(texts: tuple[str, str, str]) -> bool:
    """An ace plus two ten-value cards, all of one suit."""
    ranks = sorted(t[0] for t in texts)
    one_suit = len({t[1] for t in texts}) == 1
    return one_suit and ranks.count("A") == 1 and sum(r in "TJQK" for r in ranks) == 2


ALL_TEXT_HANDS = list(itertools.combinations([r + s for r in "23456789TJQKA" for s in "cdhs"], 3))


GOLDEN = [
    ("Ah Kh 5h", {}, 26),
    ("As Ks 4c", {}, 21),
    ("Td Jd 2c", {}, 20),
    ("7s 7h 7d", {}, 30.5),
    ("7s 7h 7d", {"three_of_a_kind": "off"}, 7),
    ("As Ks Qs", {}, 31),
    ("9c 5c 4h", {}, 14),
    ("Kd 2d 2s", {}, 12),
    ("Ah Kd Qs", {}, 11),
    ("Kh 9h 4c", {}, 19),
    ("2h 3h Ac", {}, 11),
    ("2c 2d 2h", {}, 30.5),
    ("2c 2d 2h", {"three_of_a_kind": "off"}, 2),
    ("Tc Td Th", {"three_of_a_kind": "off"}, 10),
]


@pytest.mark.parametrize(("hand", "opts", "value"), GOLDEN, ids=[f"{h}-{o}" for h, o, _ in GOLDEN])
def test_golden_examples(hand: str, opts: dict[str, str], value: float) -> None:
    rules = Rules.build("standard", opts)
    assert hand_value(cards(hand), rules) == value
    # Order never matters.
    for perm in itertools.permutations(cards(hand)):
        assert hand_value(perm, rules) == value


def test_golden_triples_under_other_options() -> None:
    r30 = Rules.build(overrides={"three_of_a_kind": "30"})
    assert hand_value(cards("7s 7h 7d"), r30) == 30
    assert hand_value(cards("Ks Qs Js"), r30) == 30  # ties a 30 in one suit
    assert hand_value(cards("7s 7h 7d")) > hand_value(cards("Ks Qs Js"))  # 30.5 beats 30
    assert hand_value(cards("7s 7h 7d")) < hand_value(cards("As Ks Qs"))  # loses to 31


@pytest.mark.parametrize("three_aces", [None, 32.5, 33])
@pytest.mark.parametrize("toak", TOAK)
def test_three_aces(toak: str, three_aces: float | None) -> None:
    rules = Rules.build(overrides={"three_of_a_kind": toak, "three_aces": three_aces})
    v = hand_value(cards("Ac Ad Ah"), rules)
    if toak == "off":
        assert v == 11
    elif three_aces is None:
        assert v == (30.5 if toak == "30.5" else 30)
    else:
        assert v == three_aces
    assert not is_thirty_one(cards("Ac Ad Ah"))


@pytest.mark.parametrize("three_aces", ACES)
@pytest.mark.parametrize("toak", TOAK)
def test_all_hands_against_brute_force(toak: str, three_aces: float | None) -> None:
    rules = Rules.build(overrides={"three_of_a_kind": toak, "three_aces": three_aces})
    table = value_table(rules)
    assert len(table) == 22_100
    rnd = random.Random(f"{toak}/{three_aces}")
    n = 0
    for texts in ALL_TEXT_HANDS:
        hand = [card(t) for t in texts]
        expected = brute_value(texts, toak, three_aces)
        assert hand_value(hand, rules) == expected, texts
        key = (1 << int(hand[0])) | (1 << int(hand[1])) | (1 << int(hand[2]))
        assert table[key] == expected, texts
        if rnd.random() < 0.05:
            rnd.shuffle(hand)
            assert hand_value(hand, rules) == expected, texts
        n += 1
    assert n == 22_100


def test_is_thirty_one_against_brute_force() -> None:
    n31 = 0
    for texts in ALL_TEXT_HANDS:
        hand = [card(t) for t in texts]
        expected = brute_is_31(texts)
        assert is_thirty_one(hand) == expected, texts
        n31 += expected
        assert is_flush(hand) == (len({t[1] for t in texts}) == 1)
        if expected:
            assert hand_value(hand) == 31
    # An ace with two of the four ten-cards, in each suit: C(4,2) * 4.
    assert n31 == 24


@pytest.mark.parametrize("three_aces", [31, 32.5, 33])
def test_a_triple_never_counts_as_31(three_aces: float) -> None:
    rules = Rules.build(overrides={"three_aces": three_aces})
    for r in "23456789TJQKA":
        for suits in itertools.combinations("cdhs", 3):
            hand = [card(r + s) for s in suits]
            assert not is_thirty_one(hand)
    assert hand_value(cards("Ac Ad Ah"), rules) == three_aces


def test_hand_value_wants_three_different_cards() -> None:
    for bad in ("Ah Kh", "Ah Kh Qh Jh", "Ah Ah Kh"):
        with pytest.raises(ValueError):
            hand_value(cards(bad))
    assert not is_thirty_one(cards("Ah Kh"))


def test_best_discard() -> None:
    rules = Rules()
    c, v = best_discard(cards("Ah Kh 2c Qh"), rules)
    assert (str(c), v) == ("2c", 31)
    # The card just taken may not go back.
    c, v = best_discard(cards("Ah Kh 2c Qh"), rules, forbidden=card("2c"))
    assert v == 21 and str(c) in {"Kh", "Qh"}
    # Ties: the lowest-valued card goes.
    c, v = best_discard(cards("2c 3d 4h 5s"), rules)
    assert (str(c), v) == ("2c", 5)


def test_best_discard_against_brute_force() -> None:
    rules = Rules()
    rnd = random.Random(7)
    for _ in range(2000):
        four = rnd.sample(DECK, 4)
        forbidden = rnd.choice([None, *four])
        c, v = best_discard(four, rules, forbidden)
        assert c in four and c != forbidden
        best = max(
            brute_value(tuple(str(x) for x in four if x != d), "30.5", None)  # type: ignore[arg-type]
            for d in four
            if d != forbidden
        )
        assert v == best
        assert hand_value([x for x in four if x != c], rules) == v
