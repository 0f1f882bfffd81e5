"""Running a tournament's pending matches in parallel, committing each as it finishes.

The executor is a pool of worker processes (the Python referee is CPU-bound, so threads
would share one core). Each worker keeps its bots running across the matches it plays
(no launch per match) and sends back one plain result per match; the parent alone writes
the database, one transaction per match. The parent hands the matches out table by table
(:class:`_Plan`): a worker plays on at its table, deal after deal, so that a bot starts a
few times per table and worker, not once per match. A bot process plays one rotation of a
deal at most (:func:`_remembers`): the deal's other rotations go to other workers, or to
bots the worker starts again. A killed run loses only the matches in flight,
which the next run plays again from the same seeds.

Nothing a worker does can block the parent: each worker has a pipe of its own (no shared
queue whose lock a dying worker could hold), the parent hands a worker one match at a time
and waits on every pipe and every process at once (``multiprocessing.connection.wait``),
and each match has a wall-clock limit derived from the rules and the time control. A worker
that dies, or overruns the limit (stopped, stuck), is killed and replaced; its match is an
*infrastructure* failure, recorded as such and played again, never charged to a bot.

A bot that cannot start forfeits its seat (a ``start`` fault); the match is played among the
seats that did start, the absent ones placed last. After ``max_start_failures`` failures in
a row a bot is disqualified, and its remaining matches are scored the same way without
starting it.

:class:`Executor` is the seam for growing past one machine: anything that takes
:class:`MatchTask`\\ s and yields :class:`TaskResult`\\ s can replace the local pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import hashlib
import itertools
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from referee.bots.process import LocalLauncher
from referee.bots.sandbox import SandboxConfig, SandboxStatus, probe
from referee.tournament.schedule import ScheduledMatch, schedule_for
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import BotEntry, MatchRow, TournamentStore, now

if TYPE_CHECKING:
    from referee.bots import BotHandle

#: Seconds a worker waits for its bots to start.
STARTUP_TIMEOUT_S = 15.0
#: Added to every wall-clock limit (with 10% more): log writing, a loaded machine.
LIMIT_MARGIN_S = 5.0
#: Times one match is tried in one run when the infrastructure fails it.
MAX_ATTEMPTS = 3
#: A worker's event loop says it is alive this often while it plays a match, in seconds ...
HEARTBEAT_S = 1.0
#: ... and one silent this long is stopped or stuck (the match limit can be hours long).
SILENCE_LIMIT_S = 20.0
#: Seconds a worker just spawned may take to say it is up (an interpreter and the referee's
#: imports: a fraction of a second of CPU, but tens of seconds on two cores loaded 30 deep).
#: Its silence and startup limits count from then, not from when it was sent its match.
BOOT_LIMIT_S = 90.0
#: The fault kind of a seat whose bot could not be started (or was disqualified).
START_FAULT = "start"
#: Seconds workers get to stop cleanly (closing their bots) before they are killed.
STOP_WORKERS_S = 1.5
#: Cap on what is kept of one bot's output in one match, in bytes.
BOT_OUTPUT_BYTES = 1024 * 1024
#: Bots a worker keeps running between matches (the least recently used stop first).
MAX_KEPT_BOTS = 12
#: Groups of tasks (tables) a free worker looks at when it chooses its next one.
PLAN_LOOKAHEAD = 16
#: Tasks of its table a free worker looks through for one whose deal its bots have not
#: played (:meth:`_Plan._pop`): a whole table of three, 40 deals deep.
PLAN_DEAL_SCAN = 120
#: The same for a plan that keeps the feed's order (an SPRT test's): a worker plays at most
#: this many tasks ahead of the first not handed out, so the test's deals finish nearly in
#: order and few matches are played past its verdict (with -j 1 and two seats, deal 30 of a
#: test finishes after 78 matches instead of 60; with PLAN_DEAL_SCAN it would be 150).
PLAN_ORDER_SCAN = 48
#: Matches ahead of needing them again that a worker starts spare processes of its table's
#: bots, while it plays (:meth:`_Plan.restarts_after`): a start takes a few matches' time.
PRESTART_AHEAD = 8
#: Tasks a free worker reads on past the other workers' tables to find a table of its own;
#: then it joins one of theirs. (The arena's feed never ends and schedules a table at each
#: read: with two bots every table is theirs, and an unbounded read never came back.)
PLAN_READ_AHEAD = 64


@dataclass(frozen=True, slots=True)
class BotLaunch:
    """How a worker starts (or reaches) one tournament bot."""

    name: str
    #: In the referee's bot syntax, with the tournament name as its ``NAME=`` label.
    spec: str
    cwd: str
    #: The bot's kind in the tournament (``folder`` for a folder plus a command).
    kind: str = ""
    #: The copied file or folder whose hash is checked before each launch, and its hash.
    files: str = ""
    sha256: str = ""


@dataclass(frozen=True, slots=True)
class MatchTask:
    """One match for a worker to play."""

    match: ScheduledMatch
    #: Where the worker writes the log: in the private ``running/`` folder.
    log_path: str
    bots: tuple[BotLaunch, ...]
    settings: dict[str, Any]
    #: How the bots are sandboxed (None: unsandboxed, the tournament says ``sandbox = "off"``).
    sandbox: SandboxConfig | None = None
    #: Bots not to start (disqualified): their seats forfeit.
    absent: tuple[str, ...] = ()
    #: Where the bots' temporary folders go (cleaned by the next run of the tournament).
    tmp_root: str | None = None
    #: Folder for the bots' output of this match ("" keeps none).
    output_dir: str = ""
    #: Bots of this match to start a spare process of while it plays: the plan expects the
    #: worker to need them started again for its next match (:meth:`_Plan.restarts_after`).
    prestart: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskResult:
    """A finished match (or a failure to play it), as a worker reports it."""

    key: str
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    duration_s: float = 0.0
    #: Seconds this worker spent starting bots for this match (0 when they were running).
    startup_s: float = 0.0
    #: The failure is the infrastructure's (worker died or overran, disk full, ...), not a bot's.
    infra: bool = False
    #: The match will be tried again in this run.
    retrying: bool = False
    #: Bots that could not be started for this match: name -> why.
    start_failures: dict[str, str] = field(default_factory=dict)
    #: Bots that were started (or found running) for this match.
    started: tuple[str, ...] = ()
    #: Whether the match wrote a log (not when fewer than two bots could play).
    has_log: bool = True


class RunError(RuntimeError):
    """The executor could not play every task."""


class Executor(Protocol):
    """Plays tasks and yields their results as they finish."""

    def run(self, tasks: Sequence[MatchTask], prepare: Callable[[MatchTask], MatchTask] | None = None) -> Iterator[TaskResult]:
        """Play every task (``prepare`` each just before it starts); yield each result as soon
        as it is known."""
        ...


def log_name(key: str) -> str:
    """The log file name of a match key (slashes do not belong in file names)."""
    return key.replace("/", "_") + ".jsonl"


def output_dir_of(folder: Path, key: str) -> Path:
    """Where a tournament keeps the bots' output of one match."""
    return folder / "output" / log_name(key).removesuffix(".jsonl")


