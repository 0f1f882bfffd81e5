"""A test bot that serves its Play streams over the play socket, written from the framing's
description alone (no SDK, no referee code), and misbehaves there on purpose.

    python socket_bot.py --mode MODE [--from N]

It serves health and GetIdentity over raw grpc.aio, and Play over gRPC too (the first legal
action, always), as any bot must. On ``$THIRTYONE_PLAY_SOCKET`` it serves Play per mode,
from the N-th decision on (earlier ones: the first legal action):

  first        the first legal action (a well-behaved bot)
  late_once    answers the N-th decision only once the next one is asked (late for certain)
  not_proto    a MESSAGE frame whose bytes are no PlayResponse
  oversized    a MESSAGE frame of 100,000 bytes
  status       a STATUS frame ``INTERNAL my model fell over``, then hangs up
  cut          half a frame header, then hangs up
  unknown_tag  a frame with tag 9
  flood        answers the N-th decision 2,000,000 times over (40 MB), as fast as it can
  die          exits with code 1
  link         makes the play socket's path a link to its gRPC socket and listens nowhere
  none         ignores the play socket (listens nowhere)

It prints ``answered over socket`` or ``answered over grpc`` on stderr per decision answered,
so that a test can tell which way the match went (a sandboxed bot can write no file).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from thirtyone.v1 import bot_pb2, bot_pb2_grpc

HEADER = struct.Struct(">BI")  # tag, payload length (big-endian)
MESSAGE, STATUS = 1, 2


def record(args: argparse.Namespace, where: str) -> None:
    print(f"answered over {where}", file=sys.stderr, flush=True)


class Bot(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    async def GetIdentity(self, request: Any, context: Any) -> bot_pb2.GetIdentityResponse:
        return bot_pb2.GetIdentityResponse(name=f"socket-{self.args.mode}", version="0.1", protocol_version=1)

    async def Play(self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: Any) -> AsyncIterator[bot_pb2.PlayResponse]:
        async for request in request_iterator:
            if request.HasField("decision_request"):
                req = request.decision_request
                record(self.args, "grpc")
                yield bot_pb2.PlayResponse(decision_id=req.decision_id, action=req.observation.legal_actions[0])


async def play_over_socket(args: argparse.Namespace, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    async def next_request() -> bot_pb2.PlayRequest | None:
        try:
            tag, n = HEADER.unpack(await reader.readexactly(HEADER.size))
            body = await reader.readexactly(n)
        except asyncio.IncompleteReadError:
            return None  # the referee half-closed: the stream's end
        assert tag == MESSAGE, tag
        return bot_pb2.PlayRequest.FromString(body)

    def answer(req: bot_pb2.DecisionRequest) -> None:
        record(args, "socket")
        payload = bot_pb2.PlayResponse(decision_id=req.decision_id, action=req.observation.legal_actions[0]).SerializeToString()
        writer.write(HEADER.pack(MESSAGE, len(payload)) + payload)

    decisions = 0
    ahead: bot_pb2.PlayRequest | None = None
    try:
        while True:
            request, ahead = (ahead, None) if ahead is not None else (await next_request(), None)
            if request is None or request.HasField("match_end"):
                return
            if not request.HasField("decision_request"):
                continue
            req = request.decision_request
            decisions += 1
            mode = args.mode if decisions >= args.start else "first"
            if mode == "late_once":
                if decisions == args.start:
                    # Answered only once the referee has given up on it and asked the next:
                    # late for certain, however fast or slow the machine.
                    ahead = await next_request()
                mode = "first"
            if mode == "die":
                print(f"socket bot: dying on decision {decisions}", file=sys.stderr, flush=True)
                os._exit(1)
            if mode == "first":
                answer(req)
            elif mode == "not_proto":
                writer.write(HEADER.pack(MESSAGE, 4) + b"\xff\xff\xff\xff")
            elif mode == "oversized":
                writer.write(HEADER.pack(MESSAGE, 100_000) + b"\0" * 100_000)
            elif mode == "status":
                details = b"INTERNAL my model fell over"
                writer.write(HEADER.pack(STATUS, len(details)) + details)
                return
            elif mode == "cut":
                writer.write(HEADER.pack(MESSAGE, 10)[:3])
                return
            elif mode == "flood":
                payload = bot_pb2.PlayResponse(decision_id=req.decision_id, action=req.observation.legal_actions[0]).SerializeToString()
                chunk = (HEADER.pack(MESSAGE, len(payload)) + payload) * 10_000
                for _ in range(200):
                    writer.write(chunk)
                    await writer.drain()  # blocks for good once the referee stops reading
            elif mode == "unknown_tag":
                writer.write(HEADER.pack(9, 1) + b"x")
            else:
                raise AssertionError(mode)
    finally:
        writer.close()


async def serve(args: argparse.Namespace) -> None:
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(Bot(args), server)
    health = health_aio.HealthServicer()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    play_path = os.environ.get("THIRTYONE_PLAY_SOCKET", "")
    listener = None
    if play_path and args.mode == "link":
        os.symlink(args.address.removeprefix("unix://"), play_path)
    elif play_path and args.mode != "none":
        listener = await asyncio.start_unix_server(lambda r, w: play_over_socket(args, r, w), play_path)
    server.add_insecure_port(args.address)
    await server.start()
    await server.wait_for_termination()
    if listener is not None:
        listener.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="first")
    p.add_argument("--from", dest="start", type=int, default=1)
    p.add_argument("--address", default=os.environ.get("THIRTYONE_BOT_ADDRESS", ""))
    asyncio.run(serve(p.parse_args()))


if __name__ == "__main__":
    main()
