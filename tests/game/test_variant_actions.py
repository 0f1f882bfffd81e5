"""The variants' actions (docs/rules.md, "Variants"): text that round-trips, shared instances, and kinds
whose numbers never change (they are mirrored on the wire)."""

from __future__ import annotations

import pytest

from referee.game import (
    CALL,
    DECK,
    SWAP_HAND,
    SWAP_UPCARDS,
    SWAP_WIDOWS,
    Action,
    ActionKind,
    ActionParseError,
    DummyState,
    EventKind,
    Phase,
    PublicEvent,
    card,
    swap_upcard,
    swap_widow,
)


def test_kind_numbers_are_appended_never_renumbered() -> None:
    assert {k.name: k.value for k in ActionKind} == {
        "KNOCK": 1,
        "DRAW_STOCK": 2,
        "DRAW_DISCARD": 3,
        "DISCARD": 4,
        "PASS": 5,
        "SWAP_UPCARD": 6,
        "CALL": 7,
        "SWAP_HAND": 8,
        "SWAP_WIDOW": 9,
    }
    assert Phase.TURN_START == 1 and Phase.DISCARD == 2 and Phase.DEALER_OPTION == 3
    assert [k.value for k in EventKind][:7] == list(range(1, 8))
    assert EventKind.SWAP_UPCARD == 8 and EventKind.SWAP_WIDOW == 12
    # As the contract numbers them (thirtyone.v1 PublicEventKind, DummyState).
    assert EventKind.DEALER_PASS == 9 and EventKind.CALL == 10 and EventKind.SWAP_HAND == 11
    assert DummyState.NONE == 1 and DummyState.FACE_DOWN == 2 and DummyState.TAKEN == 3


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("swap upcard Td", Action(ActionKind.SWAP_UPCARD, card("Td"))),
        ("call", Action(ActionKind.CALL)),
        ("swap hand", Action(ActionKind.SWAP_HAND)),
        ("swap widow Td As", Action(ActionKind.SWAP_WIDOW, card("Td"), card("As"))),
    ],
)
def test_text_round_trip(text: str, action: Action) -> None:
    assert str(action) == text
    assert Action.parse(text) == action
    assert Action.parse(str(action)) == action
    # Loose spelling, as for the other actions.
    assert Action.parse(" " + text.upper().replace(" ", "_") + " ") == action


def test_every_swap_round_trips_and_is_shared() -> None:
    for c in DECK:
        a = swap_upcard(c)
        assert a is SWAP_UPCARDS[c] and Action.parse(str(a)) is a
    for h in DECK[::5]:
        for w in DECK[::3]:
            a = swap_widow(h, w)
            assert a is SWAP_WIDOWS[h * 52 + w]
            assert (a.card, a.widow_card) == (h, w)
            assert Action.parse(str(a)) is a
    assert Action.parse("call") is CALL and Action.parse("swap hand") is SWAP_HAND
    assert Action.parse("swap upcard 10d") is swap_upcard(card("Td"))


@pytest.mark.parametrize(
    "text", ["swap upcard", "swap upcard Xx", "swap widow Td", "swap widow Td Zz", "swap", "calls", "swap hands"]
)
def test_bad_text(text: str) -> None:
    with pytest.raises(ActionParseError) as e:
        Action.parse(text)
    assert repr(text) in str(e.value)


def test_events_name_both_cards_of_an_exchange() -> None:
    ev = PublicEvent(EventKind.SWAP_WIDOW, 1, card("Td"), card("As"))
    assert ev.taken_card == card("As") and str(ev) == "seat 1 swap widow Td for As"
    assert PublicEvent(EventKind.KNOCK, 0) == PublicEvent(EventKind.KNOCK, 0, None, None)


def test_swaps_from_card_text() -> None:
    assert swap_upcard("td") is swap_upcard(card("Td"))
    assert swap_widow("Td", "as") is swap_widow(card("Td"), card("As"))
    assert Action(ActionKind.SWAP_WIDOW, "Td", "As") == swap_widow(card("Td"), card("As"))  # type: ignore[arg-type]
    with pytest.raises(ActionParseError.__mro__[1]):
        swap_widow("Td", "Zz")
