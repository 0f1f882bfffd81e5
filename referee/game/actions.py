"""Actions and public events: frozen values that print and parse as text."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from referee.game.cards import DECK, Card
from referee.game.errors import CardParseError


class ActionKind(IntEnum):
    """What a player does at a decision.

    The values are mirrored on the wire: new kinds are appended, never renumbered.
    """

    KNOCK = 1
    DRAW_STOCK = 2
    DRAW_DISCARD = 3
    DISCARD = 4
    #: An empty-stock pass (docs/rules.md, "An empty stock"), or the dealer keeping the hand
    #: (the dealer's option, "Variants").
    PASS = 5
    #: The dealer's option (docs/rules.md, "Variants"): this hand card becomes the up-card.
    SWAP_UPCARD = 6
    #: Knock under the gun: an immediate showdown on the round's first turn.
    CALL = 7
    #: Take the dummy as one's hand.
    SWAP_HAND = 8
    #: Swap a hand card with a widow card.
    SWAP_WIDOW = 9


_NAMES = {
    ActionKind.KNOCK: "knock",
    ActionKind.DRAW_STOCK: "draw stock",
    ActionKind.DRAW_DISCARD: "draw discard",
    ActionKind.DISCARD: "discard",
    ActionKind.PASS: "pass",
    ActionKind.SWAP_UPCARD: "swap upcard",
    ActionKind.CALL: "call",
    ActionKind.SWAP_HAND: "swap hand",
    ActionKind.SWAP_WIDOW: "swap widow",
}
#: Kinds that name one card (``widow_card`` too for SWAP_WIDOW); the others name none.
CARD_KINDS = frozenset((ActionKind.DISCARD, ActionKind.SWAP_UPCARD, ActionKind.SWAP_WIDOW))


@dataclass(frozen=True, slots=True)
class Action:
    """One decision: ``knock``, ``draw stock``, ``draw discard``, ``discard Td``, ``pass``,
    and under the variants ``swap upcard Td``, ``call``, ``swap hand``, ``swap widow Td As``.

    Use the module constants (:data:`KNOCK`, :data:`DRAW_STOCK`, ...) and :func:`discard`,
    :func:`swap_upcard`, :func:`swap_widow`; they are shared instances, so building actions
    costs nothing on the hot path.
    """

    kind: ActionKind
    #: The hand card a discard, an up-card swap or a widow swap gives up.
    card: Card | None = None
    #: For ``SWAP_WIDOW`` only: the widow card taken in exchange.
    widow_card: Card | None = None

    def __post_init__(self) -> None:
        # Written by people (``Action(ActionKind.DISCARD, "Ah")``): text becomes the Card, so
        # that equality with the legal actions holds; anything else would compare unequal to
        # every legal action and surface far from the mistake.
        c: object = self.card
        if c is not None and not isinstance(c, Card):
            object.__setattr__(self, "card", _card_of(c, "Action"))
        w: object = self.widow_card
        if w is not None and not isinstance(w, Card):
            object.__setattr__(self, "widow_card", _card_of(w, "Action"))

    def __str__(self) -> str:
        kind = self.kind
        if kind is ActionKind.SWAP_WIDOW:
            return f"swap widow {self.card} {self.widow_card}"
        if kind in CARD_KINDS:
            return f"{_NAMES[kind]} {self.card}"
        return _NAMES[kind]

    def __repr__(self) -> str:
        return f"Action({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        # Written out rather than generated: bots test ``KNOCK in acts`` on every decision,
        # and comparing the kinds first skips building two tuples for every mismatch.
        if self is other:
            return True
        if other.__class__ is not Action:
            return NotImplemented
        o: Action = other
        return self.kind == o.kind and self.card == o.card and self.widow_card == o.widow_card

    def __hash__(self) -> int:
        return hash((self.kind, self.card, self.widow_card))

    @staticmethod
    def parse(text: str) -> Action:
        """Read the text form (``"discard Td"``, ``"knock"``; case and spacing are loose)."""
        if not isinstance(text, str):
            raise ActionParseError(f"an action must be text, got {text!r}")
        words = text.strip().lower().replace("_", " ").split()
        joined = " ".join(words)
        for kind, name in _NAMES.items():
            if kind not in CARD_KINDS and joined == name:
                return _SIMPLE[kind]
        try:
            if len(words) == 2 and words[0] == "discard":
                return DISCARDS[Card.parse(words[1])]
            if len(words) == 3 and words[:2] == ["swap", "upcard"]:
                return SWAP_UPCARDS[Card.parse(words[2])]
            if len(words) == 4 and words[:2] == ["swap", "widow"]:
                return swap_widow(Card.parse(words[2]), Card.parse(words[3]))
        except CardParseError as e:
            raise ActionParseError(f"not an action: {text!r} ({e})") from None
        raise ActionParseError(
            f"not an action: {text!r} (expected knock, draw stock, draw discard, discard <card>, "
            "pass, swap upcard <card>, call, swap hand, swap widow <hand card> <widow card>)"
        )


class ActionParseError(CardParseError):
    """An action's text form could not be read."""


