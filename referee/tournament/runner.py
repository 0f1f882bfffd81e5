"""Running a tournament's pending matches, committing each as it finishes.

The run reads the matches still to play, hands them to an executor (by default the local
pool, :class:`~referee.tournament.pool.LocalPool`), and alone writes the database, one
transaction per match, with SIGINT and SIGTERM held back while a result is committed
(:func:`signals_deferred`). A killed run loses only the matches in flight, which the next run
plays again from the same seeds, once it has cleaned up what the killed run left.

After ``max_start_failures`` failures in a row to start a bot, the bot is disqualified, and
its remaining matches are scored without starting it (its seats forfeit).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from referee.tournament.pool import LocalPool
from referee.tournament.schedule import schedule_for
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import BotEntry, MatchRow, TournamentStore, now
from referee.tournament.tasks import (
    BotLaunch,
    Executor,
    MatchTask,
    TaskResult,
    log_name,
    output_dir_of,
    tmp_root_of,
)


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

    # An SPRT test counts its deals in order; other formats play table by table (see pool.Plan).
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
