"""The arena's store: one SQLite database (WAL) in the arena folder, behind this module alone.

Two processes use it: the service (accounts, uploads, reads) and the ladder (validation,
scheduling, results; the only writer of results). Each opens its own connections through
the tournament store's :func:`~referee.tournament.store.connect`, which never creates a
database where one is missing; a busy timeout lets the two take turns. Every write is one
transaction, so a process killed at any moment leaves the database whole: a match is
``pending`` until its result is committed with the ratings it moves, and is then ``done``
exactly once.

Nothing outside this module writes SQL, so a server database could replace SQLite later.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from referee.ladder.errors import ArenaError, Conflict, NotFound
from referee.ladder.names import skeleton
from referee.ladder.settings import SETTINGS_NAME, ArenaSettings, load, to_toml
from referee.tournament.results import MatchResult
from referee.tournament.schedule import DealProgress
from referee.tournament.store import FILE_MODE, FOLDER_MODE, connect, write_transaction

if TYPE_CHECKING:
    from referee.tournament.standings import HeadToHead

#: Rating points per unit of log-strength (:data:`referee.ratings.ELO`).
_ELO = 400.0 / math.log(10.0)
DB_NAME = "arena.db"
SECRET_NAME = "secret"
SCHEMA_VERSION = 4
#: Milliseconds a connection waits for the other process's transaction to end.
BUSY_TIMEOUT_MS = 15_000

#: A version's life: uploaded (queued), being checked (validating), then active (it plays)
#: or rejected; later retired (a newer version took its place), withdrawn by its owner, or
#: disqualified by an admin. Only active versions are scheduled.
STATUSES = ("queued", "validating", "active", "rejected", "retired", "withdrawn", "disqualified")

#: The tables of schema 3: each version's rating after each of its matches, and how each
#: version fared against each opponent version (kept up to date with every result).
_HISTORY = """
CREATE TABLE rating_history (
    version_id INTEGER NOT NULL, n INTEGER NOT NULL, key TEXT NOT NULL, mu REAL NOT NULL, sigma REAL NOT NULL,
    at TEXT NOT NULL, PRIMARY KEY (version_id, n)
) WITHOUT ROWID;
CREATE TABLE head_to_head (
    version_id INTEGER NOT NULL, opponent_id INTEGER NOT NULL, matches INTEGER NOT NULL, better INTEGER NOT NULL,
    equal INTEGER NOT NULL, worse INTEGER NOT NULL, PRIMARY KEY (version_id, opponent_id)
) WITHOUT ROWID
"""

#: Schema 4's official figures: the batch fit's rating, interval (95%), standard error and
#: log-strength, with the win rate's Wilson interval from the same matches.
_OFFICIAL = """
CREATE TABLE official (
    version_id INTEGER PRIMARY KEY, rating REAL NOT NULL, low REAL NOT NULL, high REAL NOT NULL, se REAL NOT NULL,
    theta REAL NOT NULL, matches INTEGER NOT NULL, wins INTEGER NOT NULL, win_low REAL NOT NULL, win_high REAL NOT NULL,
    faults TEXT NOT NULL
)
"""

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE users (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, admin INTEGER NOT NULL DEFAULT 0,
    disabled INTEGER NOT NULL DEFAULT 0, password TEXT, created_at TEXT NOT NULL
);
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
    hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT
);
CREATE TABLE sessions (
    hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
    csrf TEXT NOT NULL, expires_at TEXT NOT NULL
);
CREATE TABLE invites (hash TEXT PRIMARY KEY, created_at TEXT NOT NULL, used_by INTEGER);
CREATE TABLE bots (
    id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
    name TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL
);
CREATE TABLE versions (
    id INTEGER PRIMARY KEY, bot_id INTEGER NOT NULL REFERENCES bots(id), number INTEGER NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
    command TEXT NOT NULL, files TEXT NOT NULL, sha256 TEXT NOT NULL,
    n_files INTEGER NOT NULL, size INTEGER NOT NULL, source TEXT NOT NULL,
    bot_name TEXT NOT NULL DEFAULT '', bot_version TEXT NOT NULL DEFAULT '', author TEXT NOT NULL DEFAULT '',
    uploaded_at TEXT NOT NULL, status_at TEXT NOT NULL,
    mu REAL NOT NULL, sigma REAL NOT NULL, matches INTEGER NOT NULL DEFAULT 0,
    wins INTEGER NOT NULL DEFAULT 0, tables INTEGER NOT NULL DEFAULT 0,
    report TEXT NOT NULL DEFAULT '', start_failures INTEGER NOT NULL DEFAULT 0,
    spark TEXT NOT NULL DEFAULT '[]', reference INTEGER NOT NULL DEFAULT 0,
    UNIQUE (bot_id, number)
);
CREATE INDEX versions_status ON versions (status);
CREATE TABLE ladder_tables (
    id INTEGER PRIMARY KEY, seats TEXT NOT NULL, commitment TEXT NOT NULL,
    placement INTEGER NOT NULL, created_at TEXT NOT NULL, finished_at TEXT
);
CREATE TABLE matches (
    key TEXT PRIMARY KEY, table_id INTEGER NOT NULL REFERENCES ladder_tables(id), rotation INTEGER NOT NULL,
    seats TEXT NOT NULL, status TEXT NOT NULL, result TEXT, log_path TEXT NOT NULL DEFAULT '',
    finished_at TEXT, duration_s REAL NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX matches_status ON matches (status);
CREATE INDEX matches_table ON matches (table_id);
CREATE TABLE match_seats (
    version_id INTEGER NOT NULL, key TEXT NOT NULL, seat INTEGER NOT NULL, PRIMARY KEY (version_id, key)
);
CREATE TABLE infra_failures (id INTEGER PRIMARY KEY, key TEXT NOT NULL, error TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE board (id INTEGER PRIMARY KEY CHECK (id = 1), gen INTEGER NOT NULL, body TEXT NOT NULL);
""" + _HISTORY + ";" + _OFFICIAL


#: The meta key (with the user's id after it) listing when a user's deleted versions were
#: uploaded, in the last 24 hours: they still count toward the daily limit.
DELETED_UPLOADS = "deleted_uploads:"
#: How a rejection the arena caused (not the bot) begins: the same files may be uploaded again.
ARENA_FAILURE = "the arena could not validate it"

#: The meta key counting changes to what the leaderboard shows (see :meth:`ArenaStore.board`).
BOARD_GEN = "board_gen"
BUMP_BOARD = "INSERT INTO meta VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
#: The latest live ratings (rating points, the provisional figure's scale) a version keeps for its leaderboard row's sparkline
#: (``versions.spark``, a JSON list kept with each result, so the board reads no history).
SPARK_POINTS = 24
#: Adds one match's head-to-head outcome of a version against one opponent (better, equal, worse: 1 or 0).
ADD_PAIR = (
    "INSERT INTO head_to_head VALUES (?, ?, 1, ?, ?, ?) ON CONFLICT(version_id, opponent_id) DO UPDATE SET "
    "matches = matches + 1, better = better + excluded.better, equal = equal + excluded.equal, worse = worse + excluded.worse"
)


