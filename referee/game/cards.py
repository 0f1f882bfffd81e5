"""Cards: 52 frozen, hashable values that print and parse as ``Ah``, ``Td``, ``7s``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from referee.game.errors import CardParseError

RANKS = "23456789TJQKA"
SUITS = "cdhs"
SUIT_SYMBOLS = "♣♦♥♠"
# Ace 11, T J Q K 10, number cards their pips (docs/rules.md, "Cards and notation").
RANK_VALUES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10, 11)


class Card(int):
    """One playing card, an ``int`` from 0 to 51 (``rank * 4 + suit``).

    Subclassing ``int`` keeps cards hashable, ordered and cheap: the hot paths of the
    state machine index tables with them directly. There are exactly 52 instances;
    use :func:`card` or :meth:`Card.parse` to get one.
    """

    __slots__ = ()
    _all: ClassVar[tuple[Card, ...]]

    def __new__(cls, index: int) -> Card:
        """Return the card with this index (0..51)."""
        if not 0 <= index < 52:
            raise CardParseError(f"card index must be 0..51, got {index}")
        try:
            return cls._all[index]
        except AttributeError:
            return int.__new__(cls, index)

    @property
    def rank(self) -> int:
        """Rank index 0..12 (2 .. ace)."""
        return self >> 2

    @property
    def suit(self) -> int:
        """Suit index 0..3 (clubs, diamonds, hearts, spades)."""
        return self & 3

    @property
    def value(self) -> int:
        """Points the card counts toward a suit total."""
        return RANK_VALUES[self >> 2]

    @property
    def text(self) -> str:
        """The text form, e.g. ``Td``."""
        return RANKS[self >> 2] + SUITS[self & 3]

    @property
    def symbol(self) -> str:
        """Human form with a suit symbol, e.g. ``T♦`` (for display only)."""
        return RANKS[self >> 2] + SUIT_SYMBOLS[self & 3]

    @property
    def is_red(self) -> bool:
        """Diamonds and hearts."""
        return (self & 3) in (1, 2)

    @classmethod
    def parse(cls, text: str) -> Card:
        """Read ``Ah``, ``Td``, ``10d``, ``AH``; raise :class:`CardParseError` otherwise.

        Lenient, for what people type (the CLI, the SDK's helpers): any case, ``10`` for
        ``T``, spaces around. The referee does not read bots' answers with it: on the wire a
        card is exactly rank then suit (:func:`referee.wire.card_from_pb`).
        """
        if not isinstance(text, str):
            raise CardParseError(f"a card must be text like 'Ah', got {text!r}")
        t = text.strip()
        if len(t) == 3 and t[:2] == "10":
            t = "T" + t[2]
        if len(t) != 2:
            raise CardParseError(f"not a card: {text!r} (expected rank then suit, like 'Ah' or 'Td')")
        r = RANKS.find(t[0].upper())
        s = SUITS.find(t[1].lower())
        if r < 0 or s < 0:
            raise CardParseError(
                f"not a card: {text!r} (ranks {RANKS}, suits {SUITS}; e.g. 'Ah', 'Td', '7s')"
            )
        return cls._all[r * 4 + s]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Card({self.text!r})"

    def __reduce__(self) -> tuple[type[Card], tuple[int]]:
        return (Card, (int(self),))


Card._all = tuple(int.__new__(Card, i) for i in range(52))

#: All 52 cards in index order.
DECK: tuple[Card, ...] = Card._all


def card(text: str) -> Card:
    """Shorthand for :meth:`Card.parse` (lenient: ``"ah"`` and ``"10h"`` are read too)."""
    return Card.parse(text)


def cards(text: str | Iterable[str]) -> tuple[Card, ...]:
    """Parse several cards: ``cards("Ah Kh 5h")`` or ``cards(["Ah", "Kh"])``."""
    parts = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    return tuple(Card.parse(p) for p in parts)


def format_cards(cs: Iterable[Card], symbols: bool = False) -> str:
    """Cards as space-separated text (or with suit symbols, for humans)."""
    return " ".join(c.symbol if symbols else c.text for c in cs)
