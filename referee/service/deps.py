"""Who may call a route, said once beside it: the access dependencies.

Every route declares one of:

- :func:`public` — anyone;
- :func:`current_user` — a signed-in user: an API token (``Authorization: Bearer``, what
  the CLI sends) or a web session cookie (the browser pages), one function for both;
- :func:`owned_version` (the owner of the version in the path) or :func:`current_user`
  with a per-seat check (a match's bot output) — others get 404, never 403, so nothing
  leaks about what exists;
- :func:`admin` — an admin user.

:func:`access_of` reads a route's level back from its dependencies, so a test can walk the
app's route table and try every route with every kind of caller.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, Path, Request
from fastapi.routing import APIRoute

from referee.ladder.accounts import FailureLimiter, hash_secret, user_for_token
from referee.ladder.errors import Forbidden, NotFound, NotSignedIn
from referee.ladder.store import ArenaStore, User, Version

SESSION_COOKIE = "arena_session"
#: The header that carries a session's CSRF token on every request that changes something.
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def get_store(request: Request) -> Iterator[ArenaStore]:
    """A connection to the arena's store for this request."""
    state = request.app.state
    store = ArenaStore.open(state.folder, settings=state.settings)
    try:
        yield store
    finally:
        store.close()


Store = Annotated[ArenaStore, Depends(get_store)]


def public() -> None:
    """Anyone may call the route."""


def client_address(request: Request) -> str:
    """The caller's address, as the sign-in limit counts it: the connection's, or the one a
    trusted proxy forwarded (``arena serve --proxy``; uvicorn puts it in the request)."""
    return request.client.host if request.client else "?"


def _refuse(limiter: FailureLimiter, client: str, message: str) -> NotSignedIn:
    # A bad credential counts against its address, and once the address is over the limit
    # is answered 429; a good one is checked first and never waits, whatever its address
    # sent before.
    limiter.check(client)
    limiter.fail(client)
    return NotSignedIn(message)


def current_user(request: Request, store: Store) -> User:
    """The signed-in caller (token or session), or 401. Failed attempts are rate-limited per
    address; a valid token or session is never refused for them."""
    limiter: FailureLimiter = request.app.state.limiter
    client = client_address(request)
    header = request.headers.get("authorization", "")
    user: User | None = None
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _refuse(limiter, client, "the Authorization header must be 'Bearer TOKEN'")
        user = user_for_token(store, token.strip())
        if user is None:
            raise _refuse(limiter, client, "that token is not valid (wrong, revoked, or its user is disabled); ask the arena's admin for a new one")
        return user
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        found = store.user_for_session(hash_secret(cookie))
        if found is None:
            raise _refuse(limiter, client, "your session has ended; sign in again")
        # A browser sends the cookie with any request to this site, so a request that changes
        # something must also carry the session's CSRF token, which only our own pages can read.
        if request.method not in SAFE_METHODS:
            sent = request.headers.get(CSRF_HEADER, "")
            if not hmac.compare_digest(sent.encode(), found[1].encode()):
                raise Forbidden(f"this request lacks the session's CSRF token (the {CSRF_HEADER} header); reload the page and try again")
        request.state.csrf = found[1]
        request.state.session = cookie
        return found[0]
    raise NotSignedIn("sign in first: send 'Authorization: Bearer TOKEN' (thirtyone remote login does it for you)")


SignedIn = Annotated[User, Depends(current_user)]


def admin(user: SignedIn) -> User:
    """The caller, who must be an admin (403 for other signed-in users)."""
    if not user.admin:
        raise Forbidden("this needs an admin of the arena")
    return user


Admin = Annotated[User, Depends(admin)]


#: The largest id a path or query may name: SQLite's largest integer (a larger one would
#: not fit in a query, and names nothing).
MAX_ID = 2**63 - 1


def owned_version(version_id: Annotated[int, Path(ge=1, le=MAX_ID)], user: SignedIn, store: Store) -> Version:
    """The version in the path, if the caller owns it; 404 otherwise (also for an admin:
    a bot's files and output are its owner's alone)."""
    try:
        v = store.version(version_id)
    except NotFound:
        raise NotFound(f"no version {version_id} of yours") from None
    if v.owner_id != user.id:
        raise NotFound(f"no version {version_id} of yours")
    return v


OwnedVersion = Annotated[Version, Depends(owned_version)]

#: Access levels, the narrowest first, and the dependency that states each (filled below).
LEVELS: dict[str, Any] = {"admin": admin, "owner": owned_version}


def own_seats(key: str, user: SignedIn, store: Store) -> tuple[Any, list[int]]:
    """A match and the seats in it whose version the caller owns; 404 when there are none."""
    try:
        m = store.match(key)
    except NotFound:
        raise NotFound(f"no match {key!r} with a bot of yours") from None
    mine = [s for s, vid in enumerate(m.seats) if store.version(vid).owner_id == user.id]
    if not mine:
        raise NotFound(f"no match {key!r} with a bot of yours")
    return m, mine


OwnSeats = Annotated[tuple[Any, list[int]], Depends(own_seats)]
LEVELS.update({"owner-seat": own_seats, "user": current_user, "public": public})


def access_of(route: APIRoute) -> str:
    """The access level a route states through its dependencies, or ``undeclared`` (which the
    test of every route refuses)."""
    found: set[Any] = set()

    def walk(dep: Any) -> None:
        for d in dep.dependencies:
            found.add(d.call)
            walk(d)

    walk(route.dependant)
    for level, fn in LEVELS.items():
        if fn in found:
            return level
    return "undeclared"
