"""The tournament's state: a SQLite database (WAL) inside the tournament's folder.

Every finished match is committed on its own, keyed by its schedule key, so a run that is
killed loses at most the matches in flight and never records one twice.
"""

from __future__ import annotations

import fcntl
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from referee.tournament.settings import SettingsError, TournamentSettings

DB_NAME = "tournament.db"
#: The lock file held while a run plays the tournament (see :meth:`TournamentStore.run_lock`).
LOCK_NAME = "run.lock"
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE bots (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL,          -- sample | file | command | address
    spec TEXT NOT NULL,          -- how to run it, in the referee's bot syntax
    cwd TEXT NOT NULL,           -- folder to start it in
    source TEXT NOT NULL,        -- what the user submitted
    sha256 TEXT,                 -- of the copied file, for kind = file
    bot_name TEXT NOT NULL,
    bot_version TEXT NOT NULL,
    author TEXT NOT NULL,
    added_at TEXT NOT NULL
);
CREATE TABLE matches (
    key TEXT PRIMARY KEY,
    table_key TEXT NOT NULL,
    deal INTEGER NOT NULL,
    rotation INTEGER NOT NULL,
    seed TEXT NOT NULL,          -- 64-bit unsigned, beyond SQLite's INTEGER
    seats TEXT NOT NULL,         -- JSON list of bot names, seat 0 first
    result TEXT NOT NULL,        -- JSON: placings, per-seat stats, faults, rounds
    log_path TEXT NOT NULL,      -- relative to the tournament folder
    finished_at TEXT NOT NULL,
    duration_s REAL NOT NULL
);
CREATE TABLE disqualified (
    name TEXT PRIMARY KEY,       -- a bot's name in the tournament
    reason TEXT NOT NULL,
    at TEXT NOT NULL
);
"""


class StoreError(Exception):
    """The tournament folder or database cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class BotEntry:
    """A submitted bot."""

    name: str
    kind: str
    spec: str
    cwd: str
    source: str
    sha256: str | None
    bot_name: str
    bot_version: str
    author: str
    added_at: str


@dataclass(frozen=True, slots=True)
class MatchRow:
    """A finished match as stored."""

    key: str
    table_key: str
    deal: int
    rotation: int
    seed: int
    seats: tuple[str, ...]
    result: dict[str, Any]
    log_path: str
    finished_at: str
    duration_s: float

    @property
    def placings(self) -> list[int]:
        """Placing of each seat (1 = best)."""
        return [int(p) for p in self.result["placings"]]


