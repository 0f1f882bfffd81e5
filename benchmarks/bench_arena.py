"""Arena benchmark: the ladder's throughput against ``tournament run``, the API at scale,
and the scheduler's choice of one table.

Run ``python benchmarks/bench_arena.py`` (a few minutes on two cores). In one run:

1. **Throughput**: the same two sample bots (greedy, random), the same rules and ``-j``,
   first as a tournament (``run_pending``), then as an arena's ladder (:class:`Ladder`,
   its versions made active directly so that only play is timed); matches per second of
   each, and their ratio (the aim: at least 0.9). Then a ladder of ``--many`` versions (the
   three sample bots, uploaded again and again), where a new choice of versions rarely seats
   the bots a worker has running, so that starting bots is most of the cost: played in
   series of one table (each choice a single deal) and of the arena's default
   ``series_tables``, interleaved ``--reps-play`` times, with the medians' ratio.
2. **The API at scale**: a synthetic arena of ``--versions`` versions and ``--matches``
   finished matches written straight into its store; the p95 of the leaderboard (built per
   request, then as the ladder keeps it built), the match list (all, one bot's), a match, a
   bot's page and the ladder's state, through the real app over real HTTP (uvicorn on a free
   port; the aim: under 100 ms), and one official refit's time.
3. **The scheduler**: the p95 of one table's choice among that many versions (pure, and with
   the store's query of the active versions; the aim: under 10 ms).

It prints its figures and never asserts.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import uvicorn

from referee.ladder import board, ratings
from referee.ladder.accounts import add_user
from referee.ladder.loop import Ladder
from referee.ladder.scheduler import Candidate, Window, choose_table
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import (
    ADD_PAIR,
    SPARK_POINTS,
    ArenaStore,
    create,
    match_key,
    now,
    pair_outcomes,
)
from referee.ladder.uploads import accept_upload
from referee.service import ServiceConfig, create_app
from referee.tournament.runner import run_pending
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import BotEntry, TournamentStore

SAMPLES = Path(__file__).resolve().parent.parent / "sample_bots"


def p95(xs: list[float]) -> float:
    """The 95th percentile."""
    return statistics.quantiles(xs, n=20)[-1] if len(xs) >= 2 else xs[0]


def tournament_rate(root: Path, jobs: int, matches: int, sandbox: str) -> float:
    """Matches per second of ``tournament run`` with greedy and random."""
    deals = max(1, matches // 2)
    store = TournamentStore.create(root / "t", TournamentSettings(table_size=2, games=deals, seed=7, sandbox=sandbox))
    for name in ("greedy", "random"):
        store.add_bot(BotEntry(name, "sample", name, "", name, None, name, "1", "", now()))
    t0 = time.monotonic()
    report = run_pending(store, jobs)
    elapsed = time.monotonic() - t0
    store.close()
    return report.played / elapsed


def ladder_rate(root: Path, jobs: int, matches: int, sandbox: str, versions: int = 2, **settings: int) -> float:
    """Matches per second of the ladder with ``versions`` versions of the sample bots (greedy
    and random for two; made active directly), with these arena settings."""
    folder = Path(tempfile.mkdtemp(prefix="arena-", dir=root))
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox=sandbox), **settings))
    kinds = ("greedy", "random", "threshold")
    with ArenaStore.open(folder) as store:
        for i in range(versions):
            user, _ = add_user(store, f"bench{i}")
            # Not random.py: a bot file named after a standard module hides it from the bot.
            name = "greedy.py" if versions == 2 and i == 0 else "randbot.py" if versions == 2 else f"{kinds[i % 3]}{i}.py"
            v = accept_upload(store, user, name, (SAMPLES / f"{kinds[i % 3]}.py").read_bytes())
            store.set_status(v.id, "active")
    ladder = Ladder(folder, jobs)
    elapsed: list[float] = []

    def watch() -> None:
        with ArenaStore.open(folder) as s:
            t0 = time.monotonic()
            while s.counts().get("done", 0) < matches:
                time.sleep(0.05)
            elapsed.append(time.monotonic() - t0)
        ladder.stopping.set()

    threading.Thread(target=watch, daemon=True).start()
    ladder.run()
    return matches / elapsed[0]


def synthetic_arena(folder: Path, n_versions: int, n_matches: int) -> ArenaStore:
    """An arena with that many active versions and finished two-seat matches (no logs)."""
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off")))
    store = ArenaStore.open(folder)
    rng = random.Random(1)
    t = now()
    with store.tx() as c:
        c.executemany("INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)", [(u, f"user{u}", t) for u in range(1, 101)])
        c.executemany("INSERT INTO bots (id, user_id, name, created_at) VALUES (?, ?, ?, ?)",
                      [(b, 1 + b % 100, f"bot{b}", t) for b in range(1, n_versions + 1)])
        c.executemany(
            "INSERT INTO versions (id, bot_id, number, status, command, files, sha256, n_files, size, source, uploaded_at, "
            "status_at, mu, sigma, matches, wins, tables) VALUES (?, ?, 1, 'active', 'bot.py', '', '', 1, 1, 'bot.py', ?, ?, ?, ?, ?, ?, ?)",
            [(v, v, t, t, rng.gauss(25, 3), rng.uniform(1, 8), 200, 100, 100) for v in range(1, n_versions + 1)],
        )
        tables, matches, seats = [], [], []
        for tid in range(1, n_matches // 2 + 1):
            a, b = rng.sample(range(1, n_versions + 1), 2)
            tables.append((tid, json.dumps([a, b]), "0" * 64, 0, t, t))
            for r, pair in enumerate(((a, b), (b, a))):
                win = rng.randrange(2)
                result = {"placings": [1 + (s != win) for s in range(2)], "winner": win, "reason": "last_standing", "rounds": 5,
                          "seats": [{"bot": f"bot{v}.v1", "placing": 1 + (s != win), "faults": {}} for s, v in enumerate(pair)]}
                key = match_key(tid, r)
                matches.append((key, tid, r, json.dumps(list(pair)), "done", json.dumps(result), "", t, 1.0))
                seats += [(v, key, s) for s, v in enumerate(pair)]
        c.executemany("INSERT INTO ladder_tables VALUES (?, ?, ?, ?, ?, ?)", tables)
        c.executemany("INSERT INTO matches (key, table_id, rotation, seats, status, result, log_path, finished_at, duration_s) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", matches)
        c.executemany("INSERT INTO match_seats VALUES (?, ?, ?)", seats)
        # Each version's rating history (a point per match it played, as the ladder keeps it)
        # and the head-to-head of every pair that met.
        points = [(v, n, 25 + rng.gauss(0, 1), 8 - 6 * n / 200, t) for v in range(1, n_versions + 1) for n in range(1, 201)]
        c.executemany("INSERT INTO rating_history VALUES (?, ?, '', ?, ?, ?)", points)
        c.executemany("UPDATE versions SET spark = ? WHERE id = ?", [
            (json.dumps([round(mu - 3 * sd, 2) for _, n, mu, sd, _ in points[v * 200 - SPARK_POINTS:v * 200]]), v)
            for v in range(1, n_versions + 1)
        ])
        for m in matches:
            c.executemany(ADD_PAIR, list(pair_outcomes(json.loads(m[3]), json.loads(m[5])["placings"])))
    return store


def api_p95(folder: Path, reps: int, versions: int, matches: int) -> dict[str, float]:
    """p95 in ms of the API's heavier reads, over real HTTP, in the arena
    :func:`synthetic_arena` made with ``versions`` and ``matches``."""
    bot = f"bot{min(7, versions)}"
    tables = matches // 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(ServiceConfig(folder, ladder=False)), port=port, log_level="warning"))
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            httpx.get(base + "/api/v1/runtimes")
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    paths = {
        "leaderboard, built": "/api/v1/standings",
        "leaderboard, kept": "/api/v1/standings",
        "matches (newest 50)": "/api/v1/matches",
        "matches of one bot": f"/api/v1/matches?bot={bot}",
        "one match": f"/api/v1/matches/{match_key(tables // 2 + 1, 1)}",
        "a bot's page": f"/api/v1/bots/{bot}",
        "a bot's rating history": f"/api/v1/bots/{bot}/ratings",
        "a bot's head-to-head": f"/api/v1/bots/{bot}/head-to-head",
        "ladder state": "/api/v1/ladder",
    }
    out = {}
    with httpx.Client(base_url=base) as client:
        for label, path in paths.items():
            if label == "leaderboard, kept":
                # What the ladder's board thread does a moment after the board changed.
                with ArenaStore.open(folder) as store:
                    board.refresh(store)
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                r = client.get(path)
                times.append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 200, r.text
            out[label] = p95(times)
    server.should_exit = True
    th.join(timeout=10)
    return out


def main() -> None:
    """Run the three parts and print their figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--play", type=int, default=40, help="matches each of the tournament and the ladder plays")
    ap.add_argument("--versions", type=int, default=1000)
    ap.add_argument("--matches", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--sandbox", default="auto")
    ap.add_argument("--skip-play", action="store_true")
    ap.add_argument("--many", type=int, default=24, help="versions of the many-versions ladder (0: skip it)")
    ap.add_argument("--reps-play", type=int, default=2, help="runs of each many-versions ladder, interleaved")
    args = ap.parse_args()
    for name, low in (("jobs", 1), ("play", 1), ("versions", 2), ("matches", 2), ("reps", 1), ("reps_play", 1)):
        if getattr(args, name) < low:
            ap.error(f"--{name.replace('_', '-')} must be at least {low}, got {getattr(args, name)}")
    if args.many < 0:
        ap.error(f"--many must be 0 or more, got {args.many}")
    root = Path(tempfile.mkdtemp(prefix="bench-arena-"))
    try:
        if not args.skip_play:
            t = tournament_rate(root, args.jobs, args.play, args.sandbox)
            lad = ladder_rate(root, args.jobs, args.play, args.sandbox)
            print(f"throughput, -j {args.jobs}, {args.play} matches: tournament {t:.2f}/s, ladder {lad:.2f}/s, ratio {lad / t:.2f}")
            if args.many:
                series = ArenaSettings().series_tables
                rates: dict[int, list[float]] = {1: [], series: []}
                for _ in range(args.reps_play):
                    for k in rates:
                        rates[k].append(ladder_rate(root, args.jobs, 2 * args.play, args.sandbox, args.many, placement_tables=0, series_tables=k))
                print(f"ladder of {args.many} versions, -j {args.jobs}, {2 * args.play} matches a run, {args.reps_play} runs each (matches/s):")
                print(f"  {'series_tables':<14} {'runs':<24} {'median':>7}")
                for k, xs in rates.items():
                    print(f"  {k:<14} {' '.join(f'{x:6.2f}' for x in xs):<24} {statistics.median(xs):7.2f}")
                print(f"  ratio, series of {series} over one table: {statistics.median(rates[series]) / statistics.median(rates[1]):.2f}")
        t0 = time.monotonic()
        store = synthetic_arena(root / "big", args.versions, args.matches)
        print(f"synthetic arena: {args.versions} versions, {args.matches} matches written in {time.monotonic() - t0:.1f} s")
        for label, ms in api_p95(root / "big", args.reps, args.versions, args.matches).items():
            print(f"  p95 {label:<22} {ms:7.1f} ms")
        rng = random.Random(2)
        active = store.versions(status=("active",))
        cands = [Candidate(v.id, v.owner_id, *ratings.live_theta(v.mu, v.sigma), v.tables) for v in active]
        rules = store.settings.rules()
        window = Window.of(rules.window, store.recent_tables(rules.window))
        pure, full = [], []
        for _ in range(200):
            t1 = time.perf_counter()
            choose_table(cands, rules, window, rng)
            pure.append((time.perf_counter() - t1) * 1000)
            t1 = time.perf_counter()
            fresh = [Candidate(i, u, *(ratings.live_theta(mu, sg) if th is None or se is None else (th, se)), t, r)
                     for i, u, mu, sg, t, r, th, se in store.candidates()]
            choose_table(fresh, rules, window, rng)
            full.append((time.perf_counter() - t1) * 1000)
        print(f"scheduler, one table among {len(cands)}: p95 {p95(pure):.2f} ms (with the store's query {p95(full):.2f} ms)")
        t1 = time.monotonic()
        ratings.refit_store(store)
        print(f"official refit over {args.matches} matches: {time.monotonic() - t1:.1f} s (in the background)")
        store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
