"""Whole matches: against real bot processes over gRPC (normal play and every kind of fault),
and through in-memory seats on a manual clock (the time bank, late answers and the fault
policy, exactly and without sleeping)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from thirtyone.v1 import log_pb2

from referee import wire
from referee.bots import close_bots, start_bots
from referee.bots.memory import MemoryPlayer, Reply, answering_in
from referee.faults import CrashFault, IllegalFault
from referee.game import DRAW_DISCARD, DRAW_STOCK, Action, Match, Observation, Rules, card
from referee.game.actions import discard
from referee.log import read_log, replay_log, walk_log
from referee.match import (
    MatchConfig,
    MatchOutcome,
    default_action,
    play_match,
    run_match,
    run_match_async,
)
from referee.timecontrol import TimeControl
from tests.polling import poll_until_async

from .conftest import FAST_TC, hostile, pids_in, run, wait_gone


def _play(bots: list[str], tmp_path: Path, seed: int = 1, **config: object) -> MatchOutcome:
    return run_match(bots, seed=seed, config=MatchConfig(**config), log_path=tmp_path / "match.jsonl")  # type: ignore[arg-type]


def _assert_log_replays(outcome: MatchOutcome) -> None:
    assert outcome.log_path is not None
    log = read_log(outcome.log_path)
    assert log.complete and log.notes == []
    result = replay_log(log)
    assert result.placings == outcome.placings
    assert result.winner == outcome.winner
    assert [r.lives_lost for r in result.rounds] == [r.lives_lost for r in outcome.rounds]


def test_normal_four_bot_match(tmp_path: Path, pid_dir: Path) -> None:
    bots = [hostile("random", "--seed", i, "--pid-dir", pid_dir) for i in range(3)] + [hostile("first", name="firsty")]
    # A budget no fast bot can overrun, even on a busy machine: its bank is never touched.
    tc = TimeControl(budget_ms=5_000)
    out = _play(bots, tmp_path, seed=12345, time_control=tc)
    assert out.reason == "last_player"
    assert out.winner is not None and out.placings[out.winner] == 1
    assert sorted(out.placings)[0] == 1 and max(out.placings) <= 4
    assert out.faults == ()
    assert out.rounds and out.decisions == sum(s.stats.decisions for s in out.seats) > 0
    assert [s.label for s in out.seats][-1] == "firsty"
    for s in out.seats:
        assert s.stats.decisions > 0 and s.stats.max_latency_us > 0
        assert s.bank_left_ms == tc.bank_ms
    _assert_log_replays(out)
    assert wait_gone(pids_in(pid_dir)) == []


def test_same_seed_same_match(tmp_path: Path) -> None:
    bots = [hostile("random", "--seed", i) for i in range(3)]
    a = _play(bots, tmp_path, seed=99)
    b = run_match(bots, seed=99)
    assert a.placings == b.placings
    assert [r.values for r in a.rounds] == [r.values for r in b.rounds]


def test_bots_are_reused_across_matches_and_seats(tmp_path: Path) -> None:
    async def go() -> None:
        handles = await start_bots([hostile("random", "--seed", 1), hostile("random", "--seed", 2)])
        try:
            pids = [h.pid for h in handles]
            a, b = handles
            first = await play_match([a, b, a], seed=5, log_path=tmp_path / "one.jsonl")
            second = await play_match([b, a], seed=6, log_path=tmp_path / "two.jsonl")
            assert first.faults == () and second.faults == ()
            assert [s.label for s in first.seats] == ["hostile-random"] * 3
            assert [h.pid for h in handles] == pids and all(h.alive for h in handles)
            for path in ("one.jsonl", "two.jsonl"):
                assert replay_log(tmp_path / path).complete
        finally:
            await close_bots(handles)

    run(go())


def test_a_silent_bot_over_grpc_times_out_and_forfeits(tmp_path: Path) -> None:
    # The wiring of the timeout over a real stream; the arithmetic of the waits is the
    # in-memory tests' below (exact there, only bounded below here: the machine may be busy).
    out = _play([hostile("first"), hostile("silent"), hostile("first")], tmp_path, time_control=FAST_TC)
    seat = out.seats[1]
    assert [f.kind for f in seat.faults] == ["timeout"] * 3
    assert seat.forfeited and seat.bank_left_ms == 0
    assert "no answer within 250 ms" in seat.faults[0].message
    # First wait: budget + bank + grace = 250 ms; then the bank is empty: 100 ms each.
    assert seat.stats.max_latency_us >= 250_000
    assert seat.stats.total_latency_us >= 250_000 + 2 * 100_000
    assert out.reason == "last_player" and out.winner in (0, 2)
    _assert_log_replays(out)


# ---------------------------------------------------------------- time and faults, in memory
#
# The bank, the grace and the strikes through in-memory seats (referee.bots.memory): the
# match loop, the fault policy and the log are the real ones; a bot "takes" its time on a
# manual clock, so every figure below is exact and nothing sleeps.


def _memory_match(
    players: list[MemoryPlayer], tmp_path: Path, seed: int = 1, **config: object
) -> MatchOutcome:
    return run(play_match(players, seed=seed, config=MatchConfig(**config), log_path=tmp_path / "match.jsonl"))  # type: ignore[arg-type]


def _played(tmp_path: Path, seat: int) -> list[log_pb2.ActionEvent]:
    """The seat's own answers that the log shows played (not the referee's)."""
    log = read_log(tmp_path / "match.jsonl")
    return [
        e.event.action
        for e in log.events
        if e.event.HasField("action") and e.event.action.seat == seat and not e.event.action.by_referee
    ]


def test_a_slow_bot_uses_its_bank_then_times_out(tmp_path: Path) -> None:
    # 120 ms per answer with a 50 ms budget: 70 ms a decision from a 150 ms bank, so two
    # answers are taken (the second leaves 10 ms); the third may take 50 + 10 + 50 = 110 ms
    # and times out, emptying the bank; each later one may take 100 ms and times out too.
    slow = MemoryPlayer(answering_in(120), label="slow")
    out = _memory_match([slow, MemoryPlayer(), MemoryPlayer()], tmp_path, time_control=FAST_TC)
    seat = out.seats[0]
    assert [f.kind for f in seat.faults] == ["timeout"] * 3
    assert [f.message for f in seat.faults] == [
        "no answer within 110 ms (budget + time bank left + grace)",
        "no answer within 100 ms (budget + time bank left + grace)",
        "no answer within 100 ms (budget + time bank left + grace)",
    ]
    assert seat.forfeited and seat.placing == 3 and seat.bank_left_ms == 0
    assert seat.faults[0].default_action is not None and not seat.faults[0].forfeited
    assert seat.faults[2].forfeited and seat.faults[2].default_action is None
    # What the bot was told: its bank going down by 70 ms, then empty.
    assert [a.bank_ms for a in slow.seats[0].asked] == [150, 80, 10, 0, 0]
    assert [a.budget_ms for a in slow.seats[0].asked] == [50] * 5
    assert [round(a.timeout_s * 1000) for a in slow.seats[0].asked] == [250, 180, 110, 100, 100]
    # Two answers played, 120 ms each, over the budget but paid from the bank: not late.
    taken = _played(tmp_path, 0)
    assert [(a.latency_us, a.HasField("late")) for a in taken] == [(120_000, False)] * 2
    assert seat.stats == wire.SeatStats(0, 5, 120_000 * 2 + 110_000 + 2 * 100_000, 120_000, 3, 0)
    assert out.winner in (1, 2)
    _assert_log_replays(out)


def test_a_silent_bot_times_out_within_budget_bank_and_grace(tmp_path: Path) -> None:
    silent = MemoryPlayer(lambda obs, budget, bank: Reply(None), label="silent")
    out = _memory_match([MemoryPlayer(), silent, MemoryPlayer()], tmp_path, time_control=FAST_TC)
    seat = out.seats[1]
    assert [f.kind for f in seat.faults] == ["timeout"] * 3
    assert seat.forfeited
    # First wait: budget + bank + grace = 250 ms; then the bank is empty: 100 ms each.
    assert seat.stats.max_latency_us == 250_000
    assert seat.stats.total_latency_us == 250_000 + 2 * 100_000
    assert silent.clock() == 450_000_000  # the seat's clock moved by exactly the waits
    assert out.reason == "last_player" and out.winner in (0, 2)
    _assert_log_replays(out)


LATE_TC = TimeControl(budget_ms=100, bank_ms=200, grace_ms=50)


def test_answers_inside_the_grace_drain_the_bank_then_are_late(tmp_path: Path) -> None:
    # Always at budget + grace - 25 ms: 25 ms past the budget every time. The first eight
    # answers take it from the 200 ms bank (the eighth leaves exactly 0); every later one
    # has no bank left, arrives inside the grace, and is late: played and counted, no fault.
    edgy = MemoryPlayer(answering_in(LATE_TC.budget_ms + LATE_TC.grace_ms - 25), label="edgy")
    out = _memory_match([edgy, MemoryPlayer()], tmp_path, time_control=LATE_TC)
    seat = out.seats[0]
    assert seat.faults == () and not seat.forfeited
    assert seat.bank_left_ms == 0
    asked = edgy.seats[0].asked
    assert [a.bank_ms for a in asked[:10]] == [200, 175, 150, 125, 100, 75, 50, 25, 0, 0]
    taken = _played(tmp_path, 0)
    assert len(taken) == seat.stats.decisions == len(asked) > 8
    assert [a.late for a in taken] == [False] * 8 + [True] * (len(taken) - 8)
    assert all(a.latency_us == 125_000 for a in taken)
    assert seat.late == seat.stats.late == len(taken) - 8
    # The other seat, answering at once, is never late; the footer says both.
    assert out.seats[1].late == 0
    footer = read_log(tmp_path / "match.jsonl").footer
    assert footer is not None and [s.late for s in footer.stats] == [len(taken) - 8, 0]
    _assert_log_replays(out)


def test_answers_within_the_budget_are_never_late(tmp_path: Path) -> None:
    # Exactly the budget, every time: the bank is never touched, nothing is late.
    exact = MemoryPlayer(answering_in(LATE_TC.budget_ms))
    out = _memory_match([exact, MemoryPlayer()], tmp_path, time_control=LATE_TC)
    seat = out.seats[0]
    assert seat.late == 0 and seat.faults == () and seat.bank_left_ms == LATE_TC.bank_ms
    assert not any(a.late for a in _played(tmp_path, 0))
    # And with no bank at all, one millisecond past the budget is late.
    no_bank = TimeControl(budget_ms=100, bank_ms=0, grace_ms=50)
    out = _memory_match([MemoryPlayer(answering_in(101)), MemoryPlayer()], tmp_path, time_control=no_bank)
    assert out.seats[0].late == out.seats[0].stats.decisions > 0


def test_a_late_answer_is_a_fault_under_strict(tmp_path: Path) -> None:
    edgy = MemoryPlayer(answering_in(LATE_TC.budget_ms + LATE_TC.grace_ms - 25), label="edgy")
    out = _memory_match([edgy, MemoryPlayer()], tmp_path, time_control=LATE_TC, fault_policy="strict")
    seat = out.seats[0]
    # Eight answers from the bank, then the first late one forfeits the seat.
    assert len(_played(tmp_path, 0)) == 8
    assert [f.kind for f in seat.faults] == ["late"]
    f = seat.faults[0]
    assert f.forfeited and f.default_action is None and f.strike == 1
    assert f.message == (
        "answered after 125 ms, past its 100 ms budget with no time bank left: "
        "the 50 ms grace is for transport delay, not thinking"
    )
    assert seat.forfeited and seat.late == 1 and out.winner == 1
    log = read_log(tmp_path / "match.jsonl")
    forfeit = next(e.event.forfeit for e in log.events if e.event.HasField("forfeit"))
    assert forfeit.reason == "first fault under the strict policy: late"
    _assert_log_replays(out)
    # The bot the bank covers is never late, under strict either.
    out = _memory_match(
        [MemoryPlayer(answering_in(LATE_TC.budget_ms)), MemoryPlayer()], tmp_path, time_control=LATE_TC, fault_policy="strict"
    )
    assert out.seats[0].faults == () and out.seats[0].late == 0


def test_the_bank_covers_part_of_an_answer_then_the_rest_is_late(tmp_path: Path) -> None:
    # 100 ms budget, 200 ms bank: one answer of 330 ms needs 230 ms from a bank of 200, and
    # arrives inside the grace (100 + 200 + 50 = 350): late, and the bank is empty after it.
    answers = iter([330.0])

    def once_slow(obs: Observation, budget: int, bank: int) -> Reply:
        return Reply(obs.legal_actions[0], next(answers, 0.0))

    out = _memory_match([MemoryPlayer(once_slow), MemoryPlayer()], tmp_path, time_control=LATE_TC)
    seat = out.seats[0]
    assert seat.late == 1 and seat.faults == () and seat.bank_left_ms == 0
    assert [a.late for a in _played(tmp_path, 0)][:2] == [True, False]


def test_match_policy_arithmetic() -> None:
    p = MatchConfig(time_control=LATE_TC).policy()
    ms = 1_000_000
    assert (p.budget_ns, p.grace_ns, p.max_strikes, p.strict) == (100 * ms, 50 * ms, 3, False)
    assert p.deadline_ns(200 * ms) == 350 * ms
    assert p.charge(200 * ms, 100 * ms) == (200 * ms, False)  # the budget is free
    assert p.charge(200 * ms, 150 * ms) == (150 * ms, False)  # past it: from the bank
    assert p.charge(200 * ms, 300 * ms) == (0, False)  # the bank covers it exactly
    assert p.charge(200 * ms, 300 * ms + 1) == (0, True)  # one nanosecond more is late
    assert p.charge(0, 100 * ms + 1) == (0, True)
    assert p.forfeits(IllegalFault("x"), 2) is False and p.forfeits(IllegalFault("x"), 3) is True
    assert p.forfeits(CrashFault("x"), 1) is True
    assert MatchConfig(fault_policy="strict").policy().max_strikes == 1


def test_crashes_and_garbage_from_an_in_memory_bot(tmp_path: Path) -> None:
    # A bot function may raise a fault: a crash forfeits at once and leaves the seat unusable.
    calls = []

    def crashes_on_third(obs: Observation, budget: int, bank: int) -> Action:
        calls.append(obs.turn)
        if len(calls) == 3:
            raise CrashFault("the bot process exited with code 1")
        return obs.legal_actions[0]

    out = _memory_match([MemoryPlayer(crashes_on_third), MemoryPlayer(), MemoryPlayer()], tmp_path)
    seat = out.seats[0]
    assert [(f.kind, f.forfeited) for f in seat.faults] == [("crash", True)]
    assert seat.placing == 3 and seat.stats.decisions == 3 and len(calls) == 3
    _assert_log_replays(out)


def test_a_tampered_late_count_does_not_replay(tmp_path: Path) -> None:
    edgy = MemoryPlayer(answering_in(LATE_TC.budget_ms + LATE_TC.grace_ms - 25))
    out = _memory_match([edgy, MemoryPlayer()], tmp_path, time_control=LATE_TC)
    assert out.seats[0].late > 0
    path = tmp_path / "match.jsonl"
    lines = path.read_text().splitlines()
    # The footer claims one late answer fewer than the events show.
    footer = json.loads(lines[-1])
    footer["footer"]["seats"][0]["late"] -= 1
    path.write_text("\n".join([*lines[:-1], json.dumps(footer)]) + "\n")
    walk = walk_log(path)
    assert walk.divergence is not None
    assert "late answer" in walk.divergence.message and "its events show" in walk.divergence.message
    # A late answer played in a strict log: strict makes it a fault, so it cannot be played.
    header = json.loads(lines[0])
    header["header"]["faultPolicy"] = "FAULT_POLICY_STRICT"
    header["header"]["maxStrikes"] = 1
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    walk = walk_log(path)
    assert walk.divergence is not None and "under the strict policy it is a late fault" in walk.divergence.message


def test_bot_dying_mid_match_forfeits_and_the_others_finish(tmp_path: Path, pid_dir: Path) -> None:
    bots = [hostile("first"), hostile("die", "--from", 3, "--pid-dir", pid_dir), hostile("random"), hostile("first")]
    out = _play(bots, tmp_path)
    seat = out.seats[1]
    assert len(seat.faults) == 1
    f = seat.faults[0]
    assert f.kind == "crash" and f.forfeited and f.strike == 1 and f.default_action is None
    assert "exited with code 1" in f.message
    assert "dying on decision 3" in f.message  # the tail of its output
    assert seat.placing == 4  # below every seat still in when it left
    assert seat.stats.decisions == 3
    assert out.reason == "last_player" and out.winner != 1
    assert wait_gone(pids_in(pid_dir)) == []
    log = read_log(tmp_path / "match.jsonl")
    forfeits = [e.event.forfeit for e in log.events if e.event.HasField("forfeit")]
    assert [(x.seat, x.reason.split(":")[0]) for x in forfeits] == [(1, "crash")]
    _assert_log_replays(out)


def test_illegal_actions_strike_three_times_under_lenient(tmp_path: Path) -> None:
    out = _play([hostile("illegal", "--from", 2), hostile("first"), hostile("first")], tmp_path)
    seat = out.seats[0]
    assert [f.kind for f in seat.faults] == ["illegal"] * 3
    assert [f.strike for f in seat.faults] == [1, 2, 3]
    assert [f.forfeited for f in seat.faults] == [False, False, True]
    assert all(f.default_action is not None for f in seat.faults[:2])
    # The game model's reason is in the message.
    assert any("is not in the hand" in f.message or "must knock or draw before discarding" in f.message for f in seat.faults)
    assert seat.placing == 3
    log = read_log(tmp_path / "match.jsonl")
    assert log.header.max_strikes == 3 and log.header.fault_policy == "lenient"
    by_ref = [e.event.action for e in log.events if e.event.HasField("action") and e.event.action.by_referee]
    assert [a.decision_id for a in by_ref] == [f.decision_id for f in seat.faults[:2]]
    assert all(a.latency_us == 0 for a in by_ref)
    forfeit = next(e.event.forfeit for e in log.events if e.event.HasField("forfeit"))
    assert forfeit.reason == "3 strikes: illegal, illegal, illegal"
    _assert_log_replays(out)


def test_illegal_action_forfeits_at_once_under_strict(tmp_path: Path) -> None:
    out = _play([hostile("first"), hostile("illegal", "--from", 2), hostile("first")], tmp_path, fault_policy="strict")
    seat = out.seats[1]
    assert len(seat.faults) == 1 and seat.faults[0].forfeited and seat.faults[0].kind == "illegal"
    assert out.max_strikes == 1
    assert read_log(tmp_path / "match.jsonl").header.max_strikes == 1
    _assert_log_replays(out)


def test_garbage_answers_are_malformed(tmp_path: Path) -> None:
    out = _play([hostile("garbage"), hostile("first")], tmp_path, max_strikes=4)
    seat = out.seats[0]
    msgs = [f.message for f in seat.faults]
    assert [f.kind for f in seat.faults] == ["malformed"] * 4
    assert "action.kind: 0 is not an action kind" in msgs[0]  # unset kind
    assert "'Zz' is not a card" in msgs[1]  # bad card text
    assert "answer carries decision_id" in msgs[2]  # wrong decision id
    assert seat.forfeited and out.winner == 1
    _assert_log_replays(out)


def test_oversized_answer_is_malformed_and_fatal(tmp_path: Path) -> None:
    out = _play([hostile("first"), hostile("oversized", "--from", 2), hostile("first")], tmp_path)
    seat = out.seats[1]
    assert len(seat.faults) == 1
    f = seat.faults[0]
    assert f.kind == "malformed" and f.forfeited
    assert "over 65536 bytes" in f.message
    _assert_log_replays(out)


def test_max_rounds_without_winner(tmp_path: Path) -> None:
    rules = Rules().with_options({"max_rounds": 2, "lives": 9})
    out = _play([hostile("first"), hostile("random")], tmp_path, rules=rules)
    assert out.reason == "max_rounds" and out.winner is None and len(out.rounds) == 2
    _assert_log_replays(out)


def test_cancelling_a_match_writes_an_aborted_footer(tmp_path: Path) -> None:
    import asyncio

    async def go() -> None:
        task = asyncio.create_task(
            run_match_async(
                [hostile("sleepy", "--sleep-ms", 30), hostile("sleepy", "--sleep-ms", 30)],
                seed=3,
                log_path=tmp_path / "aborted.jsonl",
            )
        )
        log = tmp_path / "aborted.jsonl"
        await poll_until_async("the match to get going", lambda: log.exists() and len(log.read_text().splitlines()) > 4,
                               while_=lambda: not task.done())  # fmt: skip
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(go())
    log = read_log(tmp_path / "aborted.jsonl")
    assert log.footer is not None and log.footer.reason == "aborted" and log.footer.winner is None
    result = replay_log(log)
    assert result.complete and result.placings == log.footer.placings


def test_default_actions_never_knock() -> None:
    m = Match(3, seed=7)
    while m.round_no < 3 and not m.is_over:
        a = default_action(m)
        assert a.kind.name != "KNOCK"
        if m.phase.name == "TURN_START":
            assert a in (DRAW_STOCK, DRAW_DISCARD)
        else:
            legal = m.legal_actions()
            assert a in legal
            drawn = m.drawn
            if drawn is not None and discard(drawn) in legal:
                assert a == discard(drawn)
            else:
                assert a.card is not None
                assert a.card.value == min(x.card.value for x in legal if x.card is not None)
        m.apply(a)


def test_default_discard_after_taking_the_discard() -> None:
    m = Match(2, seed=11)
    m.apply(DRAW_DISCARD)
    taken = m.drawn
    a = default_action(m)
    assert a.card != taken and a in m.legal_actions()
    assert card("2c").value == 2  # (sanity of the value scale used above)


def test_sample_bots_from_the_sdk_play_a_match(tmp_path: Path) -> None:
    sample_bots = pytest.importorskip("sample_bots")
    names = list(sample_bots.NAMES)[:3]
    out = _play([*names, "me=greedy"], tmp_path, seed=2024)
    assert out.faults == () and out.reason == "last_player"
    assert [s.identity.protocol_version for s in out.seats] == [1] * 4
    assert out.seats[3].label == "me"
    _assert_log_replays(out)
