"""A real arena for the tests: ``thirtyone arena init`` and ``serve`` as processes, real HTTP.

:class:`Arena` runs the CLI the way a user does (``sys.executable``, never a bare
``python``), serves on a free port, and waits for events by polling with a generous
deadline (:func:`poll_until`), never a fixed sleep.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from referee.bots.sandbox import probe
from referee.ladder.accounts import add_user
from referee.ladder.store import ArenaStore

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_bots"
CLI = [sys.executable, "-c", "from referee.cli import main; main()"]
#: The sandbox where the machine has one (CI installs bubblewrap); off elsewhere.
SANDBOX = "on" if probe().available else "off"
T = TypeVar("T")


def poll_until(what: str, check: Callable[[], T | None], timeout_s: float = 120.0, every_s: float = 0.2) -> T:
    """Ask ``check`` until it returns something other than None or False; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last is not None and last is not False:
            return last
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what} (last seen: {last!r})")


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(*args: str, env: dict[str, str] | None = None, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``thirtyone ARGS`` as a user would; fail with its output unless it succeeds (``check``)."""
    r = subprocess.run([*CLI, *args], env={**os.environ, **(env or {})}, input=input, capture_output=True, text=True, timeout=180)
    if check and r.returncode != 0:
        raise AssertionError(f"thirtyone {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def alive(pid: int) -> bool:
    """Whether a process exists (and is not a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class Arena:
    """An arena folder, its users' tokens, and (once started) its ``arena serve`` process."""

    folder: Path
    tokens: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    log: Path | None = None

    @property
    def url(self) -> str:
        """The service's address."""
        return f"http://127.0.0.1:{self.port}"

    def add_user(self, name: str, *, admin: bool = False) -> str:
        """``arena user add``: the token it prints."""
        r = cli("arena", "user", "add", str(self.folder), name, *(["--admin"] if admin else []))
        token = r.stdout.strip()
        self.tokens[name] = token
        return token

    def add_users(self, *names: str) -> None:
        """Users made through the store directly (what ``arena user add`` calls), faster than
        a command each on a busy machine."""
        with ArenaStore.open(self.folder) as store:
            for name in names:
                self.tokens[name] = add_user(store, name)[1]

    def serve(self, *extra: str) -> None:
        """Start ``arena serve`` on a free port and wait until it answers."""
        self.port = free_port()
        self.log = self.folder.parent / f"serve-{self.port}.log"
        with open(self.log, "wb") as f:
            self.proc = subprocess.Popen(
                [*CLI, "arena", "serve", str(self.folder), "--port", str(self.port), *extra], stdout=f, stderr=subprocess.STDOUT
            )
        poll_until("the service to answer", self._answers, timeout_s=60)

    def _answers(self) -> bool:
        assert self.proc is not None
        assert self.proc.poll() is None, f"arena serve exited {self.proc.returncode}:\n{self.output()}"
        try:
            return httpx.get(self.url + "/api/v1/runtimes", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def output(self) -> str:
        """What the service printed so far."""
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def api(self, method: str, path: str, user: str | None = None, **kw: Any) -> httpx.Response:
        """One request, as ``user`` (None: no token)."""
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}
        headers.update(kw.pop("headers", {}))
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kw)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the service with ``sig``; wait for it and every process it started to be gone."""
        assert self.proc is not None
        below = descendants(self.proc.pid)
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        poll_until("every process the service started to be gone", lambda: not any(alive(p) for p in below), timeout_s=60)
        self.proc = None
        return code


def make_arena(folder: Path, *extra: str) -> Arena:
    """``arena init`` with the tests' sandbox."""
    cli("arena", "init", str(folder), "--sandbox", SANDBOX, *extra)
    return Arena(folder)


@pytest.fixture
def arena_factory(tmp_path: Path) -> Iterator[Callable[..., Arena]]:
    """Make arenas in a test's own folder; any still served at the end are killed."""
    made: list[Arena] = []

    def make(*extra: str) -> Arena:
        a = make_arena(tmp_path / f"arena{len(made)}", *extra)
        made.append(a)
        return a

    yield make
    for a in made:
        if a.proc is not None and a.proc.poll() is None:
            a.stop(signal.SIGKILL)


def fake_version(store: ArenaStore, user_id: int, bot: str) -> int:
    """A version recorded straight in the store, with a one-file folder (never run: for tests
    of what the store and the pages make of results)."""
    staged = store.folder / "uploads" / f"staged-{bot.encode().hex()}"
    staged.mkdir()
    (staged / "bot.py").write_text("")

    def place(vid: int) -> str:
        staged.rename(store.folder / "versions" / str(vid))
        return f"versions/{vid}"

    from referee.ladder.ratings import prior

    mu, sigma = prior()
    v = store.add_version(user_id, bot, place=place, command="python bot.py", sha256="", n_files=1, size=0, source="bot.py",
                          mu=mu, sigma=sigma)
    store.set_status(v.id, "active")
    return v.id


def play_table(store: ArenaStore, seats: list[int], placings: list[list[int]]) -> list[str]:
    """Record a table of these versions as the ladder would: each rotation's placings (seat 0
    first), with the live ratings they move. Its keys."""
    from referee.ladder.fairness import commitment, deal_seed
    from referee.ladder.ratings import live_update

    matches = store.schedule_table(seats, lambda tid: commitment(deal_seed(b"k", tid)), placement=False)
    for m, p in zip(matches, placings, strict=True):
        current = [(store.version(v).mu, store.version(v).sigma) for v in m.seats]
        moved = live_update(current, p)
        winner = p.index(1) if p.count(1) == 1 else -1
        result = {"placings": p, "winner": winner, "reason": "last_standing", "rounds": 3, "seats": [{"placing": x} for x in p]}
        assert store.record_result(m.key, result, "", 0.5, dict(zip(m.seats, moved, strict=True)))
    return [m.key for m in matches]
