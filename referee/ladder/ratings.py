"""The ladder's ratings: a live update after every match, and the official refit.

Live: openskill's Plackett-Luce, one update per finished match, committed with the result;
it moves the board at once. Official: the tournament standings' order-free refit
(:func:`referee.tournament.standings.compute_standings`, averaged over fixed orders of all
matches), run in the background, with win-rate intervals; it does not depend on the order
the matches happened to finish in, so it is the figure that counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openskill.models import PlackettLuce

from referee.ladder.store import ArenaStore, Official
from referee.tournament.standings import compute_standings
from referee.tournament.store import MatchRow

_model = PlackettLuce()


def prior() -> tuple[float, float]:
    """A new version's (mu, sigma)."""
    r = _model.rating()
    return float(r.mu), float(r.sigma)


def live_update(ratings: Sequence[tuple[float, float]], placings: Sequence[int]) -> list[tuple[float, float]]:
    """Each seat's (mu, sigma) after one match with these placings (1 = best)."""
    teams = [[_model.rating(mu=mu, sigma=sigma)] for mu, sigma in ratings]
    rated = _model.rate(teams, ranks=[float(p) for p in placings])
    return [(float(t[0].mu), float(t[0].sigma)) for t in rated]


def refit(rows: Sequence[tuple[str, tuple[int, ...], dict[str, Any]]]) -> dict[int, Official]:
    """The official figures of every version that played, from all finished matches."""
    match_rows = [
        MatchRow(key, key, 0, 0, 0, tuple(str(v) for v in seats), result, "", "", 0.0) for key, seats, result in rows
    ]
    standings = compute_standings(match_rows)
    return {
        int(b.name): Official(b.rating, b.rating_se, b.matches, b.wins, b.win_low, b.win_high, {k: v for k, v in b.faults.items() if v})
        for b in standings.bots
    }


def refit_store(store: ArenaStore) -> int:
    """Refit the official figures from the store; how many matches they rest on."""
    rows = store.finished_rows()
    store.set_official(refit(rows))
    return len(rows)
