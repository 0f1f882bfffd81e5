"""Bots reused across matches: the pool hands a worker the tasks of the table it is at, so a
bot starts a few times per table and worker (a process plays one rotation of a deal) rather
than once per match, and changes no result.

The plan (:class:`referee.tournament.pool.Plan`) is tested on real schedules with no
process; the whole run with real workers and bots, against the plain order."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from referee.tournament.pool import PLAN_ORDER_SCAN, PLAN_READ_AHEAD, LocalPool, Plan, Slot
from referee.tournament.runner import pending_tasks, run_pending
from referee.tournament.schedule import build_schedule, build_sprt_schedule
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.tasks import MatchTask, TaskResult

from .conftest import SAMPLES, SANDBOX, copy_tournament, make_tournament, outcomes

#: Keys of a log line or a result that say how long a decision took, not what happened.
TIMING = re.compile(r"[lL]atency|^late")


def _tasks(bots: list[str], table_size: int, games: int) -> list[MatchTask]:
    return [MatchTask(m, "", (), {}) for m in build_schedule(bots, table_size, games, 7)]


def _with_bots(t: MatchTask) -> MatchTask:
    from referee.tournament.tasks import BotLaunch

    return MatchTask(t.match, "", tuple(BotLaunch(n, n, "") for n in t.match.seats), {})


def _slot() -> Slot:
    return Slot(None, None)  # type: ignore[arg-type]  # the plan reads only bots and group


def _finish(slot: Slot, t: MatchTask) -> None:
    slot.note(t, TaskResult(t.match.key, True, started=t.match.seats))


def _hand_out(plan: Plan, slots: list[Slot], order: list[int]) -> dict[int, list[MatchTask]]:
    """Free workers ask in ``order`` (cycled) until nothing is left; each finishes at once."""
    got: dict[int, list[MatchTask]] = {i: [] for i in range(len(slots))}
    idle = 0
    i = 0
    while idle < len(slots):
        w = order[i % len(order)]
        i += 1
        t = plan.take(slots[w], [s for s in slots if s is not slots[w]])
        if t is None:
            idle += 1
            continue
        idle = 0
        got[w].append(t)
        _finish(slots[w], t)
    return got


def test_a_worker_plays_on_at_its_table_and_two_workers_take_two_tables() -> None:
    tasks = [_with_bots(t) for t in _tasks(["a", "b", "c", "d"], 3, 3)]  # 4 tables x 3 deals x 3 rotations
    slots = [_slot(), _slot()]
    got = _hand_out(Plan(iter(tasks)), slots, [0, 1])
    handed = [t.match.key for ts in got.values() for t in ts]
    assert sorted(handed) == sorted(t.match.key for t in tasks)  # each task exactly once
    for ts in got.values():
        tables = [t.match.table for t in ts]
        # A table's matches in one run of the worker's list: every rotation of every deal.
        runs = [tab for k, tab in enumerate(tables) if k == 0 or tables[k - 1] != tab]
        assert len(runs) == len(set(runs)), tables
        # Within a table, one rotation of each deal (in the schedule's order) per start of
        # its bots, which play no deal twice: three rotations, three starts.
        for tab in set(tables):
            runs_of_bots: list[list[MatchTask]] = []  # the matches of each start of the bots
            for t in (t for t in ts if t.match.table == tab):
                if not runs_of_bots or t.match.seed in {u.match.seed for u in runs_of_bots[-1]}:
                    runs_of_bots.append([])
                runs_of_bots[-1].append(t)
            assert len(runs_of_bots) == 3, [[t.match.key for t in run] for run in runs_of_bots]
            for run in runs_of_bots:
                keys = [t.match.key for t in run]
                assert keys == sorted(keys) and len({t.match.rotation for t in run}) == 1, keys
    # The workers never share a table: each of the 4 is played by one worker only.
    owners = {t.match.table: w for w, ts in got.items() for t in ts}
    assert Counter(owners.values()) == Counter({0: 2, 1: 2})


def test_a_worker_moves_to_the_table_whose_bots_it_has() -> None:
    # Tables of two among a, b, c, d: after a+b, the worker that has them goes on to a table
    # that needs one new bot (a+c), not to c+d, which needs two.
    tasks = [_with_bots(t) for t in _tasks(["a", "b", "c", "d"], 2, 1)]
    plan = Plan(iter(tasks))
    one, other = _slot(), _slot()
    t = plan.take(one, [other])
    assert t is not None and t.match.table == ("a", "b")
    _finish(one, t)
    other.bots = dict.fromkeys(["x", "y"])
    other.group = ("c", "d")  # another worker is at c+d
    seen = []
    while (t := plan.take(one, [other])) is not None and t.match.table != ("c", "d"):
        seen.append(t.match.table)
        _finish(one, t)
    assert seen[:2] == [("a", "b"), ("a", "c")]


def test_the_last_table_is_shared_rather_than_waited_for() -> None:
    tasks = [_with_bots(t) for t in _tasks(["a", "b", "c"], 3, 4)]  # one table, 12 matches
    slots = [_slot(), _slot()]
    got = _hand_out(Plan(iter(tasks)), slots, [0, 1])
    assert len(got[0]) == len(got[1]) == 6


def test_retries_come_first_and_keep_order_keeps_the_order() -> None:
    sprt = [MatchTask(m, "", (), {}) for m in build_sprt_schedule("new", "old", ("f",), 3, 5)]
    plan = Plan(iter(sprt), keep_order=True)
    slots = [_slot(), _slot()]
    first = plan.take(slots[0], [slots[1]])
    assert first is not None
    plan.retries.append(first)
    order = [plan.take(slots[k % 2], [slots[1 - k % 2]]) for k in range(len(sprt))]
    assert [t.match.key for t in order if t is not None] == [t.match.key for t in sprt]
    assert plan.take(slots[0], [slots[1]]) is None


def _starts(played: list[MatchTask]) -> int:
    """Bot starts a worker needs for ``played``, in order: one for each bot not yet running or
    whose process played that deal already (the worker's rule, worker.remembers)."""
    deals: dict[str, set[int]] = {}
    n = 0
    for t in played:
        for b in t.bots:
            if b.name not in deals or t.match.seed in deals[b.name]:
                deals[b.name] = set()
                n += 1
            deals[b.name].add(t.match.seed)
    return n


def test_an_sprt_test_s_workers_play_a_few_deals_ahead_rather_than_start_bots_for_each_match() -> None:
    # Two tables (new and old, each with the field's bot f) share each deal, two rotations
    # each: a process of f plays one of a deal's four matches.
    sprt = [_with_bots(MatchTask(m, "", (), {})) for m in build_sprt_schedule("new", "old", ("f",), 60, 5)]
    plan = Plan(iter(sprt), keep_order=True)
    slots = [_slot(), _slot()]
    left = [t.match.key for t in sprt]  # not handed out yet, in the test's order
    got: list[list[MatchTask]] = [[], []]
    for k in itertools.count():
        w = k % 2
        t = plan.take(slots[w], [slots[1 - w]])
        if t is None:
            break
        # Deals still finish near the order the test counts them in: a worker skips fewer
        # than PLAN_ORDER_SCAN matches not handed out yet.
        assert left.index(t.match.key) < PLAN_ORDER_SCAN
        left.remove(t.match.key)
        got[w].append(t)
        _finish(slots[w], t)
    assert not left
    starts = sum(_starts(ts) for ts in got)
    # Once per match would be 480. The fewest possible is 8: f plays in four matches of each
    # deal, so four processes of it, and new and old two each.
    assert 8 <= starts <= 12, starts


def test_a_lazy_feed_is_read_only_when_no_table_is_free() -> None:
    tasks = [_with_bots(t) for t in _tasks(["a", "b", "c", "d"], 2, 2)]
    read: list[str] = []

    def feed() -> Any:
        for t in tasks:
            read.append(t.match.key)
            yield t

    plan = Plan(feed(), scheduled=False)
    one, other = _slot(), _slot()
    t = plan.take(one, [other])
    assert t is not None and read == [t.match.key]
    # The second worker reads on past the first's table, to the first task of the next.
    t2 = plan.take(other, [one])
    assert t2 is not None and t2.match.table != t.match.table
    assert read[-1] == t2.match.key and len(read) == 5  # a+b: 2 deals x 2 rotations, then a+c


def test_a_feed_of_one_table_only_is_read_a_bounded_way_ahead() -> None:
    # The arena's ladder with two bots: its feed (endless there) holds their table alone.
    table = [_with_bots(t) for t in _tasks(["a", "b"], 2, 2)]
    read: list[int] = []

    def feed() -> Any:
        for i, t in enumerate(itertools.islice(itertools.cycle(table), 100_000)):
            read.append(i)
            yield t

    plan = Plan(feed(), scheduled=False)
    one, other = _slot(), _slot()
    assert plan.take(one, [other]) is not None
    # No table of its own ahead: the second worker joins the first's, a few reads on.
    t2 = plan.take(other, [one])
    assert t2 is not None and t2.match.table == ("a", "b")
    assert len(read) <= 1 + PLAN_READ_AHEAD


def _logs(folder: Path) -> dict[str, Any]:
    def untimed(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: untimed(x) for k, x in v.items() if not TIMING.search(k)}
        if isinstance(v, list):
            return [untimed(x) for x in v]
        return v

    return {p.name: untimed([json.loads(line) for line in p.read_text().splitlines()]) for p in sorted((folder / "logs").glob("*.jsonl"))}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample bots at tables of two (three tables), two deals each: 12 matches."""
    settings = TournamentSettings(table_size=2, games=2, seed=424242, sandbox=SANDBOX)
    return make_tournament(tmp_path_factory.mktemp("pairs") / "t", settings, SAMPLES, validate=False)


def test_table_by_table_plays_the_same_matches_as_the_plain_order(pairs: Path, tmp_path: Path) -> None:
    plain = copy_tournament(pairs, tmp_path / "plain")
    planned = copy_tournament(pairs, tmp_path / "planned")
    with TournamentStore.open(plain) as store:
        order = [t.match.key for t in pending_tasks(store)[0]]
        run_pending(store, 2, executor=LocalPool(2, keep_order=True))
    starts: list[float] = []
    with TournamentStore.open(planned) as store:
        report = run_pending(store, 2, on_result=lambda r: starts.append(r.startup_s))
    assert report.played == len(order) == 12 and not report.failed
    assert outcomes(planned) == outcomes(plain)
    assert _logs(planned) == _logs(plain) and len(_logs(plain)) == 12
    # A bot process plays one of a deal's two rotations, so each of the three tables (pairs)
    # has its bots started twice, four times if the two workers share it: never once per match.
    assert 2 <= sum(1 for s in starts if s > 0) <= 8
