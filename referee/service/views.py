"""The API's JSON shapes of the ladder's records (one place, so every route says the same)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from referee.ladder import board
from referee.ladder.fairness import deal_seed
from referee.ladder.ratings import live_rating, shown
from referee.ladder.store import ArenaStore, LadderMatch, Version, read_secret
from referee.tournament.results import MatchResult

#: Most points of one version's rating history a response carries (evenly spread).
HISTORY_POINTS = 400


@functools.cache
def _secret(folder: Path) -> bytes:
    # Read once per arena: it never changes, and a list of matches would read it per row.
    return read_secret(folder)


def version_public(v: Version, rank: int | None = None) -> dict[str, Any]:
    """What anyone may see of a version: its one figure (:func:`~referee.ladder.ratings.shown`:
    the rating with its 95% interval, provisional or not, and the win rate with its interval
    from the same matches, ``matches`` being those), its rank on the board (None unless
    ranked), and ``played``: every match it finished, some perhaps after the last refit."""
    return {
        "id": v.id, "bot": v.bot, "number": v.number, "label": v.label, "owner": v.owner, "status": v.status,
        "uploaded_at": v.uploaded_at, **shown(v), "rank": rank, "reference": v.reference, "played": v.matches,
        "tables": v.tables, "sha256": v.sha256, "bot_name": v.bot_name, "bot_version": v.bot_version,
    }  # fmt: skip


def ranks(store: ArenaStore) -> tuple[dict[int, int], dict[str, int]]:
    """The board's ranks: by version, and by bot (its best active version's)."""
    rows = json.loads(board.body(store))["standings"]
    return {r["version"]: r["rank"] for r in rows if r["rank"] is not None}, board.bot_ranks(rows)


def version_private(v: Version, rank: int | None = None) -> dict[str, Any]:
    """What a version's owner sees: also why it was refused, the validation's report (each
    step, pass or fail, as ``check-bot`` prints it) and what was uploaded."""
    return {**version_public(v, rank), "reason": v.reason, "report": v.report, "status_at": v.status_at, "source": v.source,
            "command": v.command, "files": v.n_files, "size": v.size}


def standings(store: ArenaStore) -> list[dict[str, Any]]:
    """The leaderboard: active versions and every version that played, best first."""
    return board.standings(store)


def match_view(store: ArenaStore, m: LadderMatch, labels: dict[int, Version] | None = None) -> dict[str, Any]:
    """A match as anyone may see it: the seed and the log only once its whole deal is played."""
    record = None if m.result is None else MatchResult.from_json(m.result)
    seats = []
    for s, vid in enumerate(m.seats):
        v = labels[vid] if labels and vid in labels else store.version(vid)
        seat: dict[str, Any] = {"seat": s, "version": vid, "label": v.label, "owner": v.owner}
        if record is not None:
            r = record.seat(s)
            seat.update(placing=r.placing, faults=dict(r.faults), forfeited=r.forfeited)
        seats.append(seat)
    out: dict[str, Any] = {
        "key": m.key, "table": m.table_id, "rotation": m.rotation, "status": m.status, "seats": seats,
        "commitment": m.commitment, "finished_at": m.finished_at, "duration_s": m.duration_s,
        "deal_finished": m.deal_done,
    }
    if record is not None:
        out.update(placings=list(record.placings), winner=record.winner, reason=record.reason, rounds=record.rounds)
    if m.deal_done and m.status == "done":
        out["seed"] = str(deal_seed(_secret(store.folder), m.table_id))
        if m.log_path:  # (a match the referee could not log has a result and no replay)
            out["log"] = f"/api/v1/matches/{m.key}/log"
    return out


def version_admin(v: Version) -> dict[str, Any]:
    """What an admin's list of versions shows: the public figures, and why a version stopped."""
    return {**version_public(v), "reason": v.reason, "status_at": v.status_at}


def rating_history(store: ArenaStore, versions: list[Version], max_points: int = HISTORY_POINTS) -> list[dict[str, Any]]:
    """Each version's live (provisional) rating after each of its matches, on the official
    figure's scale: ``[n, rating, low, high]`` points (95%), the version's match count first
    (no point before its first match: nothing to draw from 0)."""
    return [
        {"version": v.id, "label": v.label, "number": v.number, "status": v.status,
         "points": [[p.n, *(round(x, 1) for x in live_rating(p.mu, p.sigma))] for p in store.rating_history(v.id, max_points)]}
        for v in versions
    ]


def head_to_head(store: ArenaStore, versions: list[Version]) -> list[dict[str, Any]]:
    """How each version fared against each opponent version: placed above it (a win), below
    (a loss), or equal (a draw; a shared first place too, which nobody wins), and the score:
    the share of wins, draws counting half (the tournament's head-to-head score)."""
    labels = {v.id: v for v in versions}
    out = []
    for vid, oid, h in store.head_to_head([v.id for v in versions]):
        o = labels.get(oid) or store.version(oid)
        labels[oid] = o
        out.append({
            "version": vid, "label": labels[vid].label, "opponent": oid, "opponent_label": o.label, "opponent_bot": o.bot,
            "opponent_owner": o.owner, "matches": h.matches, "wins": h.better, "losses": h.worse, "draws": h.equal,
            "score": round(h.score, 4),
        })
    return out