def _live_points(mu: float) -> float:
    """A live mu on the rating scale (:func:`referee.ladder.ratings.live_rating`'s rating)."""
    from referee.ladder.ratings import live_rating

    return live_rating(mu, 0.0)[0]


def pair_outcomes(seats: Sequence[int], placings: Sequence[int]) -> Iterator[tuple[int, int, int, int, int]]:
    """Each ordered pair of a match's seats as :data:`ADD_PAIR` counts it: (version, opponent,
    better, equal, worse). Equal placings are a draw, a shared first place too: nobody wins
    it (docs/rules.md), as the tournament's head-to-head counts it
    (:class:`~referee.tournament.standings.HeadToHead`)."""
    for s, v in enumerate(seats):
        for t, o in enumerate(seats):
            if s != t:
                a, b = placings[s], placings[t]
                yield v, o, int(a < b), int(a == b), int(a > b)


def _to_v3(conn: sqlite3.Connection) -> None:
    # The history of ratings starts where the old schema left off: one point per version that
    # played, its current live rating after its matches so far (the old store kept no more).
    # The head-to-head counts are rebuilt from every finished match, so none is lost.
    for stmt in _HISTORY.split(";"):
        conn.execute(stmt)
    conn.execute("ALTER TABLE versions ADD COLUMN spark TEXT NOT NULL DEFAULT '[]'")
    conn.execute("UPDATE versions SET spark = json_array(round(mu - 3 * sigma, 2)) WHERE matches > 0")
    conn.execute(
        "INSERT INTO rating_history SELECT v.id, v.matches, '', v.mu, v.sigma, coalesce((SELECT max(m.finished_at) "
        "FROM match_seats s JOIN matches m ON m.key = s.key WHERE s.version_id = v.id AND m.status = 'done'), v.status_at) "
        "FROM versions v WHERE v.matches > 0"
    )
    for seats, result in conn.execute("SELECT seats, result FROM matches WHERE status = 'done' ORDER BY key").fetchall():
        conn.executemany(ADD_PAIR, list(pair_outcomes(json.loads(seats), MatchResult.from_json(json.loads(result)).placings)))
    conn.execute(BUMP_BOARD, (BOARD_GEN,))  # the kept leaderboard gains its sparklines


def _to_v4(conn: sqlite3.Connection) -> None:
    # The official figures of schema 3 were openskill's averaged passes, another figure on
    # another scale: they are dropped, and the ladder's first refit rebuilds them from the
    # finished matches (nothing is lost: the matches are the data). The sparklines move to
    # the live figure in rating points, from each version's latest live ratings.
    from referee.ladder.ratings import live_rating

    conn.execute("DROP TABLE official")
    conn.execute(_OFFICIAL)
    conn.execute("DELETE FROM meta WHERE key IN ('official_at', 'official_matches')")
    conn.execute("ALTER TABLE versions ADD COLUMN reference INTEGER NOT NULL DEFAULT 0")
    for (vid,) in conn.execute("SELECT id FROM versions WHERE matches > 0").fetchall():
        points = conn.execute(
            "SELECT mu, sigma FROM rating_history WHERE version_id = ? ORDER BY n DESC LIMIT ?", (vid, SPARK_POINTS)
        ).fetchall()
        spark = [round(live_rating(mu, sigma)[0], 1) for mu, sigma in reversed(points)]
        conn.execute("UPDATE versions SET spark = ? WHERE id = ?", (json.dumps(spark), vid))
    conn.execute(BUMP_BOARD, (BOARD_GEN,))


#: What brings a database of one schema version to the next (run by a writing connection).
_MIGRATIONS: dict[int, str | Callable[[sqlite3.Connection], None]] = {
    1: """
ALTER TABLE versions ADD COLUMN report TEXT NOT NULL DEFAULT '';
ALTER TABLE versions ADD COLUMN start_failures INTEGER NOT NULL DEFAULT 0;
CREATE TABLE board (id INTEGER PRIMARY KEY CHECK (id = 1), gen INTEGER NOT NULL, body TEXT NOT NULL)
""",
    2: _to_v3,
    3: _to_v4,
}


class _NoInvite(Exception):
    """Rolls back a sign-up whose invite code is not valid."""


def _look_alike(c: sqlite3.Connection, table: str, name: str) -> str | None:
    """A name in ``table`` (users or bots) that ``name`` would be taken for, or None.

    Compared by :func:`~referee.ladder.names.skeleton` in Python, row by row: no index or
    constraint, so an older arena that already holds two such names still opens (they keep
    them); only a new name is refused.
    """
    wanted = skeleton(name)
    for (other,) in c.execute(f"SELECT name FROM {table}"):  # table: "users" or "bots", never a caller's text
        if skeleton(other) == wanted:
            return str(other)
    return None


def _taken(what: str, name: str, other: str) -> Conflict:
    same = "already exists" if other == name else f"is too like the {what} {other!r} (names must differ by more than case and the look-alikes 1/l/I, 0/O)"
    return Conflict(f"a {what} named {name!r} {same}; choose another name")


def now() -> str:
    """The current UTC time as ISO text."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def ago(seconds: float) -> str:
    """The UTC time ``seconds`` ago, as :func:`now` writes it (ISO text sorts as time)."""
    return (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class User:
    """An account."""

    id: int
    name: str
    admin: bool
    disabled: bool
    created_at: str


@dataclass(frozen=True, slots=True)
class Version:
    """One uploaded version of a user's bot."""

    id: int
    bot: str
    number: int
    owner_id: int
    owner: str
    status: str
    reason: str
    command: str
    #: The version's frozen folder, relative to the arena folder.
    files: str
    sha256: str
    n_files: int
    size: int
    source: str
    bot_name: str
    bot_version: str
    author: str
    uploaded_at: str
    status_at: str
    mu: float
    sigma: float
    matches: int
    wins: int
    tables: int
    #: The validation's report, each step pass or fail, as ``check-bot`` prints it (its owner's).
    report: str = ""
    #: Whether an admin marked it a reference bot (the scheduler caps its share lower).
    reference: bool = False
    #: Its official figures, once a refit has included it.
    official: Official | None = None

    @property
    def label(self) -> str:
        """The version's name in matches, logs and standings: ``greedy.v3``."""
        return f"{self.bot}.v{self.number}"


