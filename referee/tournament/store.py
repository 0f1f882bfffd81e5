"""The tournament's state: a SQLite database (WAL) inside the tournament's folder.

Every finished match is committed on its own, keyed by its schedule key, so a run that is
killed loses at most the matches in flight and never records one twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from referee.faults import RefereeError
from referee.text import plural
from referee.tournament.results import MatchResult
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
CREATE TABLE infra_failures (    -- matches the referee failed to play: never charged to a bot
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    error TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE start_failures (    -- each bot's failures to start in a row
    name TEXT PRIMARY KEY,
    consecutive INTEGER NOT NULL
);
"""


#: Modes of what a tournament holds: its seed, the bots' files and the logs are secrets
#: (docs/security.md), readable by the referee's user alone.
FOLDER_MODE = 0o700
FILE_MODE = 0o600



class _Executes(Protocol):
    def execute(self, sql: str, /) -> Any: ...


C = TypeVar("C", bound=_Executes)


@contextmanager
def write_transaction(conn: C) -> Iterator[C]:
    """One write transaction on ``conn``, taken at once (BEGIN IMMEDIATE, so two writers never
    deadlock), rolled back on any exception: the tournament's store and the arena's."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")

class StoreError(RefereeError):
    """The tournament folder or database cannot be used; the message says why."""


class _Cursor:
    """A cursor whose every read turns a database error into a :class:`StoreError`."""

    def __init__(self, cursor: sqlite3.Cursor, guard: _Guarded) -> None:
        self._cursor = cursor
        self._guard = guard

    def fetchone(self) -> Any:
        """The next row, or None."""
        with self._guard.errors():
            return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        with self._guard.errors():
            return self._cursor.fetchall()

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed."""
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        """The rowid of the last row inserted."""
        return self._cursor.lastrowid

    def __iter__(self) -> Iterator[Any]:
        # Rows are read lazily, so a damaged page can surface at any row: read them all here.
        return iter(self.fetchall())


