"""The ladder loop: validation, scheduling and results, in one process of their own.

``arena serve`` starts this as a child process (``python -m referee.ladder.loop FOLDER``),
beside the web service, and stops it with SIGTERM. It is the only writer of results:

- a **validation** thread takes queued versions one at a time and runs ``check-bot``'s
  compliance check and the validation match against the random bot, in the tournament's
  sandbox, as ``thirtyone submit`` does (:mod:`referee.tournament.submit`); a version
  becomes active or rejected with the reason. A stop mid-validation puts it back in the
  queue at the next start;
- the **scheduler** feeds the runner's :class:`~referee.tournament.pool.LocalPool` lazily:
  each time a worker is free it gets the next match of the versions it is playing, or, with
  none left, a new choice of versions (:mod:`referee.ladder.scheduler`). A choice holds for a
  series of :attr:`~referee.ladder.settings.ArenaSettings.series_tables` tables (a placement
  table stands alone), each a deal of its own whose seed's commitment is stored before it
  is played. The series is fed rotation by rotation: the first rotation of each of its
  tables, then the second of each, and so on. A version's process plays one rotation of a
  deal at most (it could remember the cards), so a worker's bots play the series' deals one
  after another and are started again only for the next rotation: several deals per start
  rather than one. The next table of a series is scheduled only when its first rotation is
  wanted, and not while the ladder is paused or once one of its versions has left the ladder.
  The pool reads the feed on only when no table with matches left is free of another
  worker, and hands out what it read ahead with the versions disqualified since marked
  absent. Each result is committed with the live ratings it moves, in one transaction,
  with SIGINT and SIGTERM held back for those milliseconds; a match killed in flight
  stays pending and is played again from the same seed after a restart, never counted twice;
- a **refit** thread recomputes the official ratings (:mod:`referee.ladder.ratings`) after
  every :attr:`~referee.ladder.settings.ArenaSettings.refit_every_results` results or
  :attr:`~referee.ladder.settings.ArenaSettings.refit_every_s` seconds, whichever comes
  first, and at once for a version that finished its placement; a **board** thread
  keeps the leaderboard's JSON built for the service (:mod:`referee.ladder.board`).

With ``--ray ADDRESS`` the matches go to the Ray executor instead, a few tables at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import os
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.bots.compliance import CheckResult, result_text
from referee.faults import BotError
from referee.ladder import board, fairness, ratings
from referee.ladder.errors import ArenaError
from referee.ladder.paths import as_owner_sees
from referee.ladder.scheduler import Candidate, Window, can_seat, choose_table, within_caps
from referee.ladder.settings import ArenaSettings, load
from referee.ladder.store import ARENA_FAILURE, ArenaStore, LadderMatch, Version, read_secret
from referee.tournament.botfiles import BotFilesError, check_unchanged
from referee.tournament.pool import LocalPool
from referee.tournament.runner import drop_uncommitted, signals_deferred
from referee.tournament.schedule import ScheduledMatch
from referee.tournament.submit import (
    SubmissionError,
    check_compliance,
    folder_spec,
    validate,
)
from referee.tournament.tasks import (
    BotLaunch,
    MatchTask,
    RunError,
    TaskResult,
    log_name,
    output_dir_of,
    tmp_root_of,
)

if TYPE_CHECKING:
    from referee.tournament.ray_executor import RayExecutor

LOCK_NAME = "ladder.lock"
#: Times the infrastructure may fail one match (over runs) before it is given up as void.
MAX_MATCH_FAILURES = 3
#: Seconds an idle ladder waits before looking for work again.
IDLE_S = 0.5
#: Seconds between looks at whether the kept leaderboard needs building again.
BOARD_EVERY_S = 1.0
#: Seconds between looks at whether the official refit is due.
REFIT_LOOK_S = 1.0
#: Tables handed to a batch executor (Ray) at a time.
RAY_BATCH_TABLES = 8


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT: the ladder stops (the matches in flight are played again next start)."""


def _stop(signum: int, frame: object) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Stopped()


