"""Actions and public events: frozen values that print and parse as text."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from referee.game.cards import DECK, Card
from referee.game.errors import CardParseError


class ActionKind(IntEnum):
    """What a player does at a decision."""

    KNOCK = 1
    DRAW_STOCK = 2
    DRAW_DISCARD = 3
    DISCARD = 4
    PASS = 5


_NAMES = {
    ActionKind.KNOCK: "knock",
    ActionKind.DRAW_STOCK: "draw stock",
    ActionKind.DRAW_DISCARD: "draw discard",
    ActionKind.DISCARD: "discard",
    ActionKind.PASS: "pass",
}


@dataclass(frozen=True, slots=True)
class Action:
    """One decision: ``knock``, ``draw stock``, ``draw discard``, ``discard Td`` or ``pass``.

    Use the module constants (:data:`KNOCK`, :data:`DRAW_STOCK`, ...) and :func:`discard`;
    they are shared instances, so building actions costs nothing on the hot path.
    """

    kind: ActionKind
    card: Card | None = None

    def __post_init__(self) -> None:
        # Written by people (``Action(ActionKind.DISCARD, "Ah")``): text becomes the Card, so
        # that equality with the legal actions holds; anything else would compare unequal to
        # every legal action and surface far from the mistake.
        c: object = self.card
        if c is None or isinstance(c, Card):
            return
        object.__setattr__(self, "card", _card_of(c, "Action"))

    def __str__(self) -> str:
        if self.kind is ActionKind.DISCARD:
            return f"discard {self.card}"
        return _NAMES[self.kind]

    def __repr__(self) -> str:
        return f"Action({str(self)!r})"

    @staticmethod
    def parse(text: str) -> Action:
        """Read the text form (``"discard Td"``, ``"knock"``; case and spacing are loose)."""
        if not isinstance(text, str):
            raise ActionParseError(f"an action must be text, got {text!r}")
        words = text.strip().lower().replace("_", " ").split()
        joined = " ".join(words)
        for kind, name in _NAMES.items():
            if kind is not ActionKind.DISCARD and joined == name:
                return _SIMPLE[kind]
        if len(words) == 2 and words[0] == "discard":
            try:
                return DISCARDS[Card.parse(words[1])]
            except CardParseError as e:
                raise ActionParseError(f"not an action: {text!r} ({e})") from None
        raise ActionParseError(
            f"not an action: {text!r} (expected knock, draw stock, draw discard, discard <card>, pass)"
        )


class ActionParseError(CardParseError):
    """An action's text form could not be read."""


KNOCK = Action(ActionKind.KNOCK)
DRAW_STOCK = Action(ActionKind.DRAW_STOCK)
DRAW_DISCARD = Action(ActionKind.DRAW_DISCARD)
PASS = Action(ActionKind.PASS)
#: ``DISCARDS[card]`` is the shared action that discards ``card``.
DISCARDS: tuple[Action, ...] = tuple(Action(ActionKind.DISCARD, c) for c in DECK)
_SIMPLE = {
    ActionKind.KNOCK: KNOCK,
    ActionKind.DRAW_STOCK: DRAW_STOCK,
    ActionKind.DRAW_DISCARD: DRAW_DISCARD,
    ActionKind.PASS: PASS,
}


def _card_of(c: object, where: str) -> Card:
    """``c`` as a Card: a Card, or card text read leniently for people (see :meth:`Card.parse`)."""
    if isinstance(c, Card):
        return c
    if isinstance(c, str):
        try:
            return Card.parse(c)
        except CardParseError as e:
            raise CardParseError(f"{where}({c!r}): {e}") from None
    raise TypeError(f"{where}() takes a Card or card text like 'Ah', got {type(c).__name__} {c!r}")


def discard(c: Card | str) -> Action:
    """The action that discards card ``c``: a :class:`Card` or its text, ``discard("Ah")``.

    Text is read as :meth:`Card.parse` reads what people type (``"Ah"``, ``"ah"``, ``"10h"``);
    the referee's wire is stricter, but the action is sent as the card's canonical text.
    Bad text raises :class:`CardParseError` (a ``ValueError``) naming it; another type
    raises ``TypeError``.
    """
    if isinstance(c, Card):  # the common case first: bots pass cards from the view
        return DISCARDS[c]
    return DISCARDS[_card_of(c, "discard")]


class Phase(IntEnum):
    """Which decision the seat to move faces."""

    #: Knock, draw from the stock, take the discard (or pass under ``empty_stock=showdown``).
    TURN_START = 1
    #: After a draw: which of the four cards to discard.
    DISCARD = 2


class Pile(IntEnum):
    """Where a drawn card came from."""

    STOCK = 1
    DISCARD = 2


class EventKind(IntEnum):
    """Kinds of things that happen at the table during a round."""

    DRAW_STOCK = 1
    DRAW_DISCARD = 2
    DISCARD = 3
    KNOCK = 4
    PASS = 5
    RESTOCK = 6
    FORFEIT = 7


class PublicEvent(NamedTuple):
    """One thing that happened in a round, in order.

    In the match's own record ``card`` is always known; in a seat's observation a card
    drawn from the stock by another seat is ``None``. For ``RESTOCK``, ``seat`` is the seat
    whose turn found the stock empty and ``card`` is ``None``.
    """

    kind: EventKind
    seat: int
    card: Card | None = None

    def __str__(self) -> str:
        name = self.kind.name.lower().replace("_", " ")
        return f"seat {self.seat} {name}" + (f" {self.card}" if self.card is not None else "")
