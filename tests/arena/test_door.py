"""The arena's door against strangers (issue 36, hostile round four), against real ``arena
serve`` processes over real HTTP and real sockets.

Each test is an attack that worked on the service before: a deeply nested upload, sign-ups
that hash before any check, a version of a disabled user that played, bodies and slow
clients without bounds, trusted ``X-Forwarded-For``, timing that told which users exist, a
password reset that left sessions signed in, a foreign ``Host``, an id too large for SQLite,
names that differ only in case, and the browsable docs page's CDN script.

The rate limits count per client address, so each test that meets one calls from a loopback
address of its own (Linux routes all of 127.0.0.0/8 to the machine): the limits of one test
never reach another's.
"""

from __future__ import annotations

import contextlib
import io
import re
import socket
import sqlite3
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.ladder.accounts import add_user, new_invite, set_password
from referee.ladder.errors import Conflict
from referee.ladder.store import ArenaStore
from referee.service.app import api_routes
from referee.service.deps import SESSION_COOKIE
from tests.arena.conftest import SAMPLES, Arena, cli, make_arena
from tests.polling import poll_until

PASSWORD = "a long enough password"
#: The id of the issue's attack: larger than SQLite's largest integer.
HUGE_ID = "99999999999999999999999"
#: The limits of the main arena, low so that a test reaches them in a few requests.
LIMITS = {"failed_logins_per_minute": 5, "signups_per_hour": 3, "refused_uploads_per_hour": 3}
#: The main arena's connection limits (arena serve's options).
HEAD_TIMEOUT_S = 3
PER_ADDRESS = 20
#: A clock a busy machine keeps, for the one validation a test waits for.
ROOMY_CLOCK = ("--budget-ms", "5000", "--bank-ms", "120000", "--grace-ms", "2000")

pytestmark = [pytest.mark.timeout(900), pytest.mark.xdist_group("test_arena_door")]


def _set(folder: Path, **settings: int) -> None:
    toml = folder / "arena.toml"
    text = toml.read_text()
    for k, v in settings.items():
        text, n = re.subn(rf"^{k} = .*$", f"{k} = {v}", text, flags=re.M)
        if n == 0:  # a setting this arena.toml does not write yet
            text = text.replace("[arena]\n", f"[arena]\n{k} = {v}\n", 1)
    toml.write_text(text)


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """An arena whose sign-up needs an invite, with low limits, a short header timeout and a
    small per-address cap; users made before it starts, some with passwords."""
    a = make_arena(tmp_path_factory.mktemp("door") / "arena", *ROOMY_CLOCK)
    _set(a.folder, **LIMITS)
    with ArenaStore.open(a.folder) as store:
        for name in ("admin", "ann", "bob", "rob", "vic", "timer", "resetme", "mallory", "tokens"):
            user, a.tokens[name] = add_user(store, name, admin=name == "admin")
            if name in ("bob", "timer", "resetme", "tokens"):  # (argon2 takes a while on a busy machine)
                set_password(store, user, PASSWORD)
    with a:
        a.serve("--header-timeout", str(HEAD_TIMEOUT_S), "--max-connections-per-address", str(PER_ADDRESS))
        yield a
        a.stop()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """An arena behind a proxy at 127.0.0.1, answering to the name arena.example too."""
    a = make_arena(tmp_path_factory.mktemp("door-proxied") / "arena")
    _set(a.folder, failed_logins_per_minute=5)
    with a:
        a.serve("--proxy", "127.0.0.1", "--allowed-host", "arena.example")
        yield a
        a.stop()


def client(a: Arena, address: str) -> httpx.Client:
    """A client calling from ``address`` (a loopback address of the test's own)."""
    return httpx.Client(base_url=a.url, timeout=60, transport=httpx.HTTPTransport(local_address=address))


def _session_of(r: httpx.Response) -> str:
    # The cookie is Secure, which httpx keeps for https only: read it from the header.
    (cookie,) = [h for h in r.headers.get_list("set-cookie") if h.startswith(SESSION_COOKIE + "=")]
    return cookie.split(";", 1)[0].split("=", 1)[1]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ------------------------------------------------------------------ Medium 1: uploads


