"""Luck benchmark: how much of a pair's score spread the cards explain, and what SPRT saves.

Run ``python benchmarks/bench_luck.py`` (about two minutes by default; ``--deals`` for firmer
figures). First it times the position evaluator: a match played in-process, every decision
with a choice judged in both views as ``thirtyone analyse`` judges it. Then, for each pair of bots (sample bots, and two close versions of one),
at two seats, every deal is played in both seat rotations three ways:

- **fresh**: each rotation on its own deal (two seeds);
- **duplicate**: both rotations on the same deal (as ``thirtyone sprt`` plays);
- **duplicate + correction**: the same matches, the deal's score less ``beta`` times its
  luck (:func:`referee.analysis.luck.records_luck`), ``beta`` the least-squares slope of
  the deal score on the deal's luck (the control-variate coefficient, as the test uses).

The bots are the sample bots' own code, played in-process on the game model (no processes,
no sockets: the spread of the scores is the same, and the machine is shared). The per-deal
score difference ``D`` (NEW's mean match score minus OLD's) has a variance under each; the
table gives each variance and its ratio to fresh deals (the aim: at most 0.5 with the
correction).

Then SPRT is simulated on each way's deals as ``thirtyone sprt`` runs it (``--elo0``/``--elo1``,
alpha = beta = 0.05): the raw scores with the pentanomial GSPRT, the deals tilted to the
hypothesis' mean; with the luck, the normal GSPRT with the luck as its control variate (its
coefficient estimated as the test goes), the scores shifted to the mean and the lucks
centred. It prints the mean deals to a verdict, and the share of wrong verdicts (which must
stay near the nominal 5%).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.analysis.decisions import VIEWS, judge_decision
from referee.analysis.luck import records_luck
from referee.game import Match, Record, Rules
from referee.timecontrol import TimeControl
from referee.tournament.sprt import Model, SequentialTest, SprtParams, score_of_elo
from referee.tournament.sprt_run import match_score
from referee.wire import MatchInfo
from sample_bots import load
from sample_bots.greedy import GreedyBot
from sdk.bot import Bot, make_bot
from sdk.evaluate import SAMPLES
from sdk.view import SeatMemory


class Greedy24(GreedyBot):
    """The greedy bot knocking from 24 rather than 22: a close version of it."""

    name = "greedy24"
    knock_at = 24


BOTS: dict[str, Callable[[], Bot]] = {
    "greedy": load("greedy"),
    "greedy24": Greedy24,
    "threshold": load("threshold"),
    "random": load("random"),
}
PAIRS = (("threshold", "greedy"), ("greedy24", "greedy"))


def play(names: Sequence[str], seed: int, rules: Rules) -> tuple[list[float], list[Record]]:
    """One match in-process: each seat's match score and the model's records."""
    m = Match(len(names), rules, seed=seed, record=True)
    bots = [make_bot(BOTS[n]) for n in names]
    memories = [SeatMemory() for _ in bots]
    tc = TimeControl()
    for s, b in enumerate(bots):
        b.on_match_start(MatchInfo(f"bench-{seed}", s, len(names), rules, tc))
    while not m.over:
        s = m.current
        view = memories[s].view(m.observation(s), budget_ms=tc.budget_ms, bank_ms=tc.bank_ms)
        m.apply_unchecked(bots[s].act(view))
    placings = m.placings
    return [match_score(placings, s) for s in range(len(names))], m.take_records()


def analysis_speed(names: Sequence[str], seed: int, rules: Rules, samples: int) -> tuple[int, float, float]:
    """One match played in-process, every decision with a choice judged in both views as it
    is made (what ``thirtyone analyse`` does at each logged decision): the decisions judged,
    and the seconds per decision and per match."""
    m = Match(len(names), rules, seed=seed)
    bots = [make_bot(BOTS[n]) for n in names]
    memories = [SeatMemory() for _ in bots]
    tc = TimeControl()
    for s, b in enumerate(bots):
        b.on_match_start(MatchInfo(f"bench-{seed}", s, len(names), rules, tc))
    judged = 0
    spent = 0.0
    while not m.over:
        s = m.current
        view = memories[s].view(m.observation(s), budget_ms=tc.budget_ms, bank_ms=tc.bank_ms)
        action = bots[s].act(view)
        if len(m.legal_actions()) > 1:
            t0 = time.perf_counter()
            judge_decision(m, action, VIEWS, samples=samples, seed=seed)
            spent += time.perf_counter() - t0
            judged += 1
        m.apply_unchecked(action)
    return judged, spent / max(judged, 1), spent


@dataclass
class Deal:
    """One deal of a pair: D under fresh deals, under duplicate deals, and the luck difference."""

    fresh: float
    dup: float
    luck: float


def deals_of(pair: tuple[str, str], n: int, rules: Rules, sizes: tuple[int, int, int]) -> tuple[list[Deal], float]:
    """``n`` deals of ``pair``; and the seconds the luck took per match."""
    new, old = pair
    out = []
    luck_s = 0.0
    for d in range(n):
        seed = 1000 + d
        a, rec_a = play((new, old), seed, rules)
        b, rec_b = play((old, new), seed, rules)
        fa, _ = play((new, old), 500_000 + 2 * d, rules)
        fb, _ = play((old, new), 500_001 + 2 * d, rules)
        t0 = time.perf_counter()
        samples, cards, deals = sizes
        la = records_luck(rules, 2, rec_a, seed=d, samples=samples, cards=cards, deals=deals)
        lb = records_luck(rules, 2, rec_b, seed=d, samples=samples, cards=cards, deals=deals)
        luck_s += time.perf_counter() - t0
        dup = ((a[0] - a[1]) + (b[1] - b[0])) / 2
        fresh = ((fa[0] - fa[1]) + (fb[1] - fb[0])) / 2
        luck = ((la.luck[0] - la.luck[1]) + (lb.luck[1] - lb.luck[0])) / 2
        out.append(Deal(fresh, dup, luck))
    return out, luck_s / (2 * n)


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of ``ys`` on ``xs``."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


def _tilted(xs: Sequence[float], target: float) -> list[float]:
    """Weights on ``xs`` (each as likely, tilted exponentially) whose mean is ``target``: the
    same values, so deal scores stay the pentanomial's five."""
    lo, hi = -200.0, 200.0
    w: list[float] = []
    for _ in range(200):
        lam = (lo + hi) / 2
        top = max(lam * x for x in xs)
        w = [math.exp(lam * x - top) for x in xs]
        mean = sum(wi * x for wi, x in zip(w, xs, strict=True)) / sum(w)
        if mean < target:
            lo = lam
        else:
            hi = lam
    return w


