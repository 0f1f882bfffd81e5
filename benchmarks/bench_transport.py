"""Transport benchmark: one unary call per decision versus ping-pong on one bidirectional
stream, over a Unix domain socket and over TCP loopback; and the stream's ping-pong against
the play socket's (the same messages over a plain Unix socket, :mod:`referee.playsocket`).

Run ``python benchmarks/bench_transport.py`` (about 10-20 s). A bot process serving an echo
bot is started; the client sends ``DecisionRequest`` messages of the real contract (a
typical mid-round 4-player observation) one at a time and waits for each answer, as the
referee does within a match. It prints p50/p99/mean round-trip latency and calls per second
for each client API (grpc.aio and sync grpc), transport and call shape, then the ratios
stream/unary. The figures and the conclusion are quoted above ``rpc Play`` in
``proto/thirtyone/v1/bot.proto``. Last, the CPU time one round trip costs, the client's and
the echo bot's together, for grpc.aio's stream over the Unix socket and for the play socket
(asyncio streams at both ends), measured in turn ``--reps`` times: what
``docs/contract.md`` quotes for the play socket.

The pieces are reusable, e.g. by a referee benchmark that wants the transport "floor"::

    server, ports = await start_echo_server(["127.0.0.1:0"])
    floor = await measure_stream_pingpong_async(f"127.0.0.1:{ports[0]}", 2000)

or, outside an event loop, ``measure_stream_pingpong(address, n)`` against any bot that
serves ``thirtyone.v1.BotService`` (the answers are not checked, only timed).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import queue
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

try:
    from thirtyone.v1 import bot_pb2, bot_pb2_grpc, game_pb2
except ImportError:  # not installed: use the generated code committed in proto/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "proto"))
    from thirtyone.v1 import bot_pb2, bot_pb2_grpc, game_pb2
try:
    from referee import playsocket
except ImportError:  # not installed: the checkout's own
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from referee import playsocket

# A unary method served next to BotService only by this benchmark's echo server. It takes
# the same PlayRequest and answers the same PlayResponse as one step of Play, so that the
# two call shapes carry identical bytes.
UNARY_METHOD = "/thirtyone.bench.v1.BenchService/Decide"

_MATCH_ID = "bench"


@dataclass(frozen=True, slots=True)
class Stats:
    """Round-trip statistics of ``n`` sequential calls (latencies in microseconds)."""

    label: str
    n: int
    p50_us: float
    p99_us: float
    mean_us: float
    calls_per_s: float

    @staticmethod
    def from_samples(label: str, latencies_ns: Sequence[int], elapsed_s: float) -> Stats:
        """Summarise per-call latencies (ns) measured over ``elapsed_s`` seconds in all."""
        if not latencies_ns:
            raise ValueError(f"no samples for {label!r}")
        us = sorted(x / 1000 for x in latencies_ns)
        return Stats(
            label=label,
            n=len(us),
            p50_us=_percentile(us, 50),
            p99_us=_percentile(us, 99),
            mean_us=statistics.fmean(us),
            calls_per_s=len(us) / elapsed_s,
        )


def _percentile(sorted_values: Sequence[float], pct: float) -> float:
    # Nearest-rank percentile: an observed value, never an interpolation.
    rank = max(1, round(pct / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


# --- the messages --------------------------------------------------------------------


def sample_rules() -> game_pb2.Rules:
    """The ``standard`` preset (docs/rules.md, "Presets")."""
    return game_pb2.Rules(
        preset="standard",
        three_of_a_kind=game_pb2.THREE_OF_A_KIND_30_5,
        simultaneous_31_loss=2,
        knock_ban=game_pb2.KNOCK_BAN_FIRST_TURN,
        min_knock=0,
        flush_may_knock=False,
        blitz=game_pb2.BLITZ_IMMEDIATE,
        empty_stock=game_pb2.EMPTY_STOCK_RESHUFFLE,
        max_turns_per_round=200,
        knocker_alone_loss=2,
        knocker_tied=game_pb2.KNOCKER_TIED_DOUBLE,
        lives=3,
        bus=True,
        max_rounds=500,
    )


def sample_decision_request(decision_id: int) -> bot_pb2.DecisionRequest:
    """A typical decision: 4 players, round 3, start of seat 2's third turn."""
    k = game_pb2.PublicEventKind
    events: list[tuple[game_pb2.PublicEventKind.ValueType, int, str]] = []
    draws = [("Qs", "9d"), ("", "4c"), ("7h", "7h"), ("", "2s"), ("9d", "Kc"), ("", "3h")]
    for turn, (drawn, discarded) in enumerate(draws * 2):
        seat = (turn + 1) % 4
        events.append(
            (
                k.PUBLIC_EVENT_KIND_DRAW_DISCARD if drawn else k.PUBLIC_EVENT_KIND_DRAW_STOCK,
                seat,
                drawn,
            )
        )
        events.append((k.PUBLIC_EVENT_KIND_DISCARD, seat, discarded))
    observation = game_pb2.Observation(
        seat=2,
        players=4,
        round=3,
        turn=len(draws) * 2,
        phase=game_pb2.PHASE_TURN_START,
        hand=["Ah", "Kh", "5c"],
        history=[
            game_pb2.PublicEvent(kind=kind, seat=seat, card=card) for kind, seat, card in events
        ],
        discard_pile=["8d", "4c", "2s", "Kc", "3h", "Jd"],
        stock_size=29,
        tokens=[3, 2, 1, 3],
        in_game=[True, True, True, True],
        dealer=0,
        legal_actions=[
            game_pb2.Action(kind=game_pb2.ACTION_KIND_KNOCK),
            game_pb2.Action(kind=game_pb2.ACTION_KIND_DRAW_STOCK),
            game_pb2.Action(kind=game_pb2.ACTION_KIND_DRAW_DISCARD),
        ],
        rules=sample_rules(),
    )
    return bot_pb2.DecisionRequest(
        decision_id=decision_id, observation=observation, budget_ms=1000, time_bank_ms=30_000
    )


