"""The leaderboard: built from the store in one query, kept built by the ladder.

The leaderboard is the arena's most read page and, with thousands of versions, its
costliest: so the ladder (the only writer of results) keeps its JSON in the store, rebuilt
a moment after what it shows changed (a result, a status, a refit: each bumps the store's
board generation in its own transaction). A reader serves the kept JSON as it is when its
generation is the current one, and builds the board itself otherwise: never a stale board.

Ranked means playing: only active versions that a refit has included get a rank, by their
official rating. Active versions no refit has seen yet follow, unranked, with their
provisional (live) figure; versions that left the ladder (withdrawn, retired, disqualified)
come last, apart, with their final figures (:meth:`ArenaStore.board_rows`).
"""

from __future__ import annotations

import json
from typing import Any

from referee.ladder.ratings import shown
from referee.ladder.store import ArenaStore

#: The board's sections, in order: ranked, provisional (active, not refitted yet), left the ladder.
SECTIONS = ("ranked", "provisional", "inactive")


def standings(store: ArenaStore) -> list[dict[str, Any]]:
    """The leaderboard's rows in the board's order (see the module doc): each with its
    ``rank`` (None unless ranked), its ``section``, the one figure (:func:`shown`: ``rating``,
    ``low``, ``high``, ``provisional``, the win rate and its interval from the same matches),
    ``played`` (every match it finished, some perhaps after the last refit), faults (the
    refit's) and ``spark``: the latest live ratings, oldest first (the row's
    sparkline)."""
    out = []
    rank = 0
    for v, spark in store.board_rows():
        if v.status != "active":
            section = "inactive"
        elif v.official is None:
            section = "provisional"
        else:
            section = "ranked"
            rank += 1
        out.append({
            "rank": rank if section == "ranked" else None, "section": section, "version": v.id,
            "label": v.label, "bot": v.bot, "owner": v.owner, "status": v.status, "reference": v.reference,
            **shown(v), "played": v.matches, "faults": v.official.faults if v.official else {}, "spark": json.loads(spark),
        })  # fmt: skip
    return out


def build(store: ArenaStore) -> str:
    """The leaderboard's JSON (``GET /api/v1/standings``'s body) as the store holds it now."""
    return json.dumps({
        "official_at": store.meta("official_at") or None,
        "official_matches": int(store.meta("official_matches", "0")),
        "standings": standings(store),
    }, separators=(",", ":"))  # fmt: skip


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


def bot_ranks(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Each bot's rank: that of its best active version (a bot without a ranked version has none)."""
    out: dict[str, int] = {}
    for r in rows:
        if r["rank"] is not None and r["bot"] not in out:
            out[r["bot"]] = r["rank"]
    return out
