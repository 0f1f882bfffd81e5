"""The API against a real ``arena serve`` process: every route with every kind of caller, and
every kind of bad upload refused with its own message and nothing changed.

One server for the module: the good uploads validate in the background while the bad ones
are tried, and the walk of the routes waits for the ladder's first match.
"""

from __future__ import annotations

import io
import json
import random
import re
import signal
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.ladder.accounts import FailureLimiter
from referee.ladder.errors import TooMany
from referee.ladder.store import ArenaStore
from referee.service.app import api_routes
from referee.service.deps import access_of
from tests.arena.conftest import SAMPLES, Arena, cli, make_arena
from tests.polling import poll_until

LIMITS = {
    "max_archive_bytes": 64 * 1024, "max_unpacked_bytes": 128 * 1024, "max_files": 50, "max_ratio": 200,
    "daily_uploads": 2, "failed_logins_per_minute": 100_000,
}


#: Per decision, per match and per call's transport (in ms) for this module's arena.
ROOMY_CLOCK = ("--budget-ms", "5000", "--bank-ms", "120000", "--grace-ms", "2000")

#: The module's server is shared, and the first test waits for it to start (on a busy machine).
# One server for the module: its tests stay in one worker (--dist loadgroup).
pytestmark = [pytest.mark.timeout(900), pytest.mark.xdist_group("test_arena_service")]


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    # A clock a busy machine keeps (the default 250 ms a decision is missed under load, and
    # greedy's validation then fails a check-bot step): no test here is about the budget.
    a = make_arena(tmp_path_factory.mktemp("service") / "arena", *ROOMY_CLOCK)
    toml = a.folder / "arena.toml"
    text = toml.read_text()
    for k, v in LIMITS.items():
        text = re.sub(rf"^{k} = .*$", f"{k} = {v}", text, flags=re.M)
    toml.write_text(text)
    a.add_user("admin", admin=True)
    a.add_users("alice", "bob", "carol", "victim", "revoked")
    cli("arena", "user", "revoke", str(a.folder), "revoked")
    with a:  # whatever fails below, the service and all it started are killed
        a.serve()
        # Two good versions, so the ladder plays; and a broken one of alice's, rejected.
        bob_src = (SAMPLES / "random.py").read_bytes()
        assert a.api("POST", "/api/v1/versions", "alice", params={"filename": "greedy.py"}, content=(SAMPLES / "greedy.py").read_bytes()).status_code == 201
        assert a.api("POST", "/api/v1/versions", "bob", params={"filename": "randbot.py"}, content=bob_src).status_code == 201
        r = a.api("POST", "/api/v1/versions", "alice", params={"filename": "junk.py"}, content=b"raise SystemExit(3)\n")
        assert r.status_code == 201
        a.junk = r.json()["id"]  # type: ignore[attr-defined]
        yield a
        # Ctrl-C (SIGINT) stops the service, its ladder, workers and bots (Arena.stop checks).
        a.stop(signal.SIGINT)


