"""The web pages' accounts through the real app over a real arena folder (no ladder): sign-in
limits, invite codes, open sign-up, sessions and their CSRF token. The browser tests
(tests/web/test_arena_pages.py) drive the same through the pages."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from referee.ladder.accounts import new_invite
from referee.ladder.store import ArenaStore
from referee.service import ServiceConfig, create_app
from tests.arena.conftest import make_arena

PASSWORD = "a long enough password"


def _client(tmp_path: Path, **settings: int) -> tuple[TestClient, Path]:
    a = make_arena(tmp_path / "arena")
    toml = a.folder / "arena.toml"
    text = toml.read_text()
    for k, v in settings.items():
        text = re.sub(rf"^{k} = .*$", f"{k} = {v}", text, flags=re.M)
    toml.write_text(text)
    # https: the session cookie is Secure, and the test client keeps it only for https.
    return TestClient(create_app(ServiceConfig(a.folder, ladder=False)), base_url="https://testserver"), a.folder


def _invite(folder: Path) -> str:
    with ArenaStore.open(folder) as store:
        return new_invite(store)


def test_sign_up_needs_a_good_unused_invite_and_a_good_password(tmp_path: Path) -> None:
    c, folder = _client(tmp_path, failed_logins_per_minute=1000)
    r = c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD})
    assert r.status_code == 422 and "invite code" in r.json()["error"]["message"]
    code = _invite(folder)
    for bad, why in (("short", "at least 10"), ("x" * 12, "one character repeated"), ("ANNANNANNA", None)):
        r = c.post("/api/v1/signup", json={"name": "annannanna", "password": bad, "invite": code})
        assert r.status_code == 422, r.text
        assert why is None or why in r.json()["error"]["message"]
    r = c.post("/api/v1/signup", json={"name": "ann<b>", "password": PASSWORD, "invite": code})
    assert r.status_code == 422 and "markup" in r.json()["error"]["message"]
    assert c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD, "invite": code}).status_code == 201
    # Used once; a refused sign-up wrote nothing (the name is still free for a good code).
    r = c.post("/api/v1/signup", json={"name": "ben", "password": PASSWORD, "invite": code})
    assert r.status_code == 422 and "not valid" in r.text
    with ArenaStore.open(folder) as store:
        assert [u.name for u in store.users()] == ["ann"]
    # A form post (not JSON) is not a sign-in: what a cross-site form could send.
    assert c.post("/api/v1/session", data={"name": "ann", "password": PASSWORD}).status_code == 422


def test_open_sign_up_needs_no_invite(tmp_path: Path) -> None:
    c, _ = _client(tmp_path, open_signup=1)
    assert c.get("/api/v1/session").json()["open_signup"] is True
    assert c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD}).status_code == 201


def test_wrong_passwords_are_limited_per_address(tmp_path: Path) -> None:
    c, folder = _client(tmp_path, failed_logins_per_minute=3)
    assert c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD, "invite": _invite(folder)}).status_code == 201
    c.cookies.clear()
    for _ in range(3):
        assert c.post("/api/v1/session", json={"name": "ann", "password": "not it at all"}).status_code == 401
    # Over the limit: even the right password waits.
    r = c.post("/api/v1/session", json={"name": "ann", "password": PASSWORD})
    assert r.status_code == 429 and "too many failed sign-ins" in r.text


def test_a_session_changes_things_only_with_its_csrf_token(tmp_path: Path) -> None:
    c, folder = _client(tmp_path)
    r = c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD, "invite": _invite(folder)})
    csrf = r.json()["csrf"]
    assert c.get("/api/v1/session").json()["csrf"] == csrf
    assert c.get("/api/v1/versions").status_code == 200  # reading needs no token
    for headers in ({}, {"X-CSRF-Token": "x" * len(csrf)}):
        assert c.post("/api/v1/me/tokens", headers=headers).status_code == 403
        assert c.delete("/api/v1/session", headers=headers).status_code == 403
    assert c.post("/api/v1/me/tokens", headers={"X-CSRF-Token": csrf}).status_code == 201
    # Another session's token does not do.
    other = TestClient(c.app, base_url="https://testserver")
    other_csrf = other.post("/api/v1/session", json={"name": "ann", "password": PASSWORD}).json()["csrf"]
    assert c.post("/api/v1/me/tokens", headers={"X-CSRF-Token": other_csrf}).status_code == 403
    # Sign-out ends this session only.
    assert c.delete("/api/v1/session", headers={"X-CSRF-Token": csrf}).status_code == 200
    assert c.get("/api/v1/session").json()["user"] is None
    assert other.get("/api/v1/session").json()["user"]["name"] == "ann"
