"""Matchmaking: which table the ladder plays next.

A new version first plays :attr:`~referee.ladder.settings.ArenaSettings.placement_tables`
tables against opponents drawn from the whole board (its rating says nothing yet, and a
board seen from one corner misplaces it). After that the scheduler picks the table that
reduces rating uncertainty most: the version whose rating is least certain (highest sigma;
the fewest tables among equals), seated with the versions whose mu is nearest its own, drawn
at random among the closest few so that the same table does not repeat forever. Every
table plays one deal in every seat rotation (the tournament's duplicate deals); the ladder
plays a choice for a series of tables (:attr:`~referee.ladder.settings.ArenaSettings.series_tables`),
a placement table alone.

Pure: the caller gives the candidates and the random source.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Candidate:
    """An active version, as the scheduler sees it."""

    id: int
    mu: float
    sigma: float
    #: Tables it has been scheduled at so far.
    tables: int


@dataclass(frozen=True, slots=True)
class TableChoice:
    """The next table: version ids in table order (seat 0 of rotation 0 first)."""

    seats: tuple[int, ...]
    #: Whether it is a placement table of its focus version.
    placement: bool
    #: The version the table was chosen for.
    focus: int


def choose_table(
    candidates: Sequence[Candidate], table_size: int, placement_tables: int, rng: random.Random
) -> TableChoice | None:
    """The next table, or None with fewer active versions than seats."""
    if len(candidates) < table_size:
        return None
    k = table_size - 1
    new = [c for c in candidates if c.tables < placement_tables]
    if new:
        focus = min(new, key=lambda c: (c.tables, c.id))
        others = [c for c in candidates if c.id != focus.id]
        opponents = rng.sample(others, k)
        placement = True
    else:
        top = max(c.sigma for c in candidates)
        # Sigmas within a hair of the top count as equal: then the fewest tables first.
        uncertain = [c for c in candidates if c.sigma >= top - 1e-9]
        focus = min(uncertain, key=lambda c: (c.tables, c.id))
        # The closest few only: a partial sort, as the board may hold thousands of versions.
        pool = heapq.nsmallest(max(2 * k, k + 2), (c for c in candidates if c.id != focus.id), key=lambda c: (abs(c.mu - focus.mu), c.id))
        opponents = rng.sample(pool, k)
        placement = False
    return TableChoice(tuple(sorted([focus.id, *(c.id for c in opponents)])), placement, focus.id)