KNOCK = Action(ActionKind.KNOCK)
DRAW_STOCK = Action(ActionKind.DRAW_STOCK)
DRAW_DISCARD = Action(ActionKind.DRAW_DISCARD)
PASS = Action(ActionKind.PASS)
CALL = Action(ActionKind.CALL)
SWAP_HAND = Action(ActionKind.SWAP_HAND)
#: ``DISCARDS[card]`` is the shared action that discards ``card``.
DISCARDS: tuple[Action, ...] = tuple(Action(ActionKind.DISCARD, c) for c in DECK)
#: ``SWAP_UPCARDS[card]`` is the shared action that makes hand card ``card`` the up-card.
SWAP_UPCARDS: tuple[Action, ...] = tuple(Action(ActionKind.SWAP_UPCARD, c) for c in DECK)
#: ``SWAP_WIDOWS[hand_card * 52 + widow_card]``: the shared widow swaps (see :func:`swap_widow`).
SWAP_WIDOWS: tuple[Action, ...] = tuple(
    Action(ActionKind.SWAP_WIDOW, h, w) for h in DECK for w in DECK
)
_SIMPLE = {
    ActionKind.KNOCK: KNOCK,
    ActionKind.DRAW_STOCK: DRAW_STOCK,
    ActionKind.DRAW_DISCARD: DRAW_DISCARD,
    ActionKind.PASS: PASS,
    ActionKind.CALL: CALL,
    ActionKind.SWAP_HAND: SWAP_HAND,
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


def swap_upcard(c: Card | str) -> Action:
    """The dealer's option that puts hand card ``c`` (a card or its text) face up and takes
    the up-card."""
    if isinstance(c, Card):
        return SWAP_UPCARDS[c]
    return SWAP_UPCARDS[_card_of(c, "swap_upcard")]


def swap_widow(hand_card: Card | str, widow_card: Card | str) -> Action:
    """The widow swap that gives ``hand_card`` to the widow and takes ``widow_card`` (cards
    or their text)."""
    h = hand_card if isinstance(hand_card, Card) else _card_of(hand_card, "swap_widow")
    w = widow_card if isinstance(widow_card, Card) else _card_of(widow_card, "swap_widow")
    return SWAP_WIDOWS[h * 52 + w]


class Phase(IntEnum):
    """Which decision the seat to move faces."""

    #: Knock, draw from the stock, take the discard (or pass under ``empty_stock=showdown``).
    TURN_START = 1
    #: After a draw: which of the four cards to discard.
    DISCARD = 2
    #: The dealer's option: the dealer's one decision before the first turn (swap or keep).
    DEALER_OPTION = 3


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
    #: The dealer's swap: ``card`` went face up, ``taken_card`` (the old up-card)
    #: into the dealer's hand.
    SWAP_UPCARD = 8
    #: The dealer kept the hand (the action ``PASS`` in the ``DEALER_OPTION`` phase); not
    #: the empty-stock pass, the round goes on.
    DEALER_PASS = 9
    #: A call under the gun.
    CALL = 10
    #: The dummy taken: no card; the old hand lies face up (see the
    #: observation's ``face_up``), the new hand is the taker's secret.
    SWAP_HAND = 11
    #: A widow swap: ``card`` went to the widow, ``taken_card`` came from it.
    SWAP_WIDOW = 12


class PublicEvent(NamedTuple):
    """One thing that happened in a round, in order.

    In the match's own record ``card`` is always known; in a seat's observation a card
    drawn from the stock by another seat is ``None``. For ``RESTOCK``, ``seat`` is the seat
    whose turn found the stock empty and ``card`` is ``None``. ``taken_card`` is only set by the
    two public exchanges, ``SWAP_UPCARD`` and ``SWAP_WIDOW``: the card the seat received.
    """

    kind: EventKind
    seat: int
    card: Card | None = None
    taken_card: Card | None = None

    def __str__(self) -> str:
        name = self.kind.name.lower().replace("_", " ")
        out = f"seat {self.seat} {name}" + (f" {self.card}" if self.card is not None else "")
        return out + (f" for {self.taken_card}" if self.taken_card is not None else "")


class DummyState(IntEnum):
    """Where the dummy hand is (docs/rules.md, "Variants")."""

    #: The rules deal no dummy.
    NONE = 1
    #: Face down in the middle: any player may still take it.
    FACE_DOWN = 2
    #: Taken: the taker's hand; the taker's old hand lies face up, out of play.
    TAKEN = 3
