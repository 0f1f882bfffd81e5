"""The SPRT's statistics against values worked out by hand or by independent formulas, and
its error rates by simulation on synthetic paired results (no matches are played)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from referee.tournament.sprt import (
    PENTA_VALUES,
    SequentialTest,
    SprtError,
    SprtParams,
    elo_of_score,
    estimate,
    normal_llr,
    pentanomial_llr,
    score_of_elo,
    wald_bounds,
)

# ---------------------------------------------------------------- by hand


def test_logistic_elo_by_hand() -> None:
    assert score_of_elo(0) == 0.5
    # 400 Elo: ten times the odds.
    assert score_of_elo(400) == pytest.approx(10 / 11)
    assert elo_of_score(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    assert elo_of_score(0.52) == pytest.approx(400 * math.log10(0.52 / 0.48))  # 13.90
    for elo in (-300, -10, 0, 5, 123.4):
        assert elo_of_score(score_of_elo(elo)) == pytest.approx(elo)
    assert math.isfinite(elo_of_score(1.0)) and math.isfinite(elo_of_score(0.0))


def test_wald_bounds() -> None:
    lower, upper = wald_bounds(0.05, 0.05)
    assert lower == pytest.approx(-2.944439, abs=1e-6)
    assert upper == pytest.approx(2.944439, abs=1e-6)
    lower, upper = wald_bounds(0.05, 0.10)
    assert (lower, upper) == (pytest.approx(math.log(0.10 / 0.95)), pytest.approx(math.log(0.90 / 0.05)))


def _llr_by_optimizer(counts: list[float], elo0: float, elo1: float) -> float:
    """The GSPRT LLR straight from its definition: maximise the multinomial log-likelihood
    over the distributions of each hypothesis' mean with a general optimizer (no secular
    equation), with fishtest's regularization of empty cells."""
    n = np.array([c if c > 0 else 1e-3 for c in counts], dtype=float)
    a = np.array(PENTA_VALUES)

    def best(s: float) -> float:
        res = minimize(
            lambda p: -float(n @ np.log(p)),
            np.full(5, 0.2),
            method="SLSQP",
            bounds=[(1e-12, 1.0)] * 5,
            constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0}, {"type": "eq", "fun": lambda p: p @ a - s}],
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        assert res.success, res.message
        return -float(res.fun)

    return best(score_of_elo(elo1)) - best(score_of_elo(elo0))


@pytest.mark.parametrize(
    ("counts", "elo0", "elo1"),
    [
        ([3, 20, 50, 25, 7], 0, 10),
        ([10, 30, 100, 20, 5], 0, 10),
        ([0, 5, 40, 12, 3], -5, 5),
        ([1, 2, 3, 4, 5], 0, 50),
        ([40, 10, 10, 10, 2], 0, 20),
    ],
)
def test_pentanomial_llr_equals_the_likelihoods_maximised_directly(counts: list[float], elo0: float, elo1: float) -> None:
    assert pentanomial_llr(counts, elo0, elo1) == pytest.approx(_llr_by_optimizer(counts, elo0, elo1), abs=1e-5)


def test_pentanomial_llr_signs_and_symmetry() -> None:
    assert pentanomial_llr([0, 0, 0, 0, 0], 0, 10) == 0.0
    better = [2, 10, 40, 20, 8]
    assert pentanomial_llr(better, 0, 10) > 0
    # Mirrored results (NEW and OLD swapped) against mirrored hypotheses: the same LLR.
    assert pentanomial_llr(better[::-1], 0, -10) == pytest.approx(pentanomial_llr(better, 0, 10))
    assert pentanomial_llr(better[::-1], -10, 0) == pytest.approx(-pentanomial_llr(better, 0, 10))
    assert pentanomial_llr(better[::-1], 0, 10) < 0
    # For many pairs the normal approximation agrees with the exact GSPRT.
    big = [c * 50 for c in [3, 20, 50, 25, 7]]
    a = np.repeat(PENTA_VALUES, big)
    approx = normal_llr(len(a), float(a.mean()), float(a.var()), 0, 10)
    assert pentanomial_llr(big, 0, 10) == pytest.approx(approx, rel=0.02)


def test_normal_llr_is_the_log_ratio_of_normal_likelihoods() -> None:
    rng = np.random.default_rng(5)
    x = np.clip(rng.normal(0.52, 0.2, 300), 0, 1)
    m, v = float(x.mean()), float(x.var())
    s0, s1 = score_of_elo(0), score_of_elo(10)
    direct = float(np.sum(norm.logpdf(x, s1, math.sqrt(v)) - norm.logpdf(x, s0, math.sqrt(v))))
    assert normal_llr(len(x), m, v, 0, 10) == pytest.approx(direct, rel=1e-9)
    assert normal_llr(0, 0.5, 0.1, 0, 10) == 0.0
    # The test's variance prior: two pseudo-deals of variance 1/16.
    assert normal_llr(len(x), m, v, 0, 10, prior=True) == pytest.approx(
        normal_llr(len(x), m, (len(x) * v + 2 / 16) / (len(x) + 2), 0, 10)
    )


def test_estimate_elo_interval_and_los() -> None:
    # 260 pairs won twice, 240 lost twice: deal scores 1 and 0.
    w, lo = 260, 240
    n = w + lo
    mean, var = w / n, (w / n) * (lo / n)
    est = estimate(n, mean, var)
    assert est.elo == pytest.approx(400 * math.log10(260 / 240))
    se = math.sqrt(var / n)
    assert est.elo_low == pytest.approx(elo_of_score(mean - 1.959964 * se), abs=1e-3)
    assert est.elo_high == pytest.approx(elo_of_score(mean + 1.959964 * se), abs=1e-3)
    assert est.elo_low < est.elo < est.elo_high
    # LOS: the textbook Phi((W - L) / sqrt(W + L)), which the data's own variance matches closely.
    assert est.los == pytest.approx(norm.cdf((w - lo) / math.sqrt(w + lo)), abs=1e-3)
    assert est.los == pytest.approx(0.8146, abs=1e-3)
    assert estimate(10, 0.5, 0.0).los == 0.5
    assert estimate(0, 0.5, 0.0).los == 0.5