def _decision(decision_id: int) -> bot_pb2.PlayRequest:
    return bot_pb2.PlayRequest(decision_request=sample_decision_request(decision_id))


def _match_start() -> bot_pb2.PlayRequest:
    return bot_pb2.PlayRequest(
        match_start=bot_pb2.MatchStart(
            match_id=_MATCH_ID,
            seat=2,
            players=4,
            rules=sample_rules(),
            time_control=game_pb2.TimeControl(
                decision_budget_ms=1000, time_bank_ms=30_000, grace_ms=200
            ),
            lives=3,
        )
    )


def _match_end() -> bot_pb2.PlayRequest:
    return bot_pb2.PlayRequest(
        match_end=bot_pb2.MatchEnd(
            match_id=_MATCH_ID,
            placings=[1, 2, 3, 4],
            placing=3,
            reason=game_pb2.MATCH_END_REASON_LAST_PLAYER_STANDING,
        )
    )


# --- the echo bot ----------------------------------------------------------------------


def _answer(request: bot_pb2.PlayRequest) -> bot_pb2.PlayResponse:
    decision = request.decision_request
    legal = decision.observation.legal_actions
    return bot_pb2.PlayResponse(
        decision_id=decision.decision_id,
        action=legal[0] if legal else game_pb2.Action(kind=game_pb2.ACTION_KIND_UNSPECIFIED),
    )


