"""Every benchmark still runs, at its smallest size: a benchmark is measured by hand, so one
that a change broke (bench_startup connected where a sandbox's socket no longer is) would
otherwise be found only when someone needs its figures. Nothing here times anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

#: Each benchmark with the arguments that make it small, and a word its table must print.
SMALL: dict[str, tuple[list[str], str]] = {
    "bench_game.py": (["--seconds", "0.05", "--preset", "standard"], "standard"),
    "bench_referee.py": (["--reps", "1", "--matches", "1", "-n", "50", "--rounds", "1", "--own-matches", "1", "--baseline", "HEAD"], "own cost"),
    "bench_startup.py": (["--n", "1", "--rounds", "1", "--no-precompile"], "SERVING"),
    "bench_tournament.py": (["--games", "2", "--reps", "1"], "matches/s"),
    "bench_transport.py": (["-n", "50", "--warmup", "5"], "grpc"),
    "bench_sprt.py": (["--deals", "2", "--reps", "20"], "LLR"),
    "bench_burner.py": (["--burners", "1", "--matches", "1", "--reps", "1"], "burner"),
    "bench_ratings.py": (["--versions", "6", "--seeds", "1", "--horizon", "400", "--coverage-boards", "1", "--coverage-matches", "200",
                          "--refit-versions", "20", "--refit-matches", "200", "--choice-reps", "5"], "coverage"),
    "bench_luck.py": (["--deals", "3", "--runs", "5", "--samples", "2", "--cards", "2", "--deal-samples", "2", "--analysis-samples", "2"], "dup/fresh"),
}


def test_every_benchmark_is_listed_here() -> None:
    on_disk = {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")}
    # Left out: the arena's, the web's and the Monte Carlo bot's, which need minutes even
    # at their smallest (they start an arena service, a browser, a strong bot's matches).
    assert on_disk - set(SMALL) <= {"bench_arena.py", "bench_web.py", "bench_montecarlo.py"}, sorted(on_disk - set(SMALL))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_the_benchmark_runs_at_its_smallest(name: str, tmp_path: Path) -> None:
    args, word = SMALL[name]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    # tmp_path is 0700 (pytest's): as root, a sandboxed bot runs as nobody and must reach it.
    tmp_path.chmod(0o755)
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert word.lower() in out.lower(), out[-4000:]