def output_file_name(seat: int, bot: str) -> str:
    """The file of one seat's bot output in a match's output folder."""
    return f"seat{seat}-{bot}.txt"


def tmp_root_of(folder: Path) -> Path:
    """The folder under which a tournament's bots get their temporary folders.

    Outside the tournament folder and short (a Unix socket path holds ~100 bytes), named
    after the tournament so that the next run finds and removes what a killed run left.
    """
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"thirtyone-run-{digest}"


def launch_of(store: TournamentStore, entry: BotEntry) -> BotLaunch:
    """How to start a submitted bot, relative to its tournament folder."""
    folder = store.folder.resolve()
    cwd = entry.cwd or str(folder)
    files = ""
    if entry.kind in ("file", "sample"):
        # Neither depends on where it was submitted from (a folder that may be gone since):
        # a file was copied into the tournament, and a sample bot is an installed module.
        cwd = str(folder)
        if entry.kind == "file":
            files = str(folder / entry.spec)
    elif entry.kind == "folder":
        cwd = files = str(folder / entry.cwd)
    return BotLaunch(
        entry.name, f"{entry.name}={entry.spec}", str(Path(cwd).resolve()), entry.kind, files, entry.sha256 or ""
    )


def pending_tasks(store: TournamentStore, only: Sequence[str] | None = None) -> tuple[list[MatchTask], int]:
    """The matches still to play (in canonical order) and the schedule's size.

    With ``only``, exactly those keys (played or not), for a deliberate re-run.
    """
    settings = store.settings
    entries = {b.name: b for b in store.bots()}
    schedule = schedule_for(settings, list(entries))
    done = store.done_keys()
    launches = {name: launch_of(store, e) for name, e in entries.items()}
    folder = store.folder.resolve()
    running = folder / "running"
    tmp_root = str(tmp_root_of(folder))
    sandbox = settings.sandbox_config(folder)
    tasks = [
        MatchTask(
            match=m,
            log_path=str(running / log_name(m.key)),
            bots=tuple(launches[n] for n in m.seats),
            settings=settings.to_dict(),
            sandbox=sandbox,
            tmp_root=tmp_root,
            output_dir=str(running / (log_name(m.key).removesuffix(".jsonl") + ".output")),
        )
        for m in schedule
        if (m.key in only if only is not None else m.key not in done)
    ]
    return tasks, len(schedule)


def outcome_to_result(outcome: Any) -> dict[str, Any]:
    """The JSON-ready summary of a :class:`referee.match.MatchOutcome` that standings need
    (under ``scoring="pot"`` each seat's net ``chips`` too)."""
    seats = []
    chips = tuple(getattr(outcome, "chips", ()))
    for s in outcome.seats:
        lives = sum(r.lives_lost.get(s.seat, 0) for r in outcome.rounds)
        rounds_in = sum(1 for r in outcome.rounds if s.seat in r.hands)
        faults: dict[str, int] = {}
        for f in s.faults:
            faults[f.kind] = faults.get(f.kind, 0) + 1
        seats.append(
            {
                "bot": s.label,
                "placing": s.placing,
                "lives_lost": lives,
                "rounds": rounds_in,
                "faults": faults,
                "forfeited": s.forfeited,
                "decisions": s.stats.decisions,
                "total_latency_us": s.stats.total_latency_us,
                "max_latency_us": s.stats.max_latency_us,
                # Only when there were any, as in the log: rows of matches without stay as they were.
                **({"late": s.stats.late} if s.stats.late else {}),
                **({"chips": chips[s.seat]} if chips else {}),
            }
        )
    return {
        "placings": list(outcome.placings),
        "winner": outcome.winner,
        "reason": outcome.reason,
        "rounds": len(outcome.rounds),
        "seats": seats,
    }


def with_absent(names: Sequence[str], played: dict[str, Any] | None, present: Sequence[int], why: dict[int, str]) -> dict[str, Any]:
    """The result of a whole table from the result among the ``present`` seats (None when
    fewer than two played): every absent seat forfeits (with a ``start`` fault unless it was
    disqualified) and shares the place below every present seat."""
    n_present = len(present)
    last = n_present + 1 if n_present else 1
    seats: list[dict[str, Any]] = []
    placings: list[int] = []
    for s, name in enumerate(names):
        if s in why:
            seats.append(
                {
                    # A disqualified bot forfeits without a new fault: it was not asked to start.
                    "bot": name, "placing": last, "lives_lost": 0, "rounds": 0,
                    "faults": {} if why[s] == "disqualified" else {START_FAULT: 1},
                    "forfeited": True, "decisions": 0, "total_latency_us": 0, "max_latency_us": 0, "absent": why[s],
                }
            )
            placings.append(last)
        elif played is None:  # the only seat present wins without playing
            seats.append(
                {
                    "bot": name, "placing": 1, "lives_lost": 0, "rounds": 0, "faults": {}, "forfeited": False,
                    "decisions": 0, "total_latency_us": 0, "max_latency_us": 0,
                }
            )
            placings.append(1)
        else:
            seat = dict(played["seats"][present.index(s)])
            seats.append(seat)
            placings.append(int(seat["placing"]))
    if played is None:
        winner = present[0] if n_present == 1 else None
        return {"placings": placings, "winner": winner, "reason": "absent", "rounds": 0, "seats": seats}
    w = played["winner"]
    return {
        "placings": placings,
        "winner": present[w] if w is not None else None,
        "reason": played["reason"],
        "rounds": played["rounds"],
        "seats": seats,
    }


