"""A test bot that misbehaves on purpose, served with raw grpc.aio (no SDK: the SDK would
refuse to send what these modes send).

    python hostile.py --mode MODE [--from N] [--sleep-ms MS] [--record FILE] [--pid-dir DIR] [--card TEXT]

Modes (applied from the N-th decision on, default the first; earlier decisions play the
first legal action):

  first         the first legal action, at once (a well-behaved bot)
  random        a random legal action (``--seed``)
  sleepy        sleeps ``--sleep-ms`` before each answer, then plays the first legal action
  exit_at_start writes an error to stderr and exits with code 3 before serving
  die           exits abruptly (code 1) on its N-th decision
  illegal       well-formed actions the rules forbid
  garbage       malformed answers in turn: unset kind, bad card text, wrong decision id
  silent        never answers
  oversized     an answer far over the referee's message size limit
  card_text     at its first discard decision, discards ``--card TEXT`` as written (``ah``,
                `` 2c``); with ``--card ten``, every legal ten is discarded as ``10`` + suit
                (``10h``), each one appended to ``--record``; otherwise the first legal action
  spy           the first legal action; appends every DecisionRequest (JSON) to ``--record``
  spawner       the first legal action; starts a child process that sleeps forever
  bad_protocol  claims protocol version 2
  no_health     does not serve the health service
  sigterm_proof ignores SIGTERM (the referee must SIGKILL it)

The bot serves at ``$THIRTYONE_BOT_ADDRESS`` (or ``--address``). With ``--pid-dir`` it
writes a file named after its pid (and its child's, for ``spawner``) there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from thirtyone.v1 import bot_pb2, bot_pb2_grpc, game_pb2

DECK = [r + s for r in "23456789TJQKA" for s in "cdhs"]


class Hostile(bot_pb2_grpc.BotServiceServicer):
    """Answers per ``--mode``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.decisions = 0
        self.sent_card_text = False

    async def GetIdentity(self, request: Any, context: Any) -> bot_pb2.GetIdentityResponse:
        version = 2 if self.args.mode == "bad_protocol" else 1
        return bot_pb2.GetIdentityResponse(
            name=self.args.name or f"hostile-{self.args.mode}", version="0.1", author="tests", protocol_version=version
        )

    def _answer(self, req: bot_pb2.DecisionRequest, misbehave: bool) -> bot_pb2.PlayResponse:
        obs = req.observation
        legal = list(obs.legal_actions)
        did = req.decision_id
        mode = self.args.mode
        if not misbehave or mode in ("first", "sleepy", "spy", "spawner", "sigterm_proof"):
            return bot_pb2.PlayResponse(decision_id=did, action=legal[0])
        if mode == "random":
            return bot_pb2.PlayResponse(decision_id=did, action=self.rng.choice(legal))
        if mode == "illegal":
            if obs.phase == game_pb2.PHASE_TURN_START:
                # Discarding before drawing: well formed, never legal at turn start.
                card = obs.hand[0]
            else:
                card = next(c for c in DECK if c not in obs.hand)
            return bot_pb2.PlayResponse(
                decision_id=did, action=game_pb2.Action(kind=game_pb2.ACTION_KIND_DISCARD, card=card)
            )
        if mode == "garbage":
            kind = self.decisions % 3
            if kind == 1:
                return bot_pb2.PlayResponse(decision_id=did, action=game_pb2.Action())
            if kind == 2:
                return bot_pb2.PlayResponse(
                    decision_id=did, action=game_pb2.Action(kind=game_pb2.ACTION_KIND_DISCARD, card="Zz")
                )
            return bot_pb2.PlayResponse(decision_id=did + 1000, action=legal[0])
        if mode == "card_text":
            if obs.phase != game_pb2.PHASE_DISCARD:
                return bot_pb2.PlayResponse(decision_id=did, action=legal[0])
            if self.args.card == "ten":
                tens = [a.card for a in legal if a.card.startswith("T")]
                if not tens:
                    return bot_pb2.PlayResponse(decision_id=did, action=legal[0])
                text = "10" + tens[0][1]
                with open(self.args.record, "a") as f:
                    f.write(text + "\n")
            elif self.sent_card_text:
                return bot_pb2.PlayResponse(decision_id=did, action=legal[0])
            else:
                text = self.args.card
                self.sent_card_text = True
            return bot_pb2.PlayResponse(
                decision_id=did, action=game_pb2.Action(kind=game_pb2.ACTION_KIND_DISCARD, card=text)
            )
        if mode == "oversized":
            return bot_pb2.PlayResponse(
                decision_id=did, action=game_pb2.Action(kind=game_pb2.ACTION_KIND_DISCARD, card="x" * 200_000)
            )
        raise AssertionError(mode)

    async def Play(self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: Any) -> AsyncIterator[bot_pb2.PlayResponse]:
        args = self.args
        async for request in request_iterator:
            if not request.HasField("decision_request"):
                continue
            self.decisions += 1
            req = request.decision_request
            misbehave = self.decisions >= args.start
            if args.mode == "spy":
                with open(args.record, "a") as f:
                    f.write(json_format.MessageToJson(req, indent=None) + "\n")
            if misbehave and args.mode == "die":
                print(f"hostile bot: dying on decision {self.decisions}", file=sys.stderr, flush=True)
                os._exit(1)
            if misbehave and args.mode == "silent":
                continue
            if misbehave and args.mode == "sleepy":
                await asyncio.sleep(args.sleep_ms / 1000)
            yield self._answer(req, misbehave)


async def serve(args: argparse.Namespace) -> None:
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(Hostile(args), server)
    if args.mode != "no_health":
        health = health_aio.HealthServicer()
        await health.set("", health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
    server.add_insecure_port(args.address)
    await server.start()
    await server.wait_for_termination()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="first")
    p.add_argument("--from", dest="start", type=int, default=1)
    p.add_argument("--sleep-ms", type=float, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--record", default="")
    p.add_argument("--pid-dir", default="")
    p.add_argument("--name", default="")
    p.add_argument("--card", default="")
    p.add_argument("--address", default=os.environ.get("THIRTYONE_BOT_ADDRESS", ""))
    args = p.parse_args()
    if args.pid_dir:
        Path(args.pid_dir, str(os.getpid())).write_text("bot")
    if args.mode == "exit_at_start":
        print("hostile bot: cannot load my model weights, giving up", file=sys.stderr, flush=True)
        sys.exit(3)
    if args.mode == "sigterm_proof":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.mode == "spawner":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
        if args.pid_dir:
            Path(args.pid_dir, str(child.pid)).write_text("child")
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
