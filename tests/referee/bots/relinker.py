"""A test bot that turns its socket into a link to another socket on the host (issue 20's
confused deputy): the referee must never follow it.

    python relinker.py --to PATH --when start|play

``--when start``: before it serves, its address is made a link to ``PATH`` (a socket of
the host, which the bot itself cannot even see); it serves on a socket of its own beside
it, so a referee that ignored the link would still find a bot.
``--when play``: it serves at its address as it should; at its first decision it replaces
the socket with a link to ``PATH`` and stops serving, which drops the referee's connection,
so that the referee's next call must connect again. It then waits to be stopped.

It prints ``RELINKED`` once the link is in place. Served with raw grpc.aio (no SDK).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from thirtyone.v1 import bot_pb2, bot_pb2_grpc


def relink(path: str, to: str) -> None:
    """Put a link to ``to`` where ``path`` is, in one step (a rename over it)."""
    temp = path + ".link"
    os.symlink(to, temp)
    os.replace(temp, path)
    print("RELINKED", path, "->", to, flush=True)


class Relinker(bot_pb2_grpc.BotServiceServicer):
    """Identifies itself; at the first decision (``--when play``) relinks and stops serving."""

    def __init__(self, args: argparse.Namespace, path: str) -> None:
        self.args = args
        self.path = path
        self.server: grpc.aio.Server | None = None

    async def GetIdentity(self, request: Any, context: Any) -> bot_pb2.GetIdentityResponse:
        return bot_pb2.GetIdentityResponse(name="relinker", version="0.1", author="tests", protocol_version=1)

    async def Play(self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: Any) -> AsyncIterator[bot_pb2.PlayResponse]:
        async for request in request_iterator:
            if not request.HasField("decision_request"):
                continue
            req = request.decision_request
            if self.args.when == "play" and self.server is not None:
                relink(self.path, self.args.to)
                server, self.server = self.server, None
                # Not awaited here: stopping cancels this very call.
                asyncio.get_running_loop().create_task(server.stop(None))
                await asyncio.sleep(3600)
            yield bot_pb2.PlayResponse(decision_id=req.decision_id, action=req.observation.legal_actions[0])


async def serve(args: argparse.Namespace) -> None:
    path = args.address.removeprefix("unix://")
    listen = path
    if args.when == "start":
        listen = path + ".real"
        relink(path, args.to)
    bot = Relinker(args, path)
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(bot, server)
    health = health_aio.HealthServicer()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    server.add_insecure_port("unix:" + listen)
    await server.start()
    bot.server = server
    print("SERVING", listen, flush=True)
    await asyncio.sleep(3600)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--to", required=True)
    p.add_argument("--when", choices=("start", "play"), required=True)
    p.add_argument("--address", default=os.environ.get("THIRTYONE_BOT_ADDRESS", ""))
    args = p.parse_args()
    if not args.address.startswith("unix://"):
        sys.exit("relinker: needs a unix:// address")
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
