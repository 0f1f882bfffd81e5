"""A test bot that breaks exactly one rule of the contract, for ``thirtyone check-bot``'s tests.
Served with raw grpc.aio (the SDK would not let it break most of these rules).

    python noncompliant.py --mode MODE [--sleep-ms MS] [--pid-dir DIR]

Modes (every other rule is kept: both health names SERVING, the first legal action at once,
nothing sent but answers, streams ended with OK, death by SIGTERM's default action):

  good           breaks nothing
  half_health    NOT_SERVING for "thirtyone.v1.BotService" (SERVING for "" only): never ready
  stalled_health as half_health for its first 4 health checks, then answers none (each hangs)
  empty_name     SERVING for "" and nothing said of "thirtyone.v1.BotService" (NOT_FOUND), as
                 C++'s grpc::EnableDefaultHealthCheckService(true) alone does: breaks nothing
  chatty_start   answers the first match_start it gets (a bot must send nothing for it)
  take_back      after taking the top discard, discards that very card
  knock_lap      knocks whenever someone has knocked this round (not in the widow game)
  slow_pass      sleeps ``--sleep-ms`` when the empty-stock PASS is legal, then answers
  warm_up        sleeps ``--sleep-ms`` before its first answer only (breaks nothing: a match's
                 time bank covers it)
  serial         serves one Play stream at a time (the contract wants several at once)
  end_error      ends each Play stream with an INTERNAL error after match_end
  sigterm_proof  ignores SIGTERM (the referee must SIGKILL it)
  sigterm_exit_1 exits with code 1 on SIGTERM (as many runtimes' shutdown paths do)

The bot serves at ``$THIRTYONE_BOT_ADDRESS`` (or ``--address``). With ``--pid-dir`` it writes
a file named after its pid there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio  # type: ignore[attr-defined]  # missing from the stubs
from thirtyone.v1 import bot_pb2, bot_pb2_grpc, game_pb2

FULL_NAME = "thirtyone.v1.BotService"


class NonCompliant(bot_pb2_grpc.BotServiceServicer):
    """Answers per ``--mode``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.starts = 0
        self.decisions = 0
        self.one_at_a_time = asyncio.Lock()

    async def GetIdentity(self, request: Any, context: Any) -> bot_pb2.GetIdentityResponse:
        return bot_pb2.GetIdentityResponse(
            name=f"noncompliant-{self.args.mode}", version="0.1", author="tests", protocol_version=1
        )

    async def _answer(self, req: bot_pb2.DecisionRequest) -> bot_pb2.PlayResponse:
        obs = req.observation
        legal = list(obs.legal_actions)
        mode = self.args.mode
        action = legal[0]
        self.decisions += 1
        if mode == "warm_up" and self.decisions == 1:
            await asyncio.sleep(self.args.sleep_ms / 1000)
        if mode == "take_back" and obs.drawn_from == game_pb2.PILE_DISCARD:
            action = game_pb2.Action(kind=game_pb2.ACTION_KIND_DISCARD, card=obs.drawn_card)
        elif mode == "knock_lap" and obs.HasField("knocker") and obs.rules.draw != game_pb2.DRAW_WIDOW:
            action = game_pb2.Action(kind=game_pb2.ACTION_KIND_KNOCK)
        elif mode == "slow_pass" and obs.phase != game_pb2.PHASE_DEALER_OPTION and any(a.kind == game_pb2.ACTION_KIND_PASS for a in legal):
            await asyncio.sleep(self.args.sleep_ms / 1000)
        return bot_pb2.PlayResponse(decision_id=req.decision_id, action=action)

    async def _play(
        self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: Any
    ) -> AsyncIterator[bot_pb2.PlayResponse]:
        async for request in request_iterator:
            if request.HasField("match_start"):
                self.starts += 1
                if self.args.mode == "chatty_start" and self.starts == 1:
                    yield bot_pb2.PlayResponse(decision_id=0, action=game_pb2.Action(kind=game_pb2.ACTION_KIND_PASS))
            elif request.HasField("decision_request"):
                yield await self._answer(request.decision_request)
            elif request.HasField("match_end") and self.args.mode == "end_error":
                await context.abort(grpc.StatusCode.INTERNAL, "noncompliant bot: cannot read this match end")

    async def Play(
        self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: Any
    ) -> AsyncIterator[bot_pb2.PlayResponse]:
        if self.args.mode == "serial":
            async with self.one_at_a_time:
                async for response in self._play(request_iterator, context):
                    yield response
            return
        async for response in self._play(request_iterator, context):
            yield response


class StalledHealth(health_aio.HealthServicer):  # type: ignore[misc]
    """Answers its first few checks, then hangs on every one."""

    answered = 0

    async def Check(self, request: Any, context: Any) -> Any:
        self.answered += 1
        if self.answered > 4:
            await asyncio.sleep(3600)
        return await super().Check(request, context)


async def serve(args: argparse.Namespace) -> None:
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(NonCompliant(args), server)
    health = StalledHealth() if args.mode == "stalled_health" else health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    server.add_insecure_port(args.address)
    await server.start()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    half = args.mode in ("half_health", "stalled_health")
    full = health_pb2.HealthCheckResponse.NOT_SERVING if half else health_pb2.HealthCheckResponse.SERVING
    if args.mode != "empty_name":
        await health.set(FULL_NAME, full)
    await server.wait_for_termination()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="good")
    p.add_argument("--sleep-ms", type=float, default=1000)
    p.add_argument("--address", default=os.environ.get("THIRTYONE_BOT_ADDRESS", ""))
    p.add_argument("--pid-dir", default="")
    args = p.parse_args()
    if args.pid_dir:
        Path(args.pid_dir, str(os.getpid())).write_text("bot")
    if args.mode == "sigterm_proof":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.mode == "sigterm_exit_1":
        signal.signal(signal.SIGTERM, lambda *_: os._exit(1))
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