def sprt_sim(
    values: Sequence[float], lucks: Sequence[float] | None, params: SprtParams, runs: int, rng: random.Random
) -> tuple[float, float, float, float]:
    """The test ``thirtyone sprt`` runs on these deals (per-deal D), resampled with their mean
    moved to H0's and to H1's score: mean deals under H0 and H1, and the share of wrong
    verdicts under each.

    Without ``lucks``: the pentanomial GSPRT (two seats, the raw scores), the deals tilted
    exponentially to the hypothesis' mean (the values stay the five). With ``lucks``: the
    normal GSPRT with the luck as its control variate, its coefficient estimated as the test
    goes; the scores shifted to the mean, the lucks centred (their mean is zero whatever the
    bots do, so the resampled population's must be too)."""
    xs = [0.5 + v / 2 for v in values]
    m = statistics.fmean(xs)
    mc = statistics.fmean(lucks) if lucks is not None else 0.0
    out = []
    for elo, wrong in ((params.elo0, "H1"), (params.elo1, "H0")):
        target = score_of_elo(elo)
        weights = _tilted(xs, target) if lucks is None else None
        deals = errors = 0
        for _ in range(runs):
            model: Model = "pentanomial" if lucks is None else "normal"
            t = SequentialTest(params, model, max_deals=20_000, control=lucks is not None)
            while not t.finished:
                if lucks is None:
                    t.add(rng.choices(xs, weights)[0])
                else:
                    i = rng.randrange(len(xs))
                    t.add(xs[i] - m + target, lucks[i] - mc)
            deals += t.n
            errors += t.verdict == wrong
        out += [deals / runs, errors / runs]
    return out[0], out[2], out[1], out[3]


