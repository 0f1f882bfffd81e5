"""Playing a tournament's matches on a Ray cluster: ``thirtyone tournament run DIR --ray ADDRESS``.

`Ray <https://docs.ray.io>`_ is an optional extra (``pip install 'thirtyone-arena[ray]'``),
imported here only, and only when a run asks for it. :class:`RayExecutor` is an
:class:`~referee.tournament.tasks.Executor`, like the local pool: the runner hands it the
pending matches and commits what it yields, so resume, ratings and verification are the
same whatever played the matches.

- **Workers.** One Ray actor (:class:`MatchWorker`) per CPU the cluster offers (or
  ``jobs``), each a process on some node that plays one match at a time and keeps its bots
  running across matches, as a local worker does (a process plays one rotation of a deal at
  most, :func:`~referee.tournament.worker.remembers`; no spares are started ahead, since the
  executor hands out matches without the local pool's plan). It starts them next to itself, sandboxed
  with the tournament's settings (the same :class:`~referee.bots.process.LocalLauncher`).
- **Bots travel through Ray**, not a shared file system: the runner packs each bot's copied,
  hashed files (``bots/NAME`` in the tournament) into a tar, puts it in Ray's object store
  once per run, and a worker that needs the bot fetches and unpacks it into a private
  temporary folder on its node, where the hash is checked again before every launch. A
  bot whose program (``node``, ``java``...) the node lacks is not launched: the match fails
  as the infrastructure's, naming the node and the program, and is tried elsewhere.
- **Only the runner writes.** A worker writes the log and the bots' output in its own
  folder, sends their text back with the result, and removes them. The runner writes the
  log into ``running/``, checks that the log is whole and that its footer says what the
  result says, and the runner commits both exactly as it commits a local worker's match.
- **Failures.** A worker that dies (killed, out of memory, its node gone) or overruns the
  match's time limit is replaced, and its match is an infrastructure failure: recorded, and
  played again (preferably on another node) up to :data:`~referee.tournament.tasks.MAX_ATTEMPTS`
  times, never charged to a bot. A runner that dies takes its workers with it (Ray ends a
  driver's actors with the driver), and the next run plays what was not committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import io
import os
import shlex
import shutil
import signal
import socket
import tarfile
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.bots.sandbox import make_readable, pid_alive
from referee.tournament.settings import TournamentSettings
from referee.tournament.tasks import (
    MAX_ATTEMPTS,
    BotLaunch,
    MatchTask,
    RunError,
    TaskResult,
    describe_error,
    log_name,
    match_limit_s,
    startup_limit_s,
)

if TYPE_CHECKING:
    from referee.bots import BotHandle

#: What to install when Ray is missing.
INSTALL_HINT = "pip install 'thirtyone-arena[ray]' (in a checkout: pip install -e '.[ray]')"
#: ``--ray local``: start a Ray instance on this machine for the run, and stop it after.
LOCAL = "local"
#: Seconds the cluster may take to start a worker before the run gives up.
WORKER_START_LIMIT_S = 120.0
#: Seconds a worker gets to close its bots when the run ends, before it is killed.
CLOSE_WORKERS_S = 5.0
#: Prefix of a worker's private folder on its node (followed by its process id).
WORKER_DIR_PREFIX = "thirtyone-ray-"


class RayMissingError(RunError):
    """Ray is not installed; the message says how to install it."""


def ray_available() -> bool:
    """Whether the optional Ray extra is installed (without importing it)."""
    return importlib.util.find_spec("ray") is not None


def require_ray() -> None:
    """Raise :class:`RayMissingError`, saying how to install Ray, when it is missing."""
    if not ray_available():
        raise RayMissingError(f"--ray needs Ray, an optional extra that is not installed: {INSTALL_HINT}")


def _ray() -> Any:
    require_ray()
    import ray

    return ray


@functools.cache
def referee_digest() -> str:
    """SHA-256 over the referee's own source files: every node must run the same referee."""
    import referee

    root = Path(referee.__file__).parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------- bots' files


