"""Referee benchmark: decisions per second in a 4-bot match over gRPC (Unix sockets), beside
the raw stream ping-pong on the same transport in the same run (the floor), and the
referee's own cost per decision measured in-process.

Run ``python benchmarks/bench_referee.py`` (about 20-40 s). It starts four copies of
``first_legal_bot.py`` (answers at once, so the figures are the referee's and the
transport's), then, ``--reps`` times in turn:

- *floor*: ``bench_transport.measure_stream_pingpong`` to one of the bots: one decision
  request at a time on one Play stream, building each message in the loop, as a match does;
- *referee*: ``--matches`` whole matches with :func:`referee.match.play_match` between the
  four bots (standard rules with ``lives`` raised so matches are long), log written.

Floor and referee alternate so that both see the same machine load; the table shows each
repetition and the median ratio referee/floor (the aim is at least 0.8). Last, the
referee's own work per decision is timed without any transport, with in-process seats that
answer from the request at once, in layers: the game model alone (observation, check,
apply); plus building and serialising the request and reading the answer; plus the match
loop; plus the log. Over gRPC the log is written while the bot thinks, so it costs wall time
only where the machine has no core to spare.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_transport import measure_stream_pingpong_async
from thirtyone.v1 import bot_pb2

from referee import wire
from referee.bots import Answer, BotHandle, close_bots, start_bots
from referee.game import Match, Observation, Rules
from referee.match import MatchConfig, play_match

BOT = str(Path(__file__).resolve().parent / "first_legal_bot.py")
RULES = Rules().with_options({"lives": 6})


# ---------------------------------------------------------------- in-process seats


class _InstantSeat:
    """A seat answering from the request itself: what a bot costs when it costs nothing. It
    converts to and from the wire as the Play stream does (:class:`referee.bots.SeatStream`)."""

    async def start(self, info: wire.MatchInfo) -> None:
        """Accept match start."""
        wire.match_start_request(info).SerializeToString()

    async def decide(
        self,
        observation: Observation,
        decision_id: int,
        budget_ms: int,
        bank_ms: int,
        timeout_s: float,
        while_waiting: Callable[[], None] | None = None,
    ) -> Answer:
        """Build and serialise the request as gRPC would, answer its first legal action."""
        request = wire.decision_request(observation, decision_id, budget_ms, bank_ms)
        request.SerializeToString()
        if while_waiting is not None:
            while_waiting()
        legal = request.decision_request.observation.legal_actions
        reply = bot_pb2.PlayResponse(decision_id=decision_id, action=legal[0])
        _, action = wire.answer_from_pb(bot_pb2.PlayResponse.FromString(reply.SerializeToString()))
        return Answer(action, 1000)

    async def finish(self, result: wire.MatchResult, timeout_s: float = 1.0, wait: bool = True) -> None:
        """Accept match end."""

    def abort(self) -> None:
        """Nothing to drop."""


class _InstantPlayer:
    label = "instant"
    source = "in-process"
    identity = wire.BotIdentity("instant", "1", "bench", wire.PROTOCOL_VERSION)

    def open_seat(self) -> _InstantSeat:
        return _InstantSeat()


def referee_cost(matches: int) -> tuple[float, float, float, float, int]:
    """Microseconds per decision: model only; + request/answer conversion; + the match loop;
    + the log."""
    # Layer 1: the game model as the referee drives it, without protobuf or log.
    decisions = 0
    t0 = time.perf_counter()
    for seed in range(matches):
        m = Match(4, RULES, seed=seed)
        while not m.is_over:
            seat = m.current
            obs = m.observation(seat)
            action = obs.legal_actions[0]
            if m.why_illegal(action) is None:
                m.apply_unchecked(action)
            m.take_records()
            decisions += 1
    model_us = (time.perf_counter() - t0) / decisions * 1e6

    # Layer 2: + building and serialising each request, reading each answer.
    t0 = time.perf_counter()
    n2 = 0
    for seed in range(matches):
        m = Match(4, RULES, seed=seed)
        did = 0
        while not m.is_over:
            seat = m.current
            did += 1
            req = wire.decision_request(m.observation(seat), did, 250, 10_000)
            req.SerializeToString()
            legal = req.decision_request.observation.legal_actions
            reply = bot_pb2.PlayResponse(decision_id=did, action=legal[0])
            _, action = wire.answer_from_pb(bot_pb2.PlayResponse.FromString(reply.SerializeToString()))
            if m.why_illegal(action) is None:
                m.apply_unchecked(action)
            m.take_records()
            n2 += 1
    wire_us = (time.perf_counter() - t0) / n2 * 1e6

    # Layers 3 and 4: the real match loop (play_match), seats answering in-process, without
    # and with the log.
    async def full(with_log: bool) -> tuple[float, int]:
        players = [_InstantPlayer()] * 4
        total = 0.0
        n = 0
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(matches):
                t = time.perf_counter()
                out = await play_match(
                    players,
                    seed=seed,
                    config=MatchConfig(rules=RULES),
                    log_path=Path(tmp) / f"{seed}.jsonl" if with_log else None,
                )
                total += time.perf_counter() - t
                n += out.decisions
        return total, n

    loop_total, n3 = asyncio.run(full(False))
    log_total, _ = asyncio.run(full(True))
    return model_us, wire_us, loop_total / n3 * 1e6, log_total / n3 * 1e6, n3


# ---------------------------------------------------------------- over gRPC


async def _over_grpc(reps: int, matches: int, n_floor: int) -> list[tuple[float, float, int]]:
    """(floor calls/s, referee decisions/s, decisions) per repetition."""
    bots: list[BotHandle] = await start_bots([BOT] * 4)
    rows: list[tuple[float, float, int]] = []
    try:
        address = bots[0].process.address if bots[0].process is not None else ""
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(reps):
                gc.collect()
                floor = await measure_stream_pingpong_async(address, n_floor, warmup=100)
                gc.collect()
                decisions = 0
                elapsed = 0.0
                for k in range(matches):
                    seed = rep * matches + k
                    t = time.perf_counter()
                    out = await play_match(
                        bots, seed=seed, config=MatchConfig(rules=RULES), log_path=Path(tmp) / f"{seed}.jsonl"
                    )
                    elapsed += time.perf_counter() - t
                    decisions += out.decisions
                rows.append((floor.calls_per_s, decisions / elapsed, decisions))
    finally:
        await close_bots(bots)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    parser = argparse.ArgumentParser(description="referee decisions/s vs the raw stream floor")
    parser.add_argument("--reps", type=int, default=5, help="alternating floor/referee repetitions")
    parser.add_argument("--matches", type=int, default=6, help="matches per repetition")
    parser.add_argument("-n", type=int, default=1500, help="floor round trips per repetition")
    args = parser.parse_args(argv)
    t_start = time.perf_counter()

    import grpc

    print(
        f"grpc {grpc.__version__}, Python {sys.version.split()[0]}; 4 first-legal bots (grpc.aio) in separate "
        f"processes over Unix sockets; rules {RULES.describe()}; {args.matches} matches per repetition\n"
    )
    rows = asyncio.run(_over_grpc(args.reps, args.matches, args.n))
    header = f"{'rep':>3} {'floor calls/s':>14} {'referee dec/s':>14} {'ratio':>6} {'decisions':>10}"
    print(header)
    print("-" * len(header))
    for i, (floor, ref, n) in enumerate(rows, 1):
        print(f"{i:>3} {floor:>14.0f} {ref:>14.0f} {ref / floor:>6.2f} {n:>10}")
    ratios = [ref / floor for floor, ref, _ in rows]
    print(
        f"{'med':>3} {statistics.median(r[0] for r in rows):>14.0f} {statistics.median(r[1] for r in rows):>14.0f} "
        f"{statistics.median(ratios):>6.2f}   (aim: ratio >= 0.80)"
    )

    model_us, wire_us, loop_us, log_us, n3 = referee_cost(max(4, args.matches))
    print(f"\nreferee's own cost per decision, in-process, no transport ({n3} decisions), cumulative:")
    print(f"  game model (observation, why_illegal, apply_unchecked, records) {model_us:7.1f} us")
    print(f"  + request built and serialised, answer parsed                   {wire_us:7.1f} us")
    print(f"  + the match loop (asyncio, time control, fault bookkeeping)     {loop_us:7.1f} us")
    print(f"  + the JSON Lines log (json_format; written while bots think)    {log_us:7.1f} us")
    print(f"\n(total {time.perf_counter() - t_start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
