"""Tournament benchmark: matches per second with ``-j 1`` and ``-j 2`` for the sample bots.

Run ``python benchmarks/bench_tournament.py`` (about 40-60 s on two cores). It creates one
tournament of the sample bots (random, greedy, threshold; tables of ``--table-size``,
``--games`` deals per table, each in every seat rotation), submits them (validation matches,
not timed), copies the folder, then plays the copies with
:func:`referee.tournament.runner.run_pending`: once with one job, once with two, ``--reps``
times in turn (so that both see the same machine load). It prints, per run, the matches,
the wall time, matches per second, the ratio of ``-j 2`` to ``-j 1``, and bot start-up's
share: the seconds workers spent starting bot processes over the seconds they spent on
matches (start-up included), and the cores kept busy (CPU seconds of the workers and
their bots over wall seconds). Last, it checks that the two runs' results are the same.

The aim: ``-j 2`` at least 1.6 times ``-j 1`` on two free cores, and start-up a small
share. The machine's load average is printed too: other work on the cores lowers the ratio.

With ``--sandbox-cost`` it measures instead what the bots' sandbox costs: the same
tournament with ``sandbox = "off"`` and ``"on"``, both with ``-j 2``, ``--reps`` times in
turn, and the ratio of their rates (the aim: the sandbox costs at most 10%). Bots are
reused across matches, so each sandbox is built once per bot, worker and rotation played
(a process plays one rotation of a deal). (Its "cores busy" column undercounts the sandboxed run: a sandboxed bot's CPU time is reaped inside its
sandbox, which is killed whole, so it never reaches this process's children's usage.)

With ``--old REV`` (e.g. ``main``) it prints instead a before/after table in one run: that
commit's code and this tree's, interleaved (old -j 1, new -j 1, old -j 2, new -j 2, then the
demo's tournament on each; this tree twice, the second time with every Play stream over gRPC,
``THIRTYONE_PLAY_OVER=grpc``, to show what the play socket is worth), ``--reps`` times, each in a subprocess with its packages on
``PYTHONPATH`` (its sandboxed bots too, through the tournament's ``bot_env``): matches per
second, bot start-up's share of match time, and new over old. The demo's row plays what
``thirtyone demo`` plays on each side (the three sample bots, tables of three, the demo's
own number of deals, seed 2026, ``-j 2``). Both sides' packages are compiled first, unless
``--no-precompile`` says otherwise: then each side has only the bytecode its own code writes,
with ``PYTHONDONTWRITEBYTECODE`` set (see ``oldcode.py``), which shows what the referee's own
bytecode (``referee.bots.bytecode``) is worth where nothing else writes it. ``--bots N`` adds copies of the sample bots (``random2``, ...) so that the
tournament has more than one table, where playing table by table saves start-ups.

With ``--ray local`` (needs the ``ray`` extra) it compares instead the Ray executor with the
local pool on the same matches: ``-j 2``; ``--ray local`` as ``tournament run`` does it (Ray
started by the run and stopped after, its start-up in the time); and ``--ray local`` with Ray
already running (as on a cluster that is up: only the workers start), ``--reps`` times in
turn. It prints matches per second, each Ray run's ratio to ``-j 2`` (the aim: at least 0.9),
and the seconds of worker time per match, from which ``docs/ray.md`` works out what a cluster
would give.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.playsocket import TRANSPORT_ENV
from referee.tournament.runner import RunReport, run_pending
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.submit import submit

try:
    from referee.tournament.tasks import Executor
except ImportError:  # --old REV before the runner's split into rooms (issue 39) runs this file too
    from referee.tournament.runner import Executor  # type: ignore[attr-defined,no-redef]

SAMPLES = ("random", "greedy", "threshold")


@dataclass(frozen=True, slots=True)
class Run:
    """One timed run of a tournament."""

    jobs: int
    report: RunReport
    results: dict[str, Any]
    #: CPU seconds of the workers and everything they started (bots, watchdogs).
    cpu_s: float

    @property
    def rate(self) -> float:
        """Matches per second of wall time."""
        return self.report.played / self.report.seconds if self.report.seconds else 0.0

    @property
    def cores(self) -> float:
        """Cores kept busy on average: CPU seconds over wall seconds."""
        return self.cpu_s / self.report.seconds if self.report.seconds else 0.0

    @property
    def startup_share(self) -> float:
        """Seconds starting bots over seconds spent on matches, start-up included."""
        return self.report.startup_s / self.report.match_s if self.report.match_s else 0.0


def bot_names(n: int) -> list[str]:
    """``n`` bots: the sample bots, then copies of them under other names (``random2=random``)."""
    out = list(SAMPLES)
    k = 2
    while len(out) < n:
        out += [f"{b}{k}={b}" for b in SAMPLES]
        k += 1
    return out[:n]


def prepare(folder: Path, settings: TournamentSettings, bots: int = len(SAMPLES)) -> None:
    """A tournament of the sample bots in ``folder``, submitted and validated."""
    with TournamentStore.create(folder, settings) as store:
        for name in bot_names(bots):
            submit(store, name, cwd=folder)


def play(base: Path, folder: Path, jobs: int, executor: Executor | None = None) -> Run:
    """Copy ``base`` to ``folder`` and play it to the end with ``jobs`` workers (or ``executor``)."""
    shutil.copytree(base, folder)
    with TournamentStore.open(folder) as store:
        # Workers are reaped when the run ends, and each reaps its bots: their CPU time is
        # all in this process's children's usage by then.
        before = _children_cpu()
        report = run_pending(store, jobs, executor=executor)
        cpu = _children_cpu() - before
        if report.failed:
            raise SystemExit(f"{len(report.failed)} match(es) failed, e.g. {report.failed[0]}")
        results = {m.key: (m.seats, m.placings, m.result["rounds"]) for m in store.matches()}
    return Run(jobs, report, results, cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sandbox_cost(root: Path, settings: TournamentSettings, reps: int) -> None:
    """Play the same tournament unsandboxed and sandboxed with ``-j 2``; print the cost."""
    from dataclasses import replace

    bases = {}
    for mode in ("off", "on"):
        bases[mode] = root / f"base-{mode}"
        prepare(bases[mode], replace(settings, sandbox=mode))
    print(f"{settings.describe()}\n{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    print(f"\n{'sandbox':<8} {'matches':>7} {'seconds':>8} {'matches/s':>10} {'on/off':>7} {'start-up':>9} {'cores busy':>11}")
    ratios = []
    for rep in range(reps):
        off = play(bases["off"], root / f"off-{rep}", 2)
        on = play(bases["on"], root / f"on-{rep}", 2)
        if off.results != on.results:
            raise SystemExit("the sandbox changed the results of the same seeds")
        ratio = on.rate / off.rate if off.rate else 0.0
        ratios.append(ratio)
        for mode, r in (("off", off), ("on", on)):
            shown = f"{ratio:7.3f}" if r is on else " " * 7
            print(
                f"{mode:<8} {r.report.played:>7} {r.report.seconds:>8.2f} {r.rate:>10.2f} {shown} "
                f"{r.startup_share:>9.1%} {r.cores:>11.2f}" + (f"   (rep {rep + 1})" if reps > 1 else "")
            )
    median = statistics.median(ratios)
    print(f"\nsandboxed/unsandboxed rate: {median:.3f} (median of {len(ratios)}): the sandbox costs {1 - median:.1%}"
          " (aim: at most 10%)")
    print(f"results identical with and without the sandbox; load average {os.getloadavg()[0]:.2f} at the end")


def ray_against_local(root: Path, settings: TournamentSettings, reps: int) -> None:
    """Play the same tournament with ``-j 2`` and on a local Ray instance; print the rates."""
    import logging

    from referee.tournament.ray_executor import LOCAL, RayExecutor, require_ray

    require_ray()
    import ray

    base = root / "base"
    prepare(base, settings)
    cpus = os.cpu_count() or 1
    print(f"{settings.describe()}\n{cpus} cores; load average {os.getloadavg()[0]:.2f} at the start")
    rows: list[tuple[str, Run, float]] = []
    ratios: dict[str, list[float]] = {"cold": [], "warm": []}
    for rep in range(reps):
        local = play(base, root / f"j2-{rep}", 2)
        rows.append(("-j 2", local, 0.0))
        cold = play(base, root / f"ray-cold-{rep}", 2, RayExecutor(LOCAL))
        t0 = time.monotonic()
        ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        ray_start = time.monotonic() - t0
        try:
            warm = play(base, root / f"ray-warm-{rep}", 2, RayExecutor(LOCAL))
        finally:
            ray.shutdown()
        for name, r in (("cold", cold), ("warm", warm)):
            if r.results != local.results:
                raise SystemExit(f"--ray local ({name}) and -j 2 gave different results for the same seed")
            ratios[name].append(r.rate / local.rate if local.rate else 0.0)
        rows.append(("ray, started by the run", cold, ratios["cold"][-1]))
        rows.append((f"ray, running (start {ray_start:.1f} s)", warm, ratios["warm"][-1]))

    print(f"\n{'run':<30} {'matches':>7} {'seconds':>8} {'matches/s':>10} {'/ -j 2':>7} {'worker s/match':>15} {'start-up':>9}")
    for name, r, ratio in rows:
        shown = f"{ratio:7.2f}" if ratio else " " * 7
        per_match = r.report.match_s / r.report.played if r.report.played else 0.0
        print(f"{name:<30} {r.report.played:>7} {r.report.seconds:>8.2f} {r.rate:>10.2f} {shown} {per_match:>15.3f} {r.startup_share:>9.1%}")
    print(
        f"\n--ray local / -j 2: {statistics.median(ratios['cold']):.2f} with Ray started by the run, "
        f"{statistics.median(ratios['warm']):.2f} with Ray already running (medians of {reps}; aim >= 0.9)"
    )
    print(f"results identical on Ray and local workers; load average {os.getloadavg()[0]:.2f} at the end")


def child(args: argparse.Namespace) -> int:
    """One side's run (``--child JOBS``): prepare, play, print the figures as JSON."""
    import json

    games = args.games
    if games == 0:  # the demo's own number of deals, as this side's code has it
        import referee.cli.tournament as demo

        games = getattr(demo, "DEMO_GAMES", 10)  # 10 before it was named
    settings = TournamentSettings(
        table_size=args.table_size, games=games, seed=args.seed, bot_env=("PYTHONPATH",)
    )
    root = Path(tempfile.mkdtemp(prefix="bench-tournament-"))
    try:
        prepare(root / "base", settings, args.bots)
        r = play(root / "base", root / "run", args.child)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({
        "played": r.report.played, "seconds": r.report.seconds, "startup_s": r.report.startup_s,
        "match_s": r.report.match_s, "cpu_s": r.cpu_s, "results": sorted(map(repr, r.results.items())),
    }))
    return 0


