"""The official rating fit (referee/ratings.py): against a library's answer, and against a known truth."""

from __future__ import annotations

import math
import random

import choix
import numpy as np
import pytest

from referee.ratings import BASE, ELO, Outcome, fit


def _draw(rng: random.Random, strength: dict[int, float], players: list[int]) -> tuple[int, ...]:
    """Placings of one Plackett-Luce match among ``players`` (in seat order)."""
    left = list(players)
    order: list[int] = []
    while left:
        w = [math.exp(strength[p]) for p in left]
        x = rng.random() * sum(w)
        pick = len(left) - 1
        for i, wi in enumerate(w):
            x -= wi
            if x <= 0:
                pick = i
                break
        order.append(left.pop(pick))
    return tuple(order.index(p) + 1 for p in players)


def _board(seed: int, n: int, matches: int, seats: int = 3) -> tuple[dict[int, float], list[Outcome[int]]]:
    rng = random.Random(seed)
    strength = {i: rng.gauss(0, 1) for i in range(n)}
    outs = []
    for m in range(matches):
        players = rng.sample(range(n), seats)
        outs.append(Outcome(tuple(players), _draw(rng, strength, players), m))
    return strength, outs


def test_fit_agrees_with_choix_on_untied_placings() -> None:
    """Our Newton fit and choix's optimiser find the same MAP on the same data and prior."""
    _, outs = _board(1, 10, 1500)
    sd = 2.0
    ours = fit(outs, prior_sd=sd)
    data = [tuple(sorted(o.players, key=lambda p: o.placings[o.players.index(p)])) for o in outs]
    theirs = choix.opt_rankings(10, data, alpha=1 / (2 * sd * sd))
    theirs = theirs - theirs.mean()
    for i in range(10):
        assert ours.ratings[i].theta == pytest.approx(float(theirs[i]), abs=1e-5)


def test_fit_does_not_depend_on_the_order_of_matches() -> None:
    _, outs = _board(2, 6, 300)
    a = fit(outs)
    b = fit(list(reversed(outs)))
    for k in a.ratings:
        assert a.ratings[k].rating == pytest.approx(b.ratings[k].rating, abs=1e-6)
        assert a.ratings[k].se == pytest.approx(b.ratings[k].se, abs=1e-6)


def test_intervals_cover_the_truth_about_as_often_as_they_say() -> None:
    """Under the model itself, 95% intervals cover the centred true strengths 90-99% of the time
    (12 boards of 10 versions: 120 intervals, so the band is wide but a broken interval, e.g.
    one that forgot the prior or the centring, falls far outside it)."""
    hits = total = 0
    for seed in range(12):
        strength, outs = _board(100 + seed, 10, 400)
        mean = sum(strength.values()) / len(strength)
        f = fit(outs)
        for k, r in f.ratings.items():
            truth = BASE + ELO * (strength[k] - mean)
            hits += r.low <= truth <= r.high
            total += 1
    assert 0.90 <= hits / total <= 0.99, hits / total


def test_an_unbeaten_player_stays_finite_and_first() -> None:
    outs = [Outcome(("a", "b"), (1, 2), i) for i in range(20)] + [Outcome(("b", "c"), (1, 2), 100 + i) for i in range(20)]
    f = fit(outs)
    assert sorted(f.ratings, key=lambda k: -f.ratings[k].rating) == ["a", "b", "c"]
    assert all(math.isfinite(r.rating) and math.isfinite(r.se) for r in f.ratings.values())
    # Far apart, as 40 straight results say: over 800 points (odds of 100 to 1).
    assert f.ratings["a"].rating - f.ratings["c"].rating > 800


def test_ties_pull_two_players_together() -> None:
    """A tie is evidence of equal strength: two players who always tie get the same rating."""
    outs = [Outcome(("a", "b", "c"), (1, 1, 3), i) for i in range(30)]
    f = fit(outs)
    assert f.ratings["a"].rating == pytest.approx(f.ratings["b"].rating)
    assert f.ratings["a"].rating > f.ratings["c"].rating


def test_unplayed_players_are_listed_unrated() -> None:
    outs = [Outcome(("a", "b"), (1, 2), 0)]
    f = fit(outs, players=["z"])
    assert f.ratings["z"].matches == 0 and not f.ratings["z"].rated
    assert f.ratings["z"].rating == BASE
    # The rated players' mean is the base, whoever else is listed.
    assert (f.ratings["a"].rating + f.ratings["b"].rating) / 2 == pytest.approx(BASE)


def test_clustered_results_widen_the_interval_when_they_repeat_each_other() -> None:
    """The same result counted in one cluster (a deal whose rotations repeat it) tells less than
    as many independent deals: the interval respects the cluster."""
    rng = random.Random(5)
    base = [Outcome(("a", "b"), (1, 2) if rng.random() < 0.6 else (2, 1), i) for i in range(200)]
    independent = fit(base)
    # Each result repeated four times within its deal: four times the matches, but the same
    # information as before.
    repeated = fit([Outcome(o.players, o.placings, o.cluster) for o in base for _ in range(4)])
    assert repeated.ratings["a"].se == pytest.approx(independent.ratings["a"].se, rel=0.15)
    naive = fit([Outcome(o.players, o.placings, (o.cluster, r)) for o in base for r in range(4)])
    assert naive.ratings["a"].se < 0.6 * repeated.ratings["a"].se


