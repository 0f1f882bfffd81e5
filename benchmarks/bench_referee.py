"""Referee benchmark: decisions per second in a 4-bot match over gRPC (Unix sockets), beside
the raw stream ping-pong on the same transport in the same run (the floor); then the
referee's own cost per decision and the SDK bot's, this tree against a baseline commit.

Run ``python benchmarks/bench_referee.py`` (about a minute; ``--no-grpc`` for the second
table alone). It starts four copies of ``first_legal_bot.py`` (answers at once, so the
figures are the referee's and the transport's), then, ``--reps`` times in turn:

- *floor*: ``bench_transport.measure_stream_pingpong`` to one of the bots: one decision
  request at a time on one Play stream, building each message in the loop, as a match does;
- *referee*: ``--matches`` whole matches with :func:`referee.match.play_match` between the
  four bots (standard rules with ``lives`` raised so matches are long), log written.

Floor and referee alternate so that both see the same machine load; the table shows each
repetition and the median ratio referee/floor (the aim is at least 0.8).

Then the before/after table: the baseline commit (``--baseline``, by default main before
issue 25's per-decision work) is unpacked from git into a temporary folder, and a worker
process (this file with ``--worker``) measures, on whichever code its PYTHONPATH holds,
``--rounds`` times, old and new interleaved (each round's first alternating):

- the referee's own cost per decision: whole matches (play_match, log written) between
  in-process seats that answer at once, converting to and from the wire as the Play stream
  does; its parts are the game model alone (observation, check, apply, records, timed on
  its own over the same matches), the request built and serialised and the answer parsed
  (timed in the seat), the log (timed in the referee's flush of it: lines converted,
  encoded, written), and the match loop (the rest);
- the SDK bot's cost per decision: the SDK's servicer (``sdk.server``) playing each seat's
  recorded stream with a bot whose ``act`` returns the first legal action, the requests
  handed over one answer at a time as gRPC would (parsed from bytes); and apart, its
  conversions alone (request read, View, act, answer serialised), the rest being the
  servicer's asyncio and the hop to the bot's worker thread.

The second table is CPU time (``time.process_time``, all threads of the worker), so that a
busy machine (other processes taking turns on the cores) disturbs it less than wall time;
the parts timed inside a match are read on the wall clock (a CPU clock costs microseconds
a reading) and scaled as the whole. The machine's load is printed: on a busy machine the
figures still grow (caches, frequency), and the ratios of one run are what compare. Over gRPC the log is written while the bot thinks, so it costs
wall time only where the machine has no core to spare.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc.aio
from bench_transport import measure_stream_pingpong_async
from thirtyone.v1 import bot_pb2

from referee import wire
from referee.bots import Answer, BotHandle, close_bots, start_bots
from referee.game import Action, Match, Observation, Rules
from referee.match import MatchConfig, play_match

BOT = str(Path(__file__).resolve().parent / "first_legal_bot.py")
RULES = Rules().with_options({"lives": 6})
#: The code the in-process table compares with: main before the per-decision work of issue
#: 25 (the log through json_format, the request built message by message).
BASELINE = "8ae1322235b62261fd6236043b25f811e4610105"


# ---------------------------------------------------------------- the referee's own cost
#
# Measured in a worker process (``--worker``) on whichever code is first on its PYTHONPATH:
# this tree's, or the baseline commit's unpacked into a temporary folder, so that both are
# timed in one run on the same load. The worker uses only what both have (play_match,
# wire's conversions, the SDK's servicer), and the request the way each one's SeatStream
# sends it.


def _request_encoder() -> Callable[[Observation, int, int, int], bytes]:
    """The bytes of a decision request, as this code's SeatStream puts them on the wire."""
    direct = getattr(wire, "decision_request_bytes", None)
    if direct is not None:
        return direct  # type: ignore[no-any-return]

    def via_message(obs: Observation, decision_id: int, budget_ms: int, bank_ms: int) -> bytes:
        return wire.decision_request(obs, decision_id, budget_ms, bank_ms).SerializeToString()

    return via_message


class _Clock:
    """Time spent in the parts of one measurement, in seconds."""

    def __init__(self) -> None:
        self.request = 0.0
        self.log = 0.0


