"""Ratings and matchmaking benchmark: today's ladder against the one before issue 35, on a
simulated board whose true strengths are known. A pure simulation: no process, no socket.

Run ``python benchmarks/bench_ratings.py`` (three to five minutes on a busy machine, most of it the
old ladder's figure: eight openskill passes over every match at each look). One run prints one
table, the two ladders side by side:

- **order right after (matches)**: the matches after which the board's order is right among
  every two versions at least ``--gap`` apart in true log-strength, and stays right at every
  later look (looks every 20% more matches; the median over ``--seeds`` boards, each seed's in
  brackets; ``>N`` when it was not right by the horizon). The old ladder's board is what it
  showed: its official figure (openskill averaged over eight orders) by mu - 3 sigma; the
  new one's is the fit's rating (:func:`referee.ratings.fit`).
- **largest share of a 100-table window**: the most tables any version sat at in any 100
  consecutive tables, as a multiple of its fair share (``100 * table_size / versions``).
- **coverage**: the share of 95% intervals (the fit's, centred on the mean as the fit centres)
  that hold the true rating, over ``--coverage-boards`` boards played by the new ladder.
  The old figure has no interval; mu +- 1.96 sigma is shown for it (on openskill's scale,
  after a least-squares map onto the true ratings, which favours it).
- **refit at 1,000 versions x 100,000 matches** and **a table choice at 1,000 versions**: seconds
  and milliseconds, once each.

The simulated matches. Each version has a true log-strength; a match's placings are a
Plackett-Luce draw: every seat's performance is its strength plus a standard Gumbel noise,
best first. Duplicate deals: a table plays one deal in every seat rotation, and a seat's
cards are the same in every rotation, so with probability ``--luck`` a seat's noise is the
deal's for that seat (shared by the rotations; whoever sits there gets it) and otherwise its
own. Within one match every seat's noise is still an independent Gumbel, so each match is
an exact Plackett-Luce draw of the true strengths (the fit's model, so the truth is on the
fit's scale), and only the rotations of one deal are correlated, as on the ladder. Measured
on the sample bots (greedy, threshold, random and a copy of greedy, ``thirtyone tournament``
at 2, 3 and 4 seats, 360, 240 and 80 matches): at two seats greedy against its own copy split
every deal 1-1 (the cards decided), greedy against threshold swept 40-47% of deals where
independent matches would sweep 54-58%; hence ``--luck 0.8``. Ties: none in 360 matches at
two seats; at three seats 3 of 240 (1.2%), all ``1, 2, 2`` (the two last out together); at four
seats 4 of 80 (5%), all ``1, 2, 2, 4``: drawn at those rates as those patterns.

The board: ``--versions`` versions, one of them hopeless (a random player: strength -4, where
the old ladder's highest-sigma rule kept seating it), the rest evenly spread over
``[-1.5, 1.5]``; two of them one owner's (the new ladder never seats them together). Both
ladders start every version new and play ``--horizon`` matches, choices held for a series of
four tables as the arena does (a placement table alone). The new ladder refits after every
``max(200, 10%)`` new results, as the arena's ``refit_every_results`` would, and uses the
live figure (openskill, tau = 0) for a version no refit has yet.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import legacy_ratings as legacy

from referee.ladder import ratings as ladder_ratings
from referee.ladder.scheduler import Candidate, Rules, Window, choose_table, within_caps
from referee.ratings import BASE, ELO, Fit, Outcome, fit

#: Measured tie patterns by table size (see the module doc): (chance, placings).
TIES: dict[int, tuple[float, tuple[int, ...]]] = {3: (3 / 240, (1, 2, 2)), 4: (4 / 80, (1, 2, 2, 4))}
SERIES = 4
WINDOW = 100

Match = tuple[tuple[int, ...], tuple[int, ...], int]  # seats, placings, table


@dataclass
class World:
    """True strengths and the dice."""

    theta: list[float]
    owner: list[int]
    table_size: int
    luck: float
    rng: random.Random

    def play(self, seats: Sequence[int], table: int) -> list[Match]:
        """One table: its deal in every seat rotation."""
        k = len(seats)
        rng = self.rng
        deal = [-math.log(-math.log(rng.random())) for _ in range(k)]
        out = []
        for r in range(k):
            rotated = tuple(seats[r:]) + tuple(seats[:r])
            perf = []
            for s, v in enumerate(rotated):
                noise = deal[s] if rng.random() < self.luck else -math.log(-math.log(rng.random()))
                perf.append((self.theta[v] + noise, s))
            order = [s for _, s in sorted(perf, reverse=True)]
            placings = [0] * k
            for place, s in enumerate(order, 1):
                placings[s] = place
            tie = TIES.get(k)
            if tie is not None and rng.random() < tie[0]:
                pattern = tie[1]
                placings = [pattern[p - 1] for p in placings]
            out.append((rotated, tuple(placings), table))
        return out


def make_world(n: int, k: int, luck: float, seed: int) -> World:
    spread = [-1.5 + 3.0 * i / (n - 2) for i in range(n - 1)]
    theta = [-4.0, *spread]
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)  # ids say nothing of strength
    theta = [theta[order[i]] for i in range(n)]
    owner = list(range(n))
    owner[1] = owner[0]  # one owner's two versions
    return World(theta, owner, k, luck, rng)


def order_right(world: World, estimate: dict[int, float], gap: float) -> bool:
    """Whether every two versions at least ``gap`` apart are in the right order."""
    n = len(world.theta)
    for a in range(n):
        for b in range(n):
            if world.theta[a] - world.theta[b] >= gap and estimate[a] <= estimate[b]:
                return False
    return True


def looks(horizon: int) -> list[int]:
    out, m = [], 200
    while m < horizon:
        out.append(m)
        m = int(m * 1.2) + 1
    return [*out, horizon]


def max_share(tables: list[tuple[int, ...]], n: int, k: int) -> float:
    """The most tables any version sat at in any WINDOW consecutive tables, over its fair share."""
    fair = WINDOW * k / n
    counts: Counter[int] = Counter()
    window: deque[tuple[int, ...]] = deque()
    best = 0
    for t in tables:
        window.append(t)
        counts.update(t)
        if len(window) > WINDOW:
            counts.subtract(window.popleft())
        best = max(best, max(counts[v] for v in t))
    return best / fair


# ------------------------------------------------------------------ the two ladders


def run_legacy(world: World, horizon: int, gap: float, placement: int) -> tuple[int | None, float, list[tuple[float, float]]]:
    """The old ladder; (matches to the right order, largest window share, (mu, sigma) at the end)."""
    n, k = len(world.theta), world.table_size
    rng = random.Random(world.rng.random())
    live = [legacy.prior() for _ in range(n)]
    tables_of = [0] * n
    matches: list[Match] = []
    tables: list[tuple[int, ...]] = []
    marks = looks(horizon)
    right: list[bool] = []
    series: tuple[tuple[int, ...], int] | None = None
    while len(matches) < horizon:
        if series is None or series[1] == 0:
            cands = [legacy.Candidate(v, live[v][0], live[v][1], tables_of[v]) for v in range(n)]
            choice = legacy.choose_table(cands, k, placement, rng)
            assert choice is not None
            series = (choice.seats, 1 if choice.placement else SERIES)
        seats, left = series
        series = (seats, left - 1)
        tables.append(seats)
        for v in seats:
            tables_of[v] += 1
        for m in world.play(seats, len(tables)):
            matches.append(m)
            moved = legacy.live_update([live[v] for v in m[0]], m[1])
            for v, r in zip(m[0], moved, strict=True):
                live[v] = r
            if len(matches) in marks:
                off = legacy.averaged_ratings([(s, p) for s, p, _ in matches], list(range(n)))
                right.append(order_right(world, {v: mu - 3 * sg for v, (mu, sg) in off.items()}, gap))
    final = legacy.averaged_ratings([(s, p) for s, p, _ in matches], list(range(n)))
    return settled_at(marks, right), max_share(tables, n, k), [final[v] for v in range(n)]


def run_new(
    world: World, horizon: int, gap: float, placement: int, *, track: bool = True
) -> tuple[int | None, float, dict[int, tuple[float, float]]]:
    """The new ladder; (matches to the right order, largest window share, (low, high) at the end)."""
    n, k = len(world.theta), world.table_size
    rng = random.Random(world.rng.random())
    rules = Rules(k, placement, WINDOW)
    window = Window(WINDOW)
    live = [ladder_ratings.prior() for _ in range(n)]
    tables_of = [0] * n
    official: dict[int, tuple[float, float]] = {}
    matches: list[Match] = []
    tables: list[tuple[int, ...]] = []
    marks = looks(horizon) if track else [horizon]
    right: list[bool] = []
    last_fit = 0
    series: tuple[tuple[int, ...], int] | None = None

    def candidates() -> list[Candidate]:
        out = []
        for v in range(n):
            theta, se = official[v] if v in official else ladder_ratings.live_theta(*live[v])
            out.append(Candidate(v, world.owner[v], theta, se, tables_of[v]))
        return out

    while len(matches) < horizon:
        cands = candidates()
        if series is None or series[1] == 0 or not within_caps(series[0], cands, window, rules):
            choice = choose_table(cands, rules, window, rng)
            assert choice is not None
            series = (choice.seats, 1 if choice.placement else SERIES)
        seats, left = series
        series = (seats, left - 1)
        window.add(seats)
        tables.append(seats)
        for v in seats:
            tables_of[v] += 1
        for m in world.play(seats, len(tables)):
            matches.append(m)
            moved = ladder_ratings.live_update([live[v] for v in m[0]], m[1])
            for v, r in zip(m[0], moved, strict=True):
                live[v] = r
            if len(matches) in marks:
                right.append(order_right(world, {v: r.rating for v, r in _fit(matches).ratings.items()}, gap))
        placed = [v for v in range(n) if v not in official and tables_of[v] >= placement]
        if len(matches) - last_fit >= max(200, len(matches) // 10) or placed:
            f = _fit(matches)
            official = {v: (r.theta, r.se / ELO) for v, r in f.ratings.items()}
            last_fit = len(matches)
    final = _fit(matches)
    return settled_at(marks, right), max_share(tables, n, k), {v: (r.low, r.high) for v, r in final.ratings.items()}


def _fit(matches: list[Match]) -> Fit[int]:
    return fit(Outcome(s, p, t) for s, p, t in matches)


def settled_at(marks: list[int], right: list[bool]) -> int | None:
    """The first look from which the order stays right to the end (None: not right at the end)."""
    if not right or not right[-1]:
        return None
    i = len(right) - 1
    while i > 0 and right[i - 1]:
        i -= 1
    return marks[i]


def truth_points(world: World, players: Sequence[int]) -> dict[int, float]:
    """True ratings, centred on the mean of ``players`` (as the fit centres)."""
    mean = statistics.fmean(world.theta[v] for v in players)
    return {v: BASE + ELO * (world.theta[v] - mean) for v in players}


# ------------------------------------------------------------------ timings


def refit_seconds(versions: int, matches: int, k: int) -> float:
    """One fit of ``matches`` simulated matches among ``versions`` versions (tables of ``k``,
    random seats), timed."""
    rng = random.Random(5)
    world = World([rng.gauss(0, 1) for _ in range(versions)], list(range(versions)), k, 0.8, rng)
    outs: list[Outcome[int]] = []
    t = 0
    while len(outs) < matches:
        t += 1
        outs.extend(Outcome(s, p, c) for s, p, c in world.play(rng.sample(range(versions), k), t))
    t0 = time.perf_counter()
    fit(outs)
    return time.perf_counter() - t0


def choice_ms(versions: int, k: int, reps: int) -> float:
    """The median time of one table choice among ``versions`` versions, a full window behind it."""
    rng = random.Random(6)
    cands = [Candidate(v, v % (versions // 2 + 1), rng.gauss(0, 1), rng.uniform(0.05, 0.4), 10) for v in range(versions)]
    window = Window(WINDOW, [tuple(rng.sample(range(versions), k)) for _ in range(WINDOW - 1)])
    rules = Rules(k)
    choose_table(cands, rules, window, rng)  # imports numpy and scipy once
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        choice = choose_table(cands, rules, window, rng)
        times.append(time.perf_counter() - t0)
        assert choice is not None
        window.add(choice.seats)
    return statistics.median(times) * 1000


# ------------------------------------------------------------------ the table


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--versions", type=int, default=12)
    p.add_argument("--table-size", type=int, default=2)
    p.add_argument("--horizon", type=int, default=20_000, help="matches each ladder plays")
    p.add_argument("--gap", type=float, default=0.25, help="true log-strength gap that must be ordered right")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--luck", type=float, default=0.8, help="chance a seat's noise is its deal's (shared by rotations)")
    p.add_argument("--placement", type=int, default=3)
    p.add_argument("--coverage-boards", type=int, default=40)
    p.add_argument("--coverage-matches", type=int, default=4_000)
    p.add_argument("--refit-versions", type=int, default=1000)
    p.add_argument("--refit-matches", type=int, default=100_000)
    p.add_argument("--choice-reps", type=int, default=200)
    a = p.parse_args(argv)
    n, k = a.versions, a.table_size
    t_start = time.monotonic()

    old_to: list[int | None] = []
    new_to: list[int | None] = []
    old_share, new_share = [], []
    old_cov = [0, 0]
    for seed in range(a.seeds):
        m, s, final = run_legacy(make_world(n, k, a.luck, seed), a.horizon, a.gap, a.placement)
        old_to.append(m)
        old_share.append(s)
        world = make_world(n, k, a.luck, seed)
        truth = truth_points(world, range(n))
        # The old figure on the rating scale by least squares (the most favourable map).
        xs, ys = [mu for mu, _ in final], [truth[v] for v in range(n)]
        slope = statistics.covariance(xs, ys) / statistics.variance(xs)
        for v, (mu, sg) in enumerate(final):
            centre = statistics.fmean(ys) + slope * (mu - statistics.fmean(xs))
            old_cov[0] += abs(truth[v] - centre) <= 1.96 * slope * sg
            old_cov[1] += 1
        m, s, _ = run_new(make_world(n, k, a.luck, seed), a.horizon, a.gap, a.placement)
        new_to.append(m)
        new_share.append(s)
    new_cov = [0, 0]
    for b in range(a.coverage_boards):
        world = make_world(n, k, a.luck, 1000 + b)
        _, _, intervals = run_new(world, a.coverage_matches, a.gap, a.placement, track=False)
        truth = truth_points(world, list(intervals))
        for v, (lo, hi) in intervals.items():
            new_cov[0] += lo <= truth[v] <= hi
            new_cov[1] += 1
    refit_s = refit_seconds(a.refit_versions, a.refit_matches, k)
    choose_ms = choice_ms(a.refit_versions, k, a.choice_reps)

    def median_to(xs: list[int | None]) -> str:
        known = sorted(x if x is not None else a.horizon + 1 for x in xs)
        med = known[len(known) // 2]
        each = ", ".join(f"{x:,}" if x is not None else f">{a.horizon:,}" for x in xs)
        return (f"{med:,}" if med <= a.horizon else f">{a.horizon:,}") + f" [{each}]"

    def ratio() -> str:
        o = sorted(x if x is not None else a.horizon for x in old_to)[len(old_to) // 2]
        nn = sorted(x if x is not None else a.horizon for x in new_to)[len(new_to) // 2]
        return f"{nn / o:.2f}" + ("" if all(x is not None for x in old_to) else " (or less: the old never got there)")

    print(f"bench_ratings: {n} versions (one hopeless), {k} seats, gap {a.gap} (≈{a.gap * ELO:.0f} rating points), "
          f"luck {a.luck}, horizon {a.horizon:,} matches, {a.seeds} boards")
    rows = [
        ("order right after (matches)", median_to(old_to), median_to(new_to), "new ≤ 1/3 of old"),
        ("largest share of a 100-table window", f"{max(old_share):.2f}x", f"{max(new_share):.2f}x", "≤ 1.50x"),
        ("coverage of true ratings by 95% intervals", f"{old_cov[0] / old_cov[1]:.1%} (mu +- 1.96 sigma)",
         f"{new_cov[0] / new_cov[1]:.1%} ({new_cov[0]}/{new_cov[1]}, {a.coverage_boards} boards x {a.coverage_matches:,} matches)",
         "93-97%"),
        (f"refit, {a.refit_versions:,} versions x {a.refit_matches:,} matches", "-", f"{refit_s:.2f} s", "< 10 s"),
        (f"a table choice, {a.refit_versions:,} versions", "-", f"{choose_ms:.2f} ms", "< 10 ms"),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    print(f"{'':<{w0}}  {'before (issue 35)':<{w1}}  {'now':<{w2}}  target")
    for r in rows:
        print(f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:<{w2}}  {r[3]}")
    print(f"new / old matches to the right order: {ratio()}")
    print(f"done in {time.monotonic() - t_start:.0f} s")


if __name__ == "__main__":
    main()
