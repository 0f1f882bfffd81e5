"""The local pool: worker processes on this machine, and the plan of which plays what.

The pool is a set of worker processes (the Python referee is CPU-bound, so threads would
share one core). Each worker keeps its bots running across the matches it plays and sends
back one plain result per match (:mod:`referee.tournament.worker`). The pool hands the
matches out table by table (:class:`Plan`): a worker plays on at its table, deal after deal,
so that a bot starts a few times per table and worker, not once per match.

Nothing a worker does can block the parent: each worker has a pipe of its own (no shared
queue whose lock a dying worker could hold), the parent hands a worker one match at a time
and waits on every pipe and every process at once (``multiprocessing.connection.wait``),
and each match has a wall-clock limit derived from the rules and the time control. A worker
that dies, or overruns the limit (stopped, stuck), is killed and replaced; its match is an
*infrastructure* failure, reported as such and played again, never charged to a bot.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from referee.bots.sandbox import probe
from referee.tournament.settings import TournamentSettings
from referee.tournament.tasks import (
    MAX_ATTEMPTS,
    MatchTask,
    TaskResult,
    match_limit_s,
    startup_limit_s,
)
from referee.tournament.worker import MAX_KEPT_BOTS, worker_main

#: A worker playing a match that says nothing this long is stopped or stuck (it sends a
#: heartbeat every :data:`~referee.tournament.worker.HEARTBEAT_S`; the match limit can be hours long).
SILENCE_LIMIT_S = 20.0
#: Seconds a worker just spawned may take to say it is up (an interpreter and the referee's
#: imports: a fraction of a second of CPU, but tens of seconds on two cores loaded 30 deep).
#: Its silence and startup limits count from then, not from when it was sent its match.
BOOT_LIMIT_S = 90.0
#: Seconds workers get to stop cleanly (closing their bots) before they are killed.
STOP_WORKERS_S = 1.5
#: Groups of tasks (tables) a free worker looks at when it chooses its next one.
PLAN_LOOKAHEAD = 16
#: Tasks of its table a free worker looks through for one whose deal its bots have not
#: played (:meth:`Plan._pop`): a whole table of three, 40 deals deep.
PLAN_DEAL_SCAN = 120
#: The same for a plan that keeps the feed's order (an SPRT test's): a worker plays at most
#: this many tasks ahead of the first not handed out, so the test's deals finish nearly in
#: order and few matches are played past its verdict (with -j 1 and two seats, deal 30 of a
#: test finishes after 78 matches instead of 60; with PLAN_DEAL_SCAN it would be 150).
PLAN_ORDER_SCAN = 48
#: Matches ahead of needing them again that a worker starts spare processes of its table's
#: bots, while it plays (:meth:`Plan.restarts_after`): a start takes a few matches' time.
PRESTART_AHEAD = 8
#: Tasks a free worker reads on past the other workers' tables to find a table of its own;
#: then it joins one of theirs. (The arena's feed never ends and schedules a table at each
#: read: with two bots every table is theirs, and an unbounded read never came back.)
PLAN_READ_AHEAD = 64


@dataclass(slots=True)
class Slot:
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
    #: them: :func:`~referee.tournament.worker.remembers`).
    deals: dict[str, set[int]] = field(default_factory=dict)
    #: The group (table) of tasks it plays, while that has tasks left.
    group: tuple[str, ...] | None = None
    #: Whether the worker has said it is up (its imports done, its event loop running).
    up: bool = False

    def note(self, task: MatchTask, r: TaskResult) -> None:
        """What a finished task tells of the bots the worker keeps (it keeps :data:`~referee.tournament.worker.MAX_KEPT_BOTS` at most)."""
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
        the worker decides (:func:`~referee.tournament.worker.play_task`): a bot that had
        played its deal is started again and remembers this match only."""
        seed = task.match.seed
        chosen = None if only is None else set(only)
        names = [b.name for b in task.bots if chosen is None or b.name in chosen]
        return {n: (self.deals[n] if n in self.deals and seed not in self.deals[n] else set()) | {seed} for n in names}

    def fresh(self, task: MatchTask, deals: dict[str, set[int]] | None = None) -> bool:
        """Whether ``task`` needs no bot this worker has running started again for its deal
        (with ``deals``, the deals its bots will have played by then)."""
        deals = self.deals if deals is None else deals
        return not any(task.match.seed in deals.get(b.name, ()) for b in task.bots)


