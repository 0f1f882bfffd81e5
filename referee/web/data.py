"""What the web viewer shows, as JSON-able data: standings, rating history, the match list,
and replays, read from a tournament folder (its database opened read-only) or from a
folder of match logs.

Pure of any presentation: the standings' JSON form is the CLI's (``standings --json``),
handed in by the caller as :data:`StandingsJson` so that this package needs neither rich nor
Typer. Replays go through the replay model (:mod:`referee.replay.model`) and
:func:`referee.web.replay_json.replay_to_json`; the browser never reads a log.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from referee.analysis.decisions import cached_analysis
from referee.faults import LogError
from referee.log import read_log
from referee.replay.model import build_replay
from referee.replay.verify import has_results, log_files, stored_result_of
from referee.text import printable
from referee.tournament.schedule import HELD_BACK, DealProgress
from referee.tournament.settings import TournamentSettings
from referee.tournament.standings import (
    RatingPoint,
    Standings,
    compute_standings,
    deal_progress,
    rating_history,
    tournament_rating_history,
    tournament_standings,
)
from referee.tournament.store import DB_NAME, MatchRow, StoreError, TournamentStore, connect
from referee.web.replay_json import replay_to_json

#: The CLI's ``standings --json`` text for standings and settings (None: loose logs).
StandingsJson = Callable[[Standings, TournamentSettings], str]

#: Points per bot in the rating plot at most (the history is thinned evenly, last point kept).
HISTORY_POINTS = 400
#: Matches per page of the match list, at most.
MAX_PER_PAGE = 500
#: Sort keys of the match list: name -> SQL expression.
SORTS = {
    "key": "key",
    "finished": "finished_at",
    "duration": "duration_s",
    "rounds": "CAST(json_extract(result, '$.rounds') AS INTEGER)",
}


class _Entry(NamedTuple):
    """A match in the list's index: what it is filtered and sorted by."""

    key: str
    seats: tuple[str, ...]
    rounds: int
    finished_at: str
    duration_s: float


@dataclass(frozen=True, slots=True)
class _Index:
    signature: Any
    entries: list[_Entry]
    bots: list[str]


class NotFound(LookupError):
    """No such match (or view) in the folder."""


class HeldBack(LookupError):
    """A finished match whose replay is not shown yet: another rotation of its deal (the
    same cards) is still to be played (:class:`~referee.tournament.schedule.DealProgress`)."""


@dataclass(frozen=True, slots=True)
class Page:
    """The match list's query: a bot to filter by, a sort, a page."""

    bot: str | None = None
    sort: str = "key"
    desc: bool = False
    page: int = 1
    per: int = 50

    def clean(self) -> Page:
        """The query with every value in range."""
        sort = self.sort if self.sort in SORTS else "key"
        per = min(max(1, self.per), MAX_PER_PAGE)
        return Page(self.bot or None, sort, self.desc, max(1, self.page), per)


def match_id(log_path: str | Path) -> str:
    """A match's id in the viewer: its log's file stem."""
    return Path(log_path).stem


def _row_json(row: MatchRow, held_back: bool = False) -> dict[str, Any]:
    r = row.result
    seats = r.get("seats", [])
    winner = r.get("winner")
    return {
        "id": match_id(row.log_path),
        "key": row.key,
        "seats": list(row.seats),
        "placings": row.placings,
        "winner": row.seats[winner] if isinstance(winner, int) and 0 <= winner < len(row.seats) else None,
        "reason": r.get("reason"),
        "rounds": r.get("rounds"),
        "faults": sum(sum(int(n) for n in s.get("faults", {}).values()) for s in seats),
        "forfeits": sum(1 for s in seats if s.get("forfeited")),
        "finished_at": row.finished_at,
        "duration_s": round(row.duration_s, 3),
        # Its result is shown; its replay (and seed) not yet: see DealProgress.
        "held_back": held_back,
    }


def _thin(points: list[RatingPoint]) -> list[list[float]]:
    """At most :data:`HISTORY_POINTS` points, evenly spaced, the first and last kept."""
    if len(points) > HISTORY_POINTS:
        step = (len(points) - 1) / (HISTORY_POINTS - 1)
        points = [points[round(i * step)] for i in range(HISTORY_POINTS)]
    return [[p.match, round(p.rating, 1), round(p.low, 1), round(p.high, 1)] for p in points]