@contextlib.contextmanager
def ladder_lock(folder: Path) -> Iterator[None]:
    """One ladder per arena folder (an ``flock``, released by the kernel even on SIGKILL)."""
    with open(folder / LOCK_NAME, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ArenaError(f"{folder}: another ladder is running on this arena") from None
        yield


def version_launch(folder: Path, v: Version) -> BotLaunch:
    """How a worker starts a version: its frozen folder, checked against its hash first."""
    files = str((folder / v.files).resolve())
    return BotLaunch(v.label, f"{v.label}={v.command}", files, "folder", files, v.sha256)


@dataclass
class _Series:
    """Tables in a row for one choice of versions (:attr:`ArenaSettings.series_tables`)."""

    seats: tuple[int, ...]
    placement: bool
    #: Tables not scheduled yet.
    left: int


@dataclass
class Ladder:
    """The ladder of one arena folder (see the module doc)."""

    folder: Path
    jobs: int = 1
    ray_address: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        self.folder = self.folder.resolve()
        self.settings: ArenaSettings = load(self.folder)
        self.secret = read_secret(self.folder)
        self.stopping = threading.Event()
        self.rng = random.Random(self.seed)
        #: Keys handed to the executor and not finished yet.
        self._sent: set[str] = set()
        self._versions: dict[int, Version] = {}
        #: The Ray executor, connected for the whole run (with ``ray_address``).
        self._ray: RayExecutor | None = None
        #: The versions chosen last and the tables they have left to be scheduled.
        self._series: _Series | None = None
        #: The scheduler's window of the latest tables (rebuilt from the store at each start).
        self._window = Window(self.settings.share_window)

    # ------------------------------------------------------------- the run

    def run(self) -> None:
        """Validate, schedule and play until :attr:`stopping` is set or a signal stops it."""
        with ladder_lock(self.folder):
            self._clean()
            store = ArenaStore.open(self.folder, settings=self.settings)
            try:
                self._window = Window.of(self.settings.share_window, store.recent_tables(self.settings.share_window))
                self._drop_uncommitted(store)
                n = store.requeue_validating()
                if n:
                    _say(f"{n} validation(s) cut short by the last stop are queued again")
                threads = [
                    threading.Thread(target=self._guard, args=(self._validate_forever,), name="validation", daemon=True),
                    threading.Thread(target=self._guard, args=(self._refit_forever,), name="refit", daemon=True),
                    threading.Thread(target=self._guard, args=(self._board_forever,), name="board", daemon=True),
                ]
                for t in threads:
                    t.start()
                with contextlib.ExitStack() as stack:
                    if self.ray_address is not None:
                        stack.enter_context(self._ray_session())
                    self._play_forever(store)
            finally:
                self.stopping.set()
                store.close()
                shutil.rmtree(tmp_root_of(self.folder), ignore_errors=True)

    @contextlib.contextmanager
    def _ray_session(self) -> Iterator[None]:
        # One connection (one local Ray instance) for the ladder's life: each batch of tables
        # reuses it, rather than starting and stopping Ray for every few tables.
        from referee.tournament.ray_executor import RayExecutor

        assert self.ray_address is not None
        self._ray = RayExecutor(self.ray_address, self.jobs)
        with self._ray.connected(object_bytes=self.settings.max_unpacked_bytes):
            yield

    def _play_forever(self, store: ArenaStore) -> None:
        while not self.stopping.is_set():
            if not self._has_work(store):
                self.stopping.wait(IDLE_S)
                continue
            try:
                self._play(store)
            except (ArenaError, RunError, OSError) as e:
                _say(f"the ladder hit a problem and carries on in a moment: {e}")
                self.stopping.wait(2.0)

    def _clean(self) -> None:
        running = self.folder / "running"
        shutil.rmtree(running, ignore_errors=True)
        running.mkdir(mode=0o700)
        tmp = tmp_root_of(self.folder)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _drop_uncommitted(self, store: ArenaStore) -> None:
        n = drop_uncommitted(self.folder, [m.key for m in store.pending_matches()])
        if n:
            _say(f"{n} log(s) of matches cut short before their result was stored were removed; those matches are played again")

    def _guard(self, fn: Any) -> None:
        # A background thread's failure is said, and the thread starts over: it never takes
        # the ladder down, and never dies silently.
        while not self.stopping.is_set():
            try:
                fn()
                return
            except Exception as e:
                _say(f"{threading.current_thread().name} failed and starts again: {type(e).__name__}: {e}")
                self.stopping.wait(2.0)

    def _has_work(self, store: ArenaStore) -> bool:
        if store.pending_matches():
            return True
        return not store.paused and can_seat(self._candidates(store), self.settings.rules())

    def _candidates(self, store: ArenaStore) -> list[Candidate]:
        """The active versions as the scheduler sees them: the official log-strength once a
        refit has them, else the live figure's (:func:`ratings.live_theta`)."""
        out = []
        for vid, owner, mu, sigma, tables, reference, theta, se in store.candidates():
            if theta is None or se is None:
                theta, se = ratings.live_theta(mu, sigma)
            out.append(Candidate(vid, owner, theta, se, tables, reference))
        return out

    def _play(self, store: ArenaStore) -> None:
        self._sent.clear()
        feed = self._feed(store)
        if self._ray is not None:
            batch = []
            for t in feed:
                batch.append(t)
                if len(batch) >= RAY_BATCH_TABLES * self.settings.play.table_size:
                    break
            results = self._ray.run(batch, lambda t: self._refresh(store, t))
        else:
            results = LocalPool(self.jobs).run(feed, lambda t: self._refresh(store, t))
        try:
            for r in results:
                self._result(store, r)
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()

    # ------------------------------------------------------------- scheduling

    def _feed(self, store: ArenaStore) -> Iterator[MatchTask]:
        """Tasks, one at a time, chosen when a worker is free (see the module doc)."""
        while not self.stopping.is_set():
            # The first rotation of every table of a series before the second of any: a
            # version's process plays one rotation of a deal at most, so this is what lets a
            # worker's bots play the series' deals one after another without a restart.
            waiting = sorted((m for m in store.pending_matches() if m.key not in self._sent), key=lambda m: (m.rotation, m.key))
            if waiting and waiting[0].rotation == 0:
                m = waiting[0]
            elif self._next_of_series(store):
                continue
            elif waiting:
                m = waiting[0]
            else:
                if store.paused:
                    return
                choice = choose_table(self._candidates(store), self.settings.rules(), self._window, self.rng)
                if choice is None:
                    return
                # A placement table stands alone: its point is opponents from across the board.
                self._series = _Series(choice.seats, choice.placement, 1 if choice.placement else self.settings.series_tables)
                continue
            self._sent.add(m.key)
            yield self._task(store, m)

    def _next_of_series(self, store: ArenaStore) -> bool:
        """Schedule the next table of the series in play, if it has one left and may: the
        ladder is not paused and its versions are all still active (one withdrawn, retired or
        disqualified since ends the series, and so does one more table that would take a
        version past its share of the scheduler's window). Whether a table was scheduled."""
        s = self._series
        if s is None or s.left == 0 or store.paused:
            return False
        cands = self._candidates(store)
        if not set(s.seats) <= {c.id for c in cands} or not within_caps(s.seats, cands, self._window, self.settings.rules()):
            self._series = None
            return False
        store.schedule_table(s.seats, lambda tid: fairness.commitment(fairness.deal_seed(self.secret, tid)), placement=s.placement)
        self._window.add(s.seats)
        s.left -= 1
        return True

    def _refresh(self, store: ArenaStore, t: MatchTask) -> MatchTask:
        """``t`` as it is to be played now: the pool reads a few tasks ahead of the one it
        hands out, and a version disqualified meanwhile forfeits rather than plays."""
        ids = {v.label: v.id for v in self._versions.values()}
        out = tuple(b.name for b in t.bots if self._version(store, ids[b.name]).status == "disqualified")
        return t if out == t.absent else dataclasses.replace(t, absent=out)

    def _version(self, store: ArenaStore, vid: int) -> Version:
        v = store.version(vid)
        self._versions[vid] = v
        return v

    def _task(self, store: ArenaStore, m: LadderMatch) -> MatchTask:
        folder = self.folder
        seat_versions = [self._version(store, vid) for vid in m.seats]
        table = tuple(v.label for v in sorted(seat_versions, key=lambda v: v.id))
        labels = tuple(v.label for v in seat_versions)
        sm = ScheduledMatch(m.key, table, m.table_id, m.rotation, labels, fairness.deal_seed(self.secret, m.table_id))
        running = folder / "running"
        return MatchTask(
            match=sm,
            log_path=str(running / log_name(m.key)),
            bots=tuple(version_launch(folder, v) for v in seat_versions),
            settings=self.settings.play.to_dict(),
            sandbox=self.settings.play.sandbox_config(folder),
            absent=tuple(v.label for v in seat_versions if v.status == "disqualified"),
            tmp_root=str(tmp_root_of(folder)),
            output_dir=str(running / (log_name(m.key).removesuffix(".jsonl") + ".output")),
        )

    # ------------------------------------------------------------- results

    def _result(self, store: ArenaStore, r: TaskResult) -> None:
        if r.retrying:
            return
        self._sent.discard(r.key)
        if not r.ok:
            n = store.note_failure(r.key, r.error)
            if n >= MAX_MATCH_FAILURES:
                store.void_match(r.key, f"given up after {n} failures of the referee's own: {r.error}")
                _say(f"match {r.key} given up after {n} infrastructure failures: {r.error}")
            return
        with signals_deferred():
            self._commit(store, r)
        self._note_starts(store, r)

    def _note_starts(self, store: ArenaStore, r: TaskResult) -> None:
        """A version that fails to start this many times in a row is disqualified (it forfeits
        its seats meanwhile), as a tournament's bot is. The counts are the store's: a
        restart of the ladder does not forgive them."""
        by_label = {v.label: v for v in self._versions.values()}
        started = [by_label[label].id for label in r.started if label in by_label]
        failed = [by_label[label].id for label in r.start_failures if label in by_label]
        counts = store.note_starts(started, failed)
        for label, why in r.start_failures.items():
            v = by_label.get(label)
            if v is None:
                continue
            n = counts[v.id]
            if n >= self.settings.play.max_start_failures:
                first = as_owner_sees(why.splitlines()[0], self.folder / v.files, self.folder) if why else "no reason given"
                store.set_status(v.id, "disqualified", f"failed to start {n} times in a row (last: {first})")
                _say(f"version {label} disqualified: it failed to start {n} times in a row")

    def _commit(self, store: ArenaStore, r: TaskResult) -> None:
        m = store.match(r.key)
        folder = self.folder
        rel = ""
        running_log = folder / "running" / log_name(r.key)
        if r.has_log and running_log.exists():
            dest = folder / "logs" / log_name(r.key)
            os.replace(running_log, dest)
            rel = str(dest.relative_to(folder))
        out_src = folder / "running" / (log_name(r.key).removesuffix(".jsonl") + ".output")
        out_dest = output_dir_of(folder, r.key)
        if out_src.is_dir():
            shutil.rmtree(out_dest, ignore_errors=True)
            out_dest.parent.mkdir(exist_ok=True)
            os.replace(out_src, out_dest)
        # The latest ratings, not those at scheduling: other tables finished meanwhile.
        current = [(store.version(v).mu, store.version(v).sigma) for v in m.seats]
        placings = list(r.record.placings)
        moved = ratings.live_update(current, placings)
        store.record_result(r.key, r.result, rel, r.duration_s, dict(zip(m.seats, moved, strict=True)))

    # ------------------------------------------------------------- validation and refit

    def _validate_forever(self) -> None:
        store = ArenaStore.open(self.folder, settings=self.settings)
        try:
            while not self.stopping.is_set():
                v = store.claim_queued()
                if v is None:
                    self.stopping.wait(IDLE_S)
                    continue
                try:
                    status, reason, identity, report = self.validate_version(v)
                except Exception as e:  # the arena's own failure: said, never left 'validating'
                    status, reason, identity = "rejected", f"{ARENA_FAILURE} ({type(e).__name__}: {e}); upload it again", None
                    report = reason
                store.set_status(v.id, status, reason, identity=identity, report=report)
                _say(f"version {v.label} (#{v.id}): {status}" + (f": {reason.splitlines()[0]}" if reason else ""))
        finally:
            store.close()

    def validate_version(self, v: Version) -> tuple[str, str, tuple[str, str, str] | None, str]:
        """Check a version as ``submit`` checks a bot: (status, reason, bot identity, report).

        The report is ``check-bot``'s, step by step, then the validation match's line, as
        plain text (:func:`~referee.bots.compliance.result_text`), with the bot's files named
        relative to its folder and the arena's own as short names (:mod:`referee.ladder.paths`).
        """
        files = (self.folder / v.files).resolve()
        play = self.settings.play
        results: list[CheckResult] = []
        match = "validation match against the random bot"

        def report(last: str = "") -> str:
            lines = [result_text(r) for r in results]
            if last:
                lines.append(last)
            return as_owner_sees("\n".join(lines), files, self.folder)

        try:
            check_unchanged(files, v.sha256, name=v.label)
            sandbox = play.sandbox_config(self.folder)
            spec = folder_spec(f"{v.label}={v.command}", files)
            check_compliance(spec, play, sandbox, on_result=results.append)
        except (SubmissionError, BotError, BotFilesError) as e:
            return "rejected", as_owner_sees(str(e), files, self.folder), None, report(result_text(CheckResult("match", match, "not run", "not run: the checks above failed")))
        try:
            identity = validate(spec, str(files), play, sandbox)
        except (SubmissionError, BotError) as e:
            why = as_owner_sees(str(e), files, self.folder)
            return "rejected", why, None, report(result_text(CheckResult("match", match, "fail", why)))
        return "active", "", identity, report(result_text(CheckResult("match", match, "pass", "no fault")))

    def _refit_forever(self) -> None:
        # The refit runs after refit_every_results new results, or refit_every_s after the
        # last refit if any result came in meanwhile, or at once when a version that finished
        # its placement is not in the fit yet (its figure is provisional until then).
        store = ArenaStore.open(self.folder, settings=self.settings)
        s = self.settings
        placed = max(1, s.placement_tables * s.play.table_size)
        done, at = int(store.meta("official_matches", "-1")), float("-inf")
        try:
            while not self.stopping.is_set():
                n = store.counts().get("done", 0)
                due = n - done >= s.refit_every_results or (n != done and time.monotonic() - at >= s.refit_every_s)
                if n and (due or store.unfitted(placed)):
                    done, at = ratings.refit_store(store), time.monotonic()
                self.stopping.wait(REFIT_LOOK_S)
        finally:
            store.close()


    def _board_forever(self) -> None:
        # The leaderboard kept built (referee.ladder.board): rebuilt when it changed, at most
        # every BOARD_EVERY_S, so a busy ladder spends a few milliseconds a second on it.
        store = ArenaStore.open(self.folder, settings=self.settings)
        try:
            while not self.stopping.is_set():
                board.refresh(store)
                self.stopping.wait(BOARD_EVERY_S)
        finally:
            store.close()


def _say(text: str) -> None:
    print(f"ladder: {text}", file=sys.stderr, flush=True)


def _watch_parent(parent: int) -> None:
    # The service that started this ladder was killed (kill -9): stop as on SIGTERM.
    while os.getppid() == parent:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    """Run one arena's ladder until SIGTERM or SIGINT (``arena serve`` runs this)."""
    parser = argparse.ArgumentParser(prog="python -m referee.ladder.loop")
    parser.add_argument("folder", type=Path)
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--ray", default=None)
    parser.add_argument("--watch-parent", type=int, default=0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if args.watch_parent:
        threading.Thread(target=_watch_parent, args=(args.watch_parent,), daemon=True).start()
    try:
        Ladder(args.folder, args.jobs, args.ray).run()
    except KeyboardInterrupt:
        # Stopped, or the KeyboardInterrupt Ray raises in its place when the stop signal
        # lands inside ray.wait (its check_status turns an interrupted wait into a new
        # KeyboardInterrupt, dropping ours): both are the clean stop asked for.
        return 0
    except (ArenaError, RunError) as e:
        _say(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