class EchoBot(bot_pb2_grpc.BotServiceServicer):
    """A bot that answers every decision with its first legal action, at once."""

    async def GetIdentity(
        self, request: bot_pb2.GetIdentityRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.GetIdentityResponse:
        """Identify as the echo bot."""
        return bot_pb2.GetIdentityResponse(
            name="echo", version="1", author="benchmarks", protocol_version=1
        )

    async def Play(
        self,
        request_iterator: AsyncIterator[bot_pb2.PlayRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[bot_pb2.PlayResponse]:
        """Answer each decision request; ignore match start and end."""
        async for request in request_iterator:
            if request.HasField("decision_request"):
                yield _answer(request)


async def _decide_unary(
    request: bot_pb2.PlayRequest, context: grpc.aio.ServicerContext[Any, Any]
) -> bot_pb2.PlayResponse:
    return _answer(request)


async def start_echo_server(addresses: Sequence[str]) -> tuple[grpc.aio.Server, list[int]]:
    """Start a grpc.aio server with the echo bot (and the unary benchmark method) bound to
    every address (``unix:/path`` or ``host:port``, port 0 for any); returns it and the
    bound ports (0 for Unix sockets)."""
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(EchoBot(), server)
    service, method = UNARY_METHOD.strip("/").split("/")
    handler = grpc.unary_unary_rpc_method_handler(
        _decide_unary,
        request_deserializer=bot_pb2.PlayRequest.FromString,
        response_serializer=bot_pb2.PlayResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service, {method: handler}),)
    )
    ports = [server.add_insecure_port(address) for address in addresses]
    await server.start()
    return server, ports


async def _echo_play_socket(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The echo bot's Play over the play socket: one connection, one stream."""
    header, size, message = playsocket.HEADER, playsocket.HEADER_SIZE, playsocket.MESSAGE
    try:
        while True:
            try:
                _, n = header.unpack(await reader.readexactly(size))
                request = bot_pb2.PlayRequest.FromString(await reader.readexactly(n))
            except asyncio.IncompleteReadError:
                return
            if request.HasField("decision_request"):
                writer.write(playsocket.frame(message, _answer(request).SerializeToString()))
    finally:
        writer.close()


def _serve_in_child(addresses: list[str], conn: Connection, play_path: str | None = None) -> None:
    async def serve() -> None:
        server, ports = await start_echo_server(addresses)
        if play_path is not None:
            await asyncio.start_unix_server(_echo_play_socket, play_path)
        conn.send(ports)
        await server.wait_for_termination()

    asyncio.run(serve())


async def play_socket_latencies(path: str, n: int, warmup: int = 200) -> tuple[list[int], float]:
    """:func:`stream_pingpong_latencies` over the play socket at ``path``."""
    reader, writer = await asyncio.open_unix_connection(path)
    header, size, message = playsocket.HEADER, playsocket.HEADER_SIZE, playsocket.MESSAGE
    writer.write(playsocket.frame(message, _match_start().SerializeToString()))

    async def round_trip(decision_id: int) -> int:
        writer.write(playsocket.frame(message, _decision(decision_id).SerializeToString()))
        _, length = header.unpack(await reader.readexactly(size))
        return int(bot_pb2.PlayResponse.FromString(await reader.readexactly(length)).decision_id)

    result = await _time_round_trips(n, warmup, round_trip, "play socket")
    writer.write(playsocket.frame(message, _match_end().SerializeToString()))
    writer.write_eof()
    if await reader.read():
        raise RuntimeError("play socket: bot answered after match end")
    writer.close()
    return result


def measure_play_socket(path: str, n: int, warmup: int = 200, label: str = "socket") -> Stats:
    """Round trips on one Play stream over the play socket at ``path``."""
    latencies, elapsed = asyncio.run(play_socket_latencies(path, n, warmup))
    return Stats.from_samples(label, latencies, elapsed)


def _process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) process ``pid`` has used so far (Linux)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_round_trip(measure: Any, n: int, warmup: int, bot_pid: int) -> float:
    """Microseconds of CPU per round trip of ``measure(n, warmup)``: this process's and the
    bot's (``bot_pid``) together, over every round trip it made."""
    c0, b0 = time.process_time(), _process_cpu_s(bot_pid)
    measure(n, warmup)
    used = time.process_time() - c0 + _process_cpu_s(bot_pid) - b0
    return used / (n + warmup) * 1e6


# --- the measurements: grpc.aio ------------------------------------------------------------


async def _time_round_trips(
    n: int, warmup: int, round_trip: Callable[[int], Awaitable[int]], what: str
) -> tuple[list[int], float]:
    """Time ``warmup + n`` calls of ``round_trip(decision_id)``, which sends that decision and
    returns the id answered; the last ``n`` latencies (ns) and their total time (s)."""
    latencies: list[int] = []
    t_start = 0
    for i in range(warmup + n):
        if i == warmup:
            t_start = time.perf_counter_ns()
        t0 = time.perf_counter_ns()
        answered = await round_trip(i + 1)
        t1 = time.perf_counter_ns()
        if answered != i + 1:
            raise RuntimeError(f"{what}: expected an answer to decision {i + 1}, got one to {answered}")
        if i >= warmup:
            latencies.append(t1 - t0)
    return latencies, (time.perf_counter_ns() - t_start) / 1e9


async def stream_pingpong_latencies(
    channel: grpc.aio.Channel, n: int, warmup: int = 200
) -> tuple[list[int], float]:
    """Play one match on ``channel``: match start, ``warmup + n`` decisions one at a time,
    match end. Returns the last ``n`` round-trip latencies (ns) and their total time (s)."""
    stub = bot_pb2_grpc.BotServiceStub(channel)
    call = stub.Play(None)  # no request iterator: requests are written one by one
    await call.write(_match_start())

    async def round_trip(decision_id: int) -> int:
        # Built in the loop, as a match builds each request.
        await call.write(_decision(decision_id))
        response = await call.read()
        return response.decision_id if isinstance(response, bot_pb2.PlayResponse) else -1

    result = await _time_round_trips(n, warmup, round_trip, "stream")
    await call.write(_match_end())
    await call.done_writing()
    extra = await call.read()
    if isinstance(extra, bot_pb2.PlayResponse):  # anything else is grpc.aio.EOF
        raise RuntimeError(f"stream: bot answered after match end: {extra!r}")
    return result


async def unary_latencies(
    channel: grpc.aio.Channel, n: int, warmup: int = 200
) -> tuple[list[int], float]:
    """``warmup + n`` sequential unary calls of the benchmark method; returns the last
    ``n`` round-trip latencies (ns) and their total time (s)."""
    decide = channel.unary_unary(
        UNARY_METHOD,
        request_serializer=bot_pb2.PlayRequest.SerializeToString,
        response_deserializer=bot_pb2.PlayResponse.FromString,
    )

    async def round_trip(decision_id: int) -> int:
        response = await decide(_decision(decision_id))
        return int(response.decision_id)

    return await _time_round_trips(n, warmup, round_trip, "unary")


async def measure_stream_pingpong_async(
    address: str, n: int, warmup: int = 200, label: str = "stream"
) -> Stats:
    """Round trips of one decision at a time on one Play stream to the bot at ``address``
    (``unix:/path`` or ``host:port``), with grpc.aio: the transport floor of a match."""
    async with grpc.aio.insecure_channel(address) as channel:
        latencies, elapsed = await stream_pingpong_latencies(channel, n, warmup)
    return Stats.from_samples(label, latencies, elapsed)


async def measure_unary_async(
    address: str, n: int, warmup: int = 200, label: str = "unary"
) -> Stats:
    """Like :func:`measure_stream_pingpong_async` with one unary call per decision (the
    address must be served by :func:`start_echo_server`)."""
    async with grpc.aio.insecure_channel(address) as channel:
        latencies, elapsed = await unary_latencies(channel, n, warmup)
    return Stats.from_samples(label, latencies, elapsed)


def measure_stream_pingpong(address: str, n: int, warmup: int = 200) -> Stats:
    """:func:`measure_stream_pingpong_async` for callers outside an event loop."""
    return asyncio.run(measure_stream_pingpong_async(address, n, warmup))


def measure_unary(address: str, n: int, warmup: int = 200) -> Stats:
    """:func:`measure_unary_async` for callers outside an event loop."""
    return asyncio.run(measure_unary_async(address, n, warmup))


# --- the measurements: sync grpc -------------------------------------------------------


def measure_stream_pingpong_sync(
    address: str, n: int, warmup: int = 200, label: str = "stream"
) -> Stats:
    """Stream ping-pong with the synchronous grpc API (requests fed through a queue)."""
    outbox: queue.Queue[bot_pb2.PlayRequest | None] = queue.Queue()

    def requests() -> Iterator[bot_pb2.PlayRequest]:
        while (item := outbox.get()) is not None:
            yield item

    with grpc.insecure_channel(address) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)
        outbox.put(_match_start())
        responses = iter(stub.Play(requests()))
        latencies: list[int] = []
        t_start = 0
        for i in range(warmup + n):
            if i == warmup:
                t_start = time.perf_counter_ns()
            request = _decision(i + 1)
            t0 = time.perf_counter_ns()
            outbox.put(request)
            response = next(responses)
            t1 = time.perf_counter_ns()
            if response.decision_id != i + 1:
                raise RuntimeError(f"sync stream: expected decision {i + 1}, got {response!r}")
            if i >= warmup:
                latencies.append(t1 - t0)
        elapsed = (time.perf_counter_ns() - t_start) / 1e9
        outbox.put(_match_end())
        outbox.put(None)
        for extra in responses:
            raise RuntimeError(f"sync stream: bot answered after match end: {extra!r}")
    return Stats.from_samples(label, latencies, elapsed)