def _relative_to_folder(path: str, folder: Path) -> str | None:
    """``path`` relative to the tournament folder, or None when it lies outside."""
    try:
        return Path(path).resolve().relative_to(folder).as_posix()
    except ValueError:
        return None


def pack_bot(b: BotLaunch, folder: Path) -> bytes | None:
    """A tar of bot ``b``'s copied files, at their path inside the tournament folder.

    None when the bot has no copied files (a sample bot, a command) or they cannot be read:
    then the worker finds nothing, and the launch fails as a local one would, naming the bot.
    """
    if not b.files:
        return None
    rel = _relative_to_folder(b.files, folder)
    if rel is None:
        return None
    buf = io.BytesIO()
    try:
        with tarfile.open(fileobj=buf, mode="w") as tar:
            # The walk skips what the hash skips (caches); links stay links.
            tar.add(b.files, arcname=rel, filter=_skip_ignored)
    except OSError:
        return None
    return buf.getvalue()


def _skip_ignored(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    from referee.tournament.botfiles import IGNORED

    return None if any(part in IGNORED for part in Path(info.name).parts) else info


def _on_node(b: BotLaunch, folder: Path, root: Path) -> BotLaunch:
    """``b`` with its tournament folder paths moved under ``root`` (the worker's copy)."""

    def moved(path: str) -> str:
        rel = _relative_to_folder(path, folder) if path else None
        return path if rel is None else str(root / rel)

    return dataclasses.replace(b, cwd=moved(b.cwd), files=moved(b.files))


def program_of(b: BotLaunch) -> str | None:
    """The program a bot's command runs when it must be found on the node's PATH, else None.

    A sample bot and a Python file run with the worker's own Python; a path names a file of
    the bot's own (checked by the launch itself).
    """
    from referee.bots.spec import sample_bot_names

    text = b.spec.split("=", 1)[1] if "=" in b.spec.split(None, 1)[0] else b.spec
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    if not words:
        return None
    first = words[0]
    if "/" in first or first.endswith(".py") or (len(words) == 1 and first in sample_bot_names()):
        return None
    if b.kind in ("file", "sample", "address"):
        return None
    return first


class NodeUnfitError(RuntimeError):
    """This node cannot run a match's bots (a runtime or the sandbox is missing): not the bots' fault."""


# ---------------------------------------------------------------- the worker (a Ray actor)


@dataclass(slots=True)
class Played:
    """What a worker sends back for one match."""

    result: TaskResult
    #: The whole log's text ("" when the match wrote none).
    log_text: str = ""
    #: The bots' output files of the match: file name -> content.
    outputs: dict[str, bytes] = field(default_factory=dict)
    node_id: str = ""
    host: str = ""


def _remove_stale_worker_dirs(since: frozenset[Path] | None = None, wait_s: float = 0.0) -> None:
    """Remove the folders of workers on this node that died without cleaning up (SIGKILL).

    With ``since`` (the folders there were before), wait up to ``wait_s`` for the owners of
    the folders made since to end, removing each as its owner goes: a local Ray instance just
    shut down ends its workers a moment later, and nobody else would remove what they leave.
    """
    tmp = Path(tempfile.gettempdir())
    end = time.monotonic() + wait_s
    while True:
        left = 0
        for d in tmp.glob(WORKER_DIR_PREFIX + "*"):
            pid = d.name[len(WORKER_DIR_PREFIX) :].split("-", 1)[0]
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            if not pid_alive(int(pid)):
                shutil.rmtree(d, ignore_errors=True)
            elif since is not None and d not in since:
                left += 1
        if not left or time.monotonic() >= end:
            return
        time.sleep(0.1)


class MatchWorker:
    """Plays matches on its node, one at a time, keeping its bots running between them.

    Made a Ray actor by :class:`RayExecutor` (``ray.remote(MatchWorker)``); plain Python
    otherwise, so that it can be tested without a cluster.
    """

    def __init__(self) -> None:
        _remove_stale_worker_dirs()
        self.root = Path(tempfile.mkdtemp(prefix=f"{WORKER_DIR_PREFIX}{os.getpid()}-"))
        os.chmod(self.root, 0o700)
        self.loop = asyncio.new_event_loop()
        self.handles: dict[str, BotHandle] = {}
        #: Bots unpacked here: name -> the hash they were submitted with.
        self.unpacked: dict[str, str] = {}
        self.host = socket.gethostname()
        self.node_id = ""
        with contextlib.suppress(ImportError):  # outside Ray (tests): no node id
            import ray

            # Asked only inside Ray: elsewhere the question itself would start or join a cluster.
            if ray.is_initialized():
                self.node_id = ray.get_runtime_context().get_node_id()

    def info(self) -> dict[str, Any]:
        """Where this worker runs, and what referee it runs."""
        return {"node_id": self.node_id, "host": self.host, "pid": os.getpid(), "referee": referee_digest()}

    def where(self) -> str:
        """The node, for messages: ``host (node 1a2b3c4d5e6f)``."""
        return f"{self.host} (node {self.node_id[:12] or 'unknown'})"

    def _unpack(self, b: BotLaunch, bundle: Any, folder: str) -> None:
        if self.unpacked.get(b.name) == b.sha256 or bundle is None:
            return
        if isinstance(bundle, bytes):
            data = bundle
        else:  # an object reference: the tar comes from Ray's object store, once per worker
            import ray

            data = ray.get(bundle)
        dest = self.root / "t"
        dest.mkdir(mode=0o755, exist_ok=True)
        rel = _relative_to_folder(b.files, Path(folder))
        if rel is not None:  # a copy of an earlier version of the bot goes first
            shutil.rmtree(dest / rel, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            # "data": nothing outside the folder, no device files, no setuid bits.
            tar.extractall(dest, filter="data")
        make_readable(dest)  # the bots run as an unprivileged user on a node run as root
        self.unpacked[b.name] = b.sha256

    def _fit(self, task: MatchTask) -> None:
        """Raise :class:`NodeUnfitError` if this node cannot start the bots the match needs."""
        from referee.bots.sandbox import probe

        if task.sandbox is not None:
            status = probe()
            if not status.available:
                raise NodeUnfitError(f"Ray node {self.where()} cannot sandbox the bots: {status.reason}")
        for b in task.bots:
            if b.name in task.absent or b.name in self.handles:
                continue
            if b.kind not in ("sample", "address") and b.cwd and not os.path.isdir(b.cwd):
                raise NodeUnfitError(
                    f"bot {b.name!r} runs in {b.cwd}, which does not exist on Ray node {self.where()}: a bot "
                    "submitted without --dir runs in the folder it was submitted from, which must then exist on "
                    "every node (with --dir its files travel with the run)"
                )
            program = program_of(b)
            if program is not None and shutil.which(program) is None:
                raise NodeUnfitError(
                    f"bot {b.name!r} runs {program!r} (its command: {b.spec.split('=', 1)[-1]}), which is not "
                    f"installed on Ray node {self.where()}: every node needs the bots' runtimes"
                )

    def play(self, task: MatchTask, folder: str, bundles: dict[str, Any]) -> Played:
        """Play ``task`` here: its bots' files come from ``bundles`` (name -> tar, or its
        object reference), its log and the bots' output are sent back and removed."""
        key = task.match.key
        started = time.monotonic()
        logs = self.root / "logs"
        logs.mkdir(mode=0o700, exist_ok=True)
        (self.root / "run").mkdir(mode=0o700, exist_ok=True)
        # Where the tournament's folder stands for it here (a sample bot's working folder).
        (self.root / "t").mkdir(mode=0o755, exist_ok=True)
        log_path = logs / log_name(key)
        out_dir = logs / (log_name(key).removesuffix(".jsonl") + ".output")
        try:
            bots = []
            for b in task.bots:
                if b.files and b.name not in task.absent:
                    self._unpack(b, bundles.get(b.name), folder)
                bots.append(_on_node(b, Path(folder), self.root / "t"))
            sandbox = task.sandbox
            if sandbox is not None:
                # The worker's copies of every bot are as secret from each bot as the tournament.
                sandbox = dataclasses.replace(sandbox, hidden=(*sandbox.hidden, str(self.root)))
            local = dataclasses.replace(
                task, bots=tuple(bots), log_path=str(log_path), sandbox=sandbox,
                tmp_root=str(self.root / "run"), output_dir=str(out_dir) if task.output_dir else "",
            )  # fmt: skip
            self._fit(local)
            r = self.loop.run_until_complete(_play(local, self.handles))
        except Exception as e:
            why = str(e) if isinstance(e, NodeUnfitError) else f"on Ray node {self.where()}: {describe_error(e)}"
            r = TaskResult(key, False, {}, why, time.monotonic() - started, infra=True)
        try:
            text = log_path.read_text(encoding="utf-8") if r.ok and r.has_log else ""
            outputs = {p.name: p.read_bytes() for p in sorted(out_dir.iterdir())} if out_dir.is_dir() else {}
        finally:
            with contextlib.suppress(FileNotFoundError):
                log_path.unlink()
            shutil.rmtree(out_dir, ignore_errors=True)
        return Played(r, text, outputs, self.node_id, self.host)

    def close(self) -> None:
        """Stop the bots and remove this worker's folder."""
        from referee.bots import close_bots

        try:
            self.loop.run_until_complete(close_bots(list(self.handles.values())))
        finally:
            self.handles.clear()
            self.loop.close()
            shutil.rmtree(self.root, ignore_errors=True)


async def _play(task: MatchTask, handles: dict[str, BotHandle]) -> TaskResult:
    from referee.tournament.worker import play_task

    return await play_task(task, handles, lambda _message: None)


# ---------------------------------------------------------------- the runner's side


def verify_log(path: str, task: MatchTask, r: TaskResult) -> str:
    """Why the log at ``path`` does not belong with result ``r`` ("" when it does)."""
    from referee.faults import LogError
    from referee.log import read_log

    try:
        log = read_log(path)
    except (LogError, OSError, ValueError) as e:
        return f"its log cannot be read ({e})"
    if log.footer is None:
        return "its log has no footer (it stops mid-match)"
    if log.footer.reason == "aborted":
        return "its log says the match was aborted"
    if log.header.seed != task.match.seed or log.header.match_id != task.match.key:
        return f"its log is of another match ({log.header.match_id}, seed {log.header.seed})"
    record = r.record
    present = [s for s, seat in enumerate(record.seats) if seat.played]
    want = [record.placings[s] for s in present]
    if list(log.footer.placings) != want:
        return f"its log's placings {list(log.footer.placings)} are not the result's {want}"
    # (A result without rounds says None, as it always did.)
    rounds = record.rounds if "rounds" in record.stored else None
    if log.footer.rounds != rounds:
        return f"its log's {log.footer.rounds} rounds are not the result's {rounds}"
    return ""


def with_values(task: MatchTask) -> MatchTask:
    """``task`` with each variable the organiser passes to bots by name alone (``bot_env =
    ["NAME"]``) given its value here, as a local run gives it: not the node's value."""
    sb = task.sandbox
    if sb is None or all("=" in entry for entry in sb.env):
        return task
    # One unset here is not passed at all, as in a local run.
    env = tuple(e if "=" in e else f"{e}={os.environ[e]}" for e in sb.env if "=" in e or e in os.environ)
    return dataclasses.replace(task, sandbox=dataclasses.replace(sb, env=env))


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    # As a local worker's log is written: flushed, not synced (the commit that follows is).
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def receive(task: MatchTask, p: Played) -> TaskResult:
    """Write a worker's log and output where a local worker would have (the runner's own
    folder), check the log against the result, and give the result to commit.

    A log that does not match is the infrastructure's failure: the match is played again.
    """
    r = p.result
    if not r.ok:
        return r
    try:
        if r.has_log:
            _write_private(Path(task.log_path), p.log_text.encode("utf-8"))
            wrong = verify_log(task.log_path, task, r)
            if wrong:
                return TaskResult(r.key, False, {}, f"the match played on Ray node {p.host} came back wrong: {wrong}",
                                  r.duration_s, infra=True)  # fmt: skip
        if task.output_dir and p.outputs:
            out = Path(task.output_dir)
            out.mkdir(mode=0o700, exist_ok=True)
            for name, data in p.outputs.items():
                _write_private(out / Path(name).name, data)
    except OSError as e:
        return TaskResult(r.key, False, {}, describe_error(e), r.duration_s, infra=True)
    return dataclasses.replace(r, result={**r.result, "node": {"id": p.node_id, "host": p.host}})


#: Seconds to wait for a cluster's head to accept a connection (Ray itself waits much longer).
CONNECT_TIMEOUT_S = 10.0


def _check_reachable(address: str) -> None:
    """Raise :class:`RunError` at once when nothing listens at ``HOST:PORT`` (other forms of
    address, ``auto`` or ``ray://...``, are left to Ray)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise RunError(
            f"cannot reach the Ray cluster at {address}: {e.strerror or e} "
            "(is 'ray start --head' running there, and is the port open?)"
        ) from None


@dataclass(slots=True)
class ActorSlot:
    """One actor and what it is doing."""

    actor: Any
    #: The actor's ``info()`` call until it answers, then None.
    starting: Any
    since: float
    info: dict[str, Any] = field(default_factory=dict)
    task: MatchTask | None = None
    call: Any = None
    deadline: float = 0.0

    @property
    def where(self) -> str:
        host, node = self.info.get("host", "?"), str(self.info.get("node_id", ""))[:12]
        return f"{host} (node {node or 'unknown'})"


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


class RayExecutor:
    """Plays tasks on a Ray cluster (see the module doc).

    ``address`` is a cluster's (``HOST:PORT``, ``auto``, ``ray://...``) or :data:`LOCAL` to
    start a Ray instance on this machine for the run. ``jobs`` is the number of workers
    (default: one per CPU the cluster offers). Raises :class:`RunError` at once when nothing
    answers at a ``HOST:PORT`` address.
    """

    def __init__(
        self,
        address: str,
        jobs: int | None = None,
        *,
        match_limit_s: float | None = None,
        on_message: Callable[[str], None] | None = None,
    ) -> None:
        if jobs is not None and jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        require_ray()
        if address != LOCAL:
            _check_reachable(address)
        self.address = address
        self.jobs = jobs
        self.match_limit_s = match_limit_s
        self.on_message = on_message
        #: Workers started in the last run (for the report).
        self.workers = 0
        #: Nodes the last run's workers ran on: node id -> host.
        self.nodes: dict[str, str] = {}

    def _say(self, text: str) -> None:
        if self.on_message is not None:
            self.on_message(text)

    def _connect(self, ray: Any, object_bytes: int) -> bool:
        """Connect to the cluster (or start one); False when this process was connected already
        (then the connection is left as it is at the end)."""
        import logging

        if ray.is_initialized():
            return False
        held = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
        common: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING, "configure_logging": True}
        try:
            if self.address == LOCAL:
                ray.init(
                    address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False,
                    object_store_memory=max(128 * 2**20, 4 * object_bytes), **common,
                )  # fmt: skip
            else:
                ray.init(address=self.address, **common)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise RunError(f"cannot connect to the Ray cluster at {self.address}: {_first_line(e)}") from None
        finally:
            # ray.init takes SIGTERM over; the runner's own handler (a clean stop) comes back.
            if held is not None:
                signal.signal(signal.SIGTERM, held)
        return True

    @contextlib.contextmanager
    def connected(self, object_bytes: int = 0) -> Iterator[None]:
        """Stay connected to the cluster (or keep the :data:`LOCAL` instance up) across
        several :meth:`run` calls, as a ladder that hands over a few tables at a time needs:
        without it each run connects and disconnects, and a local Ray starts and stops each
        time. ``object_bytes`` sizes a local instance's object store (the bots' tars)."""
        ray = _ray()
        before = frozenset(Path(tempfile.gettempdir()).glob(WORKER_DIR_PREFIX + "*"))
        connected = self._connect(ray, object_bytes)
        try:
            yield
        finally:
            if connected:
                with contextlib.suppress(Exception):
                    ray.shutdown()
                if self.address == LOCAL:
                    # Workers killed in the middle of a batch (a ladder stopped) never closed:
                    # their folders (the bots' copies) go with them here.
                    _remove_stale_worker_dirs(before, CLOSE_WORKERS_S)

    def run(self, tasks: Sequence[MatchTask], prepare: Callable[[MatchTask], MatchTask] | None = None) -> Iterator[TaskResult]:
        """Play ``tasks`` on the cluster, yielding results as they come (see the module doc)."""
        if not tasks:
            return
        ray = _ray()
        folder = Path(tasks[0].log_path).resolve().parent.parent
        packed: dict[str, bytes] = {}
        for t in tasks:
            for b in t.bots:
                if b.name not in packed and b.files:
                    data = pack_bot(b, folder)
                    if data is not None:
                        packed[b.name] = data
        connected = self._connect(ray, sum(map(len, packed.values())))
        workers: list[ActorSlot] = []
        finished = False
        try:
            bundles = {name: ray.put(data) for name, data in packed.items()}
            cpus = float(ray.cluster_resources().get("CPU", 1.0))
            n = self.jobs or max(1, int(cpus))
            per_worker = min(1.0, cpus / n)
            remote = ray.remote(MatchWorker).options(num_cpus=per_worker, max_restarts=0, max_task_retries=0)

            def spawn() -> ActorSlot:
                actor = remote.remote()
                return ActorSlot(actor, actor.info.remote(), time.monotonic())

            workers = [spawn() for _ in range(min(n, len(tasks)))]
            self.workers = len(workers)
            yield from self._loop(ray, workers, spawn, tasks, prepare, str(folder), bundles)
            finished = True
        finally:
            self._stop(ray, workers, disconnect=connected, clean=finished)

    def _loop(
        self,
        ray: Any,
        workers: list[ActorSlot],
        spawn: Callable[[], ActorSlot],
        tasks: Sequence[MatchTask],
        prepare: Callable[[MatchTask], MatchTask] | None,
        folder: str,
        bundles: dict[str, Any],
    ) -> Iterator[TaskResult]:
        todo: deque[MatchTask] = deque(tasks)
        originals = {t.match.key: t for t in tasks}
        attempts: dict[str, int] = {}
        #: Nodes where a match failed: its next try goes elsewhere when it can.
        failed_on: dict[str, set[str]] = {}
        me = referee_digest()
        #: Workers that failed to start since one last started: past a few, the cluster cannot.
        start_failures = 0

        def give(w: ActorSlot, t: MatchTask) -> None:
            todo.remove(t)
            t = with_values(prepare(t) if prepare is not None else t)
            w.task = t
            w.deadline = time.monotonic() + startup_limit_s() + (self.match_limit_s or match_limit_s(TournamentSettings.from_dict(t.settings)))
            attempts[t.match.key] = attempts.get(t.match.key, 0) + 1
            w.call = w.actor.play.remote(t, folder, bundles)

        def failed(t: MatchTask, why: str, node: str) -> TaskResult:
            key = t.match.key
            if node:
                failed_on.setdefault(key, set()).add(node)
            r = TaskResult(key, False, {}, why, infra=True)
            if attempts.get(key, 0) >= MAX_ATTEMPTS:
                return r
            # Next rather than last, as the local pool does (an SPRT test counts deals in order).
            todo.appendleft(originals[key])
            return dataclasses.replace(r, retrying=True)

        while todo or any(w.task is not None for w in workers):
            idle = [w for w in workers if w.starting is None and w.task is None]
            for w in idle:
                node = str(w.info.get("node_id", ""))
                t = next((t for t in todo if node not in failed_on.get(t.match.key, ())), None)
                if t is not None:
                    give(w, t)
            if todo and not any(w.task is not None for w in workers):
                # Every idle worker is on a node the remaining matches failed on: try anyway.
                for w in [w for w in workers if w.starting is None and w.task is None]:
                    if todo:
                        give(w, todo[0])
            starting = [w for w in workers if w.starting is not None]
            if todo and not any(w.task is not None for w in workers) and starting:
                oldest = min(w.since for w in starting)
                if time.monotonic() - oldest > WORKER_START_LIMIT_S:
                    raise RunError(
                        f"the Ray cluster at {self.address} started no worker in {WORKER_START_LIMIT_S:g} s "
                        "(are its nodes up, with free CPUs? 'ray status' says)"
                    )
            refs = {w.starting: w for w in starting} | {w.call: w for w in workers if w.task is not None}
            busy = [w for w in workers if w.task is not None]
            timeout = min([w.deadline - time.monotonic() for w in busy] + [1.0])
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=max(0.0, timeout))
            for ref in ready:
                w = refs[ref]
                i = workers.index(w)
                if w.starting is not None and ref == w.starting:
                    w.starting = None
                    try:
                        w.info = ray.get(ref)
                    except ray.exceptions.RayError as e:
                        start_failures += 1
                        self._kill(ray, w)
                        if start_failures >= MAX_ATTEMPTS * len(workers):
                            raise RunError(
                                f"Ray workers cannot start on the cluster at {self.address} ({_first_line(e)}): is "
                                "this package installed, in the same version, on every node?"
                            ) from None
                        self._say(f"a Ray worker could not start ({_first_line(e)}); starting another")
                        workers[i] = spawn()
                        continue
                    start_failures = 0
                    if w.info.get("referee") != me:
                        raise RunError(
                            f"Ray node {w.where} runs another version of the referee than this machine: "
                            "install the same version on every node"
                        )
                    self.nodes[str(w.info.get("node_id", ""))] = str(w.info.get("host", ""))
                    continue
                t = w.task
                assert t is not None
                w.task = w.call = None
                try:
                    played: Played = ray.get(ref)
                except ray.exceptions.RayError as e:
                    why = f"the Ray worker on {w.where} died ({_first_line(e)})"
                    self._kill(ray, w)
                    workers[i] = spawn()
                    yield failed(t, why, str(w.info.get("node_id", "")))
                    continue
                r = receive(t, played)
                if r.infra:
                    yield failed(t, r.error, str(w.info.get("node_id", "")))
                else:
                    yield r
            now = time.monotonic()
            for i, w in enumerate(workers):
                if w.task is not None and now >= w.deadline and w.call not in ready:
                    t = w.task
                    self._kill(ray, w)
                    workers[i] = spawn()
                    yield failed(t, f"the Ray worker on {w.where} did not finish the match in time (stopped or stuck); it was killed",
                                 str(w.info.get("node_id", "")))  # fmt: skip

    @staticmethod
    def _kill(ray: Any, w: ActorSlot) -> None:
        with contextlib.suppress(Exception):
            ray.kill(w.actor, no_restart=True)

    def _stop(self, ray: Any, workers: list[ActorSlot], *, disconnect: bool, clean: bool) -> None:
        """Let every worker close its bots (briefly), kill them all, disconnect (or stop Ray).

        A run stopped early (Ctrl-C, SIGTERM: Ray itself may be going down with the same
        signal) waits for nothing: its workers end with its connection, their bots with them.
        """
        try:
            if clean:
                closing = [w.actor.close.remote() for w in workers if w.starting is None and w.task is None]
                if closing:
                    with contextlib.suppress(Exception):
                        ray.wait(closing, num_returns=len(closing), timeout=CLOSE_WORKERS_S)
            if clean or not disconnect:
                for w in workers:
                    self._kill(ray, w)
        finally:
            if disconnect:
                with contextlib.suppress(Exception):
                    ray.shutdown()
