"""The official rating: one batch fit of the Plackett-Luce model over every finished match.

A bot version never changes, so its strength is a constant to estimate from all of its
matches at once, not a figure that drifts with the order they finished in. The model is
Plackett-Luce over each match's placings: a player of log-strength ``theta`` is placed first
among those still unplaced with probability ``exp(theta) / sum(exp(theta_j))``, then the next
from the rest, and so on. Players who share a placing are a tie, taken as Breslow takes tied
events in a survival model (each of the ``m`` tied players chosen from the same remaining set,
the set's total counted ``m`` times); the last placing, chosen from nobody else, carries no
information and is left out.

The estimate is the maximum a posteriori under a weak normal prior on each log-strength
(:data:`PRIOR_SD`): a version that has only ever won, or only ever lost, then keeps a finite
rating instead of running off to infinity, and the data outweigh the prior within a few
matches. It is found by Newton's method, vectorised over every placing in numpy, so that a
board of 1,000 versions and 100,000 matches refits in about a second (`bench_ratings.py`).

The interval must respect that matches are not independent: the rotations of one deal deal the
same cards, so their results share the cards' luck. The covariance is therefore the
cluster-robust (sandwich) one, ``H^-1 B H^-1``, with ``H`` the curvature of the log-posterior
and ``B`` the spread of the per-cluster scores, a cluster being everything that shares a deal.
Where rotations cancel each other's luck the interval is narrower than independent matches
would give; where they repeat it, wider.

What users read is the **rating**: ``BASE + ELO * theta``, with ``theta`` centred on the mean
of the rated players, so 1500 is the board's average and a gap of 400 points means odds of
10 to 1 of being placed above the other at one table, as on the Elo scale chess players know.

Why not a library's fit: choix (`tests/test_ratings.py` checks our estimate against its
``opt_rankings`` on untied data) fits the same model, but knows no ties, loops over the
placings in Python (over a minute at the size above) and gives no curvature or per-match
scores for the interval; the few lines of Newton's method here do all three.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

K = TypeVar("K", bound=Hashable)

#: Rating points per unit of log-strength: the Elo scale's, so that a 400-point gap means
#: odds of 10 to 1 of being placed above the other, head to head.
ELO = 400.0 / math.log(10.0)
#: The board's average rating.
BASE = 1500.0
#: The prior's standard deviation of a log-strength (about 1,040 rating points): weak, so that
#: a handful of matches outweighs it, but enough to keep an unbeaten version's rating finite.
PRIOR_SD = 6.0
#: The confidence of the intervals shown.
LEVEL = 0.95

_Array = NDArray[np.float64]
_Index = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class Outcome(Generic[K]):
    """One finished match, as the fit sees it."""

    #: The players, in seat order.
    players: tuple[K, ...]
    #: Each seat's placing, 1 = best; equal numbers are a tie.
    placings: tuple[int, ...]
    #: What the match shares its luck with: its deal (the rotations of one deal deal the same
    #: cards). Outcomes with equal clusters are resampled together in the interval.
    cluster: Hashable


@dataclass(frozen=True, slots=True)
class Rating:
    """One player's official figure."""

    #: ``BASE + ELO * theta``: 1500 is the board's average.
    rating: float
    #: The interval's ends (:data:`LEVEL`, 95%), in rating points.
    low: float
    high: float
    #: The standard error, in rating points.
    se: float
    #: The centred log-strength (natural units; 0 = the board's average).
    theta: float
    #: Matches it played (0: not rated; its figures are the prior's and mean nothing).
    matches: int

    @property
    def rated(self) -> bool:
        """Whether any match informs the figure."""
        return self.matches > 0


class Fit(Generic[K]):
    """The fitted ratings of a board, with the covariance the intervals come from."""

    def __init__(self, ids: Sequence[K], theta: _Array, cov: _Array, matches: Sequence[int], level: float) -> None:
        self._index = {k: i for i, k in enumerate(ids)}
        self._theta = theta
        self._cov = cov
        z = _normal_quantile(0.5 + level / 2)
        self.ratings: dict[K, Rating] = {}
        for i, k in enumerate(ids):
            se = math.sqrt(max(float(cov[i, i]), 0.0)) * ELO
            r = BASE + ELO * float(theta[i])
            self.ratings[k] = Rating(r, r - z * se, r + z * se, se, float(theta[i]), int(matches[i]))

    def p_above(self, a: K, b: K) -> float:
        """The model's probability that ``a`` is placed above ``b`` when they meet."""
        d = float(self._theta[self._index[a]] - self._theta[self._index[b]])
        return 1.0 / (1.0 + math.exp(-d))

    def diff_se(self, a: K, b: K) -> float:
        """The standard error of ``theta_a - theta_b`` (natural units), from the covariance."""
        i, j = self._index[a], self._index[b]
        c = self._cov
        return math.sqrt(max(float(c[i, i] + c[j, j] - 2 * c[i, j]), 0.0))

    def order(self) -> list[K]:
        """The players, best rating first."""
        return sorted(self.ratings, key=lambda k: -self.ratings[k].theta)


