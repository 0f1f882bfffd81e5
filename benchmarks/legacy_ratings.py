"""The ladder's scheduler and ratings as they were before issue 35, frozen for bench_ratings.py.

A copy, not an import, so that the benchmark keeps comparing the new ladder with what it
replaced after the old code is gone: the scheduler that seats the version of the highest
sigma with its nearest neighbours in mu (``referee/ladder/scheduler.py`` then), the live
update with openskill's default tau, and the official figure of that time, openskill
Plackett-Luce averaged over eight fixed orders of all matches, ranked by mu - 3 sigma
(``referee/tournament/standings.py``'s ``_ratings`` then). Nothing else uses it.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

#: openskill's default model: tau = 25/300 added to sigma at every update.
_model = PlackettLuce()
RATING_PASSES = 8


@dataclass(frozen=True, slots=True)
class Candidate:
    """An active version, as the old scheduler saw it."""

    id: int
    mu: float
    sigma: float
    tables: int


@dataclass(frozen=True, slots=True)
class TableChoice:
    """The old scheduler's choice: version ids sorted, and whether it was a placement table."""

    seats: tuple[int, ...]
    placement: bool
    focus: int


def prior() -> tuple[float, float]:
    """A new version's (mu, sigma)."""
    r = _model.rating()
    return float(r.mu), float(r.sigma)


def live_update(ratings: Sequence[tuple[float, float]], placings: Sequence[int]) -> list[tuple[float, float]]:
    """Each seat's (mu, sigma) after one match (default tau)."""
    rated = _model.rate([[_model.rating(mu=mu, sigma=sigma)] for mu, sigma in ratings], ranks=[float(p) for p in placings])
    return [(float(t[0].mu), float(t[0].sigma)) for t in rated]


def choose_table(
    candidates: Sequence[Candidate], table_size: int, placement_tables: int, rng: random.Random
) -> TableChoice | None:
    """The old choice: placement first, then the highest sigma with its nearest in mu."""
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
        uncertain = [c for c in candidates if c.sigma >= top - 1e-9]
        focus = min(uncertain, key=lambda c: (c.tables, c.id))
        pool = heapq.nsmallest(
            max(2 * k, k + 2), (c for c in candidates if c.id != focus.id), key=lambda c: (abs(c.mu - focus.mu), c.id)
        )
        opponents = rng.sample(pool, k)
        placement = False
    return TableChoice(tuple(sorted([focus.id, *(c.id for c in opponents)])), placement, focus.id)


def averaged_ratings(
    matches: Sequence[tuple[Sequence[int], Sequence[int]]], players: Sequence[int]
) -> dict[int, tuple[float, float]]:
    """The old official figure: each player's (mu, sigma), openskill over the matches (seats,
    placings) in key order and in seven seeded shuffles, averaged."""
    total = {p: [0.0, 0.0] for p in players}
    for p in range(RATING_PASSES):
        order = list(matches)
        if p:
            random.Random(p).shuffle(order)
        ratings = {n: _model.rating() for n in players}
        for seats, placings in order:
            rated = _model.rate([[ratings[n]] for n in seats], ranks=[float(x) for x in placings])
            for n, team in zip(seats, rated, strict=True):
                ratings[n] = team[0]
        for n in players:
            total[n][0] += float(ratings[n].mu)
            total[n][1] += float(ratings[n].sigma)
    return {n: (mu / RATING_PASSES, sigma / RATING_PASSES) for n, (mu, sigma) in total.items()}