@dataclass(frozen=True, slots=True)
class LadderMatch:
    """One match of a ladder table: one rotation of its deal."""

    key: str
    table_id: int
    rotation: int
    #: Version ids, seat 0 first.
    seats: tuple[int, ...]
    status: str
    result: dict[str, Any] | None
    log_path: str
    finished_at: str | None
    duration_s: float
    commitment: str
    #: Whether every rotation of this match's deal is finished or given up (its log and seed are
    #: public then): :meth:`~referee.tournament.schedule.DealProgress.deal_complete`, the
    #: tournament's rule, over the rotations of its table.
    deal_done: bool


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A version's live rating after its ``n``-th match (``key``; empty for the one point an
    older arena's migration kept: the rating it had then)."""

    n: int
    key: str
    mu: float
    sigma: float
    at: str


@dataclass(frozen=True, slots=True)
class Official:
    """A version's official figures: the batch fit over every finished match
    (:mod:`referee.ladder.ratings`), and its win rate's interval from the same matches."""

    #: Rating points (1500: the board's average) and the 95% interval's ends.
    rating: float
    low: float
    high: float
    #: Standard error (rating points) and the log-strength (natural units, centred).
    se: float
    theta: float
    matches: int
    wins: int
    #: The win rate's Wilson interval (95%).
    win_low: float
    win_high: float
    faults: dict[str, int]


_VERSION_COLUMNS = (
    "v.id, b.name, v.number, b.user_id, u.name, v.status, v.reason, v.command, v.files, v.sha256, v.n_files, "
    "v.size, v.source, v.bot_name, v.bot_version, v.author, v.uploaded_at, v.status_at, v.mu, v.sigma, "
    "v.matches, v.wins, v.tables, v.report, v.reference, o.rating, o.low, o.high, o.se, o.theta, o.matches, o.wins, "
    "o.win_low, o.win_high, o.faults"
)
_VERSION_FROM = (
    "versions v JOIN bots b ON b.id = v.bot_id JOIN users u ON u.id = b.user_id LEFT JOIN official o ON o.version_id = v.id"
)


def _version(row: Sequence[Any]) -> Version:
    """A version from a row of :data:`_VERSION_COLUMNS`."""
    v = Version(*row[:24])
    return replace(v, reference=bool(row[24]), official=None if row[25] is None else _official(row[25:]))


def _official(row: Sequence[Any]) -> Official:
    """Official figures from a row of the official table (without its version id)."""
    rating, low, high, se, theta, matches, wins, win_low, win_high, faults = row
    return Official(rating, low, high, se, theta, int(matches), int(wins), win_low, win_high, json.loads(faults))
_MATCH_COLUMNS = (
    "m.key, m.table_id, m.rotation, m.seats, m.status, m.result, m.log_path, m.finished_at, m.duration_s, t.commitment"
)


def match_key(table_id: int, rotation: int) -> str:
    """A ladder match's key: its table (the deal) and the seat rotation, ``00000042-r1``."""
    return f"{table_id:08d}-r{rotation}"


class _Rotation(NamedTuple):
    """A ladder match as the hold-back rule sees it (:class:`~referee.tournament.schedule.Dealt`)."""

    key: str
    #: The table's id names its deal: a table is one deal, its seed derived from the id alone.
    seed: int


def _match(row: Sequence[Any], progress: DealProgress) -> LadderMatch:
    key, tid, rot, seats, status, result, log, fin, dur, commit = row
    return LadderMatch(
        key, int(tid), int(rot), tuple(json.loads(seats)), status, json.loads(result) if result else None,
        log, fin, float(dur), commit, progress.deal_complete(int(tid)),
    )


def create(folder: Path, settings: ArenaSettings) -> None:
    """Make a new arena in ``folder`` (new or empty): settings, secret, database, sub-folders."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ArenaError(f"{folder} is not an empty folder; an arena needs a new or empty one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(FOLDER_MODE)
        for sub in ("versions", "logs", "output", "running", "uploads"):
            (folder / sub).mkdir(mode=FOLDER_MODE)
        _write_private(folder / SECRET_NAME, secrets.token_hex(32) + "\n")
        _write_private(folder / SETTINGS_NAME, to_toml(settings))
        db = folder / DB_NAME
        os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN")
            for stmt in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                conn.execute(stmt)
            meta = {"schema_version": str(SCHEMA_VERSION), "fixed": json.dumps(settings.fixed()), "created_at": now(), "paused": "0"}
            conn.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            conn.execute("COMMIT")
        finally:
            conn.close()
    except (OSError, sqlite3.Error) as e:
        raise ArenaError(f"cannot create an arena in {folder}: {getattr(e, 'strerror', None) or e}") from None


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _connect(db: Path, *, readonly: bool) -> sqlite3.Connection:
    """The tournament store's :func:`~referee.tournament.store.connect` (never creates a
    database where one is missing), usable from more than one thread in turn.

    FastAPI runs one request's dependencies and its handler on different threads, one after
    the other; a connection is never used by two threads at once (one per request or thread).
    """
    mode = "ro" if readonly else "rw"
    if readonly:
        connect(db, readonly=True).close()  # its checks and its message for an unreadable folder
    return sqlite3.connect(f"file:{db}?mode={mode}", uri=True, isolation_level=None, check_same_thread=False)


def _migrate(conn: sqlite3.Connection, version: int) -> str:
    """Bring the database to :data:`SCHEMA_VERSION`, one version per transaction."""
    while version < SCHEMA_VERSION:
        conn.execute("BEGIN IMMEDIATE")
        try:
            (now_at,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if int(now_at) == version:  # the other process may have migrated it meanwhile
                step = _MIGRATIONS[version]
                if callable(step):
                    step(conn)
                else:
                    for stmt in filter(None, (t.strip() for t in step.split(";"))):
                        conn.execute(stmt)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version + 1),))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        version += 1
    return str(version)


def read_secret(folder: Path) -> bytes:
    """The arena's secret key (seeds and commitments derive from it)."""
    try:
        return bytes.fromhex((folder / SECRET_NAME).read_text().strip())
    except (OSError, ValueError) as e:
        raise ArenaError(f"{folder / SECRET_NAME}: the arena's secret cannot be read ({e})") from None


