"""The statistics of ``thirtyone sprt``: is NEW stronger than OLD?

A sequential probability ratio test (SPRT) decides between two hypotheses about the Elo
difference of NEW over OLD, ``H0: elo = elo0`` and ``H1: elo = elo1``, looking at the results
one deal at a time and stopping as soon as the evidence is strong enough either way. With the
error rates ``alpha`` (accepting H1 when H0 holds) and ``beta`` (accepting H0 when H1 holds),
Wald's bounds on the log-likelihood ratio (LLR) are::

    lower = log(beta / (1 - alpha))      upper = log((1 - beta) / alpha)

and the test accepts H1 when the LLR reaches ``upper``, H0 when it falls to ``lower``.

**The observation.** Every deal (one seed) is played in every seat rotation, by NEW and by OLD
at the same seats with the same cards, so a deal is a *paired* observation, like fastchess's
game pairs. A match's score for a candidate is the share of its opponents it placed above
(ties count half); NEW's deal score ``x`` is::

    x = 1/2 + (mean score of NEW - mean score of OLD) / 2         (0 <= x <= 1)

At a table of two seats NEW plays OLD itself in both rotations; each match scores 1 for the
winner and 0 for the loser (1/2 each if ``max_rounds`` ends the match with the two placed
equal), and ``x`` is half NEW's *pair score* (0, 1/2, 1, 3/2 or 2): one of five values,
``LL, LD, WL+DD, WD, WW`` — the pentanomial of fishtest and fastchess. At a larger table NEW
and OLD each sit with the same filler bots (``--field``), and ``x`` is NEW's mean score minus
OLD's, shifted to [0, 1]; for two seats the two definitions agree.

**The Elo model** is the logistic one, so the bounds read as ordinary Elo: a score ``s``
means ``elo = -400 log10(1/s - 1)`` and ``s(elo) = 1 / (1 + 10^(-elo/400))``. H0 and H1 fix the
expected deal score at ``s0 = s(elo0)`` and ``s1 = s(elo1)``. (At larger tables this is the Elo
of a two-player contest with the same expected score difference: a scale, not a claim that
the game is a duel.)

**The likelihood ratio.** Both models are generalized SPRTs (GSPRT): the distribution of ``x``
is not assumed, only its mean is fixed by each hypothesis, and the LLR compares the most
likely distributions under the two constraints.

- Two seats, *pentanomial*: the exact multinomial GSPRT on the five pair outcomes, as
  fishtest computes it. With ``N`` pairs and observed frequencies ``p_i`` of the values
  ``a_i`` (zero counts replaced by 1e-3, as fishtest does, so no cell is impossible), the most
  likely distribution of mean ``s`` is ``q_i = p_i / (1 + lam (a_i - s))``, where ``lam`` solves
  ``sum p_i (a_i - s) / (1 + lam (a_i - s)) = 0`` (one root in ``(-1/(1-s), 1/s)``, found by Newton's
  method kept inside that bracket), and ``LLR = N sum p_i log(q1_i / q0_i)``. Pairs rather than single
  matches, because the two matches of a deal are correlated: the deal's luck is shared, which
  is the point of duplicate deals, and treating them as independent would overstate the
  variance and slow the test down.
- Larger tables, *normal*: ``x`` takes many values, so the GSPRT is taken in its normal
  approximation (fishtest's, fastchess's): with ``N`` deals, mean ``m`` and variance ``v`` of
  ``x``, ``LLR = N (s1 - s0) (2m - s0 - s1) / (2v)``. (The pentanomial LLR is close to it too.)
  Where fishtest has thousands of games before it looks, this test looks after every deal,
  and with a handful of deals the sample variance is often near 0: ``v`` is taken as
  ``(N v + 2/16) / (N + 2)``, as if two more deals of spread 1/4 had been seen (the role
  fishtest's regularization plays for the pentanomial). Without it, simulated tests with no
  difference accepted H1 40% of the time; with it, 5.9% (alpha 5%, 800 simulated tests).

**The luck taken out** (``control=True``; ``thirtyone sprt`` by default, docs/analysis.md):
each deal also brings its luck ``c`` (:mod:`referee.analysis.luck`: NEW's mean luck minus
OLD's, halved like the score), a number of mean zero whatever the bots do. The test then
reads ``x - beta c``, with ``beta`` the least-squares slope of ``x`` on ``c`` over the deals so
far (0 before :data:`CONTROL_AFTER` deals): the mean and the variance of that come from
running sums of ``x``, ``c``, ``x^2``, ``c^2`` and ``x c``, so a deal still costs the same. The
scores are no longer five-valued: the model is the normal one, at two seats its variance pulled towards
1/16 by sixteen pseudo-deals (:data:`CONTROL_VARIANCE_PRIOR`; two let simulated tests on real
two-seat deals err 9-11% of the time for a nominal 5%). The raw figures are kept beside
(``SprtResult.extra["luck"]``).

**Estimates** shown alongside: Elo from the mean deal score, its 95% interval from
``m +- z sqrt(v/N)`` (``z = norm.ppf(0.975)``) mapped through the same logistic curve, and the
likelihood of superiority ``LOS = Phi((m - 1/2) / sqrt(v/N))``.

This module is pure: no files, no matches, no output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from referee.faults import RefereeError
from referee.game.errors import shown

Model = Literal["pentanomial", "normal"]
Verdict = Literal["H0", "H1", "undecided"]

#: The deal scores of the five pair outcomes LL, LD, WL+DD, WD, WW (half the pair score).
PENTA_VALUES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: What replaces an empty pentanomial cell (fishtest's regularization).
EMPTY_CELL = 1e-3
#: The normal model's variance starts from this many pseudo-deals of this variance (a spread
#: of +-1/4 around the mean): with one or two deals seen, the sample variance is too often
#: near 0 and the LLR leaps to a bound (40% wrong verdicts by simulation, against 5.9% so).
VARIANCE_PRIOR = (2.0, 1.0 / 16.0)
#: Deals before the control variate's coefficient is estimated (0 until then): with fewer,
#: the slope fits noise.
CONTROL_AFTER = 16
#: The variance prior of a two-seat test with the luck taken out: more pseudo-deals than
#: :data:`VARIANCE_PRIOR`. Its scores are two-seat deals whose sample variance is often far
#: too small early on; with two pseudo-deals, simulated tests on real deals
#: (benchmarks/bench_luck.py) gave 9-11% wrong verdicts for a nominal 5%, with sixteen
#: 3.3-6.2%. (At larger tables the scores take many values and vary less: their test keeps
#: :data:`VARIANCE_PRIOR`, which sixteen pseudo-deals of 1/16 would slow down.)
CONTROL_VARIANCE_PRIOR = (16.0, 1.0 / 16.0)
#: The smallest variance the normal model uses.
MIN_VARIANCE = 1e-6
#: Deal scores are clipped this far inside (0, 1) before they become Elo (no infinities).
SCORE_CLIP = 1e-4
#: Confidence of the Elo interval.
CONFIDENCE = 0.95


class SprtError(RefereeError, ValueError):
    """Parameters of a test that cannot be used."""


def score_of_elo(elo: float) -> float:
    """The expected score of a player ``elo`` points stronger (logistic model)."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def elo_of_score(score: float) -> float:
    """The Elo difference that makes ``score`` the expected score (clipped inside (0, 1))."""
    s = min(max(score, SCORE_CLIP), 1.0 - SCORE_CLIP)
    return -400.0 * math.log10(1.0 / s - 1.0)