class _InstantSeat:
    """A seat answering from the request itself: what a bot costs when it costs nothing. It
    converts to and from the wire as the Play stream does (:class:`referee.bots.SeatStream`),
    timing that, and keeps the bytes it sent (for the SDK's part)."""

    def __init__(self, clock: _Clock, sent: list[bytes]) -> None:
        self._clock = clock
        self._sent = sent
        self._encode = _request_encoder()
        self._replies: dict[Action, bytes] = {}

    async def start(self, info: wire.MatchInfo) -> None:
        """Accept match start."""
        self._sent.append(wire.match_start_request(info).SerializeToString())

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
        t0 = time.perf_counter()
        data = self._encode(observation, decision_id, budget_ms, bank_ms)
        t1 = time.perf_counter()
        self._sent.append(data)
        if while_waiting is not None:
            while_waiting()
        # The bot's side, not timed: the answer's bytes (one per action, made once).
        first = observation.legal_actions[0]
        reply = self._replies.get(first)
        if reply is None:
            reply = self._replies[first] = wire.answer_to_pb(decision_id, first).SerializeToString()
        t2 = time.perf_counter()
        _, action = wire.answer_from_pb(bot_pb2.PlayResponse.FromString(reply))
        self._clock.request += (t1 - t0) + (time.perf_counter() - t2)
        return Answer(action, 1000)

    async def finish(self, result: wire.MatchResult, timeout_s: float = 1.0, wait: bool = True) -> None:
        """Accept match end."""
        self._sent.append(wire.match_end_request(result).SerializeToString())

    def abort(self) -> None:
        """Nothing to drop."""


class _InstantPlayer:
    label = "instant"
    source = "in-process"
    identity = wire.BotIdentity("instant", "1", "bench", wire.PROTOCOL_VERSION)

    def __init__(self, clock: _Clock, streams: list[list[bytes]]) -> None:
        self._clock = clock
        self._streams = streams

    def open_seat(self) -> _InstantSeat:
        sent: list[bytes] = []
        self._streams.append(sent)
        return _InstantSeat(self._clock, sent)


def _model_cost(matches: int) -> tuple[float, int]:
    """The game model as the referee drives it, without protobuf or log: seconds, decisions."""
    decisions = 0
    t0 = time.process_time()
    for seed in range(matches):
        m = Match(4, RULES, seed=seed)
        while not m.is_over:
            obs = m.observation(m.current)
            action = obs.legal_actions[0]
            if m.why_illegal(action) is None:
                m.apply_unchecked(action)
            m.take_records()
            decisions += 1
    return time.process_time() - t0, decisions


async def _referee_cost(matches: int, folder: Path) -> tuple[float, float, _Clock, int, list[list[bytes]]]:
    """Whole matches (play_match, log written) between in-process seats: CPU seconds and wall
    seconds in all, the parts' clock (wall), decisions, and what each seat was sent."""
    from referee import match as match_module

    clock = _Clock()
    streams: list[list[bytes]] = []
    player = _InstantPlayer(clock, streams)
    real_flush = match_module._Referee.flush_log

    def timed_flush(self: Any) -> None:
        t = time.perf_counter()
        real_flush(self)
        clock.log += time.perf_counter() - t

    match_module._Referee.flush_log = timed_flush  # type: ignore[method-assign]
    cpu = wall = 0.0
    decisions = 0
    try:
        for seed in range(matches):
            c, t = time.process_time(), time.perf_counter()
            out = await play_match(
                [player] * 4, seed=seed, config=MatchConfig(rules=RULES), log_path=folder / f"{seed}.jsonl"
            )
            wall += time.perf_counter() - t
            cpu += time.process_time() - c
            decisions += out.decisions
    finally:
        match_module._Referee.flush_log = real_flush  # type: ignore[method-assign]
    return cpu, wall, clock, decisions, streams


class _Context:
    """The little of a grpc.aio servicer context the SDK's Play uses: read (the requests, as
    gRPC hands them over: parsed from bytes; EOF after None) and abort. Code from before
    reads the same inbox through the request iterator instead."""

    def __init__(self, inbox: asyncio.Queue[bytes | None]) -> None:
        self._inbox = inbox

    async def read(self) -> Any:
        data = await self._inbox.get()
        return grpc.aio.EOF if data is None else bot_pb2.PlayRequest.FromString(data)  # type: ignore[attr-defined]

    async def abort(self, code: Any, details: str) -> None:
        raise RuntimeError(f"the SDK aborted the stream: {code}: {details}")


