"""Running a tournament's pending matches in parallel, committing each as it finishes.

The executor is a pool of worker processes (the Python referee is CPU-bound, so threads
would share one core). Each worker keeps its bots running across the matches it plays
(no launch per match) and sends back one plain result per match; the parent alone writes
the database, one transaction per match. A killed run loses only the matches in flight,
which the next run plays again from the same seeds.

:class:`Executor` is the seam for growing past one machine: anything that takes
:class:`MatchTask`\\ s and yields :class:`TaskResult`\\ s can replace the local pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from referee.bots.process import LocalLauncher
from referee.bots.sandbox import SandboxConfig
from referee.tournament.schedule import ScheduledMatch, build_schedule
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import BotEntry, MatchRow, TournamentStore, now

#: Seconds a worker waits for its bots to start.
STARTUP_TIMEOUT_S = 15.0


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
    log_path: str
    bots: tuple[BotLaunch, ...]
    settings: dict[str, Any]
    #: How the bots are sandboxed (None: unsandboxed, the tournament says ``sandbox = "off"``).
    sandbox: SandboxConfig | None = None


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


class RunError(RuntimeError):
    """The executor could not play every task (e.g. a worker process was killed)."""


class Executor(Protocol):
    """Plays tasks and yields their results as they finish."""

    def run(self, tasks: Sequence[MatchTask]) -> Iterator[TaskResult]:
        """Play every task; yield each result as soon as it is known."""
        ...


def log_name(key: str) -> str:
    """The log file name of a match key (slashes do not belong in file names)."""
    return key.replace("/", "_") + ".jsonl"


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


def pending_tasks(store: TournamentStore) -> tuple[list[MatchTask], int]:
    """The matches still to play (in canonical order) and the schedule's size."""
    settings = store.settings
    entries = {b.name: b for b in store.bots()}
    schedule = build_schedule(list(entries), settings.table_size, settings.games, settings.seed)
    done = store.done_keys()
    launches = {name: launch_of(store, e) for name, e in entries.items()}
    logs = store.folder / "logs"
    sandbox = settings.sandbox_config(store.folder.resolve())
    tasks = [
        MatchTask(
            match=m,
            log_path=str((logs / log_name(m.key)).resolve()),
            bots=tuple(launches[n] for n in m.seats),
            settings=settings.to_dict(),
            sandbox=sandbox,
        )
        for m in schedule
        if m.key not in done
    ]
    return tasks, len(schedule)


def outcome_to_result(outcome: Any) -> dict[str, Any]:
    """The JSON-ready summary of a :class:`referee.match.MatchOutcome` that standings need."""
    seats = []
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
            }
        )
    return {
        "placings": list(outcome.placings),
        "winner": outcome.winner,
        "reason": outcome.reason,
        "rounds": len(outcome.rounds),
        "seats": seats,
    }


# ---------------------------------------------------------------- the worker


def _watch_parent(parent: int) -> None:
    # A worker whose runner was killed (kill -9) must not live on: exiting closes the
    # referee's watchdog pipe, which stops this worker's bots too.
    while True:
        time.sleep(0.2)
        if os.getppid() != parent:
            os._exit(3)


def _launcher_for(task: MatchTask) -> LocalLauncher:
    """How a worker starts the bots of ``task``: sandboxed as the tournament says."""
    return LocalLauncher(sandbox=task.sandbox)


async def _worker_loop(tasks: Any, results: Any) -> None:
    from referee.bots import BotHandle, close_bots, start_bot
    from referee.faults import BotError
    from referee.match import MatchConfig, play_match
    from referee.tournament.submit import launch_spec

    handles: dict[str, BotHandle] = {}
    loop = asyncio.get_running_loop()
    try:
        while True:
            task: MatchTask | None = await loop.run_in_executor(None, tasks.get)
            if task is None:
                return
            started = time.monotonic()
            startup = 0.0
            try:
                for b in task.bots:
                    h = handles.get(b.name)
                    if h is not None and not h.alive:
                        await h.close()
                        h = None
                    if h is None:
                        t0 = time.monotonic()
                        spec = launch_spec(b.spec, b.cwd, kind=b.kind, files=b.files, sha256=b.sha256, name=b.name)
                        h = await start_bot(spec, startup_timeout_s=STARTUP_TIMEOUT_S, launcher=_launcher_for(task))
                        startup += time.monotonic() - t0
                        handles[b.name] = h
                settings = TournamentSettings.from_dict(task.settings)
                config = MatchConfig(settings.rules, settings.time_control, settings.fault_policy, settings.max_strikes)  # type: ignore[arg-type]
                outcome = await play_match(
                    [handles[b.name] for b in task.bots],
                    seed=task.match.seed,
                    config=config,
                    log_path=task.log_path,
                    match_id=task.match.key,
                )
                results.put(
                    TaskResult(task.match.key, True, outcome_to_result(outcome), "", time.monotonic() - started, startup)
                )
            except BotError as e:
                results.put(TaskResult(task.match.key, False, {}, str(e), time.monotonic() - started, startup))
            except Exception as e:  # reported, and the match is played again next run
                err = f"{type(e).__name__}: {e}"
                results.put(TaskResult(task.match.key, False, {}, err, time.monotonic() - started, startup))
    finally:
        await close_bots(list(handles.values()))


