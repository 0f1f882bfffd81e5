"""The leaderboard: built from the store in one query, kept built by the ladder.

The leaderboard is the arena's most read page and, with thousands of versions, its
costliest: so the ladder (the only writer of results) keeps its JSON in the store, rebuilt
a moment after what it shows changed (a result, a status, a refit: each bumps the store's
board generation in its own transaction). A reader serves the kept JSON as it is when its
generation is the current one, and builds the board itself otherwise: never a stale board.
"""

from __future__ import annotations

import json
from typing import Any

from referee.ladder.store import ArenaStore


def standings(store: ArenaStore) -> list[dict[str, Any]]:
    """The leaderboard's rows, best first: the official refit's figures once it has run,
    the live ratings beside them, and each version's latest live ratings (``spark``, oldest
    first: the row's sparkline)."""
    out = []
    for rank, (vid, bot, number, owner, status, mu, sigma, n, wins, omu, osigma, lo, hi, faults, spark) in enumerate(store.board_rows(), 1):
        official = omu is not None
        smu, ssigma = (omu, osigma) if official else (mu, sigma)
        out.append({
            "rank": rank, "version": vid, "label": f"{bot}.v{number}", "bot": bot, "owner": owner, "status": status,
            "mu": smu, "sigma": ssigma, "ordinal": smu - 3 * ssigma, "official": official,
            "live_mu": mu, "live_sigma": sigma, "matches": n, "wins": wins,
            "win_rate": wins / n if n else 0.0,
            "win_low": lo, "win_high": hi, "faults": json.loads(faults) if official else {},
            "spark": json.loads(spark),
        })  # fmt: skip
    return out


def build(store: ArenaStore) -> str:
    """The leaderboard's JSON (``GET /api/v1/standings``'s body) as the store holds it now."""
    return json.dumps({"official_at": store.meta("official_at") or None, "standings": standings(store)}, separators=(",", ":"))


def body(store: ArenaStore) -> str:
    """The leaderboard's JSON: the ladder's if it is current, else built now."""
    kept = store.board()
    return kept if kept is not None else build(store)


def refresh(store: ArenaStore) -> bool:
    """Rebuild the kept leaderboard if what it shows changed; whether it did.

    The generation is read before the board is built: a change while it is built leaves the
    kept one a generation behind, so it is rebuilt next time rather than served stale.
    """
    gen = store.board_gen()
    if store.board() is not None:
        return False
    store.set_board(gen, build(store))
    return True