async def _sdk_cost(streams: list[list[bytes]]) -> tuple[float, int]:
    """The SDK's servicer (sdk.server) playing each recorded stream with a trivial bot, the
    requests arriving as gRPC hands them over (parsed from bytes) one answer at a time:
    seconds, decisions."""
    from sdk import Bot
    from sdk.server import BotService

    class Trivial(Bot):
        name = "trivial"

        def act(self, view: Any) -> Action:
            return view.legal_actions[0]  # type: ignore[no-any-return]

    service = BotService(Trivial, Trivial().identity())
    decisions = 0
    t0 = time.process_time()
    for sent in streams:
        inbox: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def requests(inbox: asyncio.Queue[bytes | None]) -> AsyncIterator[bot_pb2.PlayRequest]:
            while (data := await inbox.get()) is not None:
                yield bot_pb2.PlayRequest.FromString(data)

        context = _Context(inbox)
        inbox.put_nowait(sent[0])  # match_start
        inbox.put_nowait(sent[1])
        following = iter(sent[2:])
        async for answer in service.Play(requests(inbox), context):  # type: ignore[arg-type]
            answer.SerializeToString()
            decisions += 1
            inbox.put_nowait(next(following))
        inbox.put_nowait(None)
    return time.process_time() - t0, decisions


def _sdk_conversion_cost(streams: list[list[bytes]]) -> tuple[float, int]:
    """The SDK's per-decision work without the servicer and its worker thread: the request
    read (bytes to message to Observation), the View made, a trivial act, the answer
    serialised: seconds, decisions."""
    from sdk.view import SeatMemory

    decisions = 0
    t0 = time.process_time()
    for sent in streams:
        memory = SeatMemory()
        for data in sent[1:-1]:
            d = wire.decision_from_pb(bot_pb2.PlayRequest.FromString(data).decision_request)
            view = memory.view(d.observation, budget_ms=d.budget_ms, bank_ms=d.bank_ms)
            wire.answer_to_pb(d.decision_id, view.legal_actions[0]).SerializeToString()
            decisions += 1
    return time.process_time() - t0, decisions


def own_costs(matches: int) -> dict[str, float]:
    """Microseconds per decision of the referee's own work and its parts, and of the SDK's."""
    # Warm up first: the hand-value table, lazy imports, caches of either code.
    _model_cost(1)
    with tempfile.TemporaryDirectory() as tmp:
        _, _, _, _, warm = asyncio.run(_referee_cost(1, Path(tmp)))
    asyncio.run(_sdk_cost(warm))
    gc.collect()
    model_s, model_n = _model_cost(matches)
    with tempfile.TemporaryDirectory() as tmp:
        gc.collect()
        total_s, wall_s, clock, n, streams = asyncio.run(_referee_cost(matches, Path(tmp)))
    gc.collect()
    sdk_s, sdk_n = asyncio.run(_sdk_cost(streams))
    gc.collect()
    conv_s, conv_n = _sdk_conversion_cost(streams)
    model = model_s / model_n * 1e6
    total = total_s / n * 1e6
    # The parts are timed on the wall clock inside the match (a CPU clock costs microseconds
    # a reading); they are scaled to CPU time as the whole is.
    scale = total_s / wall_s
    request = clock.request * scale / n * 1e6
    log = clock.log * scale / n * 1e6
    return {
        "total": total,
        "model": model,
        "request": request,
        "log": log,
        "loop": total - model - request - log,
        "sdk": sdk_s / sdk_n * 1e6,
        "sdk_convert": conv_s / conv_n * 1e6,
        "sdk_rest": sdk_s / sdk_n * 1e6 - conv_s / conv_n * 1e6,
        "decisions": n,
    }


