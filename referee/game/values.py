"""Hand values (docs/rules.md, "Hand values"), with a per-rules lookup table for the hot paths."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations

from referee.game.cards import DECK, RANK_VALUES, Card
from referee.game.rules import Rules

_VALUE = tuple(RANK_VALUES[i >> 2] for i in range(52))
_ACE = 12


def _compute(a: int, b: int, c: int, toak: str, three_aces: float | None) -> float:
    ra, rb, rc = a >> 2, b >> 2, c >> 2
    if toak != "off" and ra == rb == rc:
        if ra == _ACE and three_aces is not None:
            return float(three_aces)
        return 30.5 if toak == "30.5" else 30.0
    sums = [0, 0, 0, 0]
    sums[a & 3] += _VALUE[a]
    sums[b & 3] += _VALUE[b]
    sums[c & 3] += _VALUE[c]
    return float(max(sums))


@lru_cache(maxsize=16)
def _table(toak: str, three_aces: float | None) -> dict[int, float]:
    table: dict[int, float] = {}
    for a, b, c in combinations(range(52), 3):
        table[(1 << a) | (1 << b) | (1 << c)] = _compute(a, b, c, toak, three_aces)
    return table


def value_table(rules: Rules) -> dict[int, float]:
    """Map from a three-card bit mask (``1 << card`` summed) to the hand's value.

    Built once per distinct value rules (22,100 entries) and shared; the state machine
    and rollouts look values up here instead of recomputing them.
    """
    return _table(rules.three_of_a_kind, rules.three_aces)


def mask(cs: Sequence[int]) -> int:
    """The bit mask of a set of cards."""
    m = 0
    for c in cs:
        m |= 1 << c
    return m


def hand_value(cs: Sequence[Card], rules: Rules | None = None) -> float:
    """The value of a three-card hand under ``rules`` (default: standard).

    The highest total of one suit's cards; three of a rank may count 30½ or 30 (and three
    aces ``three_aces``) when ``three_of_a_kind`` is on.
    """
    if len(cs) != 3 or len(set(cs)) != 3:
        raise ValueError(f"a hand is three different cards, got {list(map(str, cs))}")
    r = rules or _STANDARD
    return _compute(cs[0], cs[1], cs[2], r.three_of_a_kind, r.three_aces)


def is_thirty_one(cs: Sequence[int]) -> bool:
    """True for an ace and two ten-value cards of one suit: the only 31 (a triple never is)."""
    if len(cs) != 3:
        return False
    a, b, c = cs
    return (a & 3) == (b & 3) == (c & 3) and _VALUE[a] + _VALUE[b] + _VALUE[c] == 31


def is_flush(cs: Sequence[int]) -> bool:
    """Three cards of one suit (for ``flush_may_knock``)."""
    return len({c & 3 for c in cs}) == 1


def best_discard(hand4: Sequence[Card], rules: Rules, forbidden: Card | None = None) -> tuple[Card, float]:
    """The discard from four cards that leaves the highest value, and that value.

    ``forbidden`` is the card just taken from the discard pile, which may not go back.
    Ties keep the lowest-valued card discarded first, so the choice is deterministic.
    """
    table = value_table(rules)
    full = mask(hand4)
    best: tuple[Card, float] | None = None
    for c in sorted(hand4, key=lambda x: (_VALUE[x], x)):
        if c == forbidden:
            continue
        v = table[full ^ (1 << c)]
        if best is None or v > best[1]:
            best = (c, v)
    assert best is not None
    return best


_STANDARD = Rules()

#: Every three-card hand, as tuples of cards (22,100 of them).
def all_hands() -> list[tuple[Card, Card, Card]]:
    """All 22,100 three-card hands."""
    return list(combinations(DECK, 3))