def wald_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """The LLR bounds (lower: accept H0, upper: accept H1)."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def _mle_terms(values: Sequence[float], freqs: Sequence[float], s: float) -> list[float]:
    """``1 + lam (a_i - s)`` for the most likely distribution of mean ``s`` given the
    observed frequencies (each must be positive at the smallest and largest value)."""
    lo, hi = min(values), max(values)
    if not lo < s < hi:
        raise SprtError(f"the hypothesised score {s} is outside the observed range ({lo}, {hi})")
    dev = [a - s for a in values]
    pd = [p * d for p, d in zip(freqs, dev, strict=True)]
    # The secular function sum p_i d_i / (1 + lam d_i) falls from +inf to -inf across the
    # bracket: Newton's method from 0, kept inside the bracket by bisection (a few steps
    # where brentq's general loop took ten times as long: it runs after every deal).
    left, right = -1.0 / (hi - s), 1.0 / (s - lo)
    lam = 0.0
    for _ in range(100):
        f = fp = 0.0
        for w, d in zip(pd, dev, strict=True):
            t = 1.0 / (1.0 + lam * d)
            f += w * t
            fp -= w * d * t * t
        step = f / fp
        if f == 0 or abs(step) <= 1e-15 * max(1.0, abs(lam)):
            break  # at the root, to the last bit
        if f > 0:
            left = lam
        else:
            right = lam
        lam -= step
        if not left < lam < right:
            lam = (left + right) / 2
    return [1.0 + lam * d for d in dev]


def pentanomial_llr(counts: Sequence[float], elo0: float, elo1: float) -> float:
    """The GSPRT log-likelihood ratio of H1 (``elo1``) over H0 (``elo0``) for pentanomial
    counts ``[LL, LD, WL+DD, WD, WW]`` (see the module doc)."""
    if len(counts) != 5:
        raise SprtError(f"a pentanomial has 5 counts, got {len(counts)}")
    if sum(counts) <= 0:
        return 0.0
    reg = [c if c > 0 else EMPTY_CELL for c in counts]
    n = sum(reg)
    freqs = [c / n for c in reg]
    s0, s1 = score_of_elo(elo0), score_of_elo(elo1)
    t0 = _mle_terms(PENTA_VALUES, freqs, s0)
    t1 = _mle_terms(PENTA_VALUES, freqs, s1)
    return n * sum(p * (math.log(a) - math.log(b)) for p, a, b in zip(freqs, t0, t1, strict=True))


def normal_llr(
    n: float,
    mean: float,
    variance: float,
    elo0: float,
    elo1: float,
    *,
    prior: bool = False,
    prior_deals: tuple[float, float] = VARIANCE_PRIOR,
) -> float:
    """The normal approximation of the GSPRT's LLR for ``n`` observations of mean ``mean``
    and variance ``variance``; with ``prior``, the variance is first pulled towards
    ``prior_deals`` (pseudo-deals, their variance: :data:`VARIANCE_PRIOR`, as the test does)."""
    if n <= 0:
        return 0.0
    s0, s1 = score_of_elo(elo0), score_of_elo(elo1)
    if prior:
        k, v0 = prior_deals
        variance = (n * variance + k * v0) / (n + k)
    v = max(variance, MIN_VARIANCE)
    return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * v)


@dataclass(frozen=True, slots=True)
class Estimate:
    """Elo, its interval and the LOS, from ``n`` deal scores of mean ``mean`` and variance ``variance``."""

    elo: float
    elo_low: float
    elo_high: float
    los: float


def estimate(n: int, mean: float, variance: float, confidence: float = CONFIDENCE) -> Estimate:
    """Elo difference with its interval, and the likelihood of superiority."""
    if n == 0:
        return Estimate(0.0, -math.inf, math.inf, 0.5)
    # Imported here: scipy.stats costs over a second, and the CLI imports this module for
    # every command.
    from scipy.stats import norm

    se = math.sqrt(max(variance, 0.0) / n)
    z = float(norm.ppf(0.5 + confidence / 2.0))
    if se > 0:
        los = float(norm.cdf((mean - 0.5) / se))
    else:
        los = 1.0 if mean > 0.5 else 0.0 if mean < 0.5 else 0.5
    return Estimate(elo_of_score(mean), elo_of_score(mean - z * se), elo_of_score(mean + z * se), los)


@dataclass(frozen=True, slots=True)
class SprtParams:
    """The hypotheses (logistic Elo) and the error rates of a test."""

    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        for name in ("elo0", "elo1", "alpha", "beta"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise SprtError(f"{name} must be a number, got {shown(v)}")
        if not -1000 < self.elo0 < self.elo1 < 1000:
            raise SprtError(f"elo0 must be less than elo1 (both within +-1000), got elo0 {self.elo0:g}, elo1 {self.elo1:g}")
        for name in ("alpha", "beta"):
            v = getattr(self, name)
            if not 0 < v < 0.5:
                raise SprtError(f"{name} must be between 0 and 0.5 (an error rate), got {v:g}")

    @property
    def bounds(self) -> tuple[float, float]:
        """Wald's LLR bounds."""
        return wald_bounds(self.alpha, self.beta)