def _unpack(ref: str, folder: Path) -> Path:
    """The baseline's code (referee, sdk, the generated protobuf code) from git, in ``folder``."""
    repo = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", ref, "referee", "sdk", "proto"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _run_worker(code: Path, matches: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), str(code / "proto")]))
    out = subprocess.run(
        [sys.executable, __file__, "--worker", "--own-matches", str(matches)],
        env=env,
        cwd=tempfile.gettempdir(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


_ROWS = (
    ("total", "referee's own cost per decision"),
    ("model", "  game model (observation, check, apply, records)"),
    ("request", "  request built and serialised, answer parsed"),
    ("log", "  the JSON Lines log (lines converted, encoded, written)"),
    ("loop", "  the match loop (asyncio, time control, bookkeeping)"),
    ("sdk", "SDK bot per decision (servicer, View, trivial act)"),
    ("sdk_convert", "  request read, View, act, answer serialised"),
    ("sdk_rest", "  the servicer: asyncio, the hop to the bot's thread"),
)


def before_after(baseline: str, rounds: int, matches: int) -> None:
    """Print the referee's own cost and the SDK's, baseline against this tree, interleaved."""
    here = Path(__file__).resolve().parents[1]
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        old = _unpack(baseline, Path(tmp))
        for r in range(rounds):
            # Alternate which goes first, so that neither always meets the same load.
            order = (("old", old), ("new", here)) if r % 2 == 0 else (("new", here), ("old", old))
            for name, code in order:
                runs[name].append(_run_worker(code, matches))
    n = int(runs["new"][0]["decisions"])
    print(
        f"\nown cost per decision in us of CPU time, in-process, no transport: {rounds} rounds of {matches} matches "
        f"({n} decisions) per side, old and new interleaved; old = {baseline[:12]}, new = this tree"
    )
    print(
        "(median and best of the rounds; new/old is the median of each round's ratio, old and new run "
        "one after the other, so both met about the same load)"
    )
    header = f"{'':56} {'old med':>8} {'new med':>8} {'old best':>9} {'new best':>9} {'new/old':>8}"
    print(header)
    print("-" * len(header))
    for key, label in _ROWS:
        olds = [x[key] for x in runs["old"]]
        news = [x[key] for x in runs["new"]]
        paired = statistics.median(w / o for o, w in zip(olds, news, strict=True) if o > 0)
        print(
            f"{label:56} {statistics.median(olds):8.1f} {statistics.median(news):8.1f} "
            f"{min(olds):9.1f} {min(news):9.1f} {paired:8.2f}"
        )
    totals = [(o["total"], w["total"]) for o, w in zip(runs["old"], runs["new"], strict=True)]
    best_new = min(runs["new"], key=lambda x: x["total"])
    print(
        f"aims: own cost <= 100 us: best {best_new['total']:.0f}, median {statistics.median(w for _, w in totals):.0f}; "
        f"the log <= 1/4 of it: {best_new['log'] / best_new['total']:.2f} in the best round, median "
        f"{statistics.median(x['log'] / x['total'] for x in runs['new']):.2f}; "
        f"speed-up old/new {statistics.median(o / w for o, w in totals):.2f}x (median of the rounds)"
    )


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
    parser = argparse.ArgumentParser(description="referee decisions/s vs the raw stream floor; own cost old vs new")
    parser.add_argument("--reps", type=int, default=5, help="alternating floor/referee repetitions over gRPC")
    parser.add_argument("--matches", type=int, default=6, help="matches per repetition over gRPC")
    parser.add_argument("-n", type=int, default=1500, help="floor round trips per repetition")
    parser.add_argument("--rounds", type=int, default=7, help="old/new rounds of the in-process own cost")
    parser.add_argument("--own-matches", type=int, default=12, help="matches per side and round of the own cost")
    parser.add_argument("--baseline", default=BASELINE, help=f"git commit to compare with (default {BASELINE})")
    parser.add_argument("--no-grpc", action="store_true", help="only the in-process old/new table")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(own_costs(args.own_matches)))
        return 0
    t_start = time.perf_counter()
    load = os.getloadavg()

    import grpc

    print(
        f"grpc {grpc.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
        f"{load[0]:.1f} at the start; rules {RULES.describe()}"
    )
    if not args.no_grpc:
        print(
            f"\n4 first-legal bots (grpc.aio) in separate processes over Unix sockets; {args.matches} matches "
            "per repetition\n"
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
    before_after(args.baseline, args.rounds, args.own_matches)
    end = os.getloadavg()
    print(f"\n(total {time.perf_counter() - t_start:.1f} s; load average {end[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