def history_json(history: dict[str, list[RatingPoint]]) -> dict[str, Any]:
    """The rating history for the plot: per bot, ``[match, rating, low, high]`` points (the fit
    over the first ``match`` matches, and its 95% interval)."""
    total = max((p.match for pts in history.values() for p in pts), default=0)
    return {"matches": total, "bots": {name: _thin(pts) for name, pts in sorted(history.items())}}


def replay_views(path: Path, analysis: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every view of one match: ``omni`` and each seat's (``"0"``, ``"1"``, ...); with
    ``analysis`` (of this log), each view with the judgements it may show."""
    log = read_log(path)
    views = {"omni": replay_to_json(build_replay(log, None), analysis)}
    for seat in range(log.header.players):
        views[str(seat)] = replay_to_json(build_replay(log, seat), analysis)
    return views


class Source:
    """A folder the viewer shows: a tournament, or match logs."""

    def __init__(self, folder: Path, standings_json: StandingsJson) -> None:
        self.folder = Path(folder)
        self.standings_json = standings_json
        self.tournament = has_results(self.folder)
        self._lock = threading.Lock()
        self._cache: tuple[Any, dict[str, Any]] | None = None
        self._logs: dict[str, Path] = {}
        self._loose: tuple[Any, list[MatchRow]] | None = None
        self._skipped: list[dict[str, str]] = []
        self._idx: _Index | None = None
        self._deals: tuple[Any, DealProgress] | None = None
        self._computing: threading.Thread | None = None
        self._next_compute = 0.0
        self._error: str | None = None
        if not self.folder.is_dir():
            raise StoreError(f"no such folder: {self.folder}")
        if self.tournament:
            TournamentStore.open(self.folder, readonly=True).close()  # a clear error now, if any
        elif not log_files(self.folder):
            raise StoreError(f"{self.folder} holds neither a tournament ({DB_NAME}) nor match logs (*.jsonl)")

    # ------------------------------------------------------------ the database, read-only

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        conn = connect(self.folder / DB_NAME, readonly=True)
        try:
            yield conn
        finally:
            conn.close()

    def signature(self) -> Any:
        """Changes whenever what the pages show changes (polled by the browser)."""
        if not self.tournament:
            return [(p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in log_files(self.folder)]
        try:
            with self._db() as c:
                return list(c.execute(
                    "SELECT (SELECT count(*) FROM matches), (SELECT max(rowid) FROM matches), "
                    "(SELECT count(*) FROM disqualified), (SELECT group_concat(name) FROM bots)"
                ).fetchone())
        except sqlite3.Error as e:
            raise StoreError(f"{self.folder / DB_NAME}: {e}") from None

    def deals(self) -> DealProgress:
        """Which deals of the tournament are complete (read again when the results change);
        a folder of loose logs has no schedule, so nothing there is held back."""
        if not self.tournament:
            return DealProgress(frozenset(), tournament_finished=True)
        sig = self.signature()
        with self._lock:
            if self._deals is not None and self._deals[0] == sig:
                return self._deals[1]
        with TournamentStore.open(self.folder, readonly=True) as store:
            progress = deal_progress(store)
        with self._lock:
            self._deals = (sig, progress)
        return progress

    # ------------------------------------------------------------ loose logs

    def _loose_rows(self) -> list[MatchRow]:
        sig = self.signature()
        if self._loose is not None and self._loose[0] == sig:
            return self._loose[1]
        rows = []
        skipped: list[dict[str, str]] = []
        for p in log_files(self.folder):
            # A log that cannot be read, is cut short or diverges has no result to show: it is
            # left out, with its reason, and the others are shown.
            try:
                log = read_log(p)
                result = stored_result_of(log)
            except LogError as e:
                skipped.append({"file": p.name, "reason": printable(str(e))})
                continue
            if result is None:
                why = "it has no footer (the match was not played to its end)" if log.footer is None else "it diverges from the game model"
                skipped.append({"file": p.name, "reason": why})
                continue
            names = tuple(s.label or s.identity.name for s in log.header.seats)
            when = datetime.fromtimestamp(p.stat().st_mtime, UTC).isoformat(timespec="seconds")
            rows.append(MatchRow(p.stem, "", 0, 0, log.header.seed, names, result, str(p.relative_to(self.folder)), when, 0.0))
        self._loose = (sig, rows)
        self._skipped = skipped
        return rows

    def skipped(self) -> list[dict[str, str]]:
        """The logs of a folder of loose logs that are not shown: ``file`` and ``reason``."""
        if self.tournament:
            return []
        self._loose_rows()
        return list(self._skipped)

    # ------------------------------------------------------------ standings and history

    def standings(self, *, wait: bool = True) -> dict[str, Any]:
        """``standings --json``'s data, plus ``history`` (the rating plot), ``signature`` and
        ``stale``.

        Computed once per change of the results, in a thread of its own. With ``wait=False``
        (the server's polls) the last computed standings are returned at once, marked
        ``stale`` while newer ones are being computed; a new computation starts no sooner
        than its last one took after it ended, so a live run is never slowed by more than
        half a core.
        """
        sig = self.signature()
        with self._lock:
            cached = self._cache
            if cached is not None and cached[0] == sig:
                return cached[1]
            thread = self._computing
            if thread is None and (cached is None or time.monotonic() >= self._next_compute):
                thread = self._computing = threading.Thread(target=self._compute, args=(sig,), name="standings", daemon=True)
                thread.start()
        if cached is not None and not wait:
            return {**cached[1], "stale": True}
        if thread is not None:
            thread.join()
        with self._lock:
            if self._cache is None:
                raise StoreError(self._error or f"cannot compute the standings of {self.folder}")
            return self._cache[1]

    def _compute(self, sig: Any) -> None:
        started = time.monotonic()
        try:
            data = self._standings_now()
        except (StoreError, LogError, sqlite3.Error) as e:
            with self._lock:
                self._error = str(e)
                self._computing = None
            return
        data["signature"] = json.dumps(sig)
        data["stale"] = False
        with self._lock:
            self._cache = (sig, data)
            self._computing = None
            self._error = None
            self._next_compute = time.monotonic() + max(1.0, time.monotonic() - started)

    def _standings_now(self) -> dict[str, Any]:
        if self.tournament:
            with TournamentStore.open(self.folder, readonly=True) as store:
                st = tournament_standings(store)
                data: dict[str, Any] = json.loads(self.standings_json(st, store.settings))
                history = tournament_rating_history(store)
        else:
            rows = self._loose_rows()
            st = compute_standings(rows)
            data = json.loads(self.standings_json(st, TournamentSettings()))
            data["settings"] = None
            history = rating_history(rows)
        shown = data.get("settings") or {}
        # As text too: a 64-bit seed is beyond a JavaScript number's exact integers.
        data["seed_text"] = str(shown["seed"]) if shown.get("seed") is not None else None
        data["history"] = history_json(history)
        data["source"] = {"folder": self.folder.name, "kind": "tournament" if self.tournament else "logs"}
        data["skipped"] = self.skipped()
        return data

    # ------------------------------------------------------------ the match list

    def _index(self) -> _Index:
        """The match list's light columns, read once per change of the results."""
        sig = self.signature()
        with self._lock:
            if self._idx is not None and self._idx.signature == sig:
                return self._idx
        entries: list[_Entry] = []
        if self.tournament:
            with self._db() as c:
                names = {str(n) for (n,) in c.execute("SELECT name FROM bots")}
                for key, seats, rounds, fin, dur in c.execute(
                    "SELECT key, seats, CAST(json_extract(result, '$.rounds') AS INTEGER), finished_at, duration_s FROM matches"
                ):
                    entries.append(_Entry(key, tuple(json.loads(seats)), int(rounds or 0), fin, float(dur)))
        else:
            names = set()
            for r in self._loose_rows():
                entries.append(_Entry(r.key, r.seats, r.record.rounds, r.finished_at, r.duration_s))
        for e in entries:
            names.update(e.seats)
        idx = _Index(sig, entries, sorted(names))
        with self._lock:
            self._idx = idx
        return idx

    def bots(self) -> list[str]:
        """Every bot's name, for the filter."""
        return self._index().bots

    def matches(self, query: Page) -> dict[str, Any]:
        """One page of the match list: ``total`` (after the filter), ``rows``, ``bots``.

        Filtered and sorted over an index of light columns held in memory (read again when
        the results change), then only the page's rows are read in full.
        """
        q = query.clean()
        idx = self._index()
        chosen = [e for e in idx.entries if q.bot in e.seats] if q.bot else list(idx.entries)
        field = {"key": 0, "finished": 3, "duration": 4, "rounds": 2}[q.sort]
        chosen.sort(key=lambda e: (e[field], e.key), reverse=q.desc)
        page = chosen[(q.page - 1) * q.per : q.page * q.per]
        keys = [e.key for e in page]
        if self.tournament:
            by_key: dict[str, MatchRow] = {}
            with self._db() as c:
                marks = ",".join("?" * len(keys))
                for key, tk, deal, rot, seed, seats, result, log, fin, dur in c.execute(
                    f"SELECT * FROM matches WHERE key IN ({marks})", keys
                ):
                    by_key[key] = MatchRow(key, tk, deal, rot, int(seed), tuple(json.loads(seats)), json.loads(result), log, fin, dur)
            rows = [by_key[k] for k in keys if k in by_key]
        else:
            loose = {r.key: r for r in self._loose_rows()}
            rows = [loose[k] for k in keys if k in loose]
        total = len(chosen)
        deals = self.deals()
        return {
            "total": total,
            "page": q.page,
            "per": q.per,
            "pages": max(1, -(-total // q.per)),
            "sort": q.sort,
            "desc": q.desc,
            "bot": q.bot,
            "rows": [_row_json(r, not deals.replay_public(r.seed)) for r in rows],
            "bots": idx.bots,
            "skipped": self.skipped(),
        }

    def all_matches(self) -> list[dict[str, Any]]:
        """Every match, in key order (for the static export)."""
        first = self.matches(Page(per=1))
        out: list[dict[str, Any]] = []
        pages = -(-int(first["total"]) // MAX_PER_PAGE)
        for n in range(1, pages + 1):
            out.extend(self.matches(Page(page=n, per=MAX_PER_PAGE))["rows"])
        return out

    # ------------------------------------------------------------ replays

    def log_path(self, mid: str) -> Path:
        """The log of match ``mid`` (its log's stem)."""
        path = self._logs.get(mid)
        if path is None or not path.is_file():
            self._logs = {p.stem: p for p in log_files(self.folder)}
            path = self._logs.get(mid)
        row = self._finished(mid) if self.tournament and path is not None else None
        if path is None or (self.tournament and row is None):
            # A tournament's match in play is not shown: its log holds the hands of a match
            # that is not over.
            raise NotFound(f"no finished match {mid!r} in {self.folder}")
        if row is not None and not self.deals().replay_public(row[1]):
            raise HeldBack(
                f"the replay of match {row[0]} is {HELD_BACK}: every rotation of a deal is dealt the "
                "same cards, and another rotation of this one is still to be played"
            )
        return path

    def _finished(self, mid: str) -> tuple[str, int] | None:
        """The key and seed of the finished match ``mid``; None if it has not finished."""
        with self._db() as c:
            found = c.execute("SELECT log_path, key, seed FROM matches WHERE log_path LIKE ?", (f"%{mid}.jsonl",)).fetchall()
        for p, key, seed in found:
            if match_id(p) == mid:
                return str(key), int(seed)
        return None

    def replay(self, mid: str, view: str, *, analysis: bool = False) -> dict[str, Any]:
        """One view (``omni`` or a seat number) of match ``mid``, as JSON data (with
        ``analysis``, each decision judged: made once, then kept beside the log)."""
        path = self.log_path(mid)
        log = read_log(path)
        if view == "omni":
            seat = None
        elif view.isdigit() and int(view) < log.header.players:
            seat = int(view)
        else:
            raise NotFound(f"no view {view!r} of match {mid!r} (omni, or a seat from 0 to {log.header.players - 1})")
        doc = cached_analysis(path) if analysis else None
        data = replay_to_json(build_replay(log, seat), doc)
        data["id"] = mid
        return data


__all__ = ["HeldBack", "NotFound", "Page", "Source", "StandingsJson", "history_json", "match_id", "replay_views"]
