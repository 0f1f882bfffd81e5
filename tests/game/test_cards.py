"""Cards (docs/rules.md, "Cards and notation"): notation, parsing errors, value semantics."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee.game import DECK, RANKS, SUITS, Card, CardParseError, card, cards, format_cards

PIPS = {"2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "T": 10}
PIPS.update({"J": 10, "Q": 10, "K": 10, "A": 11})


def all_texts() -> list[str]:
    return [r + s for r in "23456789TJQKA" for s in "cdhs"]


def test_deck_is_52_distinct_cards() -> None:
    assert len(DECK) == 52
    assert len(set(DECK)) == 52
    assert {str(c) for c in DECK} == set(all_texts())
    assert RANKS == "23456789TJQKA"
    assert SUITS == "cdhs"


@pytest.mark.parametrize("text", all_texts())
def test_round_trip_every_card(text: str) -> None:
    c = card(text)
    assert str(c) == text
    assert c.text == text
    assert card(str(c)) is c
    assert Card.parse(text) is c
    assert eval(repr(c), {"Card": Card.parse}) is c  # repr is Card('Ah')


@pytest.mark.parametrize("text", all_texts())
def test_upper_and_lower_case_suits_and_ranks(text: str) -> None:
    assert card(text.upper()) is card(text)
    assert card(text.lower()) is card(text)


@pytest.mark.parametrize("suit", "cdhs")
def test_ten_written_as_10(suit: str) -> None:
    assert card("10" + suit) is card("T" + suit)
    assert str(card("10" + suit)) == "T" + suit
    assert str(card("10" + suit.upper())) == "T" + suit


def test_examples_from_the_rules() -> None:
    assert str(card("Ah")) == "Ah"
    assert str(card("Td")) == "Td"
    assert str(card("10d")) == "Td"
    assert str(card("AH")) == "Ah"
    assert card(" 7s ") is card("7s")


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "A",
        "Ahh",
        "1d",
        "11d",
        "0h",
        "Zh",
        "Ax",
        "hA",
        "10",
        "100d",
        "T",
        "♥A",
        "A♥",
        "Ah Kh",
        "-1",
    ],
)
def test_bad_input_raises_naming_it(bad: str) -> None:
    with pytest.raises(CardParseError) as e:
        card(bad)
    assert repr(bad) in str(e.value)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("bad", [None, 5, 1.5, b"Ah", ["Ah"]])
def test_non_text_raises_card_parse_error(bad: object) -> None:
    with pytest.raises(CardParseError) as e:
        Card.parse(bad)  # type: ignore[arg-type]
    assert repr(bad) in str(e.value)


@pytest.mark.parametrize("index", [-1, 52, 100])
def test_bad_index(index: int) -> None:
    with pytest.raises(CardParseError) as e:
        Card(index)
    assert str(index) in str(e.value)


@given(st.text(max_size=5))
def test_parse_never_fails_with_another_error(text: str) -> None:
    try:
        c = card(text)
    except CardParseError as e:
        assert repr(text) in str(e)
    else:
        # Whatever it accepted must be a real card whose text it reads back.
        assert card(str(c)) is c
        t = text.strip().upper().replace("10", "T")
        assert str(c).upper() == t


def test_values_per_rules() -> None:
    for c in DECK:
        assert c.value == PIPS[str(c)[0]], c
    assert card("Ah").value == 11
    for r in "TJQK":
        assert card(r + "s").value == 10
    assert [card(f"{n}c").value for n in range(2, 10)] == list(range(2, 10))


def test_rank_and_suit_indices() -> None:
    for c in DECK:
        assert RANKS[c.rank] + SUITS[c.suit] == str(c)
    assert card("Ah").is_red and card("Td").is_red
    assert not card("As").is_red and not card("2c").is_red


def test_symbols_for_humans_only() -> None:
    assert card("Td").symbol == "T♦"
    assert card("As").symbol == "A♠"
    assert format_cards(cards("Ah Kc"), symbols=True) == "A♥ K♣"
    assert format_cards(cards("Ah Kc")) == "Ah Kc"


def test_hashable_and_equal_by_value() -> None:
    a, b = card("Ah"), Card.parse("AH")
    assert a == b and hash(a) == hash(b)
    assert len({card(t) for t in all_texts() * 2}) == 52
    d = {card("Ah"): 1}
    assert d[card("ah")] == 1
    assert card("2c") != card("2d")
    assert sorted(cards("Ah 2c Td")) == list(cards("2c Td Ah"))


def test_frozen() -> None:
    c = card("Ah")
    with pytest.raises(AttributeError):
        c.rank = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        c.suit = 0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        c.anything = 1  # type: ignore[attr-defined]
    assert str(c) == "Ah"


def test_copy_and_pickle_keep_the_one_instance() -> None:
    for c in DECK:
        assert copy.copy(c) is c
        assert copy.deepcopy(c) is c
        assert pickle.loads(pickle.dumps(c)) is c


def test_cards_helper() -> None:
    assert cards("Ah Kh 5h") == (card("Ah"), card("Kh"), card("5h"))
    assert cards("Ah, Kh,5h") == cards("Ah Kh 5h")
    assert cards(["10d", "2c"]) == cards("Td 2c")
    assert cards("") == ()
    with pytest.raises(CardParseError, match="'Xx'"):
        cards("Ah Xx")
