"""The web pages' accounts: sign up, sign in, sign out, and who is signed in.

A session is a random id in a cookie (``Secure``, ``HttpOnly``, ``SameSite=Strict``, stored
as its SHA-256) and a CSRF token tied to it, which the pages read from ``GET /api/v1/session``
and send back in ``X-CSRF-Token`` on every request that changes something
(:func:`referee.service.deps.current_user` checks it). Sign-in and sign-up take JSON only, a
body a cross-site form cannot send, and a failed one counts against the address's limit
(a sign-in's against the account's too).

Both make the cheap checks first (limits, the name, the password's rules, the invite code,
whether the name is free) and hash last: argon2 runs on a pool of its own of
:data:`~referee.ladder.accounts.HASH_SLOTS` threads, so that a crowd of sign-ups waits
for it rather than taking the server's memory, or the threads the other pages need. A
sign-in runs argon2 whether or not the user exists, so its time tells nothing; a sign-up
says a name is taken only to a caller with a valid invite (or on an open sign-up).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Depends, Request, Response
from pydantic import BaseModel, Field

from referee.ladder.accounts import (
    HASH_SLOTS,
    HASH_WAIT_S,
    PASSWORD_RULES,
    SESSION_DAYS,
    check_name,
    check_password,
    hash_password,
    hash_secret,
    new_session,
    password_problem,
)
from referee.ladder.errors import ArenaError, Busy, Conflict, NotFound, NotSignedIn
from referee.ladder.store import ArenaStore, User
from referee.service.deps import SESSION_COOKIE, SignedIn, Store, client_address, public

router = APIRouter(prefix="/api/v1", tags=["session"])
#: The threads argon2 runs on (see the module doc).
_hashing = ThreadPoolExecutor(max_workers=HASH_SLOTS, thread_name_prefix="argon2")
T = TypeVar("T")


async def _hash(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the argon2 threads; :class:`Busy` if it has not run in :data:`HASH_WAIT_S`."""
    try:
        return await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(_hashing, fn, *args), HASH_WAIT_S)
    except TimeoutError:
        raise Busy("the arena is busy checking passwords; try again in a minute") from None


async def _db(fn: Callable[..., T], *args: Any) -> T:
    # The store waits for the ladder's transactions: never on the event loop's thread.
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _account_key(name: str) -> str:
    return "account:" + name.casefold()

class SignIn(BaseModel):
    """A sign-in form."""

    name: str = Field(max_length=100)
    password: str = Field(max_length=1000)


class SignUp(SignIn):
    """A sign-up form: the invite code may be empty when the arena's sign-up is open."""

    invite: str = Field(default="", max_length=200)


def _user_json(user: User, csrf: str | None) -> dict[str, Any]:
    return {"user": {"id": user.id, "name": user.name, "admin": user.admin}, "csrf": csrf}


def _start_session(response: Response, store: ArenaStore, user: User) -> dict[str, Any]:
    sid, csrf = new_session(store, user)
    # Secure: browsers treat http://127.0.0.1 and localhost as secure, so this works before
    # a TLS proxy is in front; HttpOnly: no script reads it; Strict: no other site sends it.
    response.set_cookie(SESSION_COOKIE, sid, max_age=SESSION_DAYS * 86400, path="/", secure=True, httponly=True, samesite="strict")
    return _user_json(user, csrf)


@router.get("/session", dependencies=[Depends(public)])
def who(request: Request, store: Store) -> dict[str, Any]:
    """Who this browser's session is (public): the user and the session's CSRF token, or a
    null user; and whether anyone may sign up without an invite."""
    cookie = request.cookies.get(SESSION_COOKIE)
    found = store.user_for_session(hash_secret(cookie)) if cookie else None
    out = _user_json(*found) if found else {"user": None, "csrf": None}
    return {**out, "open_signup": bool(store.settings.open_signup), "password_rules": PASSWORD_RULES}


@router.post("/session", dependencies=[Depends(public)])
async def sign_in(form: Annotated[SignIn, Body()], request: Request, response: Response, store: Store) -> dict[str, Any]:
    """Sign in with a name and password (public): sets the session cookie. Failed attempts
    are limited per address and per account."""
    limiter = request.app.state.limiter
    client, account = client_address(request), _account_key(form.name)
    limiter.check(client)
    limiter.check(account, "too many failed sign-ins to this account")

    def lookup() -> User | None:
        try:
            return store.user_named(form.name)
        except NotFound:
            return None

    user = await _db(lookup)
    if not await _hash(check_password, store, user, form.password):
        limiter.fail(client)
        limiter.fail(account)
        raise NotSignedIn("wrong user name or password (or the account is disabled)")
    assert user is not None
    return await _db(_start_session, response, store, user)


@router.delete("/session")
def sign_out(user: SignedIn, request: Request, response: Response, store: Store) -> dict[str, Any]:
    """Sign out (signed-in): ends this browser's session and clears its cookie."""
    session = getattr(request.state, "session", None)
    if session:
        store.end_session(hash_secret(session))
    response.delete_cookie(SESSION_COOKIE, path="/", secure=True, httponly=True, samesite="strict")
    return {"signed_out": user.name}


@router.post("/signup", status_code=201, dependencies=[Depends(public)])
async def sign_up(form: Annotated[SignUp, Body()], request: Request, response: Response, store: Store) -> dict[str, Any]:
    """Make an account (public): with an invite code, or without one when the arena's
    ``open_signup`` allows; signs the new user in. Sign-ups are limited per address."""
    limiter = request.app.state.limiter
    client = client_address(request)
    limiter.check(client)
    check_name(form.name, "user name")
    problem = password_problem(form.password, form.name)
    if problem:
        raise ArenaError(f"{problem} (a password needs {PASSWORD_RULES})", code="bad_password", status=422)
    code = form.invite.strip()
    if not code and not store.settings.open_signup:
        raise ArenaError("this arena's sign-up needs an invite code: ask its admin for one", code="bad_invite", status=422)
    bad_invite = ArenaError("that invite code is not valid (wrong, or used already)", code="bad_invite", status=422)
    if code and not await _db(store.invite_usable, hash_secret(code)):
        limiter.fail(client)
        raise bad_invite
    request.app.state.signups.check(client)
    taken = await _db(store.user_name_clash, form.name)
    if taken is not None:
        limiter.fail(client)
        what = "already exists" if taken == form.name else f"is too like the user {taken!r} (names must differ by more than case and the look-alikes 1/l/I, 0/O)"
        raise Conflict(f"a user named {form.name!r} {what}; choose another name")
    request.app.state.signups.fail(client)  # every sign-up that costs a hash counts
    hashed = await _hash(hash_password, form.password)
    try:
        user = await _db(store.sign_up, form.name, hashed, hash_secret(code) if code else None)
    except Conflict:  # taken meanwhile
        limiter.fail(client)
        raise
    if user is None:  # spent meanwhile
        limiter.fail(client)
        raise bad_invite
    return await _db(_start_session, response, store, user)
