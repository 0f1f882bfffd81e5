"""Start-up benchmark: a sandboxed Python bot, from launch to SERVING, and where the time goes.

Run ``python benchmarks/bench_startup.py`` (about 30 s). It starts the sample bot ``random``
(an SDK bot) ``--n`` times, one at a time, the way a tournament's worker does
(:func:`referee.bots.start_bot`: sandbox, process, health checks until SERVING, identity), and
prints the p50 and p95 of the whole, then a breakdown, each part's median:

- **sandbox set-up**: from the launch until bubblewrap has made the sandbox's root (the
  launcher returns);
- **the bot's own start**: from then until the bot prints its start line, which an SDK bot
  prints once its server is up and says SERVING (interpreter, imports, server);
- **noticing SERVING**: from the start line until the referee's health check sees SERVING
  (the poll interval, the reconnect backoff);
- and, measured apart in plain (unsandboxed) subprocesses, in CPU time (steadier than the
  wall clock on a busy machine), the least of ``--n`` each: the interpreter's start
  (``python -c pass``), the imports of ``grpc``, of ``protobuf`` with our messages, of the
  ``sdk`` (which holds both) and of the sample bot, and the SDK server's start in a process
  that has imported everything (wall time);
- **three bots started at once**, as a tournament's worker starts a match's bots
  (:func:`referee.bots.start_bots`): the wall time until all three serve, and the CPU the
  referee itself spent meanwhile (every thread of its process: looking for the sockets, the
  channels, the health checks).

With ``--old REV`` (e.g. ``main``) it runs the same measurement on that commit's code too,
interleaved with this tree's (each side in a subprocess with its packages on ``PYTHONPATH``,
the bots too, through the sandbox's environment), and prints the two side by side. The
machine's load average is printed: on a loaded machine everything takes longer, both sides
alike.

Both sides' packages are compiled first (as an install would), unless ``--no-precompile``
says otherwise: then each side has only the bytecode its own code writes, with
``PYTHONDONTWRITEBYTECODE`` set (``oldcode.py``), as in a container or on a CI machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oldcode  # the benchmarks folder is no package: found through sys.path

BOT = "random"
#: Statements timed in a fresh interpreter each (the interpreter's own start is subtracted).
IMPORTS = {
    "import grpc": "import grpc, grpc.aio",
    "import protobuf + messages": "from thirtyone.v1 import bot_pb2, log_pb2",
    "import sdk": "import sdk",
    "import the sample bot": f"import sample_bots.{BOT}",
}
SERVER_START = """
import asyncio, os, sys, tempfile, time
import sample_bots.{bot} as m
import sdk
async def main():
    path = os.path.join(tempfile.mkdtemp(), "b.sock")
    t = time.perf_counter()
    server = await sdk.start_server(m.{cls}, "unix://" + path)
    print(time.perf_counter() - t)
    await server.stop(None)
asyncio.run(main())
"""


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def _cpu(code: str) -> float:
    """CPU seconds (user and system) of a fresh interpreter running ``code``: on a busy
    machine a steadier measure of work than the wall clock."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Run from elsewhere than the repository: ``-c`` puts the working folder first on sys.path.
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tempfile.gettempdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


async def _one(sandboxed: bool, tmp: str) -> tuple[float, dict[str, float]]:
    """One start through start_bot, and one through its steps with the times between them."""
    import grpc.aio

    from referee.bots import client, parse_bot_spec, start_bot
    from referee.bots.process import LocalLauncher
    from referee.bots.sandbox import SandboxConfig

    launcher = LocalLauncher(tmp_root=tmp, sandbox=SandboxConfig(env=("PYTHONPATH",)) if sandboxed else None)
    t = time.perf_counter()
    handle = await start_bot(BOT, launcher=launcher)
    total = time.perf_counter() - t
    await handle.close()

    spec = parse_bot_spec(BOT)
    t0 = time.perf_counter()
    process = await launcher.launch(spec)
    t_launch = time.perf_counter()
    announced: list[float] = []

    async def watch() -> None:
        while client._announced_address(process) is None:
            await asyncio.sleep(0.0005)
        announced.append(time.perf_counter())

    watcher = asyncio.create_task(watch())
    # A sandboxed bot's socket is reached only through its sandbox (open_channel); code from
    # before that (--old) connected to its address on this machine.
    opener = getattr(client, "open_channel", None)
    if opener is not None:
        channel = await opener(spec, process, 15.0)
    else:
        channel = grpc.aio.insecure_channel(process.address, options=list(client.CHANNEL_OPTIONS))
    try:
        await client.wait_serving(spec, channel, process, 15.0)
        t_serving = time.perf_counter()
        with contextlib.suppress(TimeoutError):  # the line is late, or lost: SERVING counts
            await asyncio.wait_for(watcher, 5.0)
    finally:
        watcher.cancel()
        await channel.close(None)
        await process.stop(0.5)
    t_ann = min(announced[0], t_serving) if announced else t_serving
    return total, {
        "sandbox set-up": t_launch - t0,
        "the bot's own start": t_ann - t_launch,
        "noticing SERVING": t_serving - t_ann,
    }


