"""The web pages' accounts against a real ``arena serve`` over real HTTP: sign-in limits,
invite codes, open sign-up, sessions and their CSRF token. The browser tests
(tests/web/test_arena_pages.py) drive the same through the pages.

Two servers for the module: one whose sign-up needs an invite, and one with an open sign-up
and a low limit of failed sign-ins (the limit counts per address, and every test calls from
127.0.0.1, so the test that reaches it has that server to itself and goes last on it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.cookies import SimpleCookie
from typing import Any

import httpx
import pytest

from referee.ladder.accounts import new_invite
from referee.ladder.store import ArenaStore
from referee.service.deps import SESSION_COOKIE
from tests.arena.conftest import Arena, make_arena

PASSWORD = "a long enough password"

# One server per fixture for the module: its tests stay in one worker (--dist loadgroup).
pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("test_arena_sessions")]


class Browser:
    """A client with a browser's cookie for the arena's session.

    The cookie is ``Secure``: a browser keeps it for http://127.0.0.1 (a secure context),
    while httpx's cookie jar sends a Secure cookie over https only; so this client keeps the
    one cookie itself, from the Set-Cookie headers the service really sends.
    """

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=60)
        self.session: str | None = None
        self.set_cookie: list[str] = []

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """One request with the session cookie, if there is one; keeps what the answer sets."""
        headers = dict(kw.pop("headers", {}))
        if self.session:
            headers["Cookie"] = f"{SESSION_COOKIE}={self.session}"
        r = self.client.request(method, path, headers=headers, **kw)
        for header in r.headers.get_list("set-cookie"):
            self.set_cookie.append(header)
            jar: SimpleCookie = SimpleCookie()
            jar.load(header)
            if SESSION_COOKIE in jar:
                morsel = jar[SESSION_COOKIE]
                self.session = morsel.value if morsel.value and morsel["max-age"] != "0" else None
        return r

    def get(self, path: str, **kw: Any) -> httpx.Response:
        """GET."""
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        """POST."""
        return self.request("POST", path, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        """DELETE."""
        return self.request("DELETE", path, **kw)


def _serve(tmp: Any, **settings: int) -> Arena:
    a = make_arena(tmp / "arena")
    toml = a.folder / "arena.toml"
    text = toml.read_text()
    for k, v in settings.items():
        text, n = re.subn(rf"^{k} = .*$", f"{k} = {v}", text, flags=re.M)
        assert n == 1, k
    toml.write_text(text)
    a.serve()
    return a


@pytest.fixture(scope="module")
def invited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """An arena whose sign-up needs an invite code."""
    a = _serve(tmp_path_factory.mktemp("sessions-invited"), failed_logins_per_minute=1000)
    yield a
    a.stop()


@pytest.fixture(scope="module")
def open_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """An arena with an open sign-up and a limit of 3 failed sign-ins a minute."""
    a = _serve(tmp_path_factory.mktemp("sessions-open"), open_signup=1, failed_logins_per_minute=3)
    yield a
    a.stop()


def _invite(a: Arena) -> str:
    with ArenaStore.open(a.folder) as store:
        return new_invite(store)


def test_sign_up_needs_a_good_unused_invite_and_a_good_password(invited: Arena) -> None:
    c = Browser(invited.url)
    r = c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD})
    assert r.status_code == 422 and "invite code" in r.json()["error"]["message"]
    code = _invite(invited)
    for bad, why in (("short", "at least 10"), ("x" * 12, "one character repeated"), ("ANNANNANNA", None)):
        r = c.post("/api/v1/signup", json={"name": "annannanna", "password": bad, "invite": code})
        assert r.status_code == 422, r.text
        assert why is None or why in r.json()["error"]["message"]
    r = c.post("/api/v1/signup", json={"name": "ann<b>", "password": PASSWORD, "invite": code})
    assert r.status_code == 422 and "markup" in r.json()["error"]["message"]
    assert c.session is None
    r = c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD, "invite": code})
    assert r.status_code == 201, r.text
    # The session cookie as the service sets it: Secure, HttpOnly, SameSite=Strict, site-wide.
    (cookie,) = [h for h in c.set_cookie if h.startswith(SESSION_COOKIE + "=")]
    attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
    assert {"secure", "httponly", "samesite", "path", "max-age"} <= attrs and "samesite=strict" in cookie.lower()
    assert c.get("/api/v1/me").json()["name"] == "ann"
    # Used once; a refused sign-up wrote nothing (the name is still free for a good code).
    r = c.post("/api/v1/signup", json={"name": "ben", "password": PASSWORD, "invite": code})
    assert r.status_code == 422 and "not valid" in r.text
    with ArenaStore.open(invited.folder) as store:
        assert [u.name for u in store.users()] == ["ann"]
    # A form post (not JSON) is not a sign-in: what a cross-site form could send.
    assert Browser(invited.url).post("/api/v1/session", data={"name": "ann", "password": PASSWORD}).status_code == 422


def test_a_session_changes_things_only_with_its_csrf_token(invited: Arena) -> None:
    c = Browser(invited.url)
    r = c.post("/api/v1/signup", json={"name": "cleo", "password": PASSWORD, "invite": _invite(invited)})
    csrf = r.json()["csrf"]
    assert c.get("/api/v1/session").json()["csrf"] == csrf
    assert c.get("/api/v1/versions").status_code == 200  # reading needs no token
    for headers in ({}, {"X-CSRF-Token": "x" * len(csrf)}):
        assert c.post("/api/v1/me/tokens", headers=headers).status_code == 403
        assert c.delete("/api/v1/session", headers=headers).status_code == 403
    assert c.post("/api/v1/me/tokens", headers={"X-CSRF-Token": csrf}).status_code == 201
    # Another session's token does not do.
    other = Browser(invited.url)
    other_csrf = other.post("/api/v1/session", json={"name": "cleo", "password": PASSWORD}).json()["csrf"]
    assert c.post("/api/v1/me/tokens", headers={"X-CSRF-Token": other_csrf}).status_code == 403
    # Sign-out ends this session only, and clears its cookie.
    ended = c.session
    assert c.delete("/api/v1/session", headers={"X-CSRF-Token": csrf}).status_code == 200
    assert c.session is None
    assert c.get("/api/v1/session").json()["user"] is None
    c.session = ended  # the old cookie, kept by someone: it no longer works
    assert c.get("/api/v1/versions").status_code == 401
    assert other.get("/api/v1/session").json()["user"]["name"] == "cleo"


def test_open_sign_up_needs_no_invite(open_arena: Arena) -> None:
    c = Browser(open_arena.url)
    assert c.get("/api/v1/session").json()["open_signup"] is True
    assert c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD}).status_code == 201


def test_wrong_passwords_are_limited_per_address(open_arena: Arena) -> None:
    # Last on its server: once over the limit, every sign-in from this address waits a minute.
    c = Browser(open_arena.url)
    assert c.post("/api/v1/signup", json={"name": "dora", "password": PASSWORD}).status_code == 201
    c.session = None
    for _ in range(3):
        assert c.post("/api/v1/session", json={"name": "dora", "password": "not it at all"}).status_code == 401
    # Over the limit: even the right password waits.
    r = c.post("/api/v1/session", json={"name": "dora", "password": PASSWORD})
    assert r.status_code == 429 and "too many failed sign-ins" in r.text
