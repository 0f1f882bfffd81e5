"""The fastest possible bot, for benchmarks: answers every decision with its first legal
action, at once (``bench_transport.EchoBot``), with the health service the referee waits on.

    THIRTYONE_BOT_ADDRESS=unix:///tmp/bot.sock python benchmarks/first_legal_bot.py
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_transport import EchoBot, bot_pb2_grpc


async def serve(address: str) -> None:
    """Serve the echo bot and a SERVING health status at ``address`` until killed."""
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(EchoBot(), server)
    health = health_aio.HealthServicer()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(serve(os.environ.get("THIRTYONE_BOT_ADDRESS") or sys.argv[1]))