@dataclass(frozen=True, slots=True)
class SprtResult:
    """The state of a test: what ``--json`` prints."""

    verdict: Verdict
    model: Model
    llr: float
    lower: float
    upper: float
    elo0: float
    elo1: float
    alpha: float
    beta: float
    elo: float
    elo_low: float
    elo_high: float
    los: float
    deals: int
    #: Mean deal score (1/2: no difference).
    score: float
    #: ``[LL, LD, WL+DD, WD, WW]`` at two seats; None at larger tables.
    pentanomial: list[int] | None = None
    #: Whether the test is over: decided, or out of deals.
    finished: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (infinite interval ends become None)."""

        def num(v: float) -> float | None:
            return round(v, 6) if math.isfinite(v) else None

        return {
            "verdict": self.verdict,
            "finished": self.finished,
            "model": self.model,
            "llr": num(self.llr),
            "bounds": [num(self.lower), num(self.upper)],
            "elo0": self.elo0,
            "elo1": self.elo1,
            "alpha": self.alpha,
            "beta": self.beta,
            "elo": num(self.elo),
            "interval": [num(self.elo_low), num(self.elo_high)],
            "los": num(self.los),
            "score": num(self.score),
            "deals": self.deals,
            "pentanomial": self.pentanomial,
            **self.extra,
        }


class SequentialTest:
    """An SPRT fed one deal score at a time (see the module doc); it stops at its verdict.

    ``max_deals`` ends the test undecided when it is reached without a verdict.
    """

    def __init__(
        self,
        params: SprtParams,
        model: Model,
        max_deals: int | None = None,
        *,
        control: bool = False,
        prior: tuple[float, float] | None = None,
    ) -> None:
        if model not in ("pentanomial", "normal"):
            raise SprtError(f"model must be 'pentanomial' or 'normal', got {shown(model)}")
        if control and model != "normal":
            raise SprtError("a test with a control variate (the luck taken out) uses the normal model")
        self.params = params
        self.model: Model = model
        self.max_deals = max_deals
        #: Each deal comes with a control variate (its luck, mean zero): see :meth:`add`.
        self.control = control
        #: The normal model's variance prior (pseudo-deals, their variance): by default
        #: :data:`CONTROL_VARIANCE_PRIOR` with a control, else :data:`VARIANCE_PRIOR`.
        self.prior = prior if prior is not None else CONTROL_VARIANCE_PRIOR if control else VARIANCE_PRIOR
        self.lower, self.upper = params.bounds
        self.n = 0
        self._sum = 0.0
        self._sumsq = 0.0
        # The control's sums: of c, c squared, and x times c.
        self._csum = 0.0
        self._csq = 0.0
        self._xc = 0.0
        self.counts = [0, 0, 0, 0, 0]
        self.llr = 0.0
        self.verdict: Verdict = "undecided"

    @property
    def decided(self) -> bool:
        """Whether H0 or H1 was accepted."""
        return self.verdict != "undecided"

    @property
    def finished(self) -> bool:
        """Whether the test takes no more deals: decided, or at ``max_deals``."""
        return self.decided or (self.max_deals is not None and self.n >= self.max_deals)

    @property
    def raw_mean(self) -> float:
        """Mean deal score so far, the luck left in (1/2 before any)."""
        return self._sum / self.n if self.n else 0.5

    @property
    def raw_variance(self) -> float:
        """Variance of the deal scores so far, the luck left in (population form)."""
        if not self.n:
            return 0.0
        m = self.raw_mean
        return max(self._sumsq / self.n - m * m, 0.0)

    @property
    def beta(self) -> float:
        """The control variate's coefficient: the least-squares slope of the deal score on
        the deal's luck so far (0 without a control, or before :data:`CONTROL_AFTER` deals)."""
        n = self.n
        if not self.control or n < CONTROL_AFTER:
            return 0.0
        mc = self._csum / n
        var_c = self._csq / n - mc * mc
        if var_c <= 1e-12:
            return 0.0
        return (self._xc / n - self.raw_mean * mc) / var_c

    @property
    def mean(self) -> float:
        """Mean deal score so far (1/2 before any), less ``beta`` times the mean luck."""
        if not self.n:
            return 0.5
        return self.raw_mean - self.beta * self._csum / self.n

    @property
    def variance(self) -> float:
        """Variance of the deal scores so far (population form, as the GSPRT's MLE has it),
        with the luck taken out: the variance of ``x - beta c``."""
        if not self.n:
            return 0.0
        b = self.beta
        if b == 0.0:
            return self.raw_variance
        n = self.n
        mc = self._csum / n
        var_c = self._csq / n - mc * mc
        cov = self._xc / n - self.raw_mean * mc
        return max(self.raw_variance - 2 * b * cov + b * b * var_c, 0.0)

    def add(self, x: float, luck: float | None = None) -> Verdict:
        """Take one deal's score (0 to 1) and, in a test with a control, the deal's luck (a
        number of mean zero whatever the bots do); the verdict after it. A finished test
        takes no more."""
        if self.finished:
            raise SprtError("the test is over; it takes no more deals")
        if not math.isfinite(x) or (self.model == "pentanomial" and not 0.0 <= x <= 1.0):
            # The normal model reads only the mean and the variance: a simulation may move
            # scores past the ends to set their mean.
            raise SprtError(f"a deal score is between 0 and 1, got {x}")
        if self.control:
            if luck is None or not math.isfinite(luck):
                raise SprtError(f"this test takes each deal's luck with its score, got {luck}")
            self._csum += luck
            self._csq += luck * luck
            self._xc += x * luck
        elif luck is not None:
            raise SprtError("this test has no control variate: give the deal score alone")
        if self.model == "pentanomial":
            i = round(x * 4)
            if abs(i / 4 - x) > 1e-9:
                raise SprtError(f"a pentanomial deal score is 0, 1/4, 1/2, 3/4 or 1, got {x}")
            self.counts[i] += 1
        self.n += 1
        self._sum += x
        self._sumsq += x * x
        p = self.params
        if self.model == "pentanomial":
            self.llr = pentanomial_llr(self.counts, p.elo0, p.elo1)
        else:
            self.llr = normal_llr(self.n, self.mean, self.variance, p.elo0, p.elo1, prior=True, prior_deals=self.prior)
        if self.llr >= self.upper:
            self.verdict = "H1"
        elif self.llr <= self.lower:
            self.verdict = "H0"
        return self.verdict

    def result(self, **extra: Any) -> SprtResult:
        """The test's state now (with a control, ``extra["luck"]`` holds the raw figures)."""
        est = estimate(self.n, self.mean, self.variance)
        p = self.params
        if self.control:
            raw = estimate(self.n, self.raw_mean, self.raw_variance)
            ratio = self.variance / self.raw_variance if self.raw_variance > 0 else 1.0

            def num(v: float) -> float | None:
                return round(v, 6) if math.isfinite(v) else None

            extra = {
                **extra,
                "luck": {
                    "beta": round(self.beta, 6),
                    "raw_score": num(self.raw_mean),
                    "raw_elo": num(raw.elo),
                    "raw_interval": [num(raw.elo_low), num(raw.elo_high)],
                    "variance_ratio": round(ratio, 4),
                },
            }
        return SprtResult(
            verdict=self.verdict,
            model=self.model,
            llr=self.llr,
            lower=self.lower,
            upper=self.upper,
            elo0=p.elo0,
            elo1=p.elo1,
            alpha=p.alpha,
            beta=p.beta,
            elo=est.elo,
            elo_low=est.elo_low,
            elo_high=est.elo_high,
            los=est.los,
            deals=self.n,
            score=self.mean,
            pentanomial=list(self.counts) if self.model == "pentanomial" else None,
            finished=self.finished,
            extra=extra,
        )