class _Guarded:
    """The store's connection: every query's database error (a damaged page, a missing
    table, a read-only file) becomes a :class:`StoreError` naming the database, never a raw
    ``sqlite3`` traceback for a user."""

    def __init__(self, conn: sqlite3.Connection, db: Path) -> None:
        self._conn = conn
        self._db = db

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn database errors inside the block into :class:`StoreError`."""
        try:
            yield
        except sqlite3.IntegrityError:
            raise  # a constraint: callers turn it into their own message
        except sqlite3.DatabaseError as e:
            if _is_read_only(e):
                raise StoreError(read_only_message(self._db, f"SQLite: {e}")) from None
            raise StoreError(f"{self._db}: database error ({e}); the database was left as it is") from None

    def execute(self, sql: str, params: Any = ()) -> _Cursor:
        """Run one statement."""
        with self.errors():
            return _Cursor(self._conn.execute(sql, params), self)

    def executemany(self, sql: str, rows: Iterable[Any]) -> _Cursor:
        """Run one statement for each row."""
        with self.errors():
            return _Cursor(self._conn.executemany(sql, rows), self)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


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
        return list(self.record.placings)

    @property
    def record(self) -> MatchResult:
        """The result as a typed record (:mod:`referee.tournament.results`)."""
        return MatchResult.from_json(self.result)


def now() -> str:
    """The current UTC time as ISO text."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class TournamentStore:
    """Access to one tournament folder's database."""

    def __init__(self, folder: Path, conn: sqlite3.Connection, *, readonly: bool = False) -> None:
        self.folder = folder
        self.readonly = readonly
        self._conn = _Guarded(conn, folder / DB_NAME)
        # Whether this (read-only) store left -wal and -shm files that were not there before.
        self._made_wal = False

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
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # chmod as well as mkdir's mode: an existing empty folder keeps its own, and the umask applies.
            folder.chmod(FOLDER_MODE)
            for sub in ("logs", "bots"):
                (folder / sub).mkdir(mode=FOLDER_MODE, exist_ok=True)
                (folder / sub).chmod(FOLDER_MODE)
            db = folder / DB_NAME
            # Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files the
            # database's own mode, so they are never readable by others either.
            os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
            db.chmod(FILE_MODE)
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN")
            # Not executescript: it commits on its own, and creation must be all or nothing.
            for stmt in filter(None, (s.strip() for s in _strip_comments(_SCHEMA).split(";"))):
                conn.execute(stmt)
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            conn.execute("INSERT INTO meta VALUES ('settings', ?)", (json.dumps(settings.to_dict()),))
            conn.execute("INSERT INTO meta VALUES ('created_at', ?)", (now(),))
            conn.execute("COMMIT")
            for extra in _wal_files(db):
                if extra.exists():
                    extra.chmod(FILE_MODE)
        except (OSError, sqlite3.Error) as e:
            # A folder we may not write, a full disk: a message, not a traceback.
            raise StoreError(f"cannot create a tournament in {folder}: {getattr(e, 'strerror', None) or e}") from None
        return TournamentStore(folder, conn)

    @staticmethod
    def open(folder: Path, *, readonly: bool = False) -> TournamentStore:
        """Open an existing tournament; a clear error if ``folder`` is not a usable one.

        The database is checked (``PRAGMA quick_check``) before anything can be written, so
        a damaged database is refused and left as it is. ``readonly`` opens it for reading
        only (``standings``, ``bots``, ``replay``), which also works on a read-only folder.
        """
        folder = Path(folder)
        if not folder.exists():
            raise StoreError(f"no such folder: {folder}")
        if not folder.is_dir():
            raise StoreError(f"{folder} is not a folder")
        db = folder / DB_NAME
        if not db.exists():
            raise StoreError(f"{folder} is not a tournament folder (no {DB_NAME}); create one with 'thirtyone tournament new {folder}'")
        if not readonly:
            # Said before SQLite tries: in a folder it cannot write, it cannot make the WAL's
            # files either, and its "unable to open database file" would read as damage.
            why = _why_unwritable(db)
            if why is not None:
                raise StoreError(read_only_message(db, why))
        conn: sqlite3.Connection | None = None
        made_wal = readonly and not any(p.exists() for p in _wal_files(db))
        try:
            conn = connect(db, readonly=readonly)
            _check(conn, db)
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            conn.execute("SELECT count(*) FROM bots").fetchone()
            conn.execute("SELECT count(*) FROM matches").fetchone()
            version = rows.get("schema_version")
            if version != str(SCHEMA_VERSION):
                raise StoreError(f"{db} has schema version {version!r}; this thirtyone reads version {SCHEMA_VERSION}")
            if "settings" not in rows:
                raise StoreError(f"{db} has no settings; it was left as it is")
            store = TournamentStore(folder, conn, readonly=readonly)
            store._made_wal = made_wal
            _ = store.settings  # validate now, so every command fails early and the same way
            return store
        except sqlite3.DatabaseError as e:
            _close(conn, db, made_wal)
            if _is_read_only(e):
                raise StoreError(read_only_message(db, f"SQLite: {e}")) from None
            raise StoreError(f"{db} is not a readable tournament database ({e}); it was left as it is") from None
        except BaseException:
            # Not left open for the garbage collector: a long-lived caller would keep the file.
            _close(conn, db, made_wal)
            raise

    def close(self) -> None:
        """Close the database."""
        self._conn.close()
        if self._made_wal:
            self._made_wal = False
            _tidy_wal(self.folder / DB_NAME)

    def __enter__(self) -> TournamentStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[_Guarded]:
        with write_transaction(self._conn) as conn:
            yield conn

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
                raise StoreError(
                    f"{name!r} has already played {plural(played, 'match', 'matches')}; a bot can only be withdrawn before it plays"
                )
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

    def record_infra_failure(self, key: str, error: str) -> None:
        """Record that the infrastructure failed to play match ``key`` (never charged to a bot)."""
        with self._tx() as c:
            c.execute("INSERT INTO infra_failures (key, error, at) VALUES (?, ?, ?)", (key, error, now()))

    def infra_failures(self) -> list[tuple[str, str, str]]:
        """Infrastructure failures, oldest first: (match key, error, when)."""
        return [(str(k), str(e), str(a)) for k, e, a in self._conn.execute("SELECT key, error, at FROM infra_failures ORDER BY id")]

    def note_start(self, name: str, *, ok: bool) -> int:
        """Count a bot's successful start (``ok``) or failed one; its failures in a row now."""
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