def _normal_quantile(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


@dataclass(slots=True)
class _Stages:
    """Every placing decision of every match, flattened for numpy.

    A stage is one step of Plackett-Luce's draw: the players placed at it (``D``, ``m`` of them
    when tied) chosen from those still unplaced (its risk set ``R``). Entries list each risk
    set's members and each chosen set's members with their stage; pairs list every ordered
    pair within a risk set (the curvature's off-diagonal terms).
    """

    r_stage: _Index
    r_player: _Index
    d_stage: _Index
    d_player: _Index
    m: _Array
    stage_cluster: _Index
    clusters: int
    pair_a: _Index
    pair_b: _Index
    pair_stage: _Index


def _stages(outcomes: Sequence[Outcome[K]], index: dict[K, int]) -> _Stages:
    r_stage: list[int] = []
    r_player: list[int] = []
    d_stage: list[int] = []
    d_player: list[int] = []
    m: list[float] = []
    stage_cluster: list[int] = []
    pa: list[int] = []
    pb: list[int] = []
    ps: list[int] = []
    cluster_ids: dict[Hashable, int] = {}
    s = 0
    for o in outcomes:
        c = cluster_ids.setdefault(o.cluster, len(cluster_ids))
        seats = sorted(zip(o.placings, (index[p] for p in o.players), strict=True))
        start = 0
        n = len(seats)
        while start < n:
            end = start
            while end < n and seats[end][0] == seats[start][0]:
                end += 1
            if end == n:
                break  # the last placing: chosen from nobody else, it says nothing
            risk = [p for _, p in seats[start:]]
            r_stage += [s] * len(risk)
            r_player += risk
            chosen = [p for _, p in seats[start:end]]
            d_stage += [s] * len(chosen)
            d_player += chosen
            m.append(float(len(chosen)))
            stage_cluster.append(c)
            for a in risk:
                for b in risk:
                    if a != b:
                        pa.append(a)
                        pb.append(b)
                        ps.append(s)
            s += 1
            start = end
    # Entries into the pairs are positions in the risk-set arrays, so the curvature can read
    # each member's probability where it was computed.
    return _Stages(
        np.asarray(r_stage, dtype=np.intp), np.asarray(r_player, dtype=np.intp),
        np.asarray(d_stage, dtype=np.intp), np.asarray(d_player, dtype=np.intp),
        np.asarray(m, dtype=np.float64), np.asarray(stage_cluster, dtype=np.intp), len(cluster_ids),
        np.asarray(pa, dtype=np.intp), np.asarray(pb, dtype=np.intp), np.asarray(ps, dtype=np.intp),
    )  # fmt: skip


def _probabilities(st: _Stages, theta: _Array) -> tuple[_Array, _Array]:
    """Each risk-set entry's chance of being chosen at its stage, and each stage's total."""
    w = np.exp(theta[st.r_player])
    total = np.asarray(np.bincount(st.r_stage, weights=w, minlength=len(st.m)), dtype=np.float64)
    return w / total[st.r_stage], total


def _objective(st: _Stages, theta: _Array, prior_var: float) -> float:
    _, total = _probabilities(st, theta)
    return float(theta[st.d_player].sum() - (st.m * np.log(total)).sum() - (theta @ theta) / (2 * prior_var))


def _gradient(st: _Stages, theta: _Array, p: _Array, prior_var: float) -> _Array:
    n = len(theta)
    chosen = np.bincount(st.d_player, minlength=n).astype(np.float64)
    expected = np.bincount(st.r_player, weights=st.m[st.r_stage] * p, minlength=n)
    return chosen - expected - theta / prior_var


def _curvature(st: _Stages, theta: _Array, prior_var: float) -> _Array:
    """Minus the log-posterior's Hessian (positive definite)."""
    n = len(theta)
    w = np.exp(theta)
    _, total = _probabilities(st, theta)
    p_r = w[st.r_player] / total[st.r_stage]
    diag = np.bincount(st.r_player, weights=st.m[st.r_stage] * p_r * (1 - p_r), minlength=n)
    h = np.diag(diag + 1.0 / prior_var)
    if len(st.pair_a):
        t = total[st.pair_stage]
        off = st.m[st.pair_stage] * (w[st.pair_a] / t) * (w[st.pair_b] / t)
        h -= np.bincount(st.pair_a * n + st.pair_b, weights=off, minlength=n * n).reshape(n, n)
    return h


def _cluster_scores(st: _Stages, theta: _Array, p: _Array) -> _Array:
    """``B``: the sum over clusters of each cluster's score vector times itself."""
    from scipy.sparse import coo_matrix

    n = len(theta)
    rows = np.concatenate([st.stage_cluster[st.d_stage], st.stage_cluster[st.r_stage]])
    cols = np.concatenate([st.d_player, st.r_player])
    vals = np.concatenate([np.ones(len(st.d_player)), -st.m[st.r_stage] * p])
    g = coo_matrix((vals, (rows, cols)), shape=(st.clusters, n)).tocsr()
    b = np.asarray((g.T @ g).todense(), dtype=np.float64)
    if st.clusters > 1:
        # The usual small-sample correction of a cluster-robust covariance.
        b *= st.clusters / (st.clusters - 1)
    return b


def fit(
    outcomes: Iterable[Outcome[K]], players: Iterable[K] = (), *, prior_sd: float = PRIOR_SD, level: float = LEVEL
) -> Fit[K]:
    """Fit every player's rating to every outcome at once (see the module's text).

    ``players`` adds players that have not played yet (their figures are the prior's, with
    ``matches == 0``). The result does not depend on the order of ``outcomes``. A match with
    fewer than two players, or whose players all share one placing, carries no information
    and changes nothing but its players' match counts.
    """
    outs = list(outcomes)
    ids: list[K] = []
    index: dict[K, int] = {}
    for k in players:
        if k not in index:
            index[k] = len(ids)
            ids.append(k)
    for o in outs:
        if len(o.players) != len(o.placings):
            raise ValueError(f"an outcome has {len(o.players)} players but {len(o.placings)} placings")
        for k in o.players:
            if k not in index:
                index[k] = len(ids)
                ids.append(k)
    n = len(ids)
    matches = [0] * n
    for o in outs:
        for k in o.players:
            matches[index[k]] += 1
    if n == 0:
        return Fit(ids, np.zeros(0), np.zeros((0, 0)), matches, level)
    prior_var = prior_sd * prior_sd
    st = _stages(outs, index)
    theta = np.zeros(n)
    value = _objective(st, theta, prior_var)
    for _ in range(100):
        p, _total = _probabilities(st, theta)
        grad = _gradient(st, theta, p, prior_var)
        h = _curvature(st, theta, prior_var)
        step = np.linalg.solve(h, grad)
        # Newton's step on a concave objective; halved while it does not improve, which it
        # rarely needs (far from the optimum, with nearly unbeaten players).
        t = 1.0
        while True:
            candidate = theta + t * step
            new = _objective(st, candidate, prior_var)
            if new >= value - 1e-12 or t < 1e-6:
                break
            t /= 2
        theta, value = candidate, new
        if float(np.max(np.abs(t * step))) < 1e-9:
            break
    p, _total = _probabilities(st, theta)
    h_inv = np.linalg.inv(_curvature(st, theta, prior_var))
    cov = h_inv @ _cluster_scores(st, theta, p) @ h_inv
    # Centre on the rated players' mean: ratings are differences, and 1500 is their average.
    rated = np.asarray([c > 0 for c in matches], dtype=np.float64)
    k = rated.sum()
    if k > 0:
        centre = rated / k
        theta = theta - float(centre @ theta)
        j = np.eye(n) - np.outer(np.ones(n), centre)
        cov = j @ cov @ j.T
    # A player without a match has only the prior to go on.
    for i in range(n):
        if not matches[i]:
            theta[i] = 0.0
            cov[i, :] = 0.0
            cov[:, i] = 0.0
            cov[i, i] = prior_var
    return Fit(ids, theta, cov, matches, level)
