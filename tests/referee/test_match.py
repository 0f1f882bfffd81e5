"""Whole matches against real bot processes over gRPC: normal play and every kind of fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.bots import close_bots, start_bots
from referee.game import DRAW_DISCARD, DRAW_STOCK, Match, Rules, card
from referee.game.actions import discard
from referee.log import read_log, replay_log
from referee.match import (
    MatchConfig,
    MatchOutcome,
    default_action,
    play_match,
    run_match,
    run_match_async,
)
from referee.timecontrol import TimeControl

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
    out = _play(bots, tmp_path, seed=12345)
    assert out.reason == "last_player"
    assert out.winner is not None and out.placings[out.winner] == 1
    assert sorted(out.placings)[0] == 1 and max(out.placings) <= 4
    assert out.faults == ()
    assert out.rounds and out.decisions == sum(s.stats.decisions for s in out.seats) > 0
    assert [s.label for s in out.seats][-1] == "firsty"
    for s in out.seats:
        assert s.stats.decisions > 0 and s.stats.max_latency_us > 0
        assert s.bank_left_ms == TimeControl().bank_ms  # fast bots never touch their bank
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


def test_sleepy_bot_uses_its_bank_then_times_out(tmp_path: Path) -> None:
    # 120 ms per answer with a 50 ms budget: 70 ms a decision from a 150 ms bank, so two
    # answers are taken (the second leaves 10 ms), the third needs 120 ms with only
    # 50 + 10 + 50 ms allowed... and each later one is a timeout.
    tc = TimeControl(budget_ms=50, bank_ms=150, grace_ms=50)
    out = _play([hostile("sleepy", "--sleep-ms", 120), hostile("first"), hostile("first")], tmp_path, time_control=tc)
    seat = out.seats[0]
    assert [f.kind for f in seat.faults] == ["timeout"] * 3
    assert seat.forfeited and seat.placing == 3
    assert seat.bank_left_ms == 0
    log = read_log(tmp_path / "match.jsonl")
    taken = [e.event.action for e in log.events if e.event.HasField("action") and e.event.action.seat == 0 and not e.event.action.by_referee]
    assert len(taken) >= 2
    assert all(a.latency_us > 100_000 for a in taken)  # over budget, paid from the bank
    assert seat.faults[0].default_action is not None and not seat.faults[0].forfeited
    assert seat.faults[2].forfeited and seat.faults[2].default_action is None
    assert "no answer within" in seat.faults[0].message
    assert out.winner in (1, 2)
    _assert_log_replays(out)


def test_silent_bot_times_out_within_budget_bank_and_grace(tmp_path: Path) -> None:
    out = _play([hostile("first"), hostile("silent"), hostile("first")], tmp_path, time_control=FAST_TC)
    seat = out.seats[1]
    assert [f.kind for f in seat.faults] == ["timeout"] * 3
    assert seat.forfeited
    # First wait: budget + bank + grace = 250 ms; then the bank is empty: 100 ms each. The
    # lower bounds are exact; the upper ones leave room for a loaded test machine.
    assert 250_000 <= seat.stats.max_latency_us < 550_000
    assert 250_000 + 2 * 100_000 <= seat.stats.total_latency_us < 1_000_000
    assert out.reason == "last_player" and out.winner in (0, 2)
    _assert_log_replays(out)


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
        for _ in range(200):
            await asyncio.sleep(0.05)
            if log.exists() and len(log.read_text().splitlines()) > 4:
                break
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
