"""Start real bot processes and talk to them over real gRPC channels, like the referee."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from thirtyone.v1 import bot_pb2, bot_pb2_grpc

from referee import wire
from referee.game import Action, Match, Rules
from referee.timecontrol import TimeControl
from tests.polling import poll_until

READY_TIMEOUT_S = 60.0


@dataclass
class BotProcess:
    """A bot process serving on a Unix socket in its own short temporary directory."""

    proc: subprocess.Popen[bytes]
    socket: Path
    tmpdir: Path
    channel: grpc.Channel = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.address)

    @property
    def address(self) -> str:
        """The address the bot listens on."""
        return f"unix://{self.socket}"

    @property
    def stub(self) -> bot_pb2_grpc.BotServiceStub:
        """A BotService stub on the process's channel."""
        return bot_pb2_grpc.BotServiceStub(self.channel)

    def health(self, service: str = "") -> int:
        """The health service's answer for ``service``."""
        reply = health_pb2_grpc.HealthStub(self.channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        status: int = reply.status
        return status

    def wait_ready(self) -> None:
        """Wait until the health service says SERVING (or fail with the bot's stderr)."""

        def serving() -> bool:
            try:
                return self.health() == health_pb2.HealthCheckResponse.SERVING
            except grpc.RpcError:
                return False

        try:
            poll_until("the bot to be SERVING", serving, timeout_s=READY_TIMEOUT_S, while_=lambda: self.proc.poll() is None)
        except AssertionError:
            if self.proc.poll() is not None:
                raise AssertionError(f"bot exited with {self.proc.returncode}: {self.stderr()}") from None
            raise

    def stderr(self) -> str:
        """What the bot wrote on stderr (only once it has exited)."""
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")

    def terminate(self, timeout: float = 10.0) -> int:
        """SIGTERM, then wait for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def close(self) -> None:
        """Stop the process (killing it if it does not stop) and remove its directory."""
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def start_bot(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, wait: bool = True
) -> BotProcess:
    """Start ``argv`` with THIRTYONE_BOT_ADDRESS set to a fresh Unix socket, as the referee would."""
    # A short directory: Unix socket paths must fit in 107 bytes.
    tmpdir = Path(tempfile.mkdtemp(prefix="31sdk", dir="/tmp"))
    sock = tmpdir / "bot.sock"
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["THIRTYONE_BOT_ADDRESS"] = f"unix://{sock}"
    proc = subprocess.Popen(list(argv), env=full_env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    bot = BotProcess(proc, sock, tmpdir)
    if wait:
        try:
            bot.wait_ready()
        except BaseException:
            bot.close()
            raise
    return bot


def python_module(module: str) -> list[str]:
    """The command that runs ``python -m module`` with this interpreter."""
    return [sys.executable, "-m", module]


FIXTURE_BOTS = Path(__file__).with_name("fixture_bots.py")


class SeatStream:
    """One Play stream (one match, one seat), driven one message at a time like the referee."""

    def __init__(self, stub: bot_pb2_grpc.BotServiceStub, info: wire.MatchInfo, timeout: float = 30.0) -> None:
        self.info = info
        self._requests: queue.Queue[bot_pb2.PlayRequest | None] = queue.Queue()
        self._call = stub.Play(iter(self._requests.get, None), timeout=timeout)
        self._responses: Iterator[bot_pb2.PlayResponse] = iter(self._call)
        self._requests.put(wire.match_start_request(info))

    def send(self, request: bot_pb2.PlayRequest) -> None:
        """Put one message on the request stream."""
        self._requests.put(request)

    def ask(self, m: Match, decision_id: int, tc: TimeControl) -> tuple[int, Action]:
        """Ask for the decision of this seat in ``m`` and wait for the answer."""
        obs = m.observation(self.info.seat)
        self._requests.put(wire.decision_request(obs, decision_id, tc.budget_ms, tc.bank_ms))
        return wire.answer_from_pb(next(self._responses))

    def next_answer(self) -> tuple[int, Action]:
        """Wait for the next answer on the stream."""
        return wire.answer_from_pb(next(self._responses))

    def end(self, result: wire.MatchResult) -> list[bot_pb2.PlayResponse]:
        """Send match_end, half-close, and return whatever else the bot sent (nothing)."""
        self._requests.put(wire.match_end_request(result))
        self._requests.put(None)
        return list(self._responses)

    def cancel(self) -> None:
        """Abandon the stream."""
        self._requests.put(None)
        cast("grpc.Future[object]", self._call).cancel()  # the call is also a Future


#: The clock of :func:`play_over_grpc`'s decisions unless a test gives one.
ROOMY_TC = TimeControl(budget_ms=2000, bank_ms=10_000)


def play_over_grpc(
    stub: bot_pb2_grpc.BotServiceStub,
    players: int,
    rules: Rules,
    seed: int,
    match_id: str = "m1",
    tc: TimeControl = ROOMY_TC,
) -> tuple[Match, int]:
    """Play a whole match with every seat served by one bot process, one stream per seat.

    Every answer must be legal; returns the finished match and the number of decisions.
    Nothing here is timed: the streams' deadline (10 minutes) only ends a test that hangs,
    however long a bot that thinks for its time control takes over a match.
    """
    m = Match(players, rules, seed=seed)
    seats = [SeatStream(stub, wire.MatchInfo(match_id, s, players, rules, tc), timeout=600) for s in range(players)]
    decision_id = 0
    while not m.over:
        decision_id += 1
        seat = m.current
        answered, action = seats[seat].ask(m, decision_id, tc)
        assert answered == decision_id
        m.apply(action)  # raises IllegalActionError on an illegal answer
    placings = m.placings
    reason: wire.MatchEndReasonName = "last_player" if m.winner is not None else "max_rounds"
    for s, stream in enumerate(seats):
        assert stream.end(wire.MatchResult(match_id, placings, placings[s], reason)) == []
    return m, decision_id