def describe_error(e: BaseException) -> str:
    """An error of the infrastructure, said plainly (a full disk says so)."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full ({e.filename or 'writing'}): free some space and run again"
    if isinstance(e, MemoryError):
        return "the referee ran out of memory"
    return f"{type(e).__name__}: {e}"


def match_limit_s(settings: TournamentSettings) -> float:
    """The longest a match can take once its bots are up: every decision the rules allow
    at its full budget and grace, every seat's bank, plus a margin (10% and 5 s)."""
    r, tc = settings.rules, settings.time_control
    decisions = r.max_rounds * r.max_turns_per_round * 2  # a turn is at most two decisions
    per_decision = (tc.budget_ms + tc.grace_ms) / 1000
    return 1.1 * (decisions * per_decision + settings.table_size * tc.bank_ms / 1000) + LIMIT_MARGIN_S


def startup_limit_s() -> float:
    """The longest a worker may take to start a match's bots (they start at once)."""
    # Identity may take another second after the health check's timeout (client.start_bot).
    return STARTUP_TIMEOUT_S + 1.0 + 2 * LIMIT_MARGIN_S


# ---------------------------------------------------------------- the worker


def _watch_parent(parent: int) -> None:
    # A worker whose runner was killed (kill -9) must not live on: exiting closes the
    # referee's watchdog pipe, which stops this worker's bots too.
    while True:
        time.sleep(0.2)
        if os.getppid() != parent:
            os._exit(3)


def _launcher_for(task: MatchTask, *, idle: bool = False) -> LocalLauncher:
    """The launcher of a task's bots: the one place where how bots are run is decided
    (``idle``: spares, see :class:`Spare`)."""
    return LocalLauncher(tmp_root=task.tmp_root, sandbox=task.sandbox, idle=idle)


async def _start(b: BotLaunch, launcher: LocalLauncher) -> BotHandle:
    from referee.bots import start_bot
    from referee.tournament.submit import launch_spec

    # The copied files are checked first: a bot whose files changed is refused, not run. In a
    # thread, as is the sandbox's one-time probe (it starts a sandbox): the event loop keeps
    # its heartbeat going whatever the disk or the machine's load make them cost.
    spec = await asyncio.to_thread(
        launch_spec, b.spec, b.cwd, kind=b.kind, files=b.files, sha256=b.sha256, name=b.name
    )
    if launcher.sandbox is not None:
        await asyncio.to_thread(probe)
    return await start_bot(spec, startup_timeout_s=STARTUP_TIMEOUT_S, launcher=launcher)


def _keep_output(handle: BotHandle, path: str | None) -> None:
    from referee.bots.process import LocalBotProcess

    if isinstance(handle.process, LocalBotProcess):
        handle.process.keep_output(path, BOT_OUTPUT_BYTES)


@dataclass(eq=False)
class Spare:
    """A bot process started while a match plays, for a later match of the worker's.

    It is idle until taken (its launcher's :attr:`~referee.bots.process.LocalLauncher.idle`):
    it gets CPU only as the match's bots leave it, so that neither its start nor anything it
    does meanwhile slows the match in play, which a bot could otherwise turn against the
    bots it plays. Awaiting it takes it: its weight is a working bot's from then on, the
    rest of its start included.
    """

    task: asyncio.Task[BotHandle]
    launcher: LocalLauncher

    def __await__(self) -> Generator[Any, None, BotHandle]:
        self.launcher.wake()
        return self.task.__await__()


#: A worker's spare bot processes, by bot name: started while a match plays, for the next.
Spares: TypeAlias = dict[str, Spare]


async def _discard(spare: Spare) -> None:
    """Stop a spare that will not be used, started or still starting."""
    task = spare.task
    task.cancel()
    try:
        h = await task
    except BaseException:  # cancelled, or it failed to start: nothing is left running
        if not task.done():  # this coroutine itself was cancelled: pass that on
            raise
        return
    await h.close()


async def discard_spares(spares: Spares, keep: Iterable[str] = ()) -> None:
    """Stop the spares whose bots are not in ``keep``."""
    kept = set(keep)
    names = [n for n in spares if n not in kept]
    await asyncio.gather(*(_discard(spares.pop(n)) for n in names))


async def _start_fresh(b: BotLaunch, launcher: LocalLauncher, spares: Spares) -> BotHandle:
    """The bot's spare if it has one that came up (waiting for it if it is still starting),
    else a bot started now."""
    from referee.faults import BotError

    spare = spares.pop(b.name, None)
    if spare is not None:
        try:
            h = await spare
        except BotError:
            pass  # started again below: a bot that cannot start says why there
        else:
            if h.alive and not h.deals:
                return h
            await h.close()
    return await _start(b, launcher)


