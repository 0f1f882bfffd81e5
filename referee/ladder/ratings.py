"""The ladder's ratings: the official refit, and the live figure shown until a refit has a version.

**Official** (what ranks): :func:`referee.ratings.fit`, the one batch Plackett-Luce fit over
every finished match, tournaments' and the ladder's alike. A ladder table is one deal played
in every seat rotation, so the table is the cluster whose rotations share the cards' luck.
Each version's rating (``BASE + ELO * theta``, 1500 the board's average), its 95% interval
and standard error are stored with its win rate and the win rate's Wilson interval, counted
from the very matches the fit used (:func:`refit`).

**Live** (provisional): openskill's Plackett-Luce, one update per finished match, committed
with the result, with ``tau = 0``: a version never changes, so nothing should keep its
uncertainty from settling. It is shown, on the same scale and labelled provisional, only for
a version no refit has included yet (:func:`live_rating`), and never ranks.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from openskill.models import PlackettLuce

from referee.ladder.store import ArenaStore, Official, Version
from referee.ratings import BASE, ELO, LEVEL, Outcome, fit, wilson
from referee.tournament.results import MatchResult, SeatResult

#: tau = 0: a version's strength never changes, so its sigma must be free to settle.
_model = PlackettLuce(tau=0.0)
#: openskill's mu units per unit of log-strength: its Plackett-Luce divides the difference of
#: two mus by ``c = sqrt(sigma_a^2 + sigma_b^2 + 2 beta^2)``, ``sqrt(2) beta`` once settled.
LIVE_SCALE = math.sqrt(2.0) * float(_model.beta)
_Z = 1.959963984540054


def prior() -> tuple[float, float]:
    """A new version's live (mu, sigma)."""
    r = _model.rating()
    return float(r.mu), float(r.sigma)


_MU0 = prior()[0]


def live_update(ratings: Sequence[tuple[float, float]], placings: Sequence[int]) -> list[tuple[float, float]]:
    """Each seat's live (mu, sigma) after one match with these placings (1 = best)."""
    teams = [[_model.rating(mu=mu, sigma=sigma)] for mu, sigma in ratings]
    rated = _model.rate(teams, ranks=[float(p) for p in placings])
    return [(float(t[0].mu), float(t[0].sigma)) for t in rated]


def live_theta(mu: float, sigma: float) -> tuple[float, float]:
    """A live (mu, sigma) as a log-strength and its standard error (natural units), centred
    where a new version starts: the scale the official fit and the scheduler use."""
    return (mu - _MU0) / LIVE_SCALE, sigma / LIVE_SCALE


def live_rating(mu: float, sigma: float) -> tuple[float, float, float]:
    """The provisional rating shown for a version no refit has seen: (rating, low, high), on
    the official figure's scale (rating points, 95%)."""
    theta, se = live_theta(mu, sigma)
    r = BASE + ELO * theta
    return r, r - _Z * ELO * se, r + _Z * ELO * se



def table_of(key: str) -> int:
    """A ladder match key's table (``00000042-r1`` -> 42): the deal, the fit's cluster."""
    return int(key.split("-", 1)[0])


def refit(rows: Sequence[tuple[str, tuple[int, ...], dict[str, Any]]]) -> dict[int, Official]:
    """The official figures of every version that played, from all finished matches (key,
    seats as version ids, result): the fit, and win rates with Wilson intervals counted from
    the same matches. A win is first place alone (a shared first place is nobody's)."""
    records = [(key, seats, MatchResult.from_json(result)) for key, seats, result in rows]
    outcomes = [Outcome(tuple(seats), record.placings, table_of(key)) for key, seats, record in records]
    fitted = fit(outcomes)
    wins: Counter[int] = Counter()
    faults: dict[int, Counter[str]] = {}
    for _key, seats, record in records:
        placings = list(record.placings)
        # (An empty list of seats reads as no figures, as it always did.)
        per_seat = record.seats or tuple(SeatResult() for _ in seats)
        for s, v in enumerate(seats):
            wins[v] += placings[s] == 1 and placings.count(1) == 1
            for kind, n in per_seat[s].faults.items():
                if n:
                    faults.setdefault(v, Counter())[kind.lower()] += n
    out = {}
    for v, r in fitted.ratings.items():
        lo, hi = wilson(wins[v], r.matches)
        out[int(v)] = Official(r.rating, r.low, r.high, r.se, r.theta, r.matches, wins[v], lo, hi, dict(faults.get(v, {})))
    return out


def refit_store(store: ArenaStore) -> int:
    """Refit the official figures from the store; how many matches they rest on."""
    rows = store.finished_rows()
    store.set_official(refit(rows), len(rows))
    return len(rows)


def shown(v: Version) -> dict[str, Any]:
    """The one figure every page, the CLI and the API show for a version: its ``rating`` with
    the 95% interval (``low``, ``high``), ``provisional`` when it is the live figure (no refit
    has included the version yet), and its win rate with its Wilson interval, from the same
    matches as the rating (the refit's, or the live figure's)."""
    o = v.official
    if o is not None:
        rating, low, high, matches, wins = o.rating, o.low, o.high, o.matches, o.wins
        wl, wh = o.win_low, o.win_high
    else:
        rating, low, high = live_rating(v.mu, v.sigma)
        matches, wins = v.matches, v.wins
        wl, wh = wilson(wins, matches)
    return {
        "rating": round(rating, 1), "low": round(low, 1), "high": round(high, 1), "provisional": o is None,
        "matches": matches, "wins": wins, "win_rate": wins / matches if matches else None,
        "win_low": wl if matches else None, "win_high": wh if matches else None,
    }  # fmt: skip


__all__ = ["LEVEL", "live_rating", "live_theta", "live_update", "prior", "refit", "refit_store", "shown", "wilson"]