class ArenaStore:
    """One connection to an arena's database (open one per thread)."""

    def __init__(self, folder: Path, conn: sqlite3.Connection, settings: ArenaSettings) -> None:
        self.folder = folder
        self.settings = settings
        self._conn = conn

    @staticmethod
    def open(folder: Path, *, readonly: bool = False, settings: ArenaSettings | None = None) -> ArenaStore:
        """Open the arena in ``folder``; refuse one whose fixed settings were edited."""
        folder = Path(folder)
        settings = settings or load(folder)
        db = folder / DB_NAME
        if not db.exists():
            raise ArenaError(f"{folder} is not an arena folder (no {DB_NAME}); make one with 'thirtyone arena init {folder}'")
        try:
            conn = _connect(db, readonly=readonly)
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as e:
            raise ArenaError(f"{db} is not a readable arena database ({e}); it was left as it is") from None
        if not readonly and meta.get("schema_version", "").isdigit() and int(meta["schema_version"]) < SCHEMA_VERSION:
            meta["schema_version"] = _migrate(conn, int(meta["schema_version"]))
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            conn.close()
            raise ArenaError(f"{db} has schema version {meta.get('schema_version')!r}; this thirtyone reads {SCHEMA_VERSION}")
        if json.loads(meta["fixed"]) != settings.fixed():
            conn.close()
            raise ArenaError(
                f"{folder / SETTINGS_NAME} changes the rules or the table size, which are fixed for an arena's life "
                f"(they were {meta['fixed']}); put them back"
            )
        return ArenaStore(folder, conn, settings)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> ArenaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (taken at once, so two writers never deadlock)."""
        with write_transaction(self._conn) as conn:
            yield conn

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._conn.execute(sql, params).fetchall()

    # ------------------------------------------------------------- meta

    def meta(self, key: str, default: str = "") -> str:
        """One meta value."""
        row = self._one("SELECT value FROM meta WHERE key = ?", (key,))
        return str(row[0]) if row else default

    def set_meta(self, key: str, value: str) -> None:
        """Set one meta value."""
        with self.tx() as c:
            c.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    @property
    def paused(self) -> bool:
        """Whether an admin paused the ladder (matches in play finish; no new table starts)."""
        return self.meta("paused", "0") == "1"

    # ------------------------------------------------------------- users and credentials

    def add_user(self, name: str, *, admin: bool = False) -> User:
        """A new account; its name must be free."""
        try:
            with self.tx() as c:
                if (other := _look_alike(c, "users", name)) is not None:
                    raise _taken("user", name, other)
                cur = c.execute("INSERT INTO users (name, admin, created_at) VALUES (?, ?, ?)", (name, int(admin), now()))
        except sqlite3.IntegrityError:
            raise Conflict(f"a user named {name!r} already exists") from None
        assert cur.lastrowid is not None
        return self.user(cur.lastrowid)

    def user(self, user_id: int) -> User:
        """A user by id."""
        row = self._one("SELECT id, name, admin, disabled, created_at FROM users WHERE id = ?", (user_id,))
        if row is None:
            raise NotFound(f"no user {user_id}")
        return User(int(row[0]), row[1], bool(row[2]), bool(row[3]), row[4])

    def user_named(self, name: str) -> User:
        """A user by name."""
        row = self._one("SELECT id FROM users WHERE name = ?", (name,))
        if row is None:
            raise NotFound(f"no user named {name!r}")
        return self.user(int(row[0]))

    def users(self) -> list[User]:
        """Every user, by name."""
        return [self.user(int(r[0])) for r in self._all("SELECT id FROM users ORDER BY name")]

    def set_disabled(self, user_id: int, disabled: bool) -> None:
        """Disable (or enable again) an account: its tokens and sessions stop working."""
        with self.tx() as c:
            c.execute("UPDATE users SET disabled = ? WHERE id = ?", (int(disabled), user_id))

    def set_password_hash(self, user_id: int, hashed: str) -> None:
        """Store a user's password hash (argon2) and end their web sessions: whoever signed in
        with the old password is signed out (API tokens are revoked on their own)."""
        with self.tx() as c:
            c.execute("UPDATE users SET password = ? WHERE id = ?", (hashed, user_id))
            c.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))

    def user_name_clash(self, name: str) -> str | None:
        """The user name ``name`` clashes with (itself, or one differing only in case or a
        look-alike), or None when it is free."""
        return _look_alike(self._conn, "users", name)

    def invite_usable(self, code_hash: str) -> bool:
        """Whether an invite code exists and is unused (read only: :meth:`sign_up` spends it)."""
        return self._one("SELECT 1 FROM invites WHERE hash = ? AND used_by IS NULL", (code_hash,)) is not None

    def password_hash(self, user_id: int) -> str | None:
        """A user's password hash, if they have a password."""
        row = self._one("SELECT password FROM users WHERE id = ?", (user_id,))
        return None if row is None else row[0]

    def add_token(self, user_id: int, token_hash: str) -> None:
        """Record an API token (its hash only)."""
        with self.tx() as c:
            c.execute("INSERT INTO tokens (user_id, hash, created_at) VALUES (?, ?, ?)", (user_id, token_hash, now()))

    def user_for_token(self, token_hash: str) -> User | None:
        """The enabled user whose unrevoked token has this hash, or None."""
        row = self._one(
            "SELECT u.id FROM tokens t JOIN users u ON u.id = t.user_id "
            "WHERE t.hash = ? AND t.revoked_at IS NULL AND u.disabled = 0",
            (token_hash,),
        )
        return None if row is None else self.user(int(row[0]))

    def revoke_tokens(self, user_id: int) -> int:
        """Revoke every token of a user; how many were live."""
        with self.tx() as c:
            cur = c.execute("UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", (now(), user_id))
            c.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))
        return cur.rowcount

    def revoke_token(self, token_hash: str) -> bool:
        """Revoke one token (a client logging out); whether it was live."""
        with self.tx() as c:
            cur = c.execute("UPDATE tokens SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL", (now(), token_hash))
        return cur.rowcount == 1

    def add_session(self, session_hash: str, user_id: int, csrf: str, expires_at: str) -> None:
        """Record a web session (its hash only)."""
        with self.tx() as c:
            c.execute("INSERT INTO sessions VALUES (?, ?, ?, ?)", (session_hash, user_id, csrf, expires_at))

    def user_for_session(self, session_hash: str) -> tuple[User, str] | None:
        """The enabled user of an unexpired session and its CSRF token, or None."""
        row = self._one(
            "SELECT u.id, s.csrf FROM sessions s JOIN users u ON u.id = s.user_id "
            "WHERE s.hash = ? AND s.expires_at > ? AND u.disabled = 0",
            (session_hash, now()),
        )
        return None if row is None else (self.user(int(row[0])), str(row[1]))

    def end_session(self, session_hash: str) -> None:
        """Forget a web session (sign-out)."""
        with self.tx() as c:
            c.execute("DELETE FROM sessions WHERE hash = ?", (session_hash,))

    def sign_up(self, name: str, password_hash: str, invite_hash: str | None) -> User | None:
        """A new account with a password, spending an unused invite code (unless
        ``invite_hash`` is None: an open sign-up), in one transaction; None if the code is
        not valid, and then nothing is written."""
        try:
            with self.tx() as c:
                if (other := _look_alike(c, "users", name)) is not None:
                    raise _taken("user", name, other)
                cur = c.execute("INSERT INTO users (name, password, created_at) VALUES (?, ?, ?)", (name, password_hash, now()))
                assert cur.lastrowid is not None
                uid = cur.lastrowid
                if invite_hash is not None:
                    spent = c.execute("UPDATE invites SET used_by = ? WHERE hash = ? AND used_by IS NULL", (uid, invite_hash))
                    if spent.rowcount != 1:
                        raise _NoInvite
        except _NoInvite:
            return None
        except sqlite3.IntegrityError:
            raise Conflict(f"a user named {name!r} already exists") from None
        return self.user(uid)

    def add_invite(self, code_hash: str) -> None:
        """Record an invite code (its hash only)."""
        with self.tx() as c:
            c.execute("INSERT INTO invites VALUES (?, ?, NULL)", (code_hash, now()))

    def use_invite(self, code_hash: str, user_id: int) -> bool:
        """Spend an unused invite code on a new user; whether it was valid."""
        with self.tx() as c:
            cur = c.execute("UPDATE invites SET used_by = ? WHERE hash = ? AND used_by IS NULL", (user_id, code_hash))
        return cur.rowcount == 1

    # ------------------------------------------------------------- bots and versions

    def version(self, version_id: int) -> Version:
        """A version by id."""
        row = self._one(f"SELECT {_VERSION_COLUMNS} FROM {_VERSION_FROM} WHERE v.id = ?", (version_id,))
        if row is None:
            raise NotFound(f"no version {version_id}")
        return _version(row)

    def versions(
        self, *, owner_id: int | None = None, status: Sequence[str] = (), bot: str | None = None,
        limit: int | None = None, before: int | None = None,
    ) -> list[Version]:
        """Versions, newest first, filtered by owner, status and bot name; at most ``limit``,
        of ids below ``before`` (a page of a long list)."""
        where: list[str] = ["1"]
        params: list[Any] = []
        if owner_id is not None:
            where.append("b.user_id = ?")
            params.append(owner_id)
        if status:
            where.append(f"v.status IN ({','.join('?' * len(status))})")
            params.extend(status)
        if bot is not None:
            where.append("b.name = ?")
            params.append(bot)
        if before is not None:
            where.append("v.id < ?")
            params.append(before)
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self._all(f"SELECT {_VERSION_COLUMNS} FROM {_VERSION_FROM} WHERE {' AND '.join(where)} ORDER BY v.id DESC{tail}", params)
        return [_version(r) for r in rows]

    def candidates(self) -> list[tuple[int, int, float, float, int, bool, float | None, float | None]]:
        """The active versions as the scheduler needs them: (id, owner, live mu, live sigma,
        tables, reference, official theta, its standard error in natural units), the last
        two None before a refit has included the version. A disabled user's versions are
        never among them."""
        return [(int(i), int(u), float(m), float(s), int(t), bool(r), th, se) for i, u, m, s, t, r, th, se in self._all(
            "SELECT v.id, b.user_id, v.mu, v.sigma, v.tables, v.reference, o.theta, o.se / ? FROM versions v "
            "JOIN bots b ON b.id = v.bot_id JOIN users u ON u.id = b.user_id LEFT JOIN official o ON o.version_id = v.id "
            "WHERE v.status = 'active' AND u.disabled = 0",
            (_ELO,),
        )]

    def unfitted(self, min_matches: int) -> int:
        """Active versions with at least ``min_matches`` finished matches that the official
        fit has not included yet (a refit is then due)."""
        return int(self._one(
            "SELECT count(*) FROM versions v WHERE v.status = 'active' AND v.matches >= ? "
            "AND NOT EXISTS (SELECT 1 FROM official o WHERE o.version_id = v.id)", (min_matches,),
        )[0])  # fmt: skip

    def recent_tables(self, n: int) -> list[tuple[int, ...]]:
        """The seats (version ids) of the latest ``n`` tables scheduled, oldest first: what
        the scheduler's window is rebuilt from after a restart."""
        rows = self._all("SELECT seats FROM ladder_tables ORDER BY id DESC LIMIT ?", (n,))
        return [tuple(json.loads(s)) for (s,) in reversed(rows)]

    def set_reference(self, version_id: int, reference: bool) -> None:
        """Mark a version a reference bot or not (an admin's switch): the scheduler caps a
        reference's share of tables (:attr:`~referee.ladder.settings.ArenaSettings.reference_share_pct`)."""
        with self.tx() as c:
            if c.execute("UPDATE versions SET reference = ? WHERE id = ?", (int(reference), version_id)).rowcount != 1:
                raise NotFound(f"no version {version_id}")
            c.execute(BUMP_BOARD, (BOARD_GEN,))

    def uploads_since(self, user_id: int, since: str) -> int:
        """How many versions a user uploaded since ``since``, the rejected ones they deleted
        included (refused uploads are counted by the caller: they leave no version)."""
        row = self._one(
            "SELECT count(*) FROM versions v JOIN bots b ON b.id = v.bot_id WHERE b.user_id = ? AND v.uploaded_at >= ?",
            (user_id, since),
        )
        deleted = json.loads(self.meta(f"{DELETED_UPLOADS}{user_id}", "[]"))
        return int(row[0]) + sum(1 for t in deleted if t >= since)

    def delete_rejected(self, version_id: int) -> Version:
        """Delete a rejected version's row (and its bot's, when it was the bot's last version);
        return it, so the caller removes its files. Its upload still counts toward the day's
        limit: deleting is no way round it."""
        with self.tx() as c:
            v = self.version(version_id)
            if v.status != "rejected":
                raise Conflict(f"version {v.label} is {v.status}: only a rejected version can be deleted (withdraw it instead)")
            key = f"{DELETED_UPLOADS}{v.owner_id}"
            row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            day_ago = ago(86_400)
            kept = [t for t in json.loads(row[0] if row else "[]") if t >= day_ago] + [v.uploaded_at]
            c.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, json.dumps(kept)))
            c.execute("DELETE FROM versions WHERE id = ?", (version_id,))
            c.execute("DELETE FROM bots WHERE name = ? AND NOT EXISTS (SELECT 1 FROM versions WHERE bot_id = bots.id)", (v.bot,))
            c.execute(BUMP_BOARD, (BOARD_GEN,))
        return v

    def rejected_twin(self, user_id: int, sha256: str) -> Version | None:
        """The user's newest version rejected for its content whose files hash to ``sha256``
        (an identical re-upload would be rejected again), or None."""
        rows = self._all(
            f"SELECT {_VERSION_COLUMNS} FROM {_VERSION_FROM} WHERE b.user_id = ? AND v.sha256 = ? AND v.status = 'rejected' "
            "AND v.reason NOT LIKE ? ORDER BY v.id DESC LIMIT 1",
            (user_id, sha256, ARENA_FAILURE + "%"),
        )
        return _version(rows[0]) if rows else None

    def bot_owner(self, name: str) -> int | None:
        """The user id owning bot ``name``, or None if no one has it yet."""
        row = self._one("SELECT user_id FROM bots WHERE name = ?", (name,))
        return None if row is None else int(row[0])

    def add_version(
        self, user_id: int, bot: str, *, place: Callable[[int], str], command: str, sha256: str, n_files: int, size: int,
        source: str, mu: float, sigma: float,
    ) -> Version:
        """Record a new queued version of ``bot`` (made for ``user_id`` if new; refused if it
        is another user's).

        ``place(version_id)`` moves the version's files into place and returns their folder,
        relative to the arena's; it runs inside the transaction, so a version is never
        recorded without its files.
        """
        with self.tx() as c:
            row = c.execute("SELECT id, user_id FROM bots WHERE name = ?", (bot,)).fetchone()
            if row is None:
                if (other := _look_alike(c, "bots", bot)) is not None:
                    raise _taken("bot", bot, other)
                cur = c.execute("INSERT INTO bots (user_id, name, created_at) VALUES (?, ?, ?)", (user_id, bot, now()))
                bot_id = cur.lastrowid
            elif int(row[1]) != user_id:
                raise Conflict(f"the bot name {bot!r} belongs to another user; choose another name")
            else:
                bot_id = int(row[0])
            (number,) = c.execute("SELECT coalesce(max(number), 0) + 1 FROM versions WHERE bot_id = ?", (bot_id,)).fetchone()
            t = now()
            cur = c.execute(
                "INSERT INTO versions (bot_id, number, status, command, files, sha256, n_files, size, source, uploaded_at, "
                "status_at, mu, sigma) VALUES (?, ?, 'queued', ?, '', ?, ?, ?, ?, ?, ?, ?, ?)",
                (bot_id, number, command, sha256, n_files, size, source, t, t, mu, sigma),
            )
            vid = cur.lastrowid
            assert vid is not None
            c.execute("UPDATE versions SET files = ? WHERE id = ?", (place(vid), vid))
        return self.version(vid)

    def set_status(
        self, version_id: int, status: str, reason: str = "", *, identity: tuple[str, str, str] | None = None, report: str | None = None
    ) -> None:
        """Move a version to ``status`` (with the reason, for a rejection or disqualification).

        A version that becomes active retires its bot's active versions beyond the newest
        :attr:`~referee.ladder.settings.ArenaSettings.live_versions`; one whose user was
        disabled meanwhile (while it was validated) is withdrawn instead, and never plays.
        """
        assert status in STATUSES
        with self.tx() as c:
            if status == "active" and c.execute(
                f"SELECT u.disabled FROM {_VERSION_FROM} WHERE v.id = ?", (version_id,)
            ).fetchone() == (1,):
                status, reason = "withdrawn", "its user was disabled"
            c.execute("UPDATE versions SET status = ?, reason = ?, status_at = ? WHERE id = ?", (status, reason, now(), version_id))
            c.execute(BUMP_BOARD, (BOARD_GEN,))
            if report is not None:
                c.execute("UPDATE versions SET report = ? WHERE id = ?", (report, version_id))
            if identity is not None:
                c.execute("UPDATE versions SET bot_name = ?, bot_version = ?, author = ? WHERE id = ?", (*identity, version_id))
            if status == "active":
                (bot_id,) = c.execute("SELECT bot_id FROM versions WHERE id = ?", (version_id,)).fetchone()
                live = [int(r[0]) for r in c.execute(
                    "SELECT id FROM versions WHERE bot_id = ? AND status = 'active' ORDER BY number DESC", (bot_id,)
                )]
                self._retire(c, live[self.settings.live_versions:], f"retired when {self.version(version_id).label} became active")

    def _retire(self, c: sqlite3.Connection, ids: Sequence[int], reason: str) -> None:
        # The reason is told in the past: it stays true whatever happens to the newer version.
        c.executemany("UPDATE versions SET status = 'retired', reason = ?, status_at = ? WHERE id = ?", [(reason, now(), i) for i in ids])

    def reactivate(self, version_id: int) -> Version:
        """Bring a retired or withdrawn version back onto the ladder (its owner's choice): it
        becomes active with its history and figures, and retires its bot's active versions
        beyond :attr:`~referee.ladder.settings.ArenaSettings.live_versions` (this one counted
        first), as an upload does. A rejected version never passed its checks and a
        disqualified one was stopped by an admin: neither can come back."""
        with self.tx() as c:
            v = self.version(version_id)
            if v.status != "retired" and v.status != "withdrawn":
                why = {
                    "active": "it plays already",
                    "queued": "it is still being checked", "validating": "it is still being checked",
                    "rejected": "it failed its checks: upload a fixed version instead",
                    "disqualified": "an admin disqualified it",
                }.get(v.status, v.status)
                raise Conflict(f"version {v.label} is {v.status} and cannot be reactivated: {why}")
            c.execute("UPDATE versions SET status = 'active', reason = '', status_at = ? WHERE id = ?", (now(), version_id))
            others = [int(r[0]) for r in c.execute(
                "SELECT id FROM versions WHERE bot_id = (SELECT bot_id FROM versions WHERE id = ?) AND status = 'active' "
                "AND id != ? ORDER BY number DESC", (version_id, version_id),
            )]
            self._retire(c, others[max(0, self.settings.live_versions - 1):], f"retired when {v.label} was reactivated")
            c.execute(BUMP_BOARD, (BOARD_GEN,))
        return self.version(version_id)

    def note_starts(self, started: Sequence[int], failed: Sequence[int]) -> dict[int, int]:
        """Count a match's launches: a version that started has no failures in a row; one
        that failed one more. Kept in the store, so a restart of the ladder forgets nothing.
        Returns the failed versions' counts."""
        with self.tx() as c:
            c.executemany("UPDATE versions SET start_failures = 0 WHERE id = ?", [(v,) for v in started])
            c.executemany("UPDATE versions SET start_failures = start_failures + 1 WHERE id = ?", [(v,) for v in failed])
            return {v: int(c.execute("SELECT start_failures FROM versions WHERE id = ?", (v,)).fetchone()[0]) for v in failed}

    def claim_queued(self) -> Version | None:
        """The oldest queued version, now marked validating (None if the queue is empty)."""
        with self.tx() as c:
            row = c.execute("SELECT id FROM versions WHERE status = 'queued' ORDER BY id LIMIT 1").fetchone()
            if row is None:
                return None
            c.execute("UPDATE versions SET status = 'validating', status_at = ? WHERE id = ?", (now(), row[0]))
        return self.version(int(row[0]))

    def requeue_validating(self) -> int:
        """Put validations cut short by a stop back in the queue; how many."""
        with self.tx() as c:
            return c.execute("UPDATE versions SET status = 'queued' WHERE status = 'validating'").rowcount

    # ------------------------------------------------------------- tables and matches

    def schedule_table(self, seats: Sequence[int], commitment_of: Any, *, placement: bool) -> list[LadderMatch]:
        """Create a table of these versions: one deal played in every seat rotation.

        ``commitment_of(table_id)`` is the deal seed's public commitment, stored with it.
        """
        with self.tx() as c:
            cur = c.execute(
                "INSERT INTO ladder_tables (seats, commitment, placement, created_at) VALUES (?, '', ?, ?)",
                (json.dumps(list(seats)), int(placement), now()),
            )
            tid = cur.lastrowid
            assert tid is not None
            c.execute("UPDATE ladder_tables SET commitment = ? WHERE id = ?", (commitment_of(tid), tid))
            n = len(seats)
            for r in range(n):
                rotated = list(seats[r:]) + list(seats[:r])
                key = match_key(tid, r)
                c.execute("INSERT INTO matches (key, table_id, rotation, seats, status) VALUES (?, ?, ?, ?, 'pending')",
                          (key, tid, r, json.dumps(rotated)))
                c.executemany("INSERT INTO match_seats VALUES (?, ?, ?)", [(v, key, s) for s, v in enumerate(rotated)])
            c.executemany("UPDATE versions SET tables = tables + 1 WHERE id = ?", [(v,) for v in seats])
        return self.matches_of_table(tid)

    def matches_of_table(self, table_id: int) -> list[LadderMatch]:
        """A table's matches by rotation."""
        rows = self._all(
            f"SELECT {_MATCH_COLUMNS} FROM matches m JOIN ladder_tables t ON t.id = m.table_id WHERE m.table_id = ? ORDER BY m.rotation",
            (table_id,),
        )
        return self._matches(rows)

    def _matches(self, rows: Sequence[Sequence[Any]]) -> list[LadderMatch]:
        """Matches from their rows, each knowing whether its deal is complete: every rotation of
        its table finished (done) or given up (void, never to be played)."""
        tables = sorted({int(r[1]) for r in rows})
        rotations: list[_Rotation] = []
        finished: set[str] = set()
        for i in range(0, len(tables), 500):  # within SQLite's limit of bound parameters
            chunk = tables[i:i + 500]
            for key, tid, status in self._all(
                f"SELECT key, table_id, status FROM matches WHERE table_id IN ({','.join('?' * len(chunk))})", chunk
            ):
                rotations.append(_Rotation(key, int(tid)))
                if status != "pending":
                    finished.add(key)
        progress = DealProgress.of(rotations, finished)
        return [_match(r, progress) for r in rows]

    def pending_matches(self) -> list[LadderMatch]:
        """Matches scheduled and not finished, oldest first (a restart plays them first)."""
        rows = self._all(
            f"SELECT {_MATCH_COLUMNS} FROM matches m JOIN ladder_tables t ON t.id = m.table_id "
            "WHERE m.status = 'pending' ORDER BY m.key"
        )
        return self._matches(rows)

    def match(self, key: str) -> LadderMatch:
        """One match by key."""
        row = self._one(f"SELECT {_MATCH_COLUMNS} FROM matches m JOIN ladder_tables t ON t.id = m.table_id WHERE m.key = ?", (key,))
        if row is None:
            raise NotFound(f"no match {key!r}")
        return self._matches([row])[0]

    def matches(self, *, version_ids: Sequence[int] = (), status: str | None = None, limit: int = 50, before: str | None = None) -> list[LadderMatch]:
        """Matches, newest first: of any of ``version_ids`` if given, of a status if given."""
        where: list[str] = ["1"]
        params: list[Any] = []
        if version_ids:
            where.append(f"m.key IN (SELECT key FROM match_seats WHERE version_id IN ({','.join('?' * len(version_ids))}))")
            params.extend(version_ids)
        if status is not None:
            where.append("m.status = ?")
            params.append(status)
        if before is not None:
            where.append("m.key < ?")
            params.append(before)
        rows = self._all(
            f"SELECT {_MATCH_COLUMNS} FROM matches m JOIN ladder_tables t ON t.id = m.table_id WHERE {' AND '.join(where)} "
            "ORDER BY m.key DESC LIMIT ?",
            [*params, limit],
        )
        return self._matches(rows)

    def finished_rows(self) -> list[tuple[str, tuple[int, ...], dict[str, Any]]]:
        """Every finished match: key, seats (version ids) and result, in key order (the refit's input)."""
        return [
            (k, tuple(json.loads(s)), json.loads(r))
            for k, s, r in self._all("SELECT key, seats, result FROM matches WHERE status = 'done' ORDER BY key")
        ]

    def record_result(
        self, key: str, result: dict[str, Any], log_path: str, duration_s: float, ratings: dict[int, tuple[float, float]]
    ) -> bool:
        """Commit a finished match with the live ratings it moves, in one transaction: each
        seat's version gets its new rating, a point of its rating history and its head-to-head
        against every other seat.

        Returns False (and changes nothing) if the match is already done: a result is never
        counted twice.
        """
        with self.tx() as c:
            cur = c.execute(
                "UPDATE matches SET status = 'done', result = ?, log_path = ?, finished_at = ?, duration_s = ? "
                "WHERE key = ? AND status = 'pending'",
                (json.dumps(result), log_path, now(), duration_s, key),
            )
            if cur.rowcount != 1:
                return False
            (tid, seats) = c.execute("SELECT table_id, seats FROM matches WHERE key = ?", (key,)).fetchone()
            seats = json.loads(seats)
            placings = list(MatchResult.from_json(result).placings)
            at = now()
            for s, vid in enumerate(seats):
                mu, sigma = ratings[vid]
                # A win is first place alone: nobody wins a shared first place (docs/rules.md),
                # as the official refit counts it.
                won = placings[s] == 1 and placings.count(1) == 1
                (spark,) = c.execute("SELECT spark FROM versions WHERE id = ?", (vid,)).fetchone()
                spark = json.dumps([*json.loads(spark), round(_live_points(mu), 1)][-SPARK_POINTS:])
                (n,) = c.execute(
                    "UPDATE versions SET mu = ?, sigma = ?, matches = matches + 1, wins = wins + ?, spark = ? WHERE id = ? "
                    "RETURNING matches",
                    (mu, sigma, int(won), spark, vid),
                ).fetchone()
                c.execute("INSERT INTO rating_history VALUES (?, ?, ?, ?, ?, ?)", (vid, n, key, mu, sigma, at))
            c.executemany(ADD_PAIR, list(pair_outcomes(seats, placings)))
            c.execute(BUMP_BOARD, (BOARD_GEN,))
            (left,) = c.execute("SELECT count(*) FROM matches WHERE table_id = ? AND status = 'pending'", (tid,)).fetchone()
            if left == 0:
                c.execute("UPDATE ladder_tables SET finished_at = ? WHERE id = ?", (now(), tid))
        return True

    def void_match(self, key: str, why: str) -> None:
        """Give up on a match the infrastructure failed again and again (never charged to a bot)."""
        with self.tx() as c:
            c.execute("UPDATE matches SET status = 'void' WHERE key = ? AND status = 'pending'", (key,))
            c.execute("INSERT INTO infra_failures (key, error, at) VALUES (?, ?, ?)", (key, why, now()))
            (tid,) = c.execute("SELECT table_id FROM matches WHERE key = ?", (key,)).fetchone()
            (left,) = c.execute("SELECT count(*) FROM matches WHERE table_id = ? AND status = 'pending'", (tid,)).fetchone()
            if left == 0:
                c.execute("UPDATE ladder_tables SET finished_at = ? WHERE id = ?", (now(), tid))

    def note_failure(self, key: str, why: str) -> int:
        """Count an infrastructure failure of a match; how many it has had."""
        with self.tx() as c:
            c.execute("UPDATE matches SET failures = failures + 1 WHERE key = ?", (key,))
            c.execute("INSERT INTO infra_failures (key, error, at) VALUES (?, ?, ?)", (key, why, now()))
            (n,) = c.execute("SELECT failures FROM matches WHERE key = ?", (key,)).fetchone()
        return int(n)

    def counts(self) -> dict[str, int]:
        """Matches by status, and tables.

        Without a scan of the matches: tables are never deleted and every table has one
        match per seat, so the matches are ``tables * table_size``; the pending and void ones
        are few, and counted through their index. Done is the rest.
        """
        out = {s: int(n) for s, n in self._all(
            "SELECT status, count(*) FROM matches WHERE status IN ('pending', 'void') GROUP BY status"
        )}
        tables = int(self._one("SELECT coalesce(max(id), 0) FROM ladder_tables")[0])
        done = tables * self.settings.play.table_size - sum(out.values())
        if done:
            out["done"] = done
        out["tables"] = tables
        return out

    # ------------------------------------------------------------- the leaderboard

    def board_rows(self) -> list[tuple[Version, str]]:
        """The leaderboard's versions with their sparklines' JSON text: active versions and
        every version that played, in the board's order (SQLite's, so no row is built to
        sort). First the ranked: active versions a refit has included, by official rating;
        then active versions no refit has seen yet (provisional, by live mu); then the
        versions that left the ladder (withdrawn, retired, disqualified: shown apart, never
        above an active one), by their final figure."""
        rows = self._all(
            f"SELECT {_VERSION_COLUMNS}, v.spark FROM {_VERSION_FROM} "
            "WHERE v.status = 'active' OR v.matches > 0 "
            "ORDER BY CASE WHEN v.status != 'active' THEN 2 WHEN o.rating IS NULL THEN 1 ELSE 0 END, "
            "coalesce(o.rating, ? + ? * v.mu) DESC, b.name || '.v' || v.number",
            (_live_points(0.0), _live_points(1.0) - _live_points(0.0)),
        )
        return [(_version(r[:-1]), str(r[-1])) for r in rows]

    def board_gen(self) -> int:
        """How many times what the leaderboard shows has changed (a result, a status, a refit)."""
        return int(self.meta(BOARD_GEN, "0"))

    def board(self) -> str | None:
        """The leaderboard's JSON as the ladder last built it, if nothing changed since."""
        row = self._one("SELECT gen, body FROM board WHERE id = 1")
        return None if row is None or int(row[0]) != self.board_gen() else str(row[1])

    def set_board(self, gen: int, body: str) -> None:
        """Keep the leaderboard's JSON built at generation ``gen`` (the ladder does, now and then)."""
        with self.tx() as c:
            c.execute("INSERT INTO board VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET gen = excluded.gen, body = excluded.body", (gen, body))

    # ------------------------------------------------------------- a bot's history

    def rating_history(self, version_id: int, max_points: int) -> list[RatingPoint]:
        """A version's live rating after each of its matches, oldest first: at most
        ``max_points`` of them, evenly spread, the first and the latest always among them."""
        lo, hi, count = self._one("SELECT min(n), max(n), count(*) FROM rating_history WHERE version_id = ?", (version_id,))
        if not count:
            return []
        # Every step-th point from the first, and the latest: at most max_points (>= 2) rows.
        step = max(1, -(-(int(count) - 1) // max(1, max_points - 1)))
        rows = self._all(
            "SELECT n, key, mu, sigma, at FROM rating_history WHERE version_id = ? AND ((n - ?) % ? = 0 OR n = ?) ORDER BY n",
            (version_id, lo, step, hi),
        )
        return [RatingPoint(int(n), k, float(mu), float(sigma), at) for n, k, mu, sigma, at in rows]

    def head_to_head(self, version_ids: Sequence[int]) -> list[tuple[int, int, HeadToHead]]:
        """How each of these versions fared against each opponent version it met: (version,
        opponent, counts), the most played first."""
        from referee.tournament.standings import HeadToHead

        if not version_ids:
            return []
        rows = self._all(
            "SELECT version_id, opponent_id, matches, better, equal, worse FROM head_to_head "
            f"WHERE version_id IN ({','.join('?' * len(version_ids))}) ORDER BY matches DESC, version_id DESC, opponent_id",
            list(version_ids),
        )
        return [(int(v), int(o), HeadToHead(int(n), int(b), int(e), int(w))) for v, o, n, b, e, w in rows]

    # ------------------------------------------------------------- official ratings

    def set_official(self, figures: dict[int, Official], matches: int) -> None:
        """Replace the official figures, fitted over ``matches`` finished matches (one
        transaction: readers see the old or the new)."""
        with self.tx() as c:
            c.execute("DELETE FROM official")
            c.executemany(
                "INSERT INTO official VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(v, o.rating, o.low, o.high, o.se, o.theta, o.matches, o.wins, o.win_low, o.win_high, json.dumps(o.faults))
                 for v, o in figures.items()],
            )
            for key, value in (("official_at", now()), ("official_matches", str(matches))):
                c.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))
            c.execute(BUMP_BOARD, (BOARD_GEN,))

    def official(self) -> dict[int, Official]:
        """The official figures by version id (empty before the first refit)."""
        return {int(row[0]): _official(row[1:]) for row in self._all("SELECT * FROM official")}