async def _play_task(
    task: MatchTask, handles: dict[str, BotHandle], send: Callable[[object], None], spares: Spares | None = None
) -> TaskResult:
    """Play one task with the worker's running bots (``handles``, updated: started, started
    again, stopped), and its spares, if it keeps any."""
    from referee.faults import BotError
    from referee.match import MatchConfig, play_match

    key = task.match.key
    started = time.monotonic()
    launcher = _launcher_for(task)
    # Spares only for a caller that keeps them (the local pool's worker): none would stop them.
    keeps_spares = spares is not None
    spares = {} if spares is None else spares
    await discard_spares(spares, keep=(b.name for b in task.bots if b.name not in task.absent))
    why: dict[int, str] = {}
    to_start: list[BotLaunch] = []
    for s, b in enumerate(task.bots):
        if b.name in task.absent:
            why[s] = "disqualified"
            continue
        h = handles.get(b.name)
        if h is not None and (not h.alive or _remembers(h, task.match.seed)):
            await h.close()
            del handles[b.name]
        if b.name in handles:
            handles[b.name] = handles.pop(b.name)  # the most recently used last
        elif b not in to_start:
            to_start.append(b)
    await _evict(handles, len(to_start), {b.name for b in task.bots})
    t0 = time.monotonic()
    outcomes = await asyncio.gather(*(_start_fresh(b, launcher, spares) for b in to_start), return_exceptions=True)
    startup = time.monotonic() - t0 if to_start else 0.0
    failures: dict[str, str] = {}
    for b, got in zip(to_start, outcomes, strict=True):
        if isinstance(got, BotError):
            failures[b.name] = _short(str(got))
        elif isinstance(got, BaseException):
            raise got
        else:
            handles[b.name] = got
    for s, b in enumerate(task.bots):
        if b.name in failures:
            why[s] = f"could not start: {failures[b.name]}"
    present = [s for s in range(len(task.bots)) if s not in why]
    names = [b.name for b in task.bots]
    ok_names = tuple(names[s] for s in present)
    players = [handles[names[s]] for s in present]
    # At work until the match ends; idle (a spare's weight) before and after it.
    _set_idle(players, False)
    send(("started", key))
    if len(present) < 2:
        _set_idle(players, True)
        return TaskResult(
            key, True, with_absent(names, None, present, why), "", time.monotonic() - started, startup,
            start_failures=failures, started=ok_names, has_log=False,
        )
    settings = TournamentSettings.from_dict(task.settings)
    config = MatchConfig(settings.rules, settings.time_control, settings.fault_policy, settings.max_strikes)  # type: ignore[arg-type]
    for h in players:
        # Before the first card: a match that fails halfway has still shown some of the deal.
        h.deals.add(task.match.seed)
    for b in task.bots:
        # Started while this match plays, on the cores its ping-pong leaves idle, so that the
        # next match need not wait for them.
        if keeps_spares and b.name in task.prestart and b.name in handles and b.name not in spares:
            idle = _launcher_for(task, idle=True)
            spares[b.name] = Spare(asyncio.create_task(_start(b, idle)), idle)
    if task.output_dir:
        os.makedirs(task.output_dir, mode=0o700, exist_ok=True)
    # Named by the seat in the match played (the log's seat), which is what a replay shows.
    for i, (s, h) in enumerate(zip(present, players, strict=True)):
        _keep_output(h, os.path.join(task.output_dir, output_file_name(i, names[s])) if task.output_dir else None)
    try:
        outcome = await play_match(players, seed=task.match.seed, config=config, log_path=task.log_path, match_id=key)
    finally:
        _set_idle(players, True)
        for h in players:
            if h.process is not None and h.exit_code() is not None:
                # A bot that died: its last words may still be in the pipe.
                await h.process.output_closed(0.5)
            _keep_output(h, None)
    played = outcome_to_result(outcome)
    result = with_absent(names, played, present, why) if why else played
    return TaskResult(
        key, True, result, "", time.monotonic() - started, startup, start_failures=failures, started=ok_names
    )


def _set_idle(handles: Iterable[BotHandle], idle: bool) -> None:
    """Mark the worker's bots idle between their matches, or at work in one (see
    :meth:`~referee.bots.process.LocalBotProcess.set_idle`): a bot kept running gets CPU
    only as the bots at work leave it while it is not playing."""
    from referee.bots.process import LocalBotProcess

    for h in handles:
        if isinstance(h.process, LocalBotProcess):
            h.process.set_idle(idle)


def _remembers(handle: BotHandle, seed: int) -> bool:
    """Whether ``handle``'s process has played the deal ``seed`` and so may know its cards.

    The rotations of a deal deal the same cards to other seats (duplicate deals), and a bot
    kept running could remember in one rotation what it saw in another: whose hand it held,
    which cards the stock gave. So a bot process is seated at one match of a deal at most; for
    another it is started again, with nothing of the last one's memory (the sandbox gives each
    start a new scratch folder). A bot at an address is not ours to restart: whoever runs it
    decides what it keeps.
    """
    return handle.process is not None and seed in handle.deals


async def _evict(handles: dict[str, BotHandle], starting: int, needed: set[str]) -> None:
    """Stop the least recently used bots beyond :data:`MAX_KEPT_BOTS` (with ``starting``
    about to start), never one that ``needed`` names: a worker of a ladder of many versions
    would otherwise keep every bot it ever started running."""
    from referee.bots import close_bots

    spare = [name for name in handles if name not in needed]
    over = len(handles) + starting - MAX_KEPT_BOTS
    if over > 0 and spare:
        await close_bots([handles.pop(name) for name in spare[:over]])


#: Longest text a worker sends about one failure. Messages stay a few KiB, so that each goes
#: down the pipe in one write: a worker stopped mid-message cannot leave the parent reading.
MAX_MESSAGE_TEXT = 600


def _short(text: str) -> str:
    # Head and tail: a start failure's message ends with the bot's last output.
    half = MAX_MESSAGE_TEXT // 2
    return text if len(text) <= MAX_MESSAGE_TEXT else text[:half] + " … " + text[-half:]