def read_only_message(db: Path, why: str) -> str:
    """What a command that writes the tournament says where its database is read-only."""
    return (
        f"{db} is read-only ({why}): this command writes the tournament's database; make the "
        "folder and its files writable (or copy the tournament somewhere that is) and try again. "
        "Reading it works as it is: standings, bots, replay, serve"
    )


def _why_unwritable(db: Path) -> str | None:
    """Why ``db`` (with its folder and WAL files) cannot be written, or None if it can.

    ``access(2)`` answers for the caller as the kernel would for a write: a read-only file
    system (a read-only mount, a CD) refuses even root, whom file modes do not stop.
    """
    try:
        if os.statvfs(db.parent).f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    except OSError:
        return None  # open() says what is wrong with the folder
    for p in (db.parent, db, *_wal_files(db)):
        if p.exists() and not os.access(p, os.W_OK):
            return f"no permission to write {'the folder' if p == db.parent else p.name}"
    return None


def _is_read_only(e: sqlite3.DatabaseError) -> bool:
    """Whether SQLite refused a write to a read-only file (not damage)."""
    return str(getattr(e, "sqlite_errorname", "")).startswith("SQLITE_READONLY") or "readonly database" in str(e)


def _wal_files(db: Path) -> tuple[Path, Path]:
    return db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")


def connect(db: Path, *, readonly: bool) -> sqlite3.Connection:
    """A connection that never creates a database where one is missing (``mode=rw``/``ro``)."""
    if not readonly:
        return sqlite3.connect(f"file:{db}?mode=rw", uri=True, isolation_level=None)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        # A WAL database in a folder nobody may write: SQLite cannot make its -shm file.
        # Nothing can change the database there either, so it is read as immutable; but
        # a -wal file with content holds committed matches that would be missed.
        wal, _ = _wal_files(db)
        if os.access(db.parent, os.W_OK) and os.access(db, os.R_OK):
            raise
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreError(
                f"{db} has recent matches in {wal.name} that cannot be read in a read-only folder; "
                "open the tournament once where it can be written (any 'thirtyone' command does), then try again"
            ) from None
        return sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True, isolation_level=None)


def _close(conn: sqlite3.Connection | None, db: Path, made_wal: bool) -> None:
    if conn is not None:
        conn.close()
        if made_wal:
            _tidy_wal(db)


def _check(conn: sqlite3.Connection, db: Path) -> None:
    """Refuse a damaged database before anything is written into it."""
    try:
        problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as e:
        if str(e) == "file is not a database":
            raise  # not damaged but something else entirely: open() says so
        # Damage bad enough that the check itself stops on it.
        problems = [str(e)]
    if problems != ["ok"]:
        shown = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
        raise StoreError(f"{db} is not a readable tournament database (it is damaged: {shown}); it was left as it is")


def _tidy_wal(db: Path) -> None:
    """Remove the empty -wal and -shm files a read-only reader left behind.

    A read-only connection cannot remove them itself. A read-write connection (asking
    nothing) does, as SQLite's last connection to close: after taking the locks that prove no
    other connection uses them, and with nothing in the WAL to copy into the database.
    """
    wal, _ = _wal_files(db)
    try:
        if wal.exists() and wal.stat().st_size > 0:
            return  # a writer came meanwhile; its own close tidies up
        conn = sqlite3.connect(f"file:{db}?mode=rw", uri=True, isolation_level=None)
        try:
            conn.execute("PRAGMA query_only=1")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except (sqlite3.Error, OSError):
        pass  # a read-only folder or file: the files stay, harmless and as private as the database


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