def main(argv: list[str] | None = None) -> int:
    """Play the pairs and print the tables."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deals", type=int, default=30, help="deals per pair (each: 4 matches)")
    p.add_argument("--runs", type=int, default=300, help="simulated SPRT tests per way and hypothesis")
    p.add_argument("--elo0", type=float, default=0.0)
    p.add_argument("--elo1", type=float, default=40.0)
    p.add_argument("--samples", type=int, default=8, help="rollouts per luck value")
    p.add_argument("--cards", type=int, default=12, help="stock cards valued per draw")
    p.add_argument("--deal-samples", type=int, default=32, help="random deals per deal's expectation")
    p.add_argument("--analysis-samples", type=int, default=SAMPLES, help="rollouts per action when timing the evaluator")
    p.add_argument("--save", help="write the deals played to this JSON file")
    p.add_argument("--load", help="read the deals from this JSON file (of --save) instead of playing them")
    a = p.parse_args(argv)
    saved: dict[str, list[list[float]]] = json.loads(Path(a.load).read_text()) if a.load else {}
    played: dict[str, list[list[float]]] = {}
    rules = Rules()
    params = SprtParams(a.elo0, a.elo1, 0.05, 0.05)
    sizes = (a.samples, a.cards, a.deal_samples)
    print(f"Evaluator speed: every decision with a choice judged in both views, {a.analysis_samples} rollouts per action, one core")
    head = f"{'match':<34} {'decisions':>9} {'ms/decision':>11} {'s/match':>8}"
    print(head)
    print("-" * len(head))
    for names in (("threshold", "greedy"), ("threshold", "greedy", "greedy24", "random")):
        n, per, total = analysis_speed(names, 7, rules, a.analysis_samples)
        print(f"{' v '.join(names):<34} {n:9d} {1000 * per:11.1f} {total:8.2f}")
    print()
    print(f"{a.deals} deals per pair, 2 seats, standard rules; luck: {a.samples} rollouts, {a.cards} cards, {a.deal_samples} deals")
    print()
    head = f"{'pair':<22} {'var fresh':>9} {'var dup':>8} {'dup/fresh':>9} {'var corr':>9} {'corr/fresh':>10} {'beta':>6} {'luck s/match':>12}"
    print(head)
    print("-" * len(head))
    sims: list[tuple[str, str, tuple[float, float, float, float]]] = []
    rng = random.Random(7)
    for pair in PAIRS:
        key = "/".join(pair)
        if a.load:
            ds, luck_s = [Deal(*row) for row in saved[key]], float("nan")
        else:
            ds, luck_s = deals_of(pair, a.deals, rules, sizes)
        played[key] = [[d.fresh, d.dup, d.luck] for d in ds]
        fresh = [d.fresh for d in ds]
        dup = [d.dup for d in ds]
        lk = [d.luck for d in ds]
        beta = slope(lk, dup)
        corr = [y - beta * x for x, y in zip(lk, dup, strict=True)]
        vf, vd, vc = (statistics.variance(v) for v in (fresh, dup, corr))
        name = f"{pair[0]} v {pair[1]}"
        print(f"{name:<22} {vf:9.4f} {vd:8.4f} {vd / vf:9.2f} {vc:9.4f} {vc / vf:10.2f} {beta:6.3f} {luck_s:12.2f}")
        for way, vals, control in (("fresh", fresh, None), ("duplicate", dup, None), ("dup + luck", dup, lk)):
            sims.append((name, way, sprt_sim(vals, control, params, a.runs, rng)))
        sys.stdout.flush()
    if a.save:
        Path(a.save).write_text(json.dumps(played))
    print()
    print(
        f"SPRT as thirtyone sprt runs it (raw: the pentanomial GSPRT; + luck: the normal GSPRT with the luck as "
        f"control variate), elo0 {a.elo0:g}, elo1 {a.elo1:g}, alpha = beta = 0.05, {a.runs} simulated tests each"
    )
    head = f"{'pair':<22} {'deals':<11} {'deals H0':>9} {'deals H1':>9} {'wrong H0':>9} {'wrong H1':>9}"
    print(head)
    print("-" * len(head))
    for name, way, (n0, n1, e0, e1) in sims:
        print(f"{name:<22} {way:<11} {n0:9.0f} {n1:9.0f} {e0:9.1%} {e1:9.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