async def _heartbeat(conn: Connection, key: str) -> None:
    """Tell the runner, from the event loop, that this worker is alive and not stuck."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        with contextlib.suppress(OSError):
            conn.send(("alive", key))


async def _worker_loop(conn: Connection) -> None:
    # What every match needs, imported before the worker says it is up: an import holds the
    # event loop (and so the heartbeat), and costs seconds on a loaded machine.
    import referee.match  # noqa: F401
    from referee.bots import close_bots

    handles: dict[str, BotHandle] = {}
    spares: Spares = {}
    loop = asyncio.get_running_loop()
    # The pipe is read when the loop sees it readable: a thread blocked in recv() would keep
    # the worker from exiting when it is told to stop.
    readable = asyncio.Event()
    loop.add_reader(conn.fileno(), readable.set)
    with contextlib.suppress(OSError):
        conn.send(("ready", ""))
    try:
        while True:
            await readable.wait()
            readable.clear()
            if not conn.poll():
                continue
            try:
                task: MatchTask | None = conn.recv()
            except EOFError:
                return
            if task is None:
                return
            started = time.monotonic()
            beats = asyncio.create_task(_heartbeat(conn, task.match.key))
            try:
                r = await _play_task(task, handles, conn.send, spares)
            except Exception as e:  # the infrastructure's: recorded, and the match is played again
                r = TaskResult(task.match.key, False, {}, _short(describe_error(e)), time.monotonic() - started, infra=True)
            finally:
                beats.cancel()
            conn.send(("result", r))
    finally:
        loop.remove_reader(conn.fileno())
        await asyncio.gather(close_bots(list(handles.values())), discard_spares(spares))


def _worker_main(conn: Connection, parent: int, probed: SandboxStatus | None = None) -> None:
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if probed is not None:
        probe.adopt(probed)
    # Ctrl-C reaches the whole foreground group; the parent decides what happens, and
    # terminates workers itself, so a worker ignores SIGINT and stops cleanly on SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with asyncio.Runner() as runner:
        main = runner.get_loop().create_task(_worker_loop(conn))
        runner.get_loop().add_signal_handler(signal.SIGTERM, main.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            runner.run(_await(main))


async def _await(task: asyncio.Task[None]) -> None:
    await task


@dataclass(slots=True)
class _Slot:
    """One worker process and what it is doing."""

    process: Any
    conn: Connection
    task: MatchTask | None = None
    deadline: float = 0.0
    #: When the worker counts as stuck if it has said nothing since (heartbeats reset it).
    quiet_deadline: float = 0.0
    #: The bots the worker has running, as far as the parent knows, least recently used first.
    bots: dict[str, None] = field(default_factory=dict)
    #: The deal seeds each of those bots has played (the worker starts one again for any of
    #: them: :func:`_remembers`).
    deals: dict[str, set[int]] = field(default_factory=dict)
    #: The group (table) of tasks it plays, while that has tasks left.
    group: tuple[str, ...] | None = None
    #: Whether the worker has said it is up (its imports done, its event loop running).
    up: bool = False

    def note(self, task: MatchTask, r: TaskResult) -> None:
        """What a finished task tells of the bots the worker keeps (see :func:`_evict`)."""
        for b in task.bots:
            self.bots.pop(b.name, None)
            seen = self.deals.pop(b.name, set())
            if b.name in r.started:
                self.bots[b.name] = None
                self.deals[b.name] = seen
        self.deals.update(self.deals_after(task, only=r.started))
        while len(self.bots) > MAX_KEPT_BOTS:
            self.deals.pop(next(iter(self.bots)), None)
            del self.bots[next(iter(self.bots))]

    def deals_after(self, task: MatchTask, only: Iterable[str] | None = None) -> dict[str, set[int]]:
        """The deals ``task``'s bots (those in ``only``) will have played once it is played, as
        the worker decides (_play_task): a bot that had played its deal is started again and
        remembers this match only."""
        seed = task.match.seed
        chosen = None if only is None else set(only)
        names = [b.name for b in task.bots if chosen is None or b.name in chosen]
        return {n: (self.deals[n] if n in self.deals and seed not in self.deals[n] else set()) | {seed} for n in names}

    def fresh(self, task: MatchTask, deals: dict[str, set[int]] | None = None) -> bool:
        """Whether ``task`` needs no bot this worker has running started again for its deal
        (with ``deals``, the deals its bots will have played by then)."""
        deals = self.deals if deals is None else deals
        return not any(task.match.seed in deals.get(b.name, ()) for b in task.bots)


class _Plan:
    """The tasks not yet handed out, and which one a free worker plays next.

    Starting a bot costs far more than a decision, and a worker keeps its bots running from
    one match to the next. So the tasks are grouped by table (the bots they seat, in the
    feed's order within a group), and a worker plays on at the table it is at while that has
    tasks: the first of its tasks, among the first :data:`PLAN_DEAL_SCAN`, whose deal its bots
    have not played (another rotation of a deal they played would need them started again,
    :func:`_remembers`), or else the first; then it moves to the table, among the
    first :data:`PLAN_LOOKAHEAD` that no other worker is at, whose bots it has most of
    running (the first of those in the feed's order). Only when every table with tasks left
    has a worker does it join one, so that the last table is shared rather than waited for.
    Retries come first, in the order they failed. Which worker plays a match, and when,
    changes nothing of its result: its seed and seats are the schedule's.

    ``keep_order`` plays the feed as it comes instead (an SPRT test counts its deals in
    order, and stops at a deal boundary), as one group: a worker skips only the tasks whose
    deal its bots have played, so it runs at most :data:`PLAN_ORDER_SCAN` tasks ahead. A lazy
    feed (the ladder's) is read only when no table is free: each read may schedule a new table.
    """

    def __init__(self, feed: Iterator[MatchTask], *, keep_order: bool = False, scheduled: bool = True) -> None:
        self._feed = feed
        self._keep_order = keep_order
        #: The feed is a schedule made in advance (a tournament's), which may be read ahead
        #: for a task whose deal a worker's bots have not played; a lazy feed (the ladder's)
        #: makes each task when it is read, from what it knows then, and is not.
        self._scheduled = scheduled
        #: How far into a group a worker looks for such a task.
        self._scan = PLAN_ORDER_SCAN if keep_order else PLAN_DEAL_SCAN
        self.exhausted = False
        self.retries: deque[MatchTask] = deque()
        self._groups: dict[tuple[str, ...], deque[MatchTask]] = {}

    def __bool__(self) -> bool:
        return bool(self.retries or self._groups)

    def _key(self, t: MatchTask) -> tuple[str, ...]:
        return () if self._keep_order else t.match.table

    def _read(self) -> tuple[str, ...] | None:
        """One more task from the feed into its group; its group's key (None: the feed ended)."""
        if self.exhausted:
            return None
        t = next(self._feed, None)
        if t is None:
            self.exhausted = True
            return None
        key = self._key(t)
        self._groups.setdefault(key, deque()).append(t)
        return key

    def _pop(self, key: tuple[str, ...], slot: _Slot) -> MatchTask:
        # The first of the group whose deal the worker's bots have not played, among the
        # first few: a worker's bots play one rotation of each deal and leave the others to
        # other workers, or to bots it starts later (_remembers). Only when none is near the
        # front does it take the first, starting those bots again.
        i = self._first_fresh(key, slot)
        group = self._groups[key]
        t = group[i or 0]
        del group[i or 0]
        if not group:
            del self._groups[key]
        return t

    def _fresh(self, key: tuple[str, ...], slot: _Slot, deals: dict[str, set[int]] | None = None) -> Iterator[int]:
        """Where in its group are the tasks, of the first few (:data:`PLAN_DEAL_SCAN`,
        :data:`PLAN_ORDER_SCAN`), that need none of ``slot``'s bots started again (with
        ``deals``, once they have played those; see :meth:`_Slot.fresh`). A schedule is read
        on, as more are asked for, while it holds more of this table."""
        group = self._groups[key]
        k = 0
        while k < self._scan:
            if k == len(group) and not (self._scheduled and self._read() == key):
                return
            if slot.fresh(group[k], deals):
                yield k
            k += 1

    def _first_fresh(self, key: tuple[str, ...], slot: _Slot) -> int | None:
        """The first of :meth:`_fresh`, if any."""
        return next(self._fresh(key, slot), None)

    def restarts_after(self, slot: _Slot, task: MatchTask) -> tuple[str, ...]:
        """The bots of ``task``, just handed to ``slot``, that the worker will soon have to
        start again, as far as the plan can tell now: when its bots, after this task, have at
        most :data:`PRESTART_AHEAD` deals of the table left that they have not played. (A
        lazy feed's next task is not read yet: while the match's table has a rotation left,
        the worker will need its bots again for it, after the same rotation of the rest of
        the ladder's series, if any, for which the spares wait, idle.)"""
        key = self._key(task)
        after = {**slot.deals, **slot.deals_after(task)}
        if key not in self._groups and self._scheduled:
            self._read()  # a schedule's next task may be this table's
        if key not in self._groups:
            if self._scheduled or self.exhausted or task.match.rotation + 1 >= len(task.match.seats):
                return ()  # the table is done: the worker moves to another
            return tuple(b.name for b in task.bots)
        group = self._groups[key]
        # The bots play one match of each deal they have not played: the matches they have left.
        left: set[int] = set()
        for k in self._fresh(key, slot, after):
            left.add(group[k].match.seed)
            if len(left) > PRESTART_AHEAD:
                return ()
        return tuple(b.name for b in task.bots if b.name in after and any(t.match.seed in after[b.name] for t in group))

    def take(self, slot: _Slot, others: Iterable[_Slot]) -> MatchTask | None:
        """The next task for the free worker ``slot`` (None: nothing is left to hand out)."""
        if self.retries:
            return self.retries.popleft()
        if slot.group is not None and slot.group in self._groups:
            return self._pop(slot.group, slot)
        taken = {o.group for o in others if o.group is not None}
        reads = 0
        while not any(k not in taken for k in self._groups) and reads < PLAN_READ_AHEAD:
            key = self._read()
            reads += 1
            if key is None:
                break
            if key == slot.group:  # the feed held more of this worker's table
                return self._pop(key, slot)
        if not self._groups:
            return None
        # The other workers' tables do not count toward the look-ahead: they are never free.
        first = list(itertools.islice(self._groups, PLAN_LOOKAHEAD + len(taken)))
        free = [k for k in first if k not in taken] or first

        def missing(key: tuple[str, ...]) -> int:
            return sum(1 for b in self._groups[key][0].bots if b.name not in slot.bots)

        key = min(free, key=missing)  # min keeps the first of equals: the feed's order
        slot.group = key
        return self._pop(key, slot)


class LocalPool:
    """The default executor: ``jobs`` worker processes on this machine."""

    def __init__(
        self,
        jobs: int,
        *,
        match_limit_s: float | None = None,
        silence_limit_s: float = SILENCE_LIMIT_S,
        keep_order: bool = False,
        boot_limit_s: float = BOOT_LIMIT_S,
    ) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        self.jobs = jobs
        #: Hand the tasks out in the order given, rather than table by table (see :class:`_Plan`).
        self.keep_order = keep_order
        #: Seconds a match may take once its bots are up (default: from its settings).
        self.match_limit_s = match_limit_s
        #: Seconds a worker playing a match may go without a word before it counts as stuck.
        self.silence_limit_s = silence_limit_s
        #: Seconds a worker just spawned may take to say it is up.
        self.boot_limit_s = boot_limit_s

    def _spawn(self, ctx: Any) -> _Slot:
        mine, theirs = ctx.Pipe(duplex=True)
        # What the sandbox's probe found here holds for the worker too: same machine, same user.
        p = ctx.Process(target=_worker_main, args=(theirs, os.getpid(), probe.known()), daemon=False)
        p.start()
        theirs.close()
        return _Slot(p, mine)

    def run(self, tasks: Iterable[MatchTask], prepare: Callable[[MatchTask], MatchTask] | None = None) -> Iterator[TaskResult]:
        """Play ``tasks`` on the pool, yielding results as they come (see the module doc).

        ``tasks`` may be any iterable: it is read lazily, one task each time a worker is
        free, so a feed that never ends (the arena's ladder) keeps the pool busy with tasks
        chosen from the latest results. The run ends when the feed is exhausted and every
        task it gave has finished.
        """
        todo = _Plan(iter(tasks), keep_order=self.keep_order, scheduled=isinstance(tasks, Sized))
        if todo._read() is None:
            return

        # spawn, not fork: gRPC's threads do not survive a fork.
        ctx = mp.get_context("spawn")
        attempts: dict[str, int] = {}
        sent: dict[str, MatchTask] = {}
        n = min(self.jobs, len(tasks)) if isinstance(tasks, Sized) else self.jobs
        slots = [self._spawn(ctx) for _ in range(n)]
        finished = False
        try:
            while todo or not todo.exhausted or any(s.task is not None for s in slots):
                for s in slots:
                    if s.task is None:
                        t = todo.take(s, (o for o in slots if o is not s))
                        if t is None:
                            continue
                        t = prepare(t) if prepare is not None else t
                        t = dataclasses.replace(t, prestart=todo.restarts_after(s, t))
                        s.task = t
                        sent[t.match.key] = t
                        # A worker still booting is judged by its boot limit; once up, its
                        # clocks restart ("ready" below).
                        boot = 0.0 if s.up else self.boot_limit_s
                        s.deadline = time.monotonic() + boot + startup_limit_s()
                        s.quiet_deadline = time.monotonic() + (self.silence_limit_s if s.up else boot)
                        attempts[t.match.key] = attempts.get(t.match.key, 0) + 1
                        with contextlib.suppress(OSError):  # a dead worker: its sentinel says so below
                            s.conn.send(t)
                busy = [s for s in slots if s.task is not None]
                if not busy:
                    continue  # the feed just ended (or retries are queued): the loop condition decides
                timeout = max(0.0, min(min(s.deadline, s.quiet_deadline) for s in busy) - time.monotonic())
                ready = set(wait([s.conn for s in busy] + [s.process.sentinel for s in slots], timeout))
                for i, s in enumerate(slots):
                    failure = ""
                    if s.conn in ready:
                        try:
                            kind, payload = s.conn.recv()
                        except (EOFError, OSError):
                            failure = f"a worker process died ({_exit_text(s.process)})"
                        else:
                            s.quiet_deadline = time.monotonic() + self.silence_limit_s
                            if kind == "alive":
                                pass
                            elif kind == "ready":
                                s.up = True
                                s.deadline = time.monotonic() + startup_limit_s()
                            elif kind == "started":
                                s.deadline = time.monotonic() + (self.match_limit_s or _limit_of(s.task))
                            else:
                                done, s.task = s.task, None
                                r: TaskResult = payload
                                if done is not None:
                                    s.note(done, r)
                                if r.infra:
                                    r = self._retry(r, attempts, todo.retries, sent)
                                yield r
                            continue
                    elif s.process.sentinel in ready:
                        failure = f"a worker process died ({_exit_text(s.process)})"
                    elif s.task is not None and time.monotonic() >= s.deadline:
                        failure = "a worker did not finish the match in time (stopped or stuck); it was killed"
                    elif s.task is not None and time.monotonic() >= s.quiet_deadline:
                        failure = (
                            f"a worker said nothing for {self.silence_limit_s:g} s (stopped or stuck); it was killed"
                            if s.up
                            else f"a worker did not come up within {self.boot_limit_s:g} s (stopped or stuck); it was killed"
                        )
                    if not failure:
                        continue
                    task = s.task
                    _kill(s)
                    slots[i] = self._spawn(ctx)
                    if task is not None:
                        r = TaskResult(task.match.key, False, {}, failure, infra=True)
                        yield self._retry(r, attempts, todo.retries, sent, task)
            finished = True
        finally:
            _stop_all(slots, clean=finished)

    @staticmethod
    def _retry(
        r: TaskResult, attempts: dict[str, int], todo: deque[MatchTask], sent: dict[str, MatchTask], task: MatchTask | None = None
    ) -> TaskResult:
        if attempts.get(r.key, 0) >= MAX_ATTEMPTS:
            return r
        original = task or sent[r.key]
        # Next rather than last: an SPRT test counts deals in order, and would wait for it.
        todo.append(original)
        return dataclasses.replace(r, retrying=True)


def _limit_of(task: MatchTask | None) -> float:
    assert task is not None
    return match_limit_s(TournamentSettings.from_dict(task.settings))


def _exit_text(p: Any) -> str:
    p.join(timeout=0.5)
    code = p.exitcode
    if code is None:
        return "it closed its pipe"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def _kill(s: _Slot) -> None:
    # SIGKILL works on a stopped process too; the worker's watchdog then stops its bots.
    with contextlib.suppress(OSError):
        s.process.kill()
    s.process.join(timeout=5)
    s.conn.close()


def _stop_all(slots: list[_Slot], *, clean: bool) -> None:
    """Stop every worker within about :data:`STOP_WORKERS_S` seconds, whatever state it is in."""
    for s in slots:
        with contextlib.suppress(OSError, ValueError):
            if clean:
                s.conn.send(None)  # idle workers: a small message that never blocks
            else:
                s.process.terminate()  # SIGTERM: the worker closes its bots and logs
    deadline = time.monotonic() + (5.0 if clean else STOP_WORKERS_S)
    for s in slots:
        s.process.join(timeout=max(0.0, deadline - time.monotonic()))
    for s in slots:
        if s.process.is_alive():
            s.process.kill()
            s.process.join(timeout=5)
        s.conn.close()


# ---------------------------------------------------------------- the run


@dataclass(slots=True)
class RunReport:
    """What a run did."""

    played: int = 0
    #: Matches not played: key and why (all of them the infrastructure's, played next run).
    failed: list[tuple[str, str]] = field(default_factory=list)
    total: int = 0
    already_done: int = 0
    seconds: float = 0.0
    startup_s: float = 0.0
    match_s: float = 0.0
    #: Bots disqualified during this run: name -> reason.
    disqualified: dict[str, str] = field(default_factory=dict)
    #: Whether ``stop()`` ended the run before every pending match was played.
    stopped: bool = False


def clean_leftovers(store: TournamentStore) -> None:
    """Remove what a killed run left: logs of unfinished matches, bots' temporary folders,
    and (as root) the cgroups of bots whose referee is gone (every sandboxing launcher does
    that too, for whatever run left them).

    Called under the run lock, so nothing removed belongs to a run under way.
    """
    if os.geteuid() == 0:
        from referee.bots.sandbox import BotCgroup

        BotCgroup.remove_leftovers()
    folder = store.folder
    shutil.rmtree(folder / "running", ignore_errors=True)
    (folder / "running").mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder / "running", 0o700)  # whatever the umask
    tmp = tmp_root_of(folder)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)


def drop_uncommitted(folder: Path, keys: Iterable[str]) -> int:
    """Remove the log and the bots' output in place for these matches, which have no stored
    result; how many matches had any.

    A commit moves them out of ``running/``, then records the result: the two cannot be one
    atomic step, and a kill -9 between them leaves a log of a result that was never stored.
    The match is played again from the same seed, and its new log takes the place.
    """
    n = 0
    for key in keys:
        log = folder / "logs" / log_name(key)
        out = output_dir_of(folder, key)
        if log.exists() or out.exists():
            log.unlink(missing_ok=True)
            shutil.rmtree(out, ignore_errors=True)
            n += 1
    return n


def run_pending(
    store: TournamentStore,
    jobs: int = 1,
    *,
    executor: Executor | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
    only: Sequence[str] | None = None,
    stop: Callable[[], bool] | None = None,
) -> RunReport:
    """Play every pending match of the tournament, committing each one as it finishes.

    ``on_start(pending, total)`` is called once; ``on_result`` after each match is stored.
    With ``only``, play exactly those keys again (replacing what is stored once each is
    played). ``stop()``, asked after each result, ends the run early when true (the matches
    in flight are abandoned, as on Ctrl-C; an SPRT test stops so at its verdict). Raises
    :class:`~referee.tournament.store.StoreError` if another run holds the folder.
    """
    with store.run_lock():
        clean_leftovers(store)
        try:
            return _run_locked(store, jobs, executor, on_start, on_result, only, stop)
        finally:
            # Every worker has stopped by now; what their bots left (a worker killed, bots
            # killed by its watchdog) goes too. A hard kill of the run leaves it for the next.
            shutil.rmtree(tmp_root_of(store.folder), ignore_errors=True)


def _run_locked(
    store: TournamentStore,
    jobs: int,
    executor: Executor | None,
    on_start: Callable[[int, int], None] | None,
    on_result: Callable[[TaskResult], None] | None,
    only: Sequence[str] | None,
    stop: Callable[[], bool] | None = None,
) -> RunReport:
    tasks, total = pending_tasks(store, only)
    if only is None:
        drop_uncommitted(store.folder, [t.match.key for t in tasks])
    report = RunReport(total=total, already_done=total - len(tasks))
    if on_start is not None:
        on_start(len(tasks), total)
    settings = store.settings
    started = time.monotonic()
    by_key = {t.match.key: t for t in tasks}

    def prepare(t: MatchTask) -> MatchTask:
        # Read at dispatch: a bot disqualified a moment ago is not started again.
        out = store.disqualified()
        return dataclasses.replace(t, absent=tuple(b.name for b in t.bots if b.name in out))

    # An SPRT test counts its deals in order; other formats play table by table (see _Plan).
    results = (executor or LocalPool(jobs, keep_order=settings.format == "sprt")).run(tasks, prepare)
    # Closed explicitly: an exception in this loop (Ctrl-C) must stop the workers now, not
    # when the traceback that holds the generator is dropped.
    try:
        _consume(store, results, by_key, report, settings, only is not None, on_result, stop)
    finally:
        close: Callable[[], object] | None = getattr(results, "close", None)
        if close is not None:
            close()
    report.seconds = time.monotonic() - started
    return report


def _consume(
    store: TournamentStore,
    results: Iterator[TaskResult],
    by_key: dict[str, MatchTask],
    report: RunReport,
    settings: TournamentSettings,
    replace: bool,
    on_result: Callable[[TaskResult], None] | None,
    stop: Callable[[], bool] | None = None,
) -> None:
    for r in results:
        report.startup_s += r.startup_s
        report.match_s += r.duration_s
        if r.ok:
            with signals_deferred():
                # A Ctrl-C now waits the few milliseconds until the match is committed.
                _commit(store, by_key[r.key], r, replace=replace)
                report.played += 1
                _note_starts(store, r, settings.max_start_failures, report)
        else:
            store.record_infra_failure(r.key, r.error)
            if not r.retrying:
                report.failed.append((r.key, r.error))
        if on_result is not None:
            on_result(r)
        if stop is not None and stop():
            report.stopped = True
            return


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the block runs (a result being committed: the
    tournament runner's and the ladder's); one that comes meanwhile is delivered after it.

    Python runs every signal handler in the main thread, whichever thread the kernel gave
    the signal to, so masking the signal in the main thread does not hold it back once other
    threads run (the ladder's validation thread, gRPC's): the handlers themselves are
    swapped for one that notes the signal, then put back and the noted signals raised again.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, frame: object) -> None:
        noted.append(signum)

    held = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.signal(s, note) for s in held}
    try:
        yield
    finally:
        for s, h in before.items():
            # (None: a handler not set from Python, which cannot be put back; the default is.)
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


