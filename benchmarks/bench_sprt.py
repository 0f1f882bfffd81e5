"""SPRT benchmark: what the sequential test costs per deal, next to what the deal's matches cost.

Run ``python benchmarks/bench_sprt.py`` (about 30-60 s). It plays a real SPRT test, threshold
against greedy at two seats (``--deals`` deals, each in both seat rotations, with bounds so
wide apart that the test does not stop early), through :func:`referee.tournament.sprt_run.run_test`
with ``-j 1``, and takes the match time per deal from the run's report. Then it times the test's
own work per deal on synthetic deal scores (``--reps`` deals):

- ``update + LLR``: :meth:`SequentialTest.add`, for the pentanomial model (two seats: the exact
  GSPRT, a root found twice per deal) and the normal model (larger tables: closed form);
- ``monitor``: :meth:`SprtMonitor.add` for each match of a deal, which also scores the deal;
- ``resume``: :meth:`SprtMonitor.from_store` on the played test, per deal (reading the stored
  results and recomputing the test, as every resumed run does).

It prints a table: seconds per deal of each, and its ratio to the match time per deal. The
aim: the test's overhead is a negligible share (well under 1%) of playing the deal.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from referee.tournament.settings import SprtSettings, TournamentSettings
from referee.tournament.sprt import PENTA_VALUES, SequentialTest, SprtParams
from referee.tournament.sprt_run import SprtMonitor, run_test
from referee.tournament.store import TournamentStore
from referee.tournament.submit import submit


def per_call(fn: Callable[[], object], reps: int) -> float:
    """Seconds per call of ``fn``, the best of three timings of ``reps`` calls."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def test_update_s(model: str, reps: int) -> float:
    """Seconds per deal of :meth:`SequentialTest.add` on random deal scores (never deciding)."""
    rng = random.Random(1)
    values = PENTA_VALUES if model == "pentanomial" else tuple(i / 12 for i in range(13))
    scores = [rng.choice(values) for _ in range(reps)]
    best = float("inf")
    for _ in range(3):
        # Bounds that no random sequence reaches in ``reps`` deals: the test never stops.
        t = SequentialTest(SprtParams(-1, 1, 1e-12, 1e-12), model)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        for x in scores:
            t.add(x)
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main() -> None:
    """Play the test, time the overheads, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deals", type=int, default=10, help="deals of real matches (2 matches each)")
    ap.add_argument("--reps", type=int, default=2000, help="synthetic deals for the overhead timings")
    ap.add_argument("--sandbox", default="auto", help="auto, on or off")
    args = ap.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-sprt-")) / "t"
    settings = TournamentSettings(
        games=args.deals, seed=2026, sandbox=args.sandbox, format="sprt",
        sprt=SprtSettings("threshold", "greedy", elo0=-900, elo1=900, alpha=1e-9, beta=1e-9),
    )
    with TournamentStore.create(folder, settings) as store:
        for bot in ("threshold", "greedy"):
            submit(store, bot)
        t0 = time.perf_counter()
        monitor, report = run_test(store, 1)
        wall = time.perf_counter() - t0
        assert report is not None and monitor.test.n == args.deals, (monitor.test.n, report)
        match_deal_s = report.match_s / monitor.test.n
        resume_s = per_call(lambda: SprtMonitor.from_store(store), 5) / monitor.test.n
        rows = [(r.key, r.seats, r.placings) for r in store.matches()]

        best = float("inf")
        for _ in range(3):
            fresh = [SprtMonitor(settings) for _ in range(20)]
            t1 = time.perf_counter()
            for m in fresh:
                for key, seats, placings in rows:
                    m.add(key, seats, placings)
            best = min(best, (time.perf_counter() - t1) / (20 * monitor.test.n))
        monitor_s = best

    penta_s = test_update_s("pentanomial", args.reps)
    normal_s = test_update_s("normal", args.reps)
    print(f"{monitor.test.n} deals of threshold vs greedy ({report.played} matches) in {wall:.1f} s, -j 1, "
          f"sandbox {args.sandbox}; load average {os.getloadavg()[0]:.2f}; Python {sys.version.split()[0]}")
    print()
    print(f"{'per deal':<44}{'time':>12}{'share of the match time':>26}")
    table = [
        ("matches of the deal (2, played)", match_deal_s),
        ("test update + LLR, pentanomial (2 seats)", penta_s),
        ("test update + LLR, normal (larger tables)", normal_s),
        ("monitor: 2 matches in, deal scored, test", monitor_s),
        ("resume: recompute from the store", resume_s),
    ]
    for name, s in table:
        shown = f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"
        ratio = "1" if s is match_deal_s else f"{s / match_deal_s:.2e} ({100 * s / match_deal_s:.4f}%)"
        print(f"{name:<44}{shown:>12}{ratio:>26}")


if __name__ == "__main__":
    main()