def test_sequential_test_by_hand() -> None:
    t = SequentialTest(SprtParams(0, 10, 0.05, 0.05), "pentanomial", max_deals=5)
    assert t.result().verdict == "undecided" and t.llr == 0
    for x in (1.0, 0.75, 0.5):
        t.add(x)
    assert t.counts == [0, 0, 1, 1, 1]
    assert t.llr == pytest.approx(pentanomial_llr([0, 0, 1, 1, 1], 0, 10))
    assert t.mean == pytest.approx(0.75)
    with pytest.raises(SprtError, match="pentanomial"):
        t.add(0.3)
    t.add(0.5)
    t.add(0.5)
    assert t.finished and not t.decided
    with pytest.raises(SprtError, match="over"):
        t.add(0.5)
    r = t.result(matches=10).to_dict()
    assert r["verdict"] == "undecided" and r["finished"] and r["deals"] == 5 and r["matches"] == 10
    assert r["pentanomial"] == [0, 0, 3, 1, 1]
    assert r["bounds"] == [pytest.approx(-2.944439), pytest.approx(2.944439)]


def test_sequential_test_decides_and_stops() -> None:
    t = SequentialTest(SprtParams(0, 50, 0.05, 0.05), "pentanomial")
    while not t.decided:
        t.add(1.0)
    assert t.verdict == "H1" and t.llr >= t.upper
    t = SequentialTest(SprtParams(0, 10), "normal")
    while not t.decided:
        t.add(0.5)  # no difference at all, no spread: H0 soon
    assert t.verdict == "H0" and t.n <= 100
    assert t.llr == pytest.approx(normal_llr(t.n, 0.5, 0.0, 0, 10, prior=True))


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(SprtError, match="elo0 must be less than elo1"):
        SprtParams(10, 0)
    with pytest.raises(SprtError, match="alpha"):
        SprtParams(0, 10, 0.7, 0.05)
    with pytest.raises(SprtError, match="beta"):
        SprtParams(0, 10, 0.05, 0.0)
    with pytest.raises(SprtError, match="model"):
        SequentialTest(SprtParams(), "trinomial")  # type: ignore[arg-type]


# ---------------------------------------------------------------- error rates by simulation

#: A pentanomial shaped like duplicate 31 at two seats: many split pairs.
BASE_PENTA = np.array([0.10, 0.15, 0.50, 0.15, 0.10])
#: Deal scores of a larger table: many values between 0 and 1.
BASE_NORMAL_VALUES = np.linspace(0.0, 1.0, 13)
BASE_NORMAL = norm.pdf(BASE_NORMAL_VALUES, 0.5, 0.18)


def _tilted(values: np.ndarray, base: np.ndarray, mean: float) -> np.ndarray:
    """The distribution closest to ``base`` (exponential tilt) with the given mean."""
    lo, hi = -200.0, 200.0
    for _ in range(200):
        theta = (lo + hi) / 2
        p = base * np.exp(theta * (values - 0.5))
        p /= p.sum()
        if p @ values < mean:
            lo = theta
        else:
            hi = theta
    return p


def _simulate(model: str, values: np.ndarray, p: np.ndarray, params: SprtParams, runs: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    verdicts = {"H0": 0, "H1": 0, "undecided": 0}
    max_deals = 3000
    for _ in range(runs):
        t = SequentialTest(params, model, max_deals=max_deals)  # type: ignore[arg-type]
        draws = rng.choice(values, size=max_deals, p=p)
        for x in draws:
            if t.add(float(x)) != "undecided":
                break
        verdicts[t.verdict] += 1
    return verdicts


@pytest.mark.parametrize(
    ("model", "values", "base", "params", "runs"),
    [
        ("pentanomial", np.array(PENTA_VALUES), BASE_PENTA, SprtParams(0, 60, 0.05, 0.05), 400),
        ("normal", BASE_NORMAL_VALUES, BASE_NORMAL, SprtParams(0, 20, 0.05, 0.05), 800),
    ],
)
def test_error_rates_by_simulation(model: str, values: np.ndarray, base: np.ndarray, params: SprtParams, runs: int) -> None:
    started = time.monotonic()
    margin = 0.03
    # No difference (elo0 true): H1 accepted at most about alpha.
    under_h0 = _simulate(model, values, _tilted(values, base, score_of_elo(params.elo0)), params, runs, seed=1)
    # A difference of elo1 (H1 true): H0 accepted at most about beta.
    under_h1 = _simulate(model, values, _tilted(values, base, score_of_elo(params.elo1)), params, runs, seed=2)
    false_h1 = under_h0["H1"] / runs
    false_h0 = under_h1["H0"] / runs
    print(f"{model}: under H0 {under_h0}, P(H1) = {false_h1:.3f}; under H1 {under_h1}, P(H0) = {false_h0:.3f}; "
          f"{time.monotonic() - started:.1f} s")
    assert false_h1 <= params.alpha + margin, under_h0
    assert false_h0 <= params.beta + margin, under_h1
    # The test decides: hardly any run reaches the deal limit.
    assert under_h0["undecided"] + under_h1["undecided"] <= runs // 50
    # And it has power: the right verdict most of the time.
    assert under_h0["H0"] / runs >= 1 - params.alpha - margin
    assert under_h1["H1"] / runs >= 1 - params.beta - margin