def _commit(store: TournamentStore, t: MatchTask, r: TaskResult, *, replace: bool) -> None:
    """Move the match's log and bots' output out of ``running/``, then record it."""
    folder = store.folder.resolve()
    m = t.match
    rel = ""
    if r.has_log:
        dest = folder / "logs" / log_name(m.key)
        os.replace(t.log_path, dest)
        rel = str(dest.relative_to(folder))
    out_dest = output_dir_of(folder, m.key)
    if replace or out_dest.exists():
        shutil.rmtree(out_dest, ignore_errors=True)
    if t.output_dir and os.path.isdir(t.output_dir):
        out_dest.parent.mkdir(exist_ok=True)
        os.replace(t.output_dir, out_dest)
    row = MatchRow(
        key=m.key,
        table_key="+".join(m.table),
        deal=m.deal,
        rotation=m.rotation,
        seed=m.seed,
        seats=m.seats,
        result=r.result,
        log_path=rel,
        finished_at=now(),
        duration_s=r.duration_s,
    )
    if replace:
        store.replace_match(row)
    else:
        store.record_match(row)


def _note_starts(store: TournamentStore, r: TaskResult, limit: int, report: RunReport) -> None:
    for name in r.started:
        store.note_start(name, ok=True)
    done = store.disqualified()
    for name, why in r.start_failures.items():
        n = store.note_start(name, ok=False)
        if n >= limit and name not in done:
            first = why.splitlines()[0] if why else "no reason given"
            reason = f"failed to start {n} time{'s' if n != 1 else ''} in a row (last: {first})"
            store.disqualify(name, reason)
            report.disqualified[name] = reason
