"""Accounts and credentials: API tokens, passwords, web sessions, invite codes.

A token is 32 random bytes (``secrets``), shown once and stored as its SHA-256: a random
secret that long needs no slow hash, and the database then holds nothing a reader could
use. Passwords (for the web pages) are hashed with argon2 (argon2-cffi), never by hand.
Names are checked here, once, for every place a user controls a name.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from referee.ladder.errors import ArenaError, BadUpload, Busy, TooMany
from referee.ladder.store import ArenaStore, User

TOKEN_PREFIX = "t31_"
#: Names of users and bots: what the tournament allows for a bot, a little shorter, so that
#: a version's label (``name.v12``) fits the referee's 40 characters.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
SESSION_DAYS = 14

_hasher = PasswordHasher()
#: argon2 hashes made or checked at once, in the whole service: each takes 64 MiB and a core
#: for a moment, so 80 sign-ups at once must queue rather than take 5 GiB.
HASH_SLOTS = 2
#: Seconds a sign-in or sign-up waits for a slot before it is told the arena is busy (503).
HASH_WAIT_S = 20.0
_slots = threading.BoundedSemaphore(HASH_SLOTS)
_dummy_lock = threading.Lock()
_dummy: list[str] = []


@contextlib.contextmanager
def _hash_slot() -> Iterator[None]:
    if not _slots.acquire(timeout=HASH_WAIT_S):
        raise Busy("the arena is busy checking passwords; try again in a minute")
    try:
        yield
    finally:
        _slots.release()


def _dummy_hash() -> str:
    """A hash of no one's password, checked in place of a missing one so that a sign-in takes
    as long whether or not the user exists (made once, on first need)."""
    with _dummy_lock:
        if not _dummy:
            import secrets

            _dummy.append(_hasher.hash(secrets.token_urlsafe(16)))
        return _dummy[0]


def check_name(name: str, what: str = "name") -> str:
    """A user's or bot's name, or :class:`BadUpload` saying what is wrong with it.

    Markup and control characters get their own message: a name is shown on pages and in
    terminals, and neither may be able to inject anything.
    """
    bad = [ch for ch in name if ch in "<>&\"'`" or unicodedata.category(ch).startswith("C")]
    if bad:
        shown = ", ".join(sorted({repr(ch) for ch in bad}))
        raise BadUpload(f"the {what} {name!r} holds markup or control characters ({shown}); use letters, digits, '_', '.' or '-'")
    if not NAME.fullmatch(name):
        raise BadUpload(f"the {what} {name!r} is not allowed: use 1-32 letters, digits, '_', '.' or '-', starting with a letter or digit")
    return name


def hash_secret(secret: str) -> str:
    """How a token, session id or invite code is stored: its SHA-256."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_token(store: ArenaStore, user: User) -> str:
    """Make an API token for ``user``; the only time it is seen whole."""
    import secrets

    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    store.add_token(user.id, hash_secret(token))
    return token


def user_for_token(store: ArenaStore, token: str) -> User | None:
    """The user of a live token (None: unknown, revoked, or the user is disabled)."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    return store.user_for_token(hash_secret(token))


def add_user(store: ArenaStore, name: str, *, admin: bool = False) -> tuple[User, str]:
    """A new user and their first API token."""
    check_name(name, "user name")
    user = store.add_user(name, admin=admin)
    return user, new_token(store, user)


def new_invite(store: ArenaStore) -> str:
    """An invite code for the web sign-up (stored hashed, good once)."""
    import secrets

    code = secrets.token_urlsafe(12)
    store.add_invite(hash_secret(code))
    return code


def set_password(store: ArenaStore, user: User, password: str) -> None:
    """Set a user's password (argon2); at least 10 characters."""
    if len(password) < 10:
        raise ArenaError("a password needs at least 10 characters", code="bad_password", status=422)
    store.set_password_hash(user.id, hash_password(password))


#: What a password must be, said the same way on the page and in the refusal.
PASSWORD_RULES = "10 to 200 characters, not all the same character, and not your user name"


def password_problem(password: str, name: str) -> str | None:
    """What is wrong with ``password`` for user ``name`` (None: nothing)."""
    if len(password) < 10:
        return f"the password has {len(password)} characters; it needs at least 10"
    if len(password) > 200:
        return "the password is over 200 characters"
    if len(set(password)) == 1:
        return "the password is one character repeated; mix several"
    if password.casefold() == name.casefold():
        return "the password is your user name; choose another"
    return None


def hash_password(password: str) -> str:
    """A password's argon2 hash, as :func:`check_password` reads it (one of the
    :data:`HASH_SLOTS`; :class:`Busy` if none frees in :data:`HASH_WAIT_S`)."""
    with _hash_slot():
        return _hasher.hash(password)


def check_password(store: ArenaStore, user: User | None, password: str) -> bool:
    """Whether ``password`` is the user's (False for no user, a user without a password, or
    a disabled one).

    One argon2 check is made in every case, against a dummy hash where there is no real
    one, so that the time taken does not tell whether a name exists.
    """
    stored = store.password_hash(user.id) if user is not None else None
    usable = stored is not None and user is not None and not user.disabled
    with _hash_slot():
        try:
            return _hasher.verify(stored if stored is not None else _dummy_hash(), password) and usable
        except (VerificationError, InvalidHashError):
            return False


def new_session(store: ArenaStore, user: User) -> tuple[str, str]:
    """A web session for ``user``: its id (for the cookie) and its CSRF token."""
    import secrets

    sid, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    expires = (datetime.now(UTC) + timedelta(days=SESSION_DAYS)).isoformat(timespec="seconds")
    store.add_session(hash_secret(sid), user.id, csrf, expires)
    return sid, csrf


class FailureLimiter:
    """Refuse a key (a client address, an account's name, a user) that failed too often lately:
    guessing tokens or passwords, or sending uploads the arena refuses.

    In memory: ``limit`` failures of one key within ``window_s`` seconds, then
    :class:`TooMany` (saying ``what``) until the oldest failure leaves the window. Keys whose
    failures have all left the window are forgotten once many keys are kept, so a stream of
    new keys cannot grow it without end.
    """

    #: Keys kept before the forgotten ones are swept out.
    SWEEP_AT = 10_000

    def __init__(self, limit: int = 20, window_s: float = 60.0, what: str = "too many failed sign-ins from this address") -> None:
        self.limit = limit
        self.window_s = window_s
        self.what = what
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str, t: float) -> deque[float]:
        q = self._failures.setdefault(key, deque())
        while q and q[0] <= t - self.window_s:
            q.popleft()
        return q

    def check(self, key: str, what: str | None = None) -> None:
        """Raise :class:`TooMany` (saying ``what``, or the limiter's own text) if ``key`` is
        over the limit."""
        with self._lock:
            t = time.monotonic()
            q = self._recent(key, t)
            if len(q) >= self.limit:
                wait = max(1, round(q[0] + self.window_s - t))
                raise TooMany(f"{what or self.what}; try again in {wait} s")

    def fail(self, key: str) -> None:
        """Count one failure of ``key``."""
        with self._lock:
            t = time.monotonic()
            if len(self._failures) >= self.SWEEP_AT:
                for k in [k for k, q in self._failures.items() if not q or q[-1] <= t - self.window_s]:
                    del self._failures[k]
            self._recent(key, t).append(t)