def measure_unary_sync(address: str, n: int, warmup: int = 200, label: str = "unary") -> Stats:
    """Sequential unary calls with the synchronous grpc API."""
    with grpc.insecure_channel(address) as channel:
        decide = channel.unary_unary(
            UNARY_METHOD,
            request_serializer=bot_pb2.PlayRequest.SerializeToString,
            response_deserializer=bot_pb2.PlayResponse.FromString,
        )
        latencies: list[int] = []
        t_start = 0
        for i in range(warmup + n):
            if i == warmup:
                t_start = time.perf_counter_ns()
            request = _decision(i + 1)
            t0 = time.perf_counter_ns()
            response = decide(request)
            t1 = time.perf_counter_ns()
            if response.decision_id != i + 1:
                raise RuntimeError(f"sync unary: expected decision {i + 1}, got {response!r}")
            if i >= warmup:
                latencies.append(t1 - t0)
    return Stats.from_samples(label, latencies, (time.perf_counter_ns() - t_start) / 1e9)


# --- the report ------------------------------------------------------------------------


def _row(client: str, transport: str, stats: Stats) -> str:
    return (
        f"{client:<5} {transport:<4} {stats.label:<7} {stats.n:>6} {stats.p50_us:>9.0f} "
        f"{stats.p99_us:>9.0f} {stats.mean_us:>9.0f} {stats.calls_per_s:>9.0f}"
    )