def test_mismatched_outcome_is_refused() -> None:
    with pytest.raises(ValueError, match="2 players but 3 placings"):
        fit([Outcome(("a", "b"), (1, 2, 3), 0)])


def test_covariance_gives_pair_differences() -> None:
    _, outs = _board(3, 5, 500)
    f = fit(outs)
    d = f.diff_se(0, 1)
    assert d > 0
    assert np.isclose(f.diff_se(0, 0), 0.0)


def _lucky_board(seed: int, n: int, deals: int, weight: float) -> tuple[list[Outcome[int]], list[Outcome[int]]]:
    """Matches whose placings follow strength plus each seat's luck of the cards (``weight``
    times a measured, mean-zero luck), with and without the luck attached."""
    rng = random.Random(seed)
    strength = {i: rng.gauss(0, 0.7) for i in range(n)}
    with_luck: list[Outcome[int]] = []
    for d in range(deals):
        players = rng.sample(range(n), 3)
        luck = tuple(rng.gauss(0, 1) for _ in players)
        shifted = {p: strength[p] + weight * u for p, u in zip(players, luck, strict=True)}
        with_luck.append(Outcome(tuple(players), _draw(rng, shifted, players), d, luck))
    return with_luck, [Outcome(o.players, o.placings, o.cluster) for o in with_luck]


def test_luck_taken_out_narrows_the_interval_and_still_covers_the_truth() -> None:
    """The luck as a control variate: intervals narrower than the raw fit's, covering the
    strengths a very large raw sample settles on (the model's own truth) about 95% of the time."""
    hits = total = 0
    narrower = []
    for seed in range(8):
        lucky, raw = _lucky_board(200 + seed, 8, 400, 1.5)
        truth = fit(_lucky_board(200 + seed, 8, 12_000, 1.5)[1]).ratings
        adjusted, plain = fit(lucky).ratings, fit(raw).ratings
        for k, r in adjusted.items():
            hits += r.low <= truth[k].rating <= r.high
            total += 1
            narrower.append(r.se / plain[k].se)
    assert 0.88 <= hits / total <= 0.995, hits / total
    assert sum(narrower) / len(narrower) < 0.9


def test_luck_unrelated_to_the_placings_changes_little() -> None:
    _, raw = _lucky_board(7, 6, 300, 0.0)
    rng = random.Random(8)
    noise = [Outcome(o.players, o.placings, o.cluster, tuple(rng.gauss(0, 1) for _ in o.players)) for o in raw]
    a, b = fit(raw).ratings, fit(noise).ratings
    for k in a:
        assert b[k].se == pytest.approx(a[k].se, rel=0.1)
        assert abs(b[k].rating - a[k].rating) < a[k].se


def test_luck_of_a_player_without_a_chance_adds_nothing() -> None:
    """A player that always comes last, whatever its cards, keeps its interval when luck is
    taken out (its luck moves nobody's chances)."""
    rng = random.Random(3)
    outs: list[Outcome[str]] = []
    for d in range(60):
        luck = (rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1))
        top = (1, 2) if luck[0] + rng.gauss(0, 1) > luck[1] else (2, 1)
        outs.append(Outcome(("a", "b", "z"), (*top, 3), d, luck))
    plain = fit([Outcome(o.players, o.placings, o.cluster) for o in outs])
    adjusted = fit(outs)
    assert adjusted.diff_se("a", "b") < plain.diff_se("a", "b")
    assert adjusted.ratings["z"].se == pytest.approx(plain.ratings["z"].se, rel=0.05)


def test_a_win_rate_lies_inside_its_own_interval_at_the_ends() -> None:
    """At 0 and n wins a Wilson end can miss the rate by a rounding error (2.8e-17 above a rate
    of 0 was seen on a real arena, from the ladder's own formula): the interval the ladder and
    the standings show holds the rate whatever n."""
    from referee.ladder.ratings import wilson

    for n in range(1, 400):
        for wins in (0, 1, n - 1, n):
            if 0 <= wins <= n:
                low, high = wilson(wins, n)
                assert 0.0 <= low <= wins / n <= high <= 1.0, (wins, n, low, high)


def test_few_deals_widen_the_interval_but_never_past_the_priors() -> None:
    """One deal behind a figure: Student's t at one degree of freedom, capped by the prior's own
    95% interval; more deals narrow it."""
    one = fit([Outcome(("a", "b"), (1, 2), 0), Outcome(("b", "a"), (2, 1), 0)]).ratings["a"]
    prior_half = 1.959963984540054 * 3.0 * ELO
    assert one.high - one.rating == pytest.approx(min(12.706 * one.se, prior_half), rel=1e-3)
    assert one.high - one.rating <= prior_half + 1e-9
    many = fit([Outcome(("a", "b"), (1, 2) if d % 3 else (2, 1), d) for d in range(60)]).ratings["a"]
    assert many.high - many.rating < one.high - one.rating
    # 60 deals: t with 59 degrees of freedom, within 2% of the normal's.
    assert many.high - many.rating == pytest.approx(2.0010 * many.se, rel=1e-3)
