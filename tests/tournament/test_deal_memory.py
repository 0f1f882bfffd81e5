"""No bot process plays two matches of one deal: the rotations of a deal deal the same cards,
and a process kept running could remember them (:func:`referee.tournament.worker.remembers`).

A real tournament (``thirtyone`` CLI, bot processes in the tournament's sandbox, gRPC,
SQLite, worker processes) of ``memo`` (``tests/tournament/bots/memo.py``, which prints a token
of its process at every match start) against a sample bot. The bots' output of every match
is kept, so the test reads which process played which match, and the schedule says which
deal each match is.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import shutil
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from referee.bots import BotHandle, close_bots
from referee.bots.process import LocalBotProcess
from referee.bots.sandbox import BUSY_WEIGHT, IDLE_WEIGHT, probe
from referee.tournament.pool import PRESTART_AHEAD, Plan, Slot
from referee.tournament.runner import clean_leftovers, pending_tasks
from referee.tournament.schedule import build_schedule, schedule_for
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.tasks import BotLaunch, MatchTask, TaskResult, log_name
from referee.tournament.worker import Spares, discard_spares, play_task
from tests.polling import poll_until_async

from .conftest import SANDBOX, make_tournament, ok

MEMO = Path(__file__).resolve().parent / "bots" / "memo.py"
TOKEN = re.compile(r"^MEMO ([0-9a-f]{32})$", re.MULTILINE)


@pytest.fixture(scope="module")
def submit_from(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the memo bot (its working folder when it runs), readable by the
    user bots run as when the tests run as root."""
    folder = tmp_path_factory.mktemp("memo-cwd")
    shutil.copy(MEMO, folder / MEMO.name)
    folder.chmod(0o755)
    (folder / MEMO.name).chmod(0o644)
    return folder


def processes(folder: Path) -> dict[str, list[int]]:
    """The memo bot's processes: token -> the deal seeds of the matches it played."""
    with TournamentStore.open(folder, readonly=True) as store:
        schedule = schedule_for(store.settings, [b.name for b in store.bots()])
    played: dict[str, list[int]] = defaultdict(list)
    for m in schedule:
        out = folder / "output" / log_name(m.key).removesuffix(".jsonl")
        texts = [p.read_text() for p in out.glob("seat*-memo.txt")]
        tokens = [t for text in texts for t in TOKEN.findall(text)]
        assert len(tokens) == 1, f"match {m.key}: the memo bot said {tokens} (its output: {texts})"
        played[tokens[0]].append(m.seed)
    return played


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bot_process_never_plays_a_deal_twice(jobs: int, tmp_path: Path, submit_from: Path) -> None:
    folder = tmp_path / "t"
    ok("tournament", "new", folder, "--table-size", 2, "--games", 4, "--seed", 2026, "--sandbox", SANDBOX)
    with contextlib.chdir(submit_from):  # a command bot runs in the folder it was submitted from
        ok("submit", folder, f"{sys.executable} {MEMO.name}", "--name", "memo")
    ok("submit", folder, "random")
    ok("tournament", "run", folder, "-j", jobs)
    played = processes(folder)
    assert sum(len(seeds) for seeds in played.values()) == 8  # 4 deals x 2 rotations
    for token, seeds in played.items():
        assert len(seeds) == len(set(seeds)), f"process {token} played one deal twice: {seeds}"
    # Processes are still kept from one deal to the next: one worker plays the first rotation
    # of every deal with one process, the second with another; two workers share them.
    if jobs == 1:
        assert len(played) == 2, dict(played)
    assert len(played) < 8 and max(len(seeds) for seeds in played.values()) >= 2, dict(played)


def weight(h: BotHandle) -> int | None:
    """The bot's CPU weight as its cgroup holds it (None: no cgroup or no cpu controller)."""
    cg = h.process.cgroup if isinstance(h.process, LocalBotProcess) else None
    return cg.weight() if cg is not None else None