def old_against_new(args: argparse.Namespace) -> int:
    """The before/after table: ``args.old``'s code and this tree's, interleaved (see the doc)."""
    import json
    import subprocess

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import oldcode

    configs = {
        "-j 1": (1, ["--games", str(args.games), "--table-size", str(args.table_size), "--bots", str(args.bots)]),
        "-j 2": (2, ["--games", str(args.games), "--table-size", str(args.table_size), "--bots", str(args.bots)]),
        "demo (-j 2)": (2, ["--games", "0", "--table-size", "3", "--bots", "3", "--seed", "2026"]),
    }
    seed = ["--seed", str(args.seed)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-tournament-old-"))
    got: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        # This tree twice: with the play socket (the default) and with every Play stream over
        # gRPC, which shows what the socket itself is worth.
        compiled = not args.no_precompile
        new = None if compiled else oldcode.export_worktree(tmp / "new")
        sides = {f"old {oldcode.short(args.old)}": oldcode.export(args.old, tmp / "old", compiled), "new, gRPC": new, "new": new}
        print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start; "
              f"{args.bots} bots, tables of {args.table_size}, {args.games} deals; {args.reps} rep(s)"
              + ("" if compiled else "; no bytecode but what each side's code writes"))
        for _ in range(args.reps):
            for config, (jobs, extra) in configs.items():
                for side, tree in sides.items():
                    env = oldcode.env_for(tree, compiled)
                    if side == "new, gRPC":
                        env = {**env, TRANSPORT_ENV: "grpc"}
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", str(jobs), *seed, *extra],
                        env=env, capture_output=True, text=True, cwd=tempfile.gettempdir(),
                    )
                    if done.returncode != 0:
                        raise SystemExit(f"{side} {config} failed:\n{done.stderr[-3000:]}")
                    got.setdefault((config, side), []).append(json.loads(done.stdout))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    names = list(sides)
    print(f"\n{'run':<12} {'code':<12} {'matches':>7} {'matches/s':>10} {'start-up':>9} {'new/old':>8}")
    for config in configs:
        rates = {}
        for side in names:
            runs = got[(config, side)]
            rate = statistics.median(r["played"] / r["seconds"] for r in runs)
            share = statistics.median(r["startup_s"] / r["match_s"] for r in runs if r["match_s"])
            rates[side] = rate
            ratio = f"{rate / rates[names[0]]:8.2f}" if side != names[0] else " " * 8
            print(f"{config:<12} {side:<12} {runs[0]['played']:>7} {rate:>10.2f} {share:>9.1%} {ratio}")
        results = {side: got[(config, side)][0]["results"] for side in names}
        if config.startswith("demo") and got[(config, names[0])][0]["played"] != got[(config, names[1])][0]["played"]:
            print(f"  {config}: each side plays its own demo's deals, so the results are not compared")
        elif any(results[side] != results[names[0]] for side in names):
            print(f"  (!) {config}: the results differ between the codes")
    new_j2 = statistics.median(r["played"] / r["seconds"] for r in got[("-j 2", "new")])
    old_j2 = statistics.median(r["played"] / r["seconds"] for r in got[("-j 2", names[0])])
    grpc_j2 = statistics.median(r["played"] / r["seconds"] for r in got[("-j 2", "new, gRPC")])
    print(f"\n-j 2, new over old: {new_j2 / old_j2:.2f} (medians of {args.reps}; the aim: at least 1.5)")
    print(f"-j 2, the play socket over gRPC alone: {new_j2 / grpc_j2:.2f}")
    print(f"results identical between the codes unless said above; load average {os.getloadavg()[0]:.2f} at the end")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description="tournament matches per second, -j 1 against -j 2")
    parser.add_argument("--games", type=int, default=45, help="deals per table (default 45: 135 matches)")
    parser.add_argument("--table-size", type=int, default=3, choices=(2, 3), help="seats per table (default 3)")
    parser.add_argument("--reps", type=int, default=1, help="pairs of runs, alternating -j 1 and -j 2")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--keep", action="store_true", help="keep the tournament folders and print where")
    parser.add_argument("--sandbox-cost", action="store_true", help="compare -j 2 with the sandbox off and on")
    parser.add_argument("--ray", choices=("local",), help="compare -j 2 with --ray local (needs the ray extra)")
    parser.add_argument("--old", metavar="REV", help="print a before/after table against this commit's code (e.g. main)")
    parser.add_argument("--bots", type=int, default=len(SAMPLES), help="bots in the tournament (default 3: the sample bots)")
    parser.add_argument(
        "--no-precompile", action="store_true",
        help="with --old: compile neither side's code; each has only the bytecode it writes itself",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    if args.old:
        return old_against_new(args)

    root = Path(tempfile.mkdtemp(prefix="bench-tournament-"))
    try:
        if args.ray:
            ray_against_local(root, TournamentSettings(table_size=args.table_size, games=args.games, seed=args.seed), args.reps)
            return 0
        if args.sandbox_cost:
            sandbox_cost(root, TournamentSettings(table_size=args.table_size, games=args.games, seed=args.seed), args.reps)
            return 0
        settings = TournamentSettings(table_size=args.table_size, games=args.games, seed=args.seed)
        base = root / "base"
        prepare(base, settings, args.bots)
        load_before = os.getloadavg()
        print(f"{settings.describe()}\n{os.cpu_count()} cores; load average {load_before[0]:.2f} at the start")
        runs: list[tuple[Run, Run]] = []
        for rep in range(args.reps):
            one = play(base, root / f"j1-{rep}", 1)
            two = play(base, root / f"j2-{rep}", 2)
            if one.results != two.results:
                raise SystemExit("-j 1 and -j 2 gave different results for the same seed")
            runs.append((one, two))

        print(f"\n{'run':<6} {'matches':>7} {'seconds':>8} {'matches/s':>10} {'j2/j1':>6} {'start-up':>9} {'cores busy':>11}")
        for rep, (one, two) in enumerate(runs):
            ratio = two.rate / one.rate if one.rate else 0.0
            for r in (one, two):
                shown = f"{ratio:6.2f}" if r is two else " " * 6
                print(
                    f"{f'-j {r.jobs}':<6} {r.report.played:>7} {r.report.seconds:>8.2f} {r.rate:>10.2f} "
                    f"{shown} {r.startup_share:>9.1%} {r.cores:>11.2f}" + (f"   (rep {rep + 1})" if args.reps > 1 else "")
                )
        ratios = [two.rate / one.rate for one, two in runs if one.rate]
        print(f"\nj2/j1: {statistics.median(ratios):.2f} (median of {len(ratios)}; aim >= 1.6 on two free cores)")
        print(f"results of -j 1 and -j 2 identical; load average {os.getloadavg()[0]:.2f} at the end")
        if args.keep:
            print(f"tournaments kept in {root}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