class Plan:
    """The tasks not yet handed out, and which one a free worker plays next.

    Starting a bot costs far more than a decision, and a worker keeps its bots running from
    one match to the next. So the tasks are grouped by table (the bots they seat, in the
    feed's order within a group), and a worker plays on at the table it is at while that has
    tasks: the first of its tasks, among the first :data:`PLAN_DEAL_SCAN`, whose deal its bots
    have not played (another rotation of a deal they played would need them started again,
    :func:`~referee.tournament.worker.remembers`), or else the first; then it moves to the
    table, among the first :data:`PLAN_LOOKAHEAD` that no other worker is at, whose bots it
    has most of running (the first of those in the feed's order). Only when every table with tasks left
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

    def _pop(self, key: tuple[str, ...], slot: Slot) -> MatchTask:
        # The first of the group whose deal the worker's bots have not played, among the
        # first few: a worker's bots play one rotation of each deal and leave the others to
        # other workers, or to bots it starts later (remembers). Only when none is near the
        # front does it take the first, starting those bots again.
        i = self._first_fresh(key, slot)
        group = self._groups[key]
        t = group[i or 0]
        del group[i or 0]
        if not group:
            del self._groups[key]
        return t

    def _fresh(self, key: tuple[str, ...], slot: Slot, deals: dict[str, set[int]] | None = None) -> Iterator[int]:
        """Where in its group are the tasks, of the first few (:data:`PLAN_DEAL_SCAN`,
        :data:`PLAN_ORDER_SCAN`), that need none of ``slot``'s bots started again (with
        ``deals``, once they have played those; see :meth:`Slot.fresh`). A schedule is read
        on, as more are asked for, while it holds more of this table."""
        group = self._groups[key]
        k = 0
        while k < self._scan:
            if k == len(group) and not (self._scheduled and self._read() == key):
                return
            if slot.fresh(group[k], deals):
                yield k
            k += 1

    def _first_fresh(self, key: tuple[str, ...], slot: Slot) -> int | None:
        """The first of :meth:`_fresh`, if any."""
        return next(self._fresh(key, slot), None)

    def restarts_after(self, slot: Slot, task: MatchTask) -> tuple[str, ...]:
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

    def take(self, slot: Slot, others: Iterable[Slot]) -> MatchTask | None:
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
        #: Hand the tasks out in the order given, rather than table by table (see :class:`Plan`).
        self.keep_order = keep_order
        #: Seconds a match may take once its bots are up (default: from its settings).
        self.match_limit_s = match_limit_s
        #: Seconds a worker playing a match may go without a word before it counts as stuck.
        self.silence_limit_s = silence_limit_s
        #: Seconds a worker just spawned may take to say it is up.
        self.boot_limit_s = boot_limit_s

    def _spawn(self, ctx: Any) -> Slot:
        mine, theirs = ctx.Pipe(duplex=True)
        # What the sandbox's probe found here holds for the worker too: same machine, same user.
        p = ctx.Process(target=worker_main, args=(theirs, os.getpid(), probe.known()), daemon=False)
        p.start()
        theirs.close()
        return Slot(p, mine)

    def run(self, tasks: Iterable[MatchTask], prepare: Callable[[MatchTask], MatchTask] | None = None) -> Iterator[TaskResult]:
        """Play ``tasks`` on the pool, yielding results as they come (see the module doc).

        ``tasks`` may be any iterable: it is read lazily, one task each time a worker is
        free, so a feed that never ends (the arena's ladder) keeps the pool busy with tasks
        chosen from the latest results. The run ends when the feed is exhausted and every
        task it gave has finished.
        """
        todo = Plan(iter(tasks), keep_order=self.keep_order, scheduled=isinstance(tasks, Sized))
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


def _kill(s: Slot) -> None:
    # SIGKILL works on a stopped process too; the worker's watchdog then stops its bots.
    with contextlib.suppress(OSError):
        s.process.kill()
    s.process.join(timeout=5)
    s.conn.close()


def _stop_all(slots: list[Slot], *, clean: bool) -> None:
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