def test_the_next_rotation_s_bots_are_started_while_the_last_match_of_theirs_plays(tmp_path: Path) -> None:
    """The worker's own function (worker.play_task) with real bots: a match whose task says
    ``prestart`` leaves spare processes of its bots behind; the next match, another rotation
    of the same deal, plays with those spares (the kept processes played that deal) and stops
    the old ones."""
    folder = make_tournament(tmp_path / "t", TournamentSettings(table_size=2, games=1, seed=7, sandbox=SANDBOX), ["random", "greedy"], validate=False)
    with TournamentStore.open(folder) as store:
        clean_leftovers(store)
        tasks = pending_tasks(store)[0]
    first, second = tasks  # one deal, two rotations
    assert first.match.seed == second.match.seed
    names = tuple(b.name for b in first.bots)

    seen: list[int | None] = []

    async def scenario() -> None:
        handles: dict[str, BotHandle] = {}
        spares: Spares = {}
        try:
            r = await play_task(dataclasses.replace(first, prestart=names), handles, lambda _m: None, spares)
            assert r.ok and set(r.started) == set(names), r
            assert set(spares) == set(names)
            # Between matches the kept bots are idle, and so are the spares until taken (where
            # the machine gives bots a CPU weight: cgroups with the cpu controller, as root).
            assert {weight(h) for h in handles.values()} <= {IDLE_WEIGHT, None}
            if first.sandbox is not None and probe().cgroups:
                # Idle from their first instruction (their cgroup is made before they start);
                # taken below, which makes them bots at work, the rest of their start included.
                await poll_until_async("the spares' cgroups", lambda: all(spares[n].launcher.cgroups for n in names))
                assert {cg.weight() for n in names for cg in spares[n].launcher.cgroups} <= {IDLE_WEIGHT, None}
            up = {n: await spares[n] for n in names}  # each spare once it is up (or its failure)
            assert {weight(h) for h in up.values()} <= {BUSY_WEIGHT, None}
            old = dict(handles)
            # Told "started" as the match is about to play: the bots are at work then.
            r = await play_task(second, handles, lambda _m: seen.extend(weight(h) for h in up.values()), spares)
            assert r.ok and r.has_log, r
            assert set(seen) <= {BUSY_WEIGHT, None} and len(seen) == len(names)  # at work while it played
            for n in names:
                assert handles[n] is up[n] and handles[n].alive  # the spare played
                assert not old[n].alive  # the process that had played the deal is stopped
                assert handles[n].deals == {second.match.seed}
                assert weight(handles[n]) in (IDLE_WEIGHT, None)  # and is idle again
            assert not spares
        finally:
            await close_bots(list(handles.values()))
            await discard_spares(spares)

    asyncio.run(scenario())


def test_the_plan_asks_for_spares_a_few_matches_before_a_worker_has_to_start_its_bots_again() -> None:
    # One worker, one table of three, 12 deals: it plays the first rotation of every deal,
    # then needs its bots started again for the second, and again for the third.
    tasks = [MatchTask(m, "", tuple(BotLaunch(n, n, "") for n in m.seats), {}) for m in build_schedule(["a", "b", "c"], 3, 12, 7)]
    plan = Plan(iter(tasks))
    slot = Slot(None, None)  # type: ignore[arg-type]  # the plan reads only bots, deals and group
    asked: list[bool] = []
    restarted: list[bool] = []
    while (t := plan.take(slot, [])) is not None:
        asked.append(bool(plan.restarts_after(slot, t)))
        restarted.append(not slot.fresh(t) or not slot.bots)
        slot.note(t, TaskResult(t.match.key, True, started=t.match.seats))
    starts = [k for k, r in enumerate(restarted) if r]
    assert starts == [0, 12, 24], starts
    # Spares are asked for in the PRESTART_AHEAD matches before each start again, and never
    # otherwise (the last rotation needs no spares after it).
    expected = [any(k < s <= k + PRESTART_AHEAD + 1 for s in starts[1:]) for k in range(len(tasks))]
    assert asked == expected, [k for k, a in enumerate(asked) if a]