def now() -> str:
    """The current UTC time as ISO text."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class TournamentStore:
    """Access to one tournament folder's database."""

    def __init__(self, folder: Path, conn: sqlite3.Connection) -> None:
        self.folder = folder
        self._conn = conn

    # ------------------------------------------------------------- create / open

    @staticmethod
    def create(folder: Path, settings: TournamentSettings) -> TournamentStore:
        """Make a new tournament in ``folder`` (which must not hold one already)."""
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise StoreError(f"{folder} exists and is not a folder")
        if (folder / DB_NAME).exists():
            raise StoreError(f"{folder} already holds a tournament ({DB_NAME}); pick another folder")
        if folder.exists() and any(folder.iterdir()):
            raise StoreError(f"{folder} is not empty; a tournament needs a new or empty folder")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "logs").mkdir(exist_ok=True)
        (folder / "bots").mkdir(exist_ok=True)
        conn = sqlite3.connect(folder / DB_NAME, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN")
        # Not executescript: it commits on its own, and creation must be all or nothing.
        for stmt in filter(None, (s.strip() for s in _strip_comments(_SCHEMA).split(";"))):
            conn.execute(stmt)
        conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        conn.execute("INSERT INTO meta VALUES ('settings', ?)", (json.dumps(settings.to_dict()),))
        conn.execute("INSERT INTO meta VALUES ('created_at', ?)", (now(),))
        conn.execute("COMMIT")
        return TournamentStore(folder, conn)

    @staticmethod
    def open(folder: Path) -> TournamentStore:
        """Open an existing tournament; a clear error if ``folder`` is not a usable one."""
        folder = Path(folder)
        if not folder.exists():
            raise StoreError(f"no such folder: {folder}")
        if not folder.is_dir():
            raise StoreError(f"{folder} is not a folder")
        db = folder / DB_NAME
        if not db.exists():
            raise StoreError(f"{folder} is not a tournament folder (no {DB_NAME}); create one with 'thirtyone tournament new {folder}'")
        conn: sqlite3.Connection | None = None
        try:
            # mode=rw: never create a database where one is missing.
            conn = sqlite3.connect(f"file:{db}?mode=rw", uri=True, isolation_level=None)
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            conn.execute("SELECT count(*) FROM bots").fetchone()
            conn.execute("SELECT count(*) FROM matches").fetchone()
            version = rows.get("schema_version")
            if version != str(SCHEMA_VERSION):
                raise StoreError(f"{db} has schema version {version!r}; this thirtyone reads version {SCHEMA_VERSION}")
            if "settings" not in rows:
                raise StoreError(f"{db} has no settings; it was left as it is")
            store = TournamentStore(folder, conn)
            _ = store.settings  # validate now, so every command fails early and the same way
            return store
        except sqlite3.DatabaseError as e:
            if conn is not None:
                conn.close()
            raise StoreError(f"{db} is not a readable tournament database ({e}); it was left as it is") from None
        except BaseException:
            # Not left open for the garbage collector: a long-lived caller would keep the file.
            if conn is not None:
                conn.close()
            raise

    def close(self) -> None:
        """Close the database."""
        self._conn.close()

    def __enter__(self) -> TournamentStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        else:
            self._conn.execute("COMMIT")

    @contextmanager
    def run_lock(self) -> Iterator[None]:
        """Hold the folder's run lock: one run (or withdrawal) at a time.

        Two runs at once would play the same pending matches twice. The lock is an ``flock``
        on :data:`LOCK_NAME` in the folder, so the kernel releases it when its holder dies,
        even by SIGKILL: a killed run never blocks the next one.
        """
        path = self.folder / LOCK_NAME
        with open(path, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(
                    f"{self.folder} is being played by another 'thirtyone tournament run'; "
                    "wait for it to finish or stop it, then try again"
                ) from None
            yield

    # ------------------------------------------------------------- settings

    @property
    def settings(self) -> TournamentSettings:
        """The tournament's settings."""
        (text,) = self._conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        try:
            return TournamentSettings.from_dict(json.loads(text))
        except (json.JSONDecodeError, SettingsError, TypeError) as e:
            raise StoreError(f"the stored settings are unreadable ({e}); the database was left as it is") from None

    # ------------------------------------------------------------- bots

    def bots(self) -> list[BotEntry]:
        """Submitted bots, by name."""
        rows = self._conn.execute(
            "SELECT name, kind, spec, cwd, source, sha256, bot_name, bot_version, author, added_at FROM bots ORDER BY name"
        ).fetchall()
        return [BotEntry(*r) for r in rows]

    def bot(self, name: str) -> BotEntry | None:
        """One bot by name, or None."""
        for b in self.bots():
            if b.name == name:
                return b
        return None

    def add_bot(self, entry: BotEntry) -> None:
        """Record a validated bot; its name must be new."""
        try:
            with self._tx() as c:
                c.execute(
                    "INSERT INTO bots VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (entry.name, entry.kind, entry.spec, entry.cwd, entry.source, entry.sha256,
                     entry.bot_name, entry.bot_version, entry.author, entry.added_at),
                )
        except sqlite3.IntegrityError:
            raise StoreError(f"a bot named {entry.name!r} is already submitted; choose another --name") from None

    def matches_of(self, name: str) -> int:
        """How many finished matches a bot played."""
        n = 0
        for (seats,) in self._conn.execute("SELECT seats FROM matches"):
            if name in json.loads(seats):
                n += 1
        return n

    def remove_bot(self, name: str) -> BotEntry:
        """Withdraw a bot that has not played yet."""
        entry = self.bot(name)
        if entry is None:
            known = ", ".join(b.name for b in self.bots()) or "none"
            raise StoreError(f"no bot named {name!r} in this tournament (bots: {known})")
        # Under the run lock: a run under way may be playing this bot's first matches now.
        with self.run_lock():
            played = self.matches_of(name)
            if played:
                raise StoreError(f"{name!r} has already played {played} match(es); a bot can only be withdrawn before it plays")
            with self._tx() as c:
                c.execute("DELETE FROM bots WHERE name = ?", (name,))
        return entry

    def disqualify(self, name: str, reason: str) -> None:
        """Mark a bot disqualified (its remaining matches are scored as forfeits); idempotent."""
        if self.bot(name) is None:
            known = ", ".join(b.name for b in self.bots()) or "none"
            raise StoreError(f"no bot named {name!r} in this tournament (bots: {known})")
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO disqualified VALUES (?, ?, ?)", (name, reason, now()))

    def disqualified(self) -> dict[str, str]:
        """Disqualified bots: name to reason."""
        return dict(self._conn.execute("SELECT name, reason FROM disqualified ORDER BY name").fetchall())

    # ------------------------------------------------------------- matches

    def done_keys(self) -> set[str]:
        """Keys of the finished matches."""
        return {k for (k,) in self._conn.execute("SELECT key FROM matches")}

    def record_match(self, row: MatchRow) -> None:
        """Commit one finished match (on its own transaction)."""
        try:
            with self._tx() as c:
                c.execute(
                    "INSERT INTO matches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (row.key, row.table_key, row.deal, row.rotation, str(row.seed), json.dumps(list(row.seats)),
                     json.dumps(row.result), row.log_path, row.finished_at, row.duration_s),
                )
        except sqlite3.IntegrityError:
            raise StoreError(f"match {row.key} is already recorded") from None

    def matches(self) -> list[MatchRow]:
        """Finished matches in key order (the canonical order for ratings)."""
        out = []
        for key, tk, deal, rot, seed, seats, result, log, fin, dur in self._conn.execute(
            "SELECT * FROM matches ORDER BY key"
        ):
            try:
                out.append(MatchRow(key, tk, deal, rot, int(seed), tuple(json.loads(seats)), json.loads(result), log, fin, dur))
            except (ValueError, TypeError) as e:
                raise StoreError(f"match {key} is stored unreadably ({e}); the database was left as it is") from None
        return out

    # ------------------------------------------------------------- the runner's records
    # Created when first needed (CREATE ... IF NOT EXISTS), so that every schema-2 database
    # has them without a new schema version.

    def _ops(self) -> sqlite3.Connection:
        for stmt in _OPS_SCHEMA:
            self._conn.execute(stmt)
        return self._conn

    def record_infra_failure(self, key: str, error: str) -> None:
        """Record that the infrastructure failed to play match ``key`` (never charged to a bot)."""
        self._ops()
        with self._tx() as c:
            c.execute("INSERT INTO infra_failures (key, error, at) VALUES (?, ?, ?)", (key, error, now()))

    def infra_failures(self) -> list[tuple[str, str, str]]:
        """Infrastructure failures, oldest first: (match key, error, when)."""
        return [(str(k), str(e), str(a)) for k, e, a in self._ops().execute("SELECT key, error, at FROM infra_failures ORDER BY id")]

    def note_start(self, name: str, *, ok: bool) -> int:
        """Count a bot's successful start (``ok``) or failed one; its failures in a row now."""
        self._ops()
        with self._tx() as c:
            if ok:
                c.execute("DELETE FROM start_failures WHERE name = ?", (name,))
                return 0
            c.execute(
                "INSERT INTO start_failures VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET consecutive = consecutive + 1",
                (name,),
            )
            (n,) = c.execute("SELECT consecutive FROM start_failures WHERE name = ?", (name,)).fetchone()
            return int(n)

    def replace_match(self, row: MatchRow) -> None:
        """Record a match played again on purpose, replacing its earlier result (one transaction)."""
        with self._tx() as c:
            c.execute("DELETE FROM matches WHERE key = ?", (row.key,))
            c.execute(
                "INSERT INTO matches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row.key, row.table_key, row.deal, row.rotation, str(row.seed), json.dumps(list(row.seats)),
                 json.dumps(row.result), row.log_path, row.finished_at, row.duration_s),
            )


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


_OPS_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS infra_failures (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        error TEXT NOT NULL,
        at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS start_failures (
        name TEXT PRIMARY KEY,
        consecutive INTEGER NOT NULL
    )""",
)
