"""The API's JSON shapes of the ladder's records (one place, so every route says the same)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from referee.ladder import board
from referee.ladder.fairness import deal_seed
from referee.ladder.store import ArenaStore, LadderMatch, Version, read_secret


@functools.cache
def _secret(folder: Path) -> bytes:
    # Read once per arena: it never changes, and a list of matches would read it per row.
    return read_secret(folder)


def version_public(v: Version) -> dict[str, Any]:
    """What anyone may see of a version."""
    return {
        "id": v.id, "bot": v.bot, "number": v.number, "label": v.label, "owner": v.owner, "status": v.status,
        "uploaded_at": v.uploaded_at, "mu": v.mu, "sigma": v.sigma, "matches": v.matches, "wins": v.wins,
        "tables": v.tables, "sha256": v.sha256, "bot_name": v.bot_name, "bot_version": v.bot_version,
    }


def version_private(v: Version) -> dict[str, Any]:
    """What a version's owner sees: also why it was refused, the validation's report (each
    step, pass or fail, as ``check-bot`` prints it) and what was uploaded."""
    return {**version_public(v), "reason": v.reason, "report": v.report, "status_at": v.status_at, "source": v.source,
            "command": v.command, "files": v.n_files, "size": v.size}


def standings(store: ArenaStore) -> list[dict[str, Any]]:
    """The leaderboard: active versions and every version that played, best first."""
    return board.standings(store)


def match_view(store: ArenaStore, m: LadderMatch, labels: dict[int, Version] | None = None) -> dict[str, Any]:
    """A match as anyone may see it: the seed and the log only once its whole deal is played."""
    seats = []
    for s, vid in enumerate(m.seats):
        v = labels[vid] if labels and vid in labels else store.version(vid)
        seat: dict[str, Any] = {"seat": s, "version": vid, "label": v.label, "owner": v.owner}
        if m.result is not None:
            r = m.result["seats"][s]
            seat.update(placing=r["placing"], faults=r.get("faults", {}), forfeited=r.get("forfeited", False))
        seats.append(seat)
    out: dict[str, Any] = {
        "key": m.key, "table": m.table_id, "rotation": m.rotation, "status": m.status, "seats": seats,
        "commitment": m.commitment, "finished_at": m.finished_at, "duration_s": m.duration_s,
        "deal_finished": m.deal_done,
    }
    if m.result is not None:
        out.update(placings=m.result["placings"], winner=m.result["winner"], reason=m.result["reason"], rounds=m.result["rounds"])
    if m.deal_done and m.status == "done":
        out["seed"] = str(deal_seed(_secret(store.folder), m.table_id))
        out["log"] = f"/api/v1/matches/{m.key}/log"
    return out