def _nested(levels: int, *, one_entry: bool) -> bytes:
    """A .tar.gz of folders nested ``levels`` deep: an entry per folder, or one file at the bottom."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        if one_entry:
            info = tarfile.TarInfo("a/" * levels + "bot.py")
            tf.addfile(info, io.BytesIO(b""))
        else:
            for n in range(1, levels + 1):
                info = tarfile.TarInfo("a/" * n)
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tf.addfile(info)
    return buf.getvalue()


def test_a_deeply_nested_upload_is_refused_early_leaves_nothing_and_counts(arena: Arena) -> None:
    uploads = arena.folder / "uploads"
    deep, long_path = _nested(1500, one_entry=False), _nested(1500, one_entry=True)
    for data, said in ((deep, "folders deep"), (long_path, "characters")):
        r = arena.api("POST", "/api/v1/versions", "mallory", params={"filename": "deep.tar.gz"}, content=data)
        assert r.status_code == 422, r.text
        assert said in r.json()["error"]["message"]
        assert list(uploads.iterdir()) == []
    # Refused uploads have a limit of their own (3 an hour here): the third is refused for
    # its content, then every upload waits, even a good one.
    r = arena.api("POST", "/api/v1/versions", "mallory", params={"filename": "x.zip"}, content=b"not a zip")
    assert r.status_code == 422, r.text
    r = arena.api("POST", "/api/v1/versions", "mallory", params={"filename": "random.py"}, content=(SAMPLES / "random.py").read_bytes())
    assert r.status_code == 429 and "refused" in r.json()["error"]["message"], r.text
    assert arena.api("GET", "/api/v1/versions", "mallory").json() == []


# ------------------------------------------------------------------ Medium 2 and enumeration: sign-up


def _invite(a: Arena) -> str:
    with ArenaStore.open(a.folder) as store:
        return new_invite(store)


def test_sign_up_checks_the_invite_before_the_name_and_limits_sign_ups(arena: Arena) -> None:
    with client(arena, "127.0.0.11") as c:
        # A taken name with a wrong invite: the invite is what is wrong (no 409 to a stranger).
        r = c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD, "invite": "wrong"})
        assert r.status_code == 422 and r.json()["error"]["code"] == "bad_invite", r.text
    with client(arena, "127.0.0.12") as c:
        code = _invite(arena)
        # A taken name counts as a failure of the address: the limit (5 a minute) is reached.
        for _ in range(LIMITS["failed_logins_per_minute"]):
            r = c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD, "invite": code})
            assert r.status_code == 409, r.text
        r = c.post("/api/v1/signup", json={"name": "ann", "password": PASSWORD, "invite": code})
        assert r.status_code == 429, r.text
    with client(arena, "127.0.0.13") as c:
        # Sign-ups are limited per address (3 an hour here), good ones too.
        for i in range(LIMITS["signups_per_hour"]):
            r = c.post("/api/v1/signup", json={"name": f"newcomer{i}", "password": PASSWORD, "invite": _invite(arena)})
            assert r.status_code == 201, r.text
        r = c.post("/api/v1/signup", json={"name": "newcomer9", "password": PASSWORD, "invite": _invite(arena)})
        assert r.status_code == 429 and "sign-ups" in r.text, r.text


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


@pytest.mark.slow
def test_parallel_sign_ins_hash_two_at_a_time(arena: Arena) -> None:
    # argon2 takes 64 MiB a hash: twelve at once took 768 MiB; two slots take 128 MiB.
    assert arena.proc is not None
    with client(arena, "127.0.0.14") as c:
        assert c.post("/api/v1/session", json={"name": "bob", "password": PASSWORD}).status_code == 200
    before = _peak_rss_kib(arena.proc.pid)
    answers: list[int] = []

    def sign_in() -> None:
        with client(arena, "127.0.0.14") as c:
            answers.append(c.post("/api/v1/session", json={"name": "bob", "password": PASSWORD}).status_code)

    threads = [threading.Thread(target=sign_in) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [200] * 12
    grown_mib = (_peak_rss_kib(arena.proc.pid) - before) / 1024
    assert grown_mib < 3 * 64, f"the service's peak memory grew {grown_mib:.0f} MiB for 12 sign-ins at once"


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_signing_in_as_nobody_costs_what_a_wrong_password_costs(arena: Arena) -> None:
    # Time is not asserted; the work behind it is: the service's CPU for sign-ins of a name
    # that does not exist is argon2's, as for a name that does.
    assert arena.proc is not None

    def cost(name: str, address: str) -> int:
        assert arena.proc is not None
        start = _cpu_ticks(arena.proc.pid)
        with client(arena, address) as c:
            for _ in range(3):
                assert c.post("/api/v1/session", json={"name": name, "password": "not the password"}).status_code == 401
        return _cpu_ticks(arena.proc.pid) - start

    known, unknown = cost("timer", "127.0.0.15"), cost("nobody_at_all", "127.0.0.16")
    assert known >= 6, f"three argon2 checks took {known} ticks"
    assert unknown >= known / 2, f"sign-ins as nobody took {unknown} ticks, as a user {known}"


# ------------------------------------------------------------------ Medium 3: a disabled user's version


#: The sample random bot, slow to start: its validation takes a few seconds.
SLOW_START = (SAMPLES / "random.py").read_bytes().replace(
    b"from __future__ import annotations\n", b"from __future__ import annotations\n\nimport time\n\ntime.sleep(3)\n", 1
)


@pytest.mark.slow
def test_a_version_validating_when_its_user_is_disabled_never_plays(arena: Arena) -> None:
    r = arena.api("POST", "/api/v1/versions", "vic", params={"filename": "slowpoke.py"}, content=SLOW_START)
    assert r.status_code == 201, r.text
    vid = r.json()["id"]

    def status() -> str:
        with ArenaStore.open(arena.folder, readonly=True) as store:
            return store.version(vid).status

    poll_until("the version to be validating", lambda: status() == "validating", timeout_s=120, interval_s=0.05)
    assert arena.api("POST", "/api/v1/admin/users/vic/disable", "admin").status_code == 200
    assert status() == "validating", "the validation ended before the user was disabled: the test proves nothing"
    poll_until("the validation to end", lambda: status() != "validating", timeout_s=300, interval_s=0.2)
    with ArenaStore.open(arena.folder, readonly=True) as store:
        v = store.version(vid)
        assert (v.status, v.reason) == ("withdrawn", "its user was disabled")
        assert vid not in [c[0] for c in store.candidates()]


# ------------------------------------------------------------------ Medium 4: bodies


def _raw(a: Arena, head: bytes, body: bytes = b"", *, address: str = "127.0.0.20") -> bytes:
    """Send a request head and part of a body on a socket; what the service answers, read
    until it closes the connection or 30 s pass (the test fails then)."""
    with socket.create_connection(("127.0.0.1", a.port), timeout=30, source_address=(address, 0)) as s:
        s.sendall(head + body)
        got = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := s.recv(65536):
                got += chunk
                if b"\r\n\r\n" in got and b'"}}' in got:
                    break
        return got


def test_a_huge_body_is_refused_before_it_is_read_on_every_route(arena: Arena) -> None:
    port = arena.port
    # The attack: a sign-in "of 300 MiB", of which only 1 KiB is ever sent.
    head = (f"POST /api/v1/session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {300 * 2**20}\r\n\r\n").encode()
    answer = _raw(arena, head, b'{"name": "' + b"x" * 1024)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"at most 64 KiB" in answer
    # Every route that takes a body, and any other path: the same, before any check of who asks.
    for route in api_routes():
        for method in sorted((route.methods or set()) - {"GET", "HEAD"}):
            path = route.path.replace("{version_id}", "1").replace("{name}", "x").replace("{key}", "x")
            limit = 8 * 2**20 if (method, path) == ("POST", "/api/v1/versions") else 64 * 1024
            head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {limit + 1}\r\n\r\n".encode()
            answer = _raw(arena, head, b"{")
            assert answer.startswith(b"HTTP/1.1 413"), (method, path, answer[:300])
    # A body in chunks, with no length declared: refused once it passes the limit.
    chunk = b"x" * 8192
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(10))
    head = f"POST /api/v1/session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    assert _raw(arena, head, body).startswith(b"HTTP/1.1 413")


# ------------------------------------------------------------------ Medium 5: slow clients


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True


@pytest.mark.slow
def test_slow_clients_are_cut_off_the_api_answers_and_the_log_stays_quiet(arena: Arena) -> None:
    lines_before = len(arena.output().splitlines())
    socks: list[socket.socket] = []
    try:
        # Three times the per-address cap of connections that never finish their headers.
        for _ in range(3 * PER_ADDRESS):
            s = socket.create_connection(("127.0.0.1", arena.port), timeout=30, source_address=("127.0.0.2", 0))
            s.sendall(b"GET /api/v1/runtimes HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            socks.append(s)
        # And requests that are not HTTP, each of which uvicorn warns about.
        for _ in range(30):
            with socket.create_connection(("127.0.0.1", arena.port), timeout=30, source_address=("127.0.0.3", 0)) as s:
                s.sendall(b"\x16\x03\x01 not http\r\n\r\n")
                with contextlib.suppress(OSError):
                    s.recv(4096)
        # Meanwhile the API answers another address.
        assert httpx.get(arena.url + "/api/v1/runtimes", timeout=30).status_code == 200
        # Every slow connection is closed by the service: those over the cap at once, the
        # rest when the header timeout passes.
        poll_until("the service to close every slow connection", lambda: all(_closed(s) for s in socks),
                   timeout_s=60, interval_s=0.2, detail=lambda: f"{sum(_closed(s) for s in socks)} of {len(socks)} closed")
    finally:
        for s in socks:
            s.close()
    assert httpx.get(arena.url + "/api/v1/runtimes", timeout=30).status_code == 200
    said = arena.output().splitlines()[lines_before:]
    assert "connections closed by the arena's limits" in "\n".join(said), said
    assert len(said) <= 4, f"the log grew {len(said)} lines under the attack:\n" + "\n".join(said[:20])


# ------------------------------------------------------------------ Low: X-Forwarded-For and token failures


def test_forwarded_for_is_not_believed_without_a_proxy(arena: Arena) -> None:
    # From 127.0.0.1, which uvicorn trusted by default: each bad token claims another address.
    for i in range(LIMITS["failed_logins_per_minute"]):
        r = arena.api("GET", "/api/v1/me", headers={**_bearer(f"t31_bad{i}"), "X-Forwarded-For": f"203.0.113.{i}"})
        assert r.status_code == 401, r.text
    r = arena.api("GET", "/api/v1/me", headers={**_bearer("t31_bad"), "X-Forwarded-For": "203.0.113.99"})
    assert r.status_code == 429, r.text
    # A valid token from that address still works: failures never block a valid credential.
    assert arena.api("GET", "/api/v1/me", "tokens").status_code == 200


def test_bad_tokens_never_block_a_valid_token_or_session(arena: Arena) -> None:
    with client(arena, "127.0.0.17") as c:
        r = c.post("/api/v1/session", json={"name": "tokens", "password": PASSWORD})
        assert r.status_code == 200, r.text
        session = _session_of(r)
        for i in range(LIMITS["failed_logins_per_minute"] + 3):
            assert c.get("/api/v1/me", headers=_bearer(f"t31_guess{i}")).status_code in (401, 429)
        assert c.get("/api/v1/me", headers=_bearer("t31_guess")).status_code == 429
        assert c.get("/api/v1/me", headers=_bearer(arena.tokens["tokens"])).json()["name"] == "tokens"
        assert c.get("/api/v1/me", headers={"Cookie": f"{SESSION_COOKIE}={session}"}).json()["name"] == "tokens"


def test_a_trusted_proxy_forwards_the_address_failures_count_against(proxied: Arena) -> None:
    for i in range(5):
        assert proxied.api("GET", "/api/v1/me", headers={**_bearer(f"t31_x{i}"), "X-Forwarded-For": "203.0.113.7"}).status_code == 401
    assert proxied.api("GET", "/api/v1/me", headers={**_bearer("t31_x"), "X-Forwarded-For": "203.0.113.7"}).status_code == 429
    assert proxied.api("GET", "/api/v1/me", headers={**_bearer("t31_x"), "X-Forwarded-For": "203.0.113.8"}).status_code == 401


# ------------------------------------------------------------------ Low: password reset, Host, ids, docs


def test_a_password_reset_ends_the_users_sessions(arena: Arena) -> None:
    with client(arena, "127.0.0.18") as c:
        r = c.post("/api/v1/session", json={"name": "resetme", "password": PASSWORD})
        cookie = {"Cookie": f"{SESSION_COOKIE}={_session_of(r)}"}
        assert c.get("/api/v1/me", headers=cookie).status_code == 200
        new = "another long password"
        cli("arena", "user", "password", str(arena.folder), "resetme", input=f"{new}\n{new}\n")
        assert c.get("/api/v1/me", headers=cookie).status_code == 401
        assert c.post("/api/v1/session", json={"name": "resetme", "password": new}).status_code == 200
        # The API tokens are credentials of their own: a reset leaves them.
        assert c.get("/api/v1/me", headers=_bearer(arena.tokens["resetme"])).status_code == 200


def test_a_foreign_host_is_refused(arena: Arena, proxied: Arena) -> None:
    for a, name in ((arena, f"127.0.0.1:{arena.port}"), (arena, f"localhost:{arena.port}"), (proxied, "arena.example")):
        assert a.api("GET", "/api/v1/runtimes", headers={"Host": name}).status_code == 200
    for a in (arena, proxied):
        r = a.api("GET", "/api/v1/runtimes", headers={"Host": "rebound.example"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "bad_host", r.text
        assert a.api("GET", "/", headers={"Host": f"rebound.example:{a.port}"}).status_code == 400


def _int_params(route: Any) -> set[str]:
    found: set[str] = set()

    def walk(dep: Any) -> None:
        found.update(p.name for p in dep.path_params if p.field_info.annotation is int)
        for d in dep.dependencies:
            walk(d)

    walk(route.dependant)
    return found


def test_an_id_too_large_for_the_store_is_not_found_on_every_route(arena: Arena) -> None:
    tried = 0
    for route in api_routes():
        params = _int_params(route)
        if not params:
            continue
        path = route.path
        for p in params:
            path = path.replace("{" + p + "}", HUGE_ID)
        for method in sorted(route.methods or set()):
            for who in ("admin", "bob"):
                r = arena.api(method, path, who, json={} if method == "POST" else None)
                # (403: bob is no admin, refused before the path is looked at)
                assert r.status_code in (403, 404, 422), (method, path, who, r.status_code, r.text)
                tried += 1
    assert tried >= 8
    r = arena.api("GET", "/api/v1/admin/versions", "admin", params={"before": HUGE_ID})
    assert r.status_code == 422, r.text


def test_no_docs_page_loads_a_script_from_elsewhere(arena: Arena) -> None:
    assert arena.api("GET", "/api/docs").status_code == 404
    assert arena.api("GET", "/openapi.json").json()["info"]["title"] == "Thirty-One arena"


# ------------------------------------------------------------------ Low: names that look alike


def _upload(a: Arena, user: str, name: str, code: int = 1) -> httpx.Response:
    body = f"raise SystemExit({code})\n".encode()
    return a.api("POST", "/api/v1/versions", user, params={"filename": "bot.py", "name": name}, content=body)


def test_names_are_unique_without_regard_to_case_or_look_alikes(arena: Arena) -> None:
    assert _upload(arena, "bob", "bob_bot").status_code == 201
    for user, name in (("rob", "Bob_bot"), ("rob", "b0b_bot"), ("rob", "BOB_B0T"), ("bob", "Bob_Bot")):
        r = _upload(arena, user, name)
        assert r.status_code == 409 and "bob_bot" in r.json()["error"]["message"], (user, name, r.text)
    # Its own bot, exactly: a new version (other files: the same files as a version rejected
    # meanwhile would be refused as its twin).
    assert _upload(arena, "bob", "bob_bot", code=2).status_code == 201
    for name in ("Ann", "R0B"):
        added = cli("arena", "user", "add", str(arena.folder), name, check=False)
        said = added.stderr + added.stdout
        assert added.returncode != 0 and ("already exists" in said or "too like" in said), said
    assert cli("arena", "user", "add", str(arena.folder), "ann2").returncode == 0


def test_an_older_store_with_look_alike_names_still_opens(tmp_path: Path) -> None:
    a = make_arena(tmp_path / "arena")
    with ArenaStore.open(a.folder) as store:
        store.add_user("carl")
    # Written as an older arena could have: no check, then, of case.
    with sqlite3.connect(a.folder / "arena.db") as db:
        db.execute("INSERT INTO users (name, created_at) VALUES ('Carl', '2026-01-01T00:00:00+00:00')")
    listed = cli("arena", "user", "list", str(a.folder)).stdout
    assert "carl" in listed and "Carl" in listed
    with ArenaStore.open(a.folder) as store, pytest.raises(Conflict, match="too like the user"):
        store.add_user("CARL")
