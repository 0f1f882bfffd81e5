"""A real arena for the tests: ``thirtyone arena init`` and ``serve`` as processes, real HTTP.

:class:`Arena` runs the CLI the way a user does (``sys.executable``, never a bare
``python``), serves on a free port, and waits for events by polling with a generous
deadline (:func:`tests.polling.poll_until`), never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.bots.sandbox import probe
from referee.ladder.accounts import add_user
from referee.ladder.loop import Ladder
from referee.ladder.store import ArenaStore
from tests.polling import alive, poll_until

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_bots"
CLI = [sys.executable, "-c", "from referee.cli import main; main()"]
#: The sandbox where the machine has one (CI installs bubblewrap); off elsewhere.
SANDBOX = "on" if probe().available else "off"
#: Set in the environment of a served arena (and so of all it starts): how :meth:`Arena.started`
#: finds a process whose parent is gone.
MARKER = "THIRTYONE_TEST_ARENA"


def run_ladder_until(ladder: Ladder, what: str, done: Callable[[], object], timeout_s: float = 300.0) -> None:
    """Run ``ladder`` in this thread until ``done()`` holds (asked from a thread of its own
    every :func:`poll_until` step), then stop it and return once it has stopped."""

    def watch() -> None:
        try:
            poll_until(what, done, timeout_s=timeout_s, interval_s=0.2)
        finally:
            ladder.stopping.set()

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    ladder.run()
    t.join()


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


@dataclass
class Arena:
    """An arena folder, its users' tokens, and (once started) its ``arena serve`` process."""

    folder: Path
    tokens: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    log: Path | None = None
    marker: str = ""

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

    def serve(self, *extra: str, own_group: bool = False) -> None:
        """Start ``arena serve`` on a free port and wait until it answers.

        The service gets a marker in its environment, so that :meth:`kill` finds the server,
        its ladder, workers, bots and Ray cluster even after the server is gone; with
        ``own_group``, a process group of its own too (as a shell gives a job; otherwise it
        stays in the tests' group, so that a killed test run takes it along). If the service
        exits or never answers, everything it started is killed before the failure (with its
        output) is raised.
        """
        self.port = free_port()
        self.log = self.folder.parent / f"serve-{self.port}.log"
        self.marker = f"{self.folder}:{self.port}"
        with open(self.log, "wb") as f:
            self.proc = subprocess.Popen(
                [*CLI, "arena", "serve", str(self.folder), "--port", str(self.port), *extra], stdout=f, stderr=subprocess.STDOUT,
                start_new_session=own_group, env={**os.environ, MARKER: self.marker},
            )
        try:
            # A busy machine (a CI runner under load) can take minutes to import the service
            # and bind the port; only an exit or an overall 300 s fails the start.
            poll_until("the service to answer", self._answers, timeout_s=300, interval_s=0.2)
        except BaseException:
            self.kill()
            raise

    def _answers(self) -> bool:
        assert self.proc is not None
        assert self.proc.poll() is None, f"arena serve exited {self.proc.returncode}:\n{self.output()}"
        try:
            return httpx.get(self.url + "/api/v1/runtimes", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def started(self) -> set[int]:
        """Every live process this arena's service started: below the server or carrying its
        marker (a process whose parent died is found by the marker)."""
        if self.proc is None:
            return set()
        found = descendants(self.proc.pid) | {self.proc.pid}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) in found:
                continue
            try:
                if f"{MARKER}={self.marker}".encode() in (d / "environ").read_bytes().split(b"\0"):
                    found.add(int(d.name))
            except OSError:
                continue
        return {p for p in found if alive(p)}

    def kill(self) -> None:
        """SIGKILL everything the service started and wait for it all to be gone (a fixture's
        last word: whatever happened, nothing of this arena keeps running)."""
        if self.proc is None:
            return
        for _ in range(3):  # a process may fork while the others are killed
            left = self.started()
            if not left:
                break
            with contextlib.suppress(OSError):  # its own group, if it has one
                os.killpg(self.proc.pid, signal.SIGKILL)
            for p in left:
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
            self.proc.poll()
            with contextlib.suppress(AssertionError):  # the next turn kills what is left
                poll_until("every process of the killed service to be gone", lambda: not self.started(), timeout_s=60, interval_s=0.2)
        if left := self.started():
            raise AssertionError(f"processes of the killed service still run: {sorted(left)}")
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=60)
        self.proc = None

    def output(self) -> str:
        """What the service printed so far."""
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def api(self, method: str, path: str, user: str | None = None, **kw: Any) -> httpx.Response:
        """One request, as ``user`` (None: no token)."""
        headers = {"Authorization": f"Bearer {self.tokens[user]}"} if user else {}
        headers.update(kw.pop("headers", {}))
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kw)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the service with ``sig``; wait for it and every process it started to be gone.

        Whatever happens (a stop that hangs or leaves a process behind fails the test), the
        rest is killed on the way out (:meth:`kill`).
        """
        assert self.proc is not None
        try:
            below = self.started()
            self.proc.send_signal(sig)
            code = self.proc.wait(timeout=120)
            poll_until("every process the service started to be gone", lambda: not any(alive(p) for p in below), timeout_s=120, interval_s=0.2)
        finally:
            self.kill()
        return code

    def __enter__(self) -> Arena:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


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

    try:
        yield make
    finally:
        for a in made:
            a.kill()


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