def _worker_main(tasks: Any, results: Any, parent: int) -> None:
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    # Ctrl-C reaches the whole foreground group; the parent decides what happens, and
    # terminates workers itself, so a worker ignores SIGINT and stops cleanly on SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with asyncio.Runner() as runner:
        main = runner.get_loop().create_task(_worker_loop(tasks, results))
        runner.get_loop().add_signal_handler(signal.SIGTERM, main.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            runner.run(_await(main))


async def _await(task: asyncio.Task[None]) -> None:
    await task


class LocalPool:
    """The default executor: ``jobs`` worker processes on this machine."""

    def __init__(self, jobs: int) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        self.jobs = jobs

    def run(self, tasks: Sequence[MatchTask]) -> Iterator[TaskResult]:
        """Play ``tasks`` on the pool, yielding results as they come."""
        if not tasks:
            return
        # spawn, not fork: gRPC's threads do not survive a fork.
        ctx = mp.get_context("spawn")
        task_q: Any = ctx.Queue()
        result_q: Any = ctx.Queue()
        n = min(self.jobs, len(tasks))
        for t in tasks:
            task_q.put(t)
        for _ in range(n):
            task_q.put(None)
        workers = [ctx.Process(target=_worker_main, args=(task_q, result_q, os.getpid()), daemon=False) for _ in range(n)]
        for w in workers:
            w.start()
        got = 0
        try:
            while got < len(tasks):
                try:
                    r: TaskResult = result_q.get(timeout=0.5)
                except queue.Empty:
                    if not any(w.is_alive() for w in workers):
                        codes = ", ".join(str(w.exitcode) for w in workers)
                        raise RunError(
                            f"the tournament's workers stopped with {len(tasks) - got} match(es) not played "
                            f"(exit codes {codes}; a negative code is the signal that killed one); "
                            "the finished matches are saved: run again to play the rest"
                        ) from None
                    continue
                got += 1
                yield r
        finally:
            for w in workers:
                if w.is_alive() and got < len(tasks):
                    w.terminate()  # SIGTERM: the worker closes its bots and logs
            for w in workers:
                w.join(timeout=10)
                if w.is_alive():
                    w.kill()
                    w.join()


@dataclass(slots=True)
class RunReport:
    """What a run did."""

    played: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    total: int = 0
    already_done: int = 0
    seconds: float = 0.0
    startup_s: float = 0.0
    match_s: float = 0.0


def run_pending(
    store: TournamentStore,
    jobs: int = 1,
    *,
    executor: Executor | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> RunReport:
    """Play every pending match of the tournament, committing each one as it finishes.

    ``on_start(pending, total)`` is called once; ``on_result`` after each match is stored.
    Raises :class:`~referee.tournament.store.StoreError` if another run holds the folder.
    """
    with store.run_lock():
        return _run_locked(store, jobs, executor, on_start, on_result)


def _run_locked(
    store: TournamentStore,
    jobs: int,
    executor: Executor | None,
    on_start: Callable[[int, int], None] | None,
    on_result: Callable[[TaskResult], None] | None,
) -> RunReport:
    tasks, total = pending_tasks(store)
    report = RunReport(total=total, already_done=total - len(tasks))
    if on_start is not None:
        on_start(len(tasks), total)
    started = time.monotonic()
    by_key = {t.match.key: t for t in tasks}
    for r in (executor or LocalPool(jobs)).run(tasks):
        report.startup_s += r.startup_s
        report.match_s += r.duration_s
        if r.ok:
            t = by_key[r.key]
            m = t.match
            store.record_match(
                MatchRow(
                    key=m.key,
                    table_key="+".join(m.table),
                    deal=m.deal,
                    rotation=m.rotation,
                    seed=m.seed,
                    seats=m.seats,
                    result=r.result,
                    log_path=str(Path(t.log_path).relative_to(store.folder.resolve())),
                    finished_at=now(),
                    duration_s=r.duration_s,
                )
            )
            report.played += 1
        else:
            report.failed.append((r.key, r.error))
        if on_result is not None:
            on_result(r)
    report.seconds = time.monotonic() - started
    return report
