"""What a CPU burner does to an honest bot's latency, with and without the bots' CPU share.

Run ``python benchmarks/bench_burner.py`` as root (the CPU share is a cgroup's; about a
minute). In one run, ``--reps`` times in turn so that every condition sees the same machine
load, it plays sandboxed matches of the ``greedy`` sample bot against ``random`` and reads
greedy's decision latencies (the referee's round trip, from the match log) under three
conditions:

- ``alone``: nothing else runs;
- ``burner, no share``: a sandboxed bot of ``--burners`` busy processes runs beside the
  match, with a share too large to hold it (the sandbox as it was before the CPU share);
- ``burner, 1 CPU``: the same burner under the default share of one CPU (``--share``: another).

It prints the median and 99th percentile of greedy's latency per condition, and the CPU the
burner got (its processes' CPU time over the wall time). The aim (issue 20): with the share, the
honest bot's latency stays within noise of ``alone``. On a machine with other work the
figures move together; compare them within one run only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from referee.bots import LocalLauncher, parse_bot_spec
from referee.bots.process import LocalBotProcess
from referee.bots.sandbox import CPUS_MAX, BotLimits, SandboxConfig, probe
from referee.match import MatchConfig, run_match_async
from referee.timecontrol import TimeControl

BURNER = textwrap.dedent(
    """
    import os, sys, time
    for _ in range(int(sys.argv[1]) - 1):
        if os.fork() == 0:
            break
    while True:
        pass
    """
)


def latencies_ms(log: Path, seat: int) -> list[float]:
    """The decision latencies of ``seat`` in a match log, ms (decisions the bot made itself,
    but its first: that one includes the bot's warming up)."""
    out = []
    for line in log.read_text().splitlines():
        action = json.loads(line).get("event", {}).get("action")
        if action and action.get("seat", 0) == seat and not action.get("byReferee"):
            out.append(int(action.get("latencyUs", 0)) / 1000)
    return out[1:]


def cpu_usage_s(process: LocalBotProcess) -> float | None:
    """CPU seconds the bot's live processes have used (the processes in its cgroup)."""
    cgroup = process._cgroup
    if cgroup is None:
        return None
    total = 0.0
    for pid in Path(cgroup.procs_files[0]).read_text().split():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def condition(root: Path, cpus: float | None, burners: int, matches: int, seed: int) -> tuple[list[float], float | None]:
    """Play ``matches`` honest matches, beside a burner with share ``cpus`` (None: no burner)."""
    honest = LocalLauncher(sandbox=SandboxConfig())
    burner: LocalBotProcess | None = None
    t0 = time.monotonic()
    used0: float | None = None
    if cpus is not None:
        folder = root / "burner"
        folder.mkdir(exist_ok=True)
        (folder / "burn.py").write_text(BURNER)
        launcher = LocalLauncher(sandbox=SandboxConfig(limits=BotLimits(cpus=cpus)))
        burner = await launcher.launch(parse_bot_spec(f"{sys.executable} burn.py {burners}", cwd=folder))
        await asyncio.sleep(0.5)  # every burner process is up
        t0, used0 = time.monotonic(), cpu_usage_s(burner)
    out: list[float] = []
    try:
        config = MatchConfig(time_control=TimeControl(budget_ms=1000, bank_ms=10_000, grace_ms=500))
        for i in range(matches):
            log = root / f"m-{cpus}-{i}.jsonl"
            await run_match_async(["greedy", "random"], seed=seed + i, config=config, launcher=honest, log_path=log)
            out += latencies_ms(log, 0)
    finally:
        share = None
        if burner is not None:
            used1 = cpu_usage_s(burner)
            if used0 is not None and used1 is not None:
                share = (used1 - used0) / (time.monotonic() - t0)
            await burner.stop(0.2)
    return out, share


def main(argv: list[str] | None = None) -> int:
    """Run the three conditions ``--reps`` times in turn and print the table."""
    parser = argparse.ArgumentParser(description="an honest bot's latency beside a CPU burner, with and without the CPU share")
    parser.add_argument("--burners", type=int, default=8, help="busy processes of the burner bot (default 8)")
    parser.add_argument("--matches", type=int, default=8, help="honest matches per condition and rep (default 8)")
    parser.add_argument("--reps", type=int, default=2, help="rounds of the three conditions, in turn (default 2)")
    parser.add_argument("--share", type=float, default=1.0, help="the burner's CPU share in the last condition (default 1)")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args(argv)
    if not probe().available or not probe().cgroups or probe().cpu_limit_note:
        print(f"needs the sandbox with per-bot cgroups and their cpu controller (as root): {probe().reason or probe().cpu_limit_note}")
        return 1
    conditions = {"alone": None, "burner, no share": float(CPUS_MAX), f"burner, {args.share:g} CPU": args.share}
    found: dict[str, list[float]] = {name: [] for name in conditions}
    shares: dict[str, list[float]] = {name: [] for name in conditions}
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start; a burner of {args.burners} processes")
    with tempfile.TemporaryDirectory(prefix="bench-burner-") as tmp:
        for rep in range(args.reps):
            for name, cpus in conditions.items():
                lat, share = asyncio.run(condition(Path(tmp), cpus, args.burners, args.matches, args.seed + 100 * rep))
                found[name] += lat
                if share is not None:
                    shares[name].append(share)
    print(f"\n{'condition':<18} {'decisions':>9} {'median ms':>10} {'p99 ms':>8} {'burner CPUs':>12}")
    for name, lat in found.items():
        p99 = statistics.quantiles(lat, n=100)[98] if len(lat) >= 100 else max(lat)
        burnt = f"{statistics.mean(shares[name]):>12.2f}" if shares[name] else f"{'-':>12}"
        print(f"{name:<18} {len(lat):>9} {statistics.median(lat):>10.2f} {p99:>8.2f} {burnt}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
