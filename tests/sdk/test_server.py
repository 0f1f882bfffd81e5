"""The SDK served in real processes and driven over real gRPC channels, as the referee does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import grpc
import pytest
from grpc_health.v1 import health_pb2
from thirtyone.v1 import bot_pb2

from referee import wire
from referee.game import Match, Rules
from referee.timecontrol import TimeControl
from sample_bots import NAMES, command
from tests.polling import wait_for_path
from tests.sdk.helpers import (
    FIXTURE_BOTS,
    BotProcess,
    SeatStream,
    play_over_grpc,
    python_module,
    start_bot,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
TC = TimeControl(budget_ms=1000, bank_ms=5000)
#: For whole matches with time-based bots: nothing is timed, but they think for a part of it.
SHORT_TC = TimeControl(budget_ms=100, bank_ms=1000)


@pytest.fixture(scope="module")
def greedy() -> Iterator[BotProcess]:
    bot = start_bot(python_module("sample_bots.greedy"))
    yield bot
    bot.close()


def status(e: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    """The status code and details of a failed call (a call's errors are also grpc.Call)."""
    call = cast(grpc.Call, e)
    return call.code(), call.details() or ""


def fixture_bot(name: str, **env: str) -> BotProcess:
    return start_bot([sys.executable, str(FIXTURE_BOTS)], env={"FIXTURE_BOT": name, **env})


def test_health_is_serving(greedy: BotProcess) -> None:
    assert greedy.health("") == SERVING
    assert greedy.health("thirtyone.v1.BotService") == SERVING


def test_identity(greedy: BotProcess) -> None:
    reply = greedy.stub.GetIdentity(bot_pb2.GetIdentityRequest(protocol_version=wire.PROTOCOL_VERSION), timeout=5)
    ident = wire.identity_from_pb(reply)
    assert ident.name == "greedy"
    assert ident.version
    assert ident.protocol_version == wire.PROTOCOL_VERSION == 1


@pytest.mark.parametrize(("players", "preset", "seed"), [(2, "standard", 1), (4, "pagat", 2), (3, "family", 3)])
def test_full_matches_one_stream_per_seat(greedy: BotProcess, players: int, preset: str, seed: int) -> None:
    # Every seat is a Play stream to the same process, open at once: several streams
    # served concurrently, each answering only legal actions with the right decision id.
    m, decisions = play_over_grpc(greedy.stub, players, Rules.preset(preset), seed, match_id=f"g{seed}")
    assert m.over
    assert decisions > 10


def test_answer_matches_the_harness(greedy: BotProcess) -> None:
    # The process and the in-process class decide alike from the same observation.
    from sample_bots.greedy import GreedyBot
    from sdk.view import View

    m = Match(3, Rules(), seed=11)
    stream = SeatStream(greedy.stub, wire.MatchInfo("same", m.current, 3, m.rules, TC))
    for decision_id in (1, 2):
        seat = m.current
        if seat != stream.info.seat:
            break
        _, action = stream.ask(m, decision_id, TC)
        assert action == GreedyBot().act(View(m.observation(seat)))
        m.apply(action)
    stream.cancel()


def test_exception_in_act_is_a_clear_internal_error() -> None:
    bot = fixture_bot("raising")
    try:
        m = Match(2, Rules(), seed=5)
        # The stream's deadline is far off, so that an error that came only at a deadline
        # could not pass for one that came at once.
        stream = SeatStream(bot.stub, wire.MatchInfo("boom", 0, 2, m.rules, TC), timeout=120)
        # Ask seat 0's decisions (seat 1 plays the first legal action) until the bot raises.
        asked = 0
        t0 = time.monotonic()
        with pytest.raises(grpc.RpcError) as caught:
            while asked < 5:
                if m.current == 0:
                    asked += 1
                    _, action = stream.ask(m, asked, TC)
                else:
                    action = m.legal_actions()[0]
                m.apply(action)
        elapsed = time.monotonic() - t0
        code, details = status(caught.value)
        assert code == grpc.StatusCode.INTERNAL
        assert "ValueError" in details and "the bot author's bug" in details and "act" in details
        assert "decision 2" in details
        assert elapsed < 60, "the error must come at once, not after a deadline"
        # The bot survives for other matches, and logs the traceback on stderr.
        assert bot.health() == SERVING
        assert bot.terminate() == 0
        log = bot.stderr()
        assert "Traceback" in log and "the bot author's bug" in log
    finally:
        bot.close()


def test_not_an_action_is_an_internal_error() -> None:
    bot = fixture_bot("not_an_action")
    try:
        m = Match(2, Rules(), seed=5)
        stream = SeatStream(bot.stub, wire.MatchInfo("str", m.current, 2, m.rules, TC), timeout=20)
        with pytest.raises(grpc.RpcError) as caught:
            stream.ask(m, 1, TC)
        assert status(caught.value)[0] == grpc.StatusCode.INTERNAL
        assert "not an sdk.Action" in status(caught.value)[1]
    finally:
        bot.close()


def test_protocol_errors_are_reported(greedy: BotProcess) -> None:
    m = Match(2, Rules(), seed=3)
    obs = m.observation(m.current)
    # A decision before match_start.
    requests = iter([wire.decision_request(obs, 1, 100, 100)])
    with pytest.raises(grpc.RpcError) as caught:
        list(greedy.stub.Play(requests, timeout=10))
    assert status(caught.value)[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert "before match_start" in status(caught.value)[1]
    # A malformed match_start (no rules).
    bad = bot_pb2.PlayRequest(match_start=bot_pb2.MatchStart(match_id="x", seat=0, players=2))
    with pytest.raises(grpc.RpcError) as caught:
        list(greedy.stub.Play(iter([bad]), timeout=10))
    assert status(caught.value)[0] == grpc.StatusCode.INVALID_ARGUMENT
    assert "rules" in status(caught.value)[1]
    # A decision for another seat than the stream's.
    stream = SeatStream(greedy.stub, wire.MatchInfo("x", (m.current + 1) % 2, 2, m.rules, TC), timeout=10)
    stream.send(wire.decision_request(obs, 1, 100, 100))
    with pytest.raises(grpc.RpcError) as caught:
        stream.next_answer()
    assert status(caught.value)[0] == grpc.StatusCode.INVALID_ARGUMENT


def test_stale_decision_is_skipped(tmp_path: Path) -> None:
    # A slow bot: while it thinks about decision 1 the referee gives up (timeout), plays a
    # default move and asks decision 2. The bot then answers 1 (stale, ignored by the
    # referee) and 2, but does not spend time on a decision that is already stale.
    marks = tmp_path / "marks"
    marks.mkdir()
    # Decisions 2 and 3 must reach the bot while it thinks about 1: a second is room enough
    # on a busy machine (they are sent at once, once it has begun).
    bot = fixture_bot("slow", SLOW_S="1.0", SLOW_MARKS=str(marks))
    try:
        m = Match(2, Rules(), seed=9)
        seat = m.current
        stream = SeatStream(bot.stub, wire.MatchInfo("late", seat, 2, m.rules, TC), timeout=60)
        obs1 = m.observation(seat)
        stream.send(wire.decision_request(obs1, 1, 10, 0))
        wait_for_path(marks / "act-1")
        m.apply(m.legal_actions()[1])  # the referee's default: draw from the stock
        stream.send(wire.decision_request(m.observation(seat), 2, 10, 0))
        m.apply(m.legal_actions()[0])  # default discard
        # The other seat plays; now the seat's turn again: decision 3.
        while m.current != seat:
            m.apply(m.legal_actions()[0])
        stream.send(wire.decision_request(m.observation(seat), 3, 1000, 0))
        ids = [stream.next_answer()[0], stream.next_answer()[0]]
        # Decision 1 was being thought about; 2 was stale when its turn came and is skipped:
        # the bot was asked to think twice, not three times.
        assert ids == [1, 3]
        assert sorted(p.name for p in marks.glob("act-*")) == ["act-1", "act-2"]
        stream.cancel()
    finally:
        bot.close()


def test_a_decision_sent_while_the_bot_is_slow_is_stamped_when_it_arrives(tmp_path: Path) -> None:
    # The server reads requests one by one as the stream needs them, and ahead only while the
    # bot's call is slow: a decision sent meanwhile still starts its clock on arrival (not when
    # the bot is free), and once the bot is quick again the stream goes on reading in order.
    marks = tmp_path / "marks"
    marks.mkdir()
    bot = fixture_bot("slow", SLOW_S="1.0", SLOW_CALLS="1", SLOW_MARKS=str(marks))
    try:
        m = Match(2, Rules(), seed=9)
        seat = m.current
        stream = SeatStream(bot.stub, wire.MatchInfo("stamped", seat, 2, m.rules, TC), timeout=60)
        stream.send(wire.decision_request(m.observation(seat), 1, 10_000, 0))
        wait_for_path(marks / "act-1")
        # Decision 2 of the same observation (as a referee that gave up on 1 would not ask:
        # nothing here is judged, only read), sent while the bot thinks about 1.
        stream.send(wire.decision_request(m.observation(seat), 2, 10_000, 0))
        assert [stream.next_answer()[0], stream.next_answer()[0]] == [1, 2]
        received_2 = float((marks / "act-2").read_text().split()[1])
        done_1 = float((marks / "done-1").read_text())
        assert received_2 < done_1, "decision 2 was stamped when the bot was free, not when it arrived"
        # Quick from here on: the requests are read one by one again, none lost or reordered.
        for decision_id in range(3, 6):
            assert stream.ask(m, decision_id, TC)[0] == decision_id
        assert stream.end(wire.MatchResult("stamped", (1, 2), 1, "aborted")) == []
        assert sorted(p.name for p in marks.iterdir()) == [f"{k}-{n}" for k in ("act", "done") for n in range(1, 6)]
    finally:
        bot.close()


def test_sigterm_stops_cleanly() -> None:
    bot = start_bot(python_module("sample_bots.random"))
    try:
        assert bot.socket.exists()
        assert bot.terminate() == 0
        assert not bot.socket.exists()
        log = bot.stderr()
        first = log.splitlines()[0]
        assert "random" in first and bot.address in first and "protocol 1" in first
    finally:
        bot.close()


def test_sigterm_mid_match_ends_within_the_grace_period() -> None:
    bot = start_bot([*python_module("sample_bots.greedy"), "--grace", "0.5"])
    try:
        m = Match(2, Rules(), seed=4)
        stream = SeatStream(bot.stub, wire.MatchInfo("cut", m.current, 2, m.rules, TC), timeout=20)
        stream.ask(m, 1, TC)
        t0 = time.monotonic()
        assert bot.terminate(timeout=10) == 0
        assert time.monotonic() - t0 < 5
        assert not bot.socket.exists()
        stream.cancel()
    finally:
        bot.close()


def test_a_bot_stuck_in_act_still_answers_health_checks_and_sigterm() -> None:
    # The bot thinks on its own thread, never on the server's event loop: while it is stuck
    # the server answers, and SIGTERM stops it once the grace is over (not when act returns).
    with tempfile.TemporaryDirectory(prefix="31marks", dir="/tmp") as marks:
        bot = start_bot(
            [sys.executable, str(FIXTURE_BOTS), "--grace", "0.5"],
            env={"FIXTURE_BOT": "slow", "SLOW_S": "600", "SLOW_MARKS": marks},
        )
        try:
            m = Match(2, Rules(), seed=4)
            stream = SeatStream(bot.stub, wire.MatchInfo("stuck", m.current, 2, m.rules, TC), timeout=700)
            stream.send(wire.decision_request(m.observation(m.current), 1, 1000, 0))
            wait_for_path(Path(marks) / "act-1")
            assert bot.health("") == SERVING
            # Well inside the 600 s the bot would go on thinking for.
            assert bot.terminate(timeout=120) == 0
            assert not bot.socket.exists()
            stream.cancel()
        finally:
            bot.close()


def test_every_sample_bot_serves() -> None:
    bots = [start_bot(command(name), wait=False) for name in NAMES]
    try:
        for name, bot in zip(NAMES, bots, strict=True):
            bot.wait_ready()
            ident = wire.identity_from_pb(bot.stub.GetIdentity(bot_pb2.GetIdentityRequest(), timeout=5))
            assert ident.name == name
            # A short clock: the time-based bots (Monte Carlo) think for a part of it.
            m, _ = play_over_grpc(bot.stub, 3, Rules(), seed=21, tc=SHORT_TC)
            assert m.over
    finally:
        for bot in bots:
            bot.close()


def test_tcp_address_and_bad_address() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [*python_module("sample_bots.greedy"), "--address", f"127.0.0.1:{port}"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        from thirtyone.v1 import bot_pb2_grpc

        reply = bot_pb2_grpc.BotServiceStub(channel).GetIdentity(
            bot_pb2.GetIdentityRequest(), timeout=10, wait_for_ready=True
        )
        assert reply.name == "greedy"
        channel.close()
        # A second bot on the same port is refused (no silent port sharing).
        second = subprocess.run(
            [*python_module("sample_bots.greedy"), "--address", str(port)], capture_output=True, timeout=20
        )
        assert second.returncode == 2
        assert b"cannot listen" in second.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert proc.stderr is not None
        proc.stderr.close()
    bad = subprocess.run(
        python_module("sample_bots.greedy"),
        env={**os.environ, "THIRTYONE_BOT_ADDRESS": "unix:///no/such/dir/bot.sock"},
        capture_output=True,
        timeout=20,
    )
    assert bad.returncode == 2
    assert b"directory /no/such/dir does not exist" in bad.stderr


def test_pipelined_messages_are_all_answered(greedy: BotProcess) -> None:
    # A client such as grpcurl sends every message at once and then half-closes: the
    # decision is still answered (only a decision with a newer one behind it is stale).
    m = Match(2, Rules(), seed=1)
    info = wire.MatchInfo("piped", m.current, 2, m.rules, TC)
    requests = [
        wire.match_start_request(info),
        wire.decision_request(m.observation(m.current), 1, 1000, 1000),
        wire.match_end_request(wire.MatchResult("piped", (1, 2), 1, "aborted")),
    ]
    answers = [wire.answer_from_pb(r) for r in greedy.stub.Play(iter(requests), timeout=10)]
    assert [a[0] for a in answers] == [1]
    assert answers[0][1] in m.legal_actions()