def run(
    n: int, warmup: int, with_sync: bool, cpu_reps: int = 3
) -> tuple[list[tuple[str, str, Stats, Stats]], Stats, list[tuple[float, float]]]:
    """Start an echo bot process and measure every combination; returns
    (client, transport, unary stats, stream stats) rows, the play socket's stats, and
    ``cpu_reps`` pairs of CPU microseconds per round trip (gRPC stream, play socket)."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="thirtyone-bench-") as tmp:
        uds = f"unix:{Path(tmp) / 'bot.sock'}"
        play_path = str(Path(tmp) / "play.sock")
        parent_conn, child_conn = ctx.Pipe()
        proc = ctx.Process(
            target=_serve_in_child, args=([uds, "127.0.0.1:0"], child_conn, play_path), daemon=True
        )
        proc.start()
        try:
            if not parent_conn.poll(30):
                raise RuntimeError("the echo bot process did not start within 30 s")
            ports: list[int] = parent_conn.recv()
            transports = {"uds": uds, "tcp": f"127.0.0.1:{ports[1]}"}
            rows: list[tuple[str, str, Stats, Stats]] = []
            for transport, address in transports.items():
                gc.collect()
                unary = measure_unary(address, n, warmup)
                gc.collect()
                stream = measure_stream_pingpong(address, n, warmup)
                rows.append(("aio", transport, unary, stream))
                if with_sync:
                    gc.collect()
                    unary = measure_unary_sync(address, n, warmup)
                    gc.collect()
                    stream = measure_stream_pingpong_sync(address, n, warmup)
                    rows.append(("sync", transport, unary, stream))
            gc.collect()
            over_socket = measure_play_socket(play_path, n, warmup)
            assert proc.pid is not None
            cpu: list[tuple[float, float]] = []
            for _ in range(cpu_reps):
                gc.collect()
                grpc_us = cpu_per_round_trip(lambda k, w: measure_stream_pingpong(uds, k, w), n, warmup, proc.pid)
                gc.collect()
                socket_us = cpu_per_round_trip(lambda k, w: measure_play_socket(play_path, k, w), n, warmup, proc.pid)
                cpu.append((grpc_us, socket_us))
        finally:
            proc.terminate()
            proc.join(10)
    return rows, over_socket, cpu


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description="gRPC unary vs stream ping-pong latency")
    parser.add_argument("-n", type=int, default=3000, help="measured round trips per row")
    parser.add_argument("--warmup", type=int, default=300, help="unmeasured round trips first")
    parser.add_argument("--no-sync", action="store_true", help="measure grpc.aio only")
    parser.add_argument("--reps", type=int, default=3, help="CPU measurements per transport, in turn")
    args = parser.parse_args(argv)

    size = _decision(1).ByteSize()
    print(
        f"grpc {grpc.__version__}, Python {sys.version.split()[0]}; echo bot (grpc.aio) in a "
        f"separate process; PlayRequest with a DecisionRequest = {size} bytes; "
        f"n={args.n} sequential calls per row after {args.warmup} warm-up\n"
    )
    t0 = time.perf_counter()
    rows, over_socket, cpu = run(args.n, args.warmup, with_sync=not args.no_sync, cpu_reps=args.reps)
    header = f"{'api':<5} {'via':<4} {'shape':<7} {'n':>6} {'p50 us':>9} {'p99 us':>9} {'mean us':>9} {'calls/s':>9}"
    print(header)
    print("-" * len(header))
    for client, transport, unary, stream in rows:
        print(_row(client, transport, unary))
        print(_row(client, transport, stream))
    print("\nratio stream/unary (latency < 1 and calls/s > 1 favour the stream)")
    print(f"{'api':<5} {'via':<4} {'p50':>6} {'p99':>6} {'calls/s':>8}")
    for client, transport, unary, stream in rows:
        print(
            f"{client:<5} {transport:<4} {stream.p50_us / unary.p50_us:>6.2f} "
            f"{stream.p99_us / unary.p99_us:>6.2f} {stream.calls_per_s / unary.calls_per_s:>8.2f}"
        )
    print("\nthe play socket (the same messages over a plain Unix socket, asyncio at both ends)")
    print(header)
    print(_row("aio", "uds", over_socket))
    print("\nCPU per round trip, client and bot together, us (in turn, per repetition)")
    print(f"{'rep':<4} {'gRPC stream':>12} {'play socket':>12} {'gRPC/socket':>12}")
    for i, (grpc_us, socket_us) in enumerate(cpu, 1):
        print(f"{i:<4} {grpc_us:>12.0f} {socket_us:>12.0f} {grpc_us / socket_us:>12.2f}")
    g, so = statistics.median(c[0] for c in cpu), statistics.median(c[1] for c in cpu)
    print(f"{'med':<4} {g:>12.0f} {so:>12.0f} {g / so:>12.2f}")
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