def _tgz(entries: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for e in entries:
            if isinstance(e, tarfile.TarInfo):
                tf.addfile(e)
            else:
                info = tarfile.TarInfo(e[0])
                info.size = len(e[1])
                tf.addfile(info, io.BytesIO(e[1]))
    return buf.getvalue()


def _zip(entries: list[tuple[str, bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def _device(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    return info


def _words(n_bytes: int) -> bytes:
    """Text that compresses a few times over, as source code does (not a bomb)."""
    rng = random.Random(5)
    words = [f"w{rng.getrandbits(20):x}" for _ in range(60)]
    out = []
    size = 0
    while size < n_bytes:
        w = rng.choice(words) + " "
        out.append(w)
        size += len(w)
    return "".join(out).encode()


MANIFEST = ("bot.toml", b'name = "good"\ncommand = "python bot.py"\n')
BOT = ("bot.py", b"print('hi')\n")

BAD_UPLOADS = {
    "archive too large": ("big.tar.gz", random.Random(1).randbytes(100 * 1024), None, 413, "an upload may be at most"),
    "unpacked too large": ("big.tar.gz", _tgz([MANIFEST, BOT, ("data.txt", _words(200 * 1024))]), None, 413, "unpacks to more than"),
    "too many files": ("many.tgz", _tgz([MANIFEST, BOT, *[(f"f{i}.txt", b"x") for i in range(60)]]), None, 422, "more than 50 entries"),
    "zip bomb": ("bomb.zip", _zip([("bot.toml", MANIFEST[1], 0o644), ("zeros.bin", bytes(120 * 1024), 0o644)]), None, 422, "zip bomb"),
    "symlink in a tar": ("link.tar.gz", _tgz([MANIFEST, BOT, _link("passwd", "/etc/passwd")]), None, 422, "passwd -> /etc/passwd: leads out"),
    "hard link in a tar": ("hard.tar.gz", _tgz([MANIFEST, BOT, _link("again.py", "../bot.py", tarfile.LNKTYPE)]), None, 422, "leads out of the bot's folder"),
    "symlink in a zip": ("link.zip", _zip([("bot.toml", MANIFEST[1], 0o644), ("passwd", b"/etc/passwd", 0o120777)]), None, 422, "leads out"),
    "links out, all named": (
        "links.tar.gz", _tgz([MANIFEST, BOT, _link("a", "../../x"), _link("sub/b", "../../y"), _link("c", "nothere.py")]), None, 422,
        "holds 3 links the arena cannot take",
    ),
    "a loop of links": ("loop.tar.gz", _tgz([MANIFEST, BOT, _link("a", "b"), _link("b", "a")]), None, 422, "a loop of links"),
    "a link to a folder": ("dir.tar.gz", _tgz([MANIFEST, BOT, ("lib/x.py", b"x"), _link("l", "lib")]), None, 422, "points at a folder"),
    "device": ("dev.tar.gz", _tgz([MANIFEST, BOT, _device("null")]), None, 422, "device or special file"),
    "absolute path": ("abs.tar.gz", _tgz([MANIFEST, BOT, ("/tmp/evil.py", b"x")]), None, 422, "absolute path"),
    "dot-dot": ("up.tar.gz", _tgz([MANIFEST, BOT, ("../evil.py", b"x")]), None, 422, "leads out of the bot's folder"),
    "dot-dot in a zip": ("up.zip", _zip([("bot.toml", MANIFEST[1], 0o644), ("a/../../evil.py", b"x", 0o644)]), None, 422, "leads out"),
    "manifest names a missing file": (
        "missing.tgz", _tgz([("bot.toml", b'name = "good"\ncommand = "python nothere.py"\n'), BOT]), None, 422,
        "'nothere.py', which is not a file in the bot's folder",
    ),
    "no manifest": ("none.tgz", _tgz([BOT]), None, 422, "no bot.toml"),
    "markup in the name": ("x.tgz", _tgz([("bot.toml", b'name = "<b>bold</b>"\ncommand = "python bot.py"\n'), BOT]), None, 422, "markup or control characters"),
    "control character in the name": ("x.py", b"print(1)\n", "bell\x07bot", 422, "markup or control characters"),
    "not an archive": ("x.tar.gz", b"this is not gzip", None, 422, "not a readable tar archive"),
    "unknown kind": ("bot.rar", b"Rar!", None, 422, "not a bot upload"),
}


def _state(arena: Arena) -> tuple[list[int], list[str], list[str]]:
    ids = sorted(v["id"] for v in arena.api("GET", "/api/v1/versions", "bob").json())
    return ids, sorted(p.name for p in (arena.folder / "versions").iterdir()), sorted(p.name for p in (arena.folder / "uploads").iterdir())


@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_a_bad_upload_is_refused_with_its_message_and_changes_nothing(arena: Arena, case: str) -> None:
    filename, data, name, status, message = BAD_UPLOADS[case]
    before = _state(arena)
    params = {"filename": filename, **({"name": name} if name else {})}
    r = arena.api("POST", "/api/v1/versions", "bob", params=params, content=data)
    assert r.status_code == status, r.text
    assert message in r.json()["error"]["message"]
    assert _state(arena) == before
    assert not (Path("/tmp") / "evil.py").exists()


def test_uploads_over_the_daily_limit_are_refused(arena: Arena) -> None:
    # alice uploaded 2 versions in the fixture, this arena's daily limit.
    before = _state(arena)
    r = arena.api("POST", "/api/v1/versions", "alice", params={"filename": "third.py"}, content=b"print(1)\n")
    assert r.status_code == 429 and "daily limit" in r.json()["error"]["message"]
    assert _state(arena) == before


def test_a_bot_name_belongs_to_its_first_uploader(arena: Arena) -> None:
    r = arena.api("POST", "/api/v1/versions", "victim", params={"filename": "greedy.py"}, content=b"print(1)\n")
    assert r.status_code == 409 and "belongs to another user" in r.json()["error"]["message"]


def test_errors_have_one_shape_and_no_trace(arena: Arena) -> None:
    for r in (
        arena.api("GET", "/api/v1/nowhere"),
        arena.api("GET", "/api/v1/me"),
        arena.api("GET", "/api/v1/matches", params={"limit": "many"}),
        arena.api("GET", "/api/v1/me", headers={"Authorization": "Basic abc"}),
    ):
        body = r.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
        assert "Traceback" not in r.text
    assert arena.api("GET", "/api/v1/me").headers["www-authenticate"] == "Bearer"
    assert arena.api("GET", "/openapi.json").json()["info"]["title"] == "Thirty-One arena"


def test_failed_sign_ins_are_limited_per_address() -> None:
    limiter = FailureLimiter(3, 60.0)
    for _ in range(3):
        limiter.check("10.0.0.1")
        limiter.fail("10.0.0.1")
    with pytest.raises(TooMany, match="too many failed sign-ins"):
        limiter.check("10.0.0.1")
    limiter.check("10.0.0.2")  # another address is not held back


def _concrete(path: str, arena: Arena, key: str, version_id: int | None = None) -> str:
    values = {"version_id": str(version_id or arena.junk), "key": key, "name": "greedy"}  # type: ignore[attr-defined]
    if path.startswith("/api/v1/admin/users/"):
        values["name"] = "victim"
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)


#: What each kind of caller may get from a route of each level: "allowed" is any answer but
#: 401, 403 and 404 (a route may still refuse the request itself, e.g. an empty upload).
#: "other" is bob, whose bot sits at every table of this two-bot ladder; "stranger" is carol,
#: who has no bot at all.
EXPECTED = {
    "public": dict.fromkeys(("none", "wrong", "revoked", "other", "stranger", "owner", "admin"), "allowed"),
    "user": {"none": 401, "wrong": 401, "revoked": 401, "other": "allowed", "stranger": "allowed", "owner": "allowed", "admin": "allowed"},
    "owner": {"none": 401, "wrong": 401, "revoked": 401, "other": 404, "stranger": 404, "owner": "allowed", "admin": 404},
    "owner-seat": {"none": 401, "wrong": 401, "revoked": 401, "other": "allowed", "stranger": 404, "owner": "allowed", "admin": 404},
    "admin": {"none": 401, "wrong": 401, "revoked": 401, "other": 403, "stranger": 403, "owner": 403, "admin": "allowed"},
}


def _rejected_version(arena: Arena, user: str, bot: str) -> int:
    """A version recorded straight in the store and rejected at once (never active, so the
    ladder never seats it; were the validator to claim it first, it would reject it too)."""
    with ArenaStore.open(arena.folder) as store:
        staged = store.folder / "uploads" / f"staged-{bot}"
        staged.mkdir()
        (staged / "bot.py").write_text("")

        def place(vid: int) -> str:
            staged.rename(store.folder / "versions" / str(vid))
            return f"versions/{vid}"

        v = store.add_version(store.user_named(user).id, bot, place=place, command="python bot.py", sha256="", n_files=1,
                              size=0, source="bot.py", mu=25.0, sigma=8.0)
        store.set_status(v.id, "rejected", "a test's")
    return v.id


def test_every_route_with_every_kind_of_caller(arena: Arena) -> None:
    # The routes come from the app's own routers, checked against the served OpenAPI
    # document: a new route cannot be left out of this walk.
    routes = api_routes()
    served = {(m.upper(), p) for p, ops in arena.api("GET", "/openapi.json").json()["paths"].items() for m in ops}
    assert served == {(m, r.path) for r in routes for m in r.methods - {"HEAD"}}
    undeclared = [r.path for r in routes if access_of(r) == "undeclared"]
    assert not undeclared, f"routes that do not say who may call them: {undeclared}"

    def alices_match() -> str | None:
        # One whose deal is finished, so that its log is public (the newest may be pending).
        ms = arena.api("GET", "/api/v1/matches", params={"bot": "greedy"}).json()
        return next((m["key"] for m in ms if "log" in m), None)

    key = poll_until("the ladder's first finished deal", alices_match, timeout_s=240, interval_s=0.5)
    headers = {
        "none": {}, "wrong": {"Authorization": "Bearer t31_" + "x" * 43},
        "revoked": {"Authorization": f"Bearer {arena.tokens['revoked']}"},
        "other": {"Authorization": f"Bearer {arena.tokens['bob']}"},
        "stranger": {"Authorization": f"Bearer {arena.tokens['carol']}"},
        "owner": {"Authorization": f"Bearer {arena.tokens['alice']}"},
        "admin": {"Authorization": f"Bearer {arena.tokens['admin']}"},
    }
    # Two routes end something: deleting a rejected version gets one of its own (alice's
    # junk stays for the tests below), and revoking "the token this request carries" gets
    # fresh tokens, so that every caller keeps their own.
    doomed = _rejected_version(arena, "alice", "doomed")

    def fresh() -> dict[str, dict[str, str]]:
        made = {c: {"Authorization": f"Bearer {arena.api('POST', '/api/v1/me/tokens', u).json()['token']}"}
                for c, u in (("other", "bob"), ("stranger", "carol"), ("owner", "alice"), ("admin", "admin"))}
        return {**headers, **made}

    seen = set()
    for route in routes:
        level = access_of(route)
        for method in sorted(route.methods - {"HEAD"}):
            path = _concrete(route.path, arena, key, doomed if method == "DELETE" else None)
            sent = fresh() if (method, route.path) == ("DELETE", "/api/v1/me/token") else headers
            for caller, want in EXPECTED[level].items():
                r = arena.api(method, path, headers=sent[caller])
                got = r.status_code
                ok = got not in (401, 403, 404) if want == "allowed" else got == want
                assert ok, f"{method} {path} ({level}) as {caller}: {got} {r.text[:200]}"
                seen.add((method, route.path))
    assert arena.api("POST", "/api/v1/admin/ladder/resume", headers=headers["admin"]).status_code == 200
    assert len(seen) == sum(len(r.methods - {"HEAD"}) for r in routes)


def test_the_validation_report_is_check_bots_steps_and_its_owners_alone(arena: Arena) -> None:
    def settled(user: str, label: str) -> dict[str, Any] | None:
        v = next(v for v in arena.api("GET", "/api/v1/versions", user).json() if v["label"] == label)
        return v if v["status"] in ("active", "rejected") else None

    # A broken version of its own (the walk above may withdraw alice's junk before it is checked).
    r = arena.api("POST", "/api/v1/versions", "carol", params={"filename": "broken.py"}, content=b"raise SystemExit(3)\n")
    assert r.status_code == 201, r.text
    junk = poll_until("the broken version's validation", lambda: settled("carol", "broken.v1"), timeout_s=300, interval_s=0.2)
    assert junk["status"] == "rejected"
    # Each step, pass or fail, as check-bot prints it; the match did not run after a failed check.
    assert junk["report"].splitlines()[0].startswith("FAIL  "), junk["report"]
    assert "----  validation match against the random bot" in junk["report"]
    assert str(arena.folder) not in junk["report"]
    good = poll_until("the good version's validation", lambda: settled("alice", "greedy.v1"), timeout_s=300, interval_s=0.2)
    lines = good["report"].splitlines()
    assert lines and all(ln.startswith(("PASS  ", "SKIP  ", " ")) for ln in lines), good["report"]
    assert lines[-1].startswith("PASS  validation match against the random bot")
    # Public pages never carry it.
    assert "report" not in json.dumps(arena.api("GET", "/api/v1/bots/broken").json())


def test_a_bots_rating_history_and_head_to_head_follow_its_matches(arena: Arena) -> None:
    def played(n: int) -> dict[str, Any] | None:
        v = next(v for v in arena.api("GET", "/api/v1/bots/greedy").json()["versions"] if v["label"] == "greedy.v1")
        return v if v["played"] >= n else None

    poll_until("greedy.v1's second match", lambda: played(2), timeout_s=300, interval_s=0.2)
    before = arena.api("GET", "/api/v1/bots/greedy/head-to-head").json()["rows"]
    # All the points (the most a response may carry): the ladder keeps playing through this
    # module's tests, and past the default 400 matches the history is thinned.
    hist = arena.api("GET", "/api/v1/bots/greedy/ratings", params={"points": 5000}).json()
    after = played(0)
    assert after is not None
    (line,) = [v for v in hist["versions"] if v["label"] == "greedy.v1"]
    ns = [p[0] for p in line["points"]]
    # One point per match, from the first (none at 0), up to the matches it has now.
    assert ns == list(range(1, len(ns) + 1)) and 2 <= len(ns) <= after["played"]
    assert all(p[2] < p[1] < p[3] for p in line["points"])  # [n, rating, low, high]
    default = next(v for v in arena.api("GET", "/api/v1/bots/greedy/ratings").json()["versions"] if v["label"] == "greedy.v1")["points"]
    assert 2 <= len(default) <= 400 and default[0][0] == 1
    few = arena.api("GET", "/api/v1/bots/greedy/ratings", params={"points": 2}).json()["versions"]
    thinned = next(v for v in few if v["label"] == "greedy.v1")["points"]
    assert len(thinned) == 2 and thinned[0][0] == 1 and thinned[1][0] >= ns[-1]  # the first and the latest
    # Every match of this two-bot ladder is greedy against randbot: the head-to-head counts
    # each once, a win, a loss or a draw, the same from either side.
    both = arena.api("GET", "/api/v1/bots/randbot/head-to-head").json()["rows"]
    (g,) = [r for r in before if r["label"] == "greedy.v1" and r["opponent_label"] == "randbot.v1"]
    assert g["wins"] + g["losses"] + g["draws"] == g["matches"] >= 2
    assert g["score"] == round((g["wins"] + g["draws"] / 2) / g["matches"], 4)
    (r,) = [r for r in both if r["label"] == "randbot.v1" and r["opponent_label"] == "greedy.v1"]
    assert r["matches"] >= g["matches"] and r["opponent_owner"] == "alice"
    assert arena.api("GET", "/api/v1/bots/nobody/ratings").status_code == 404
    assert arena.api("GET", "/api/v1/bots/greedy/ratings", params={"points": 1}).status_code == 422


def test_the_admins_list_of_versions(arena: Arena) -> None:
    listed = arena.api("GET", "/api/v1/admin/versions", "admin").json()
    labels = [v["label"] for v in listed]
    assert {"greedy.v1", "randbot.v1", "junk.v1"} <= set(labels)
    assert [v["id"] for v in listed] == sorted((v["id"] for v in listed), reverse=True)
    assert all("report" not in v and "source" not in v for v in listed)  # the owner's alone
    page = arena.api("GET", "/api/v1/admin/versions", "admin", params={"limit": 1, "before": listed[0]["id"]}).json()
    assert [v["id"] for v in page] == [listed[1]["id"]]
    active = arena.api("GET", "/api/v1/admin/versions", "admin", params={"status": "active"}).json()
    assert active and all(v["status"] == "active" for v in active)
    assert arena.api("GET", "/api/v1/admin/versions", "admin", params={"status": "nonsense"}).status_code == 422
    for caller, want in ((None, 401), ("bob", 403), ("alice", 403)):
        assert arena.api("GET", "/api/v1/admin/versions", caller).status_code == want
