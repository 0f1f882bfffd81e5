"""Where the cards' order comes from (docs/rules.md, "Seeds and reproducible matches").

A match draws every shuffle from a :class:`Chance`. :class:`SeededChance` derives each one
from the match seed with HMAC-SHA256, so a seat that has seen some cards learns nothing
about the rest, the seed, or other shuffles. :class:`RecordedChance` replays the orders a
match log recorded, so a verifier needs no seed.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Mapping, Sequence
from typing import Protocol

from referee.game.cards import Card
from referee.game.errors import ChanceError

MAX_SEED = 2**64 - 1
_TOP32 = 1 << 32
_MASK32 = _TOP32 - 1


class Chance(Protocol):
    """A source of shuffled card orders."""

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """The full deck for ``round_no``, in dealing order (first card dealt first)."""
        ...

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """A new stock made of ``cards`` (top first): the ``index``-th restock of the round."""
        ...


class SeededChance:
    """Shuffles derived from a 64-bit seed: HMAC-SHA256 keyed by the seed, then SHAKE-256."""

    __slots__ = ("_mac",)

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise ValueError(f"a match seed is a whole number from 0 to 2**64-1, got {seed!r}")
        # Keyed once; each shuffle copies it, which skips re-deriving the HMAC pads.
        self._mac = hmac.new(seed.to_bytes(8, "big"), digestmod=hashlib.sha256)

    def _shuffle(self, label: str, cards: Sequence[Card]) -> list[Card]:
        out = list(cards)
        n = len(out)
        if n < 2:
            return out
        # HMAC-SHA256 of (seed, label) keys a SHAKE-256 stream: one hash call yields all
        # the words a shuffle needs, and nothing about the seed or other shuffles leaks.
        mac = self._mac.copy()
        mac.update(label.encode())
        xof = hashlib.shake_256(mac.digest())
        words = struct.unpack(f">{n}I", xof.digest(4 * n))
        extra = n
        # Fisher-Yates; each index by Lemire's multiply-shift with its rejection step, so
        # every order is exactly equally likely.
        for i in range(n - 1, 0, -1):
            m = i + 1
            x = words[i] * m
            if (x & _MASK32) < m:
                threshold = (_TOP32 - m) % m
                while (x & _MASK32) < threshold:
                    extra += 1
                    x = struct.unpack(">I", xof.digest(4 * extra)[-4:])[0] * m
            j = x >> 32
            out[i], out[j] = out[j], out[i]
        return out

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """The seeded deck order for a round."""
        return self._shuffle(f"deal/{round_no}", cards)

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """The seeded order of a new stock."""
        return self._shuffle(f"restock/{round_no}/{index}", cards)


class RecordedChance:
    """Replays recorded deck orders; checks each is an order of exactly the expected cards."""

    def __init__(
        self,
        deals: Mapping[int, Sequence[Card]],
        restocks: Mapping[tuple[int, int], Sequence[Card]] | None = None,
    ) -> None:
        # Card(x) turns stray ints into cards, so replayed hands print as cards.
        self._deals = {k: [Card(c) for c in v] for k, v in deals.items()}
        self._restocks = {k: [Card(c) for c in v] for k, v in (restocks or {}).items()}

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """The recorded deck of a round."""
        try:
            order = self._deals[round_no]
        except KeyError:
            raise ChanceError(f"no deal recorded for round {round_no}") from None
        _same_cards(order, cards, f"the deal of round {round_no}")
        return list(order)

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """The recorded order of a restock."""
        try:
            order = self._restocks[(round_no, index)]
        except KeyError:
            raise ChanceError(f"no restock {index} recorded for round {round_no}") from None
        _same_cards(order, cards, f"restock {index} of round {round_no}")
        return list(order)


def _same_cards(order: Sequence[Card], expected: Sequence[Card], what: str) -> None:
    if len(order) != len(expected) or set(order) != set(expected):
        missing = sorted(set(expected) - set(order))
        extra = sorted(set(order) - set(expected))
        detail = []
        if missing:
            detail.append("missing " + " ".join(map(str, missing)))
        if extra:
            detail.append("unexpected " + " ".join(map(str, extra)))
        if len(order) != len(set(order)):
            detail.append("a card appears twice")
        raise ChanceError(
            f"{what} is not an order of the {len(expected)} expected cards: " + "; ".join(detail)
        )