async def _together(sandboxed: bool, tmp: str, k: int = 3) -> tuple[float, float]:
    """``k`` bots started at once, as a tournament's worker starts a match's bots: the wall
    time until all serve, and the referee's own CPU meanwhile (every thread of this process)."""
    from referee.bots import close_bots, start_bots
    from referee.bots.process import LocalLauncher
    from referee.bots.sandbox import SandboxConfig

    launcher = LocalLauncher(tmp_root=tmp, sandbox=SandboxConfig(env=("PYTHONPATH",)) if sandboxed else None)
    before = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    handles = await start_bots([BOT] * k, launcher=launcher)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF)
    await close_bots(handles)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(n: int, sandboxed: bool) -> dict[str, Any]:
    """Every figure of one side (this process's code), as JSON-ready data."""
    totals: list[float] = []
    parts: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for _ in range(n):
            total, got = asyncio.run(_one(sandboxed, tmp))
            totals.append(total)
            for k, v in got.items():
                parts.setdefault(k, []).append(v)
        together = [asyncio.run(_together(sandboxed, tmp)) for _ in range(max(3, n // 2))]
    # The fastest of n, for the parts measured apart: on a busy machine the least disturbed.
    apart = {"interpreter start (CPU)": min(_cpu("pass") for _ in range(n))}
    for name, code in IMPORTS.items():
        apart[f"{name} (CPU)"] = max(0.0, min(_cpu(code) for _ in range(n)) - apart["interpreter start (CPU)"])
    mod = __import__(f"sample_bots.{BOT}", fromlist=["x"])
    cls = next(k for k, v in vars(mod).items() if isinstance(v, type) and v.__module__ == mod.__name__)
    code = SERVER_START.format(bot=BOT, cls=cls)
    servers = [
        float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout)
        for _ in range(n)
    ]
    apart["SDK server start"] = min(servers)
    return {
        "totals": totals,
        "parts": {k: statistics.median(v) for k, v in parts.items()},
        "apart": apart,
        "together": {
            "all three SERVING, p50": statistics.median(w for w, _ in together),
            "the referee's CPU, p50": statistics.median(c for _, c in together),
        },
    }


def _side(tree: Path | None, n: int, sandboxed: bool, compiled: bool = True) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", str(n), *([] if sandboxed else ["--no-sandbox"])],
        env=oldcode.env_for(tree, compiled), capture_output=True, text=True, cwd=tempfile.gettempdir(),
    )
    if done.returncode != 0:
        raise SystemExit(f"the measurement failed ({tree or 'this tree'}):\n{done.stderr[-3000:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description="a sandboxed Python bot's start-up, launch to SERVING")
    parser.add_argument("--n", type=int, default=20, help="starts per side and round (default 20)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, alternating the sides (default 2)")
    parser.add_argument("--old", metavar="REV", help="compare with the code of this commit (e.g. main)")
    parser.add_argument("--no-sandbox", action="store_true", help="start the bots unsandboxed")
    parser.add_argument(
        "--no-precompile", action="store_true",
        help="compile neither side's code; each has only the bytecode it writes itself",
    )
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, not args.no_sandbox)))
        return 0

    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start; "
          f"bot {BOT}, {'unsandboxed' if args.no_sandbox else 'sandboxed'}, {args.n} starts x {args.rounds} rounds per side")
    with tempfile.TemporaryDirectory(prefix="bench-startup-old-") as tmp:
        compiled = not args.no_precompile
        sides: dict[str, Path | None] = {"this tree": None if compiled else oldcode.export_worktree(Path(tmp) / "new")}
        if args.old:
            sides = {f"old {oldcode.short(args.old)}": oldcode.export(args.old, Path(tmp) / "old", compiled), **sides}
        got: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, tree in sides.items():
                got[name].append(_side(tree, args.n, not args.no_sandbox, compiled))

    def merged(runs: list[dict[str, Any]]) -> dict[str, float]:
        totals = [t for r in runs for t in r["totals"]]
        row = {"launch to SERVING, p50": _pct(totals, 0.5), "launch to SERVING, p95": _pct(totals, 0.95)}
        for key in ("parts", "apart", "together"):
            for k in runs[0].get(key, {}):
                row[k] = statistics.median(r[key][k] for r in runs)
        return row

    table = {name: merged(runs) for name, runs in got.items()}
    names = list(table)
    # Each group's heading, before its first row (an older tree may lack a group).
    first = {}
    for key, heading in (("parts", "  of which:"), ("apart", "  measured apart:"), ("together", "  three bots started at once, as a worker starts a match's:")):
        rows = got[names[-1]][0][key]
        if rows:
            first[next(iter(rows))] = heading
    head = f"{'ms':<30}" + "".join(f"{n:>16}" for n in names) + (f"{'new/old':>9}" if len(names) == 2 else "")
    print("\n" + head)
    for k in table[names[-1]]:
        if k in first:
            print(first[k])
        vals = [table[n].get(k, float("nan")) for n in names]
        ratio = f"{vals[1] / vals[0]:9.2f}" if len(vals) == 2 and vals[0] else ""
        print(f"{k:<30}" + "".join(f"{v * 1000:>16.1f}" for v in vals) + ratio)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
