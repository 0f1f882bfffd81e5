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
from functools import lru_cache
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve

K = TypeVar("K", bound=Hashable)

#: Rating points per unit of log-strength: the Elo scale's, so that a 400-point gap means
#: odds of 10 to 1 of being placed above the other, head to head.
ELO = 400.0 / math.log(10.0)
#: The board's average rating.
BASE = 1500.0
#: The prior's standard deviation of a log-strength (about 520 rating points): weak, so that
#: a handful of matches outweighs it, but enough to keep an unbeaten version's rating finite.
PRIOR_SD = 3.0
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
    #: Each seat's luck of the cards in this match, if measured (:mod:`referee.analysis.luck`:
    #: zero on average whatever the players do, in any unit): a control variate that the fit
    #: takes out of the placings' noise. None counts as zeros.
    luck: tuple[float, ...] | None = None


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

    def __init__(
        self, ids: Sequence[K], theta: _Array, cov: _Array, matches: Sequence[int], level: float,
        clusters: Sequence[int] | None = None, prior_sd: float = PRIOR_SD,
    ) -> None:
        self._index = {k: i for i, k in enumerate(ids)}
        self._theta = theta
        self._cov = cov
        self.ratings: dict[K, Rating] = {}
        for i, k in enumerate(ids):
            se = math.sqrt(max(float(cov[i, i]), 0.0)) * ELO
            r = BASE + ELO * float(theta[i])
            # Student's t with one degree of freedom fewer than the player's clusters (at least
            # one): a cluster-robust variance from a handful of deals is itself uncertain (two
            # bots after four tables covered the truth 84% of the time with the normal's 1.96).
            # Never wider than the prior's own interval, which is all a deal or two adds to.
            df = max(clusters[i] - 1, 1) if clusters is not None and clusters[i] > 0 else None
            half = min(_quantile(0.5 + level / 2, df) * se, _quantile(0.5 + level / 2, None) * prior_sd * ELO)
            self.ratings[k] = Rating(r, r - half, r + half, se, float(theta[i]), int(matches[i]))

    def diff_se(self, a: K, b: K) -> float:
        """The standard error of ``theta_a - theta_b`` (natural units), from the covariance."""
        i, j = self._index[a], self._index[b]
        c = self._cov
        return math.sqrt(max(float(c[i, i] + c[j, j] - 2 * c[i, j]), 0.0))


@lru_cache(maxsize=256)
def _quantile(p: float, df: int | None) -> float:
    """The normal quantile, or Student's t's with ``df`` degrees of freedom (past 200 the
    normal's, to within 0.3%)."""
    from statistics import NormalDist

    if df is None or df > 200:
        return NormalDist().inv_cdf(p)
    # Imported here: scipy.stats costs a second, and this module is imported by every command.
    from scipy.stats import t

    return float(t.ppf(p, df))


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
    #: Each outcome's cluster's number.
    outcome_cluster: _Index


def _stages(outcomes: Sequence[Outcome[K]], index: dict[K, int]) -> _Stages:
    """The stages of every outcome, built table size by table size with whole-array steps."""
    cluster_ids: dict[Hashable, int] = {}
    by_size: dict[int, tuple[list[list[int]], list[tuple[int, ...]], list[int]]] = {}
    outcome_cluster: list[int] = []
    for o in outcomes:
        c = cluster_ids.setdefault(o.cluster, len(cluster_ids))
        outcome_cluster.append(c)
        players, placings, clusters = by_size.setdefault(len(o.players), ([], [], []))
        players.append([index[p] for p in o.players])
        placings.append(o.placings)
        clusters.append(c)
    parts: dict[str, list[_Index]] = {k: [] for k in ("rs", "rp", "ds", "dp", "sc", "pa", "pb", "ps")}
    m_parts: list[_Array] = []
    next_stage = 0
    for size, (players_l, placings_l, clusters_l) in sorted(by_size.items()):
        if size < 2:
            continue
        order = np.argsort(np.asarray(placings_l, dtype=np.int64), axis=1, kind="stable")
        rows = np.arange(len(players_l))[:, None]
        q = np.asarray(placings_l, dtype=np.int64)[rows, order]
        pl = np.asarray(players_l, dtype=np.intp)[rows, order]
        # A group of equal placings starts where the placing changes; its stage is valid
        # unless the group runs to the end (the last placing, chosen from nobody else).
        start = np.ones_like(q, dtype=bool)
        start[:, 1:] = q[:, 1:] != q[:, :-1]
        pos = np.arange(size)
        group_start = np.maximum.accumulate(np.where(start, pos, 0), axis=1)
        last_start = group_start[:, -1:]
        valid = start & (pos < last_start)
        ids = np.where(valid, np.cumsum(valid.ravel()).reshape(valid.shape) - 1 + next_stage, -1)
        count = int(valid.sum())
        cl = np.asarray(clusters_l, dtype=np.intp)
        stage_rows, stage_pos = np.nonzero(valid)
        # Stages in id order: np.nonzero walks row-major, as the cumulative sum did.
        parts["sc"].append(cl[stage_rows])
        group_end = np.full_like(q, size)
        for j in range(size - 1):
            later = start[:, j + 1 :]
            group_end[:, j] = np.where(later.any(axis=1), j + 1 + np.argmax(later, axis=1), size)
        m_parts.append((group_end[stage_rows, stage_pos] - stage_pos).astype(np.float64))
        for j in range(size):
            at = valid[:, j]
            sid = ids[at, j]
            # Risk set: every position from j on.
            for r in range(j, size):
                parts["rs"].append(sid)
                parts["rp"].append(pl[at, r])
            for a in range(j, size):
                for b in range(j, size):
                    if a != b:
                        parts["pa"].append(pl[at, a])
                        parts["pb"].append(pl[at, b])
                        parts["ps"].append(sid)
        # Chosen: each position belongs to the stage of its group's start, when valid.
        for i in range(size):
            sid = ids[np.arange(len(q)), group_start[:, i]]
            ok = sid >= 0
            parts["ds"].append(sid[ok])
            parts["dp"].append(pl[ok, i])
        next_stage += count

    def cat(key: str) -> _Index:
        return np.concatenate(parts[key]).astype(np.intp) if parts[key] else np.zeros(0, dtype=np.intp)

    m = np.concatenate(m_parts) if m_parts else np.zeros(0)
    return _Stages(
        cat("rs"), cat("rp"), cat("ds"), cat("dp"), m, cat("sc"), len(cluster_ids), cat("pa"), cat("pb"), cat("ps"),
        np.asarray(outcome_cluster, dtype=np.intp),
    )


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


@dataclass(slots=True)
class _Blocks:
    """Every cluster as a small dense block over its own players (a cluster holds one table's
    players, at most eight): their scores, and the cluster's own curvature."""

    #: (cluster, slot) -> player, -1 where the cluster has fewer players than slots.
    players: _Index
    #: Per cluster and slot: +1 for each placing the player was chosen at, minus its
    #: expected share (the cluster's score vector).
    g: _Array
    #: Per cluster: m (diag(p) - p p^T) summed over its stages, over its slots.
    h: _Array
    #: Sorted ``cluster * n + player`` keys, and each key's slot.
    keys: _Index
    slot: _Index

    def slots_of(self, cluster: _Index, player: _Index, n: int) -> tuple[_Index, _Index, NDArray[np.bool_]]:
        """(cluster, slot, found) of each (cluster, player) pair."""
        k = cluster * n + player
        at = np.minimum(np.searchsorted(self.keys, k), len(self.keys) - 1)
        found = self.keys[at] == k
        return cluster, self.slot[at], found


def _blocks(st: _Stages, theta: _Array, p: _Array) -> _Blocks:
    n = len(theta)
    r_cluster = st.stage_cluster[st.r_stage]
    keys, slot_of_r = np.unique(r_cluster * n + st.r_player, return_inverse=True)
    key_cluster = keys // n
    key_player = keys % n
    first = np.searchsorted(key_cluster, key_cluster, side="left")
    slot = np.arange(len(keys)) - first
    width = int(slot.max()) + 1 if len(slot) else 1
    clusters = st.clusters
    players = np.full((clusters, width), -1, dtype=np.intp)
    players[key_cluster, slot] = key_player
    # bincount over flat indices rather than np.add.at, which is many times slower.
    r_slot = slot[slot_of_r]
    d_key = np.searchsorted(keys, st.stage_cluster[st.d_stage] * n + st.d_player)
    g = (
        np.bincount(key_cluster[d_key] * width + slot[d_key], minlength=clusters * width)
        - np.bincount(r_cluster * width + r_slot, weights=st.m[st.r_stage] * p, minlength=clusters * width)
    ).reshape(clusters, width)
    cells = clusters * width * width
    h_c = np.bincount((r_cluster * width + r_slot) * width + r_slot, weights=st.m[st.r_stage] * p * (1 - p), minlength=cells)
    if len(st.pair_a):
        w = np.exp(theta)
        _, total = _probabilities(st, theta)
        t = total[st.pair_stage]
        pc = st.stage_cluster[st.pair_stage]
        sa = slot[np.searchsorted(keys, pc * n + st.pair_a)]
        sb = slot[np.searchsorted(keys, pc * n + st.pair_b)]
        off = st.m[st.pair_stage] * (w[st.pair_a] / t) * (w[st.pair_b] / t)
        h_c = h_c - np.bincount((pc * width + sa) * width + sb, weights=off, minlength=cells)
    return _Blocks(players, np.asarray(g, dtype=np.float64), np.asarray(h_c, dtype=np.float64).reshape(clusters, width, width), keys, slot)


def _cluster_scores(blocks: _Blocks, g: _Array, h_inv: _Array) -> _Array:
    """``B``: the sum over clusters of each cluster's score vector ``g`` times itself.

    Each cluster's score is first inflated by its own leverage, ``(I - H_c H^-1)^-1 g_c`` (the
    jackknife-like "CR3" correction of a cluster-robust covariance): a cluster's own results
    pulled the fit toward themselves, so its raw score understates how far it lies from the
    truth, most of all when a player has few clusters. Without it, boards of a few hundred
    matches covered the truth 91-93% of the time instead of 95%.
    """
    n = len(h_inv)
    players = blocks.players
    clusters, width = players.shape
    used = players >= 0
    safe = np.where(used, players, 0)
    hinv_c = h_inv[safe[:, :, None], safe[:, None, :]] * (used[:, :, None] & used[:, None, :])
    eye = np.broadcast_to(np.eye(width), (clusters, width, width))
    g_adj = np.linalg.solve(eye - blocks.h @ hinv_c, g[:, :, None])[:, :, 0]
    outer = g_adj[:, :, None] * g_adj[:, None, :]
    mask = used[:, :, None] & used[:, None, :]
    flat = (safe[:, :, None] * n + safe[:, None, :])[mask]
    return np.asarray(np.bincount(flat, weights=outer[mask], minlength=n * n).reshape(n, n), dtype=np.float64)


def _luck_blocks(
    outs: Sequence[Outcome[K]], index: dict[K, int], st: _Stages, blocks: _Blocks, theta: _Array
) -> _Array | None:
    """Each cluster's control variate per slot, or None when no outcome has any luck.

    For a match, seat ``i``'s variate is ``p_i (L_i - sum_j p_j L_j)``: how much its luck
    ``L`` should have moved its chance ``p`` of first place among the seats, were luck a
    shift of strength. It has mean zero, as the luck has, since ``p`` comes from the
    strengths alone (first place is chosen from every seat, whatever happened). It sums to
    zero over the seats, as the scores do, and vanishes for a player that never has a chance,
    whatever its cards: so it takes noise out of the order of the players without adding any
    where the luck did not matter.
    """
    if not any(o.luck for o in outs):
        return None
    n = len(index)
    cl: list[int] = []
    pl: list[int] = []
    val: list[float] = []
    for o, c in zip(outs, st.outcome_cluster.tolist(), strict=True):
        if not o.luck:
            continue
        if len(o.luck) != len(o.players):
            raise ValueError(f"an outcome has {len(o.players)} players but luck for {len(o.luck)}")
        idx = [index[k] for k in o.players]
        w = np.exp(theta[idx] - theta[idx].max())
        p = w / w.sum()
        luck = np.asarray(o.luck, dtype=np.float64)
        h = p * (luck - float(p @ luck))
        cl += [c] * len(idx)
        pl += idx
        val += h.tolist()
    c_arr, s_arr, found = blocks.slots_of(np.asarray(cl, dtype=np.intp), np.asarray(pl, dtype=np.intp), n)
    clusters, width = blocks.players.shape
    # A player in no stage of its cluster (a match of one, or all tied) has no score to adjust.
    flat = np.bincount((c_arr * width + s_arr)[found], weights=np.asarray(val)[found], minlength=clusters * width)
    return np.asarray(flat, dtype=np.float64).reshape(clusters, width)


def fit(
    outcomes: Iterable[Outcome[K]], players: Iterable[K] = (), *, prior_sd: float = PRIOR_SD, level: float = LEVEL
) -> Fit[K]:
    """Fit every player's rating to every outcome at once (see the module's text).

    ``players`` adds players that have not played yet (their figures are the prior's, with
    ``matches == 0``). The result does not depend on the order of ``outcomes``. A match with
    fewer than two players, or whose players all share one placing, carries no information
    and changes nothing but its players' match counts.

    Outcomes that carry their :attr:`Outcome.luck` have it taken out as a control variate:
    the luck has mean zero whatever the players do, so subtracting ``beta`` times it from each
    cluster's scores (``beta`` their least-squares slope on it, one for the board; the variate
    is the luck's effect on each seat's chance of first place, see :func:`_luck_blocks`) and
    moving the estimate by the same amount (one Newton step of the adjusted equations) keeps
    it unbiased and leaves in the interval only the part of the noise the luck does not
    explain. Without luck, or with luck unrelated to the placings, nothing changes.
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
        step = cho_solve(cho_factor(h), grad)
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
        # 1e-7 of a log-strength is 2e-5 rating points: far below anything shown.
        if float(np.max(np.abs(t * step))) < 1e-7:
            break
    p, _total = _probabilities(st, theta)
    h_inv = cho_solve(cho_factor(_curvature(st, theta, prior_var)), np.eye(n))
    blocks = _blocks(st, theta, p)
    g = blocks.g
    luck = _luck_blocks(outs, index, st, blocks, theta)
    if luck is not None and float((luck * luck).sum()) > 0:
        # One slope for the board: the variates are already on the scores' scale.
        beta = float((g * luck).sum() / (luck * luck).sum())
        g = g - beta * luck
        used = blocks.players >= 0
        total = np.bincount(blocks.players[used], weights=luck[used], minlength=n)
        theta = theta - h_inv @ (beta * total)
    b = _cluster_scores(blocks, g, h_inv)
    # The prior's precision joins the scores' spread: where the data say little (a version
    # that has only ever lost, whose every score is nearly zero) the interval falls back to
    # the prior's width instead of shrinking to nothing; where they say much it changes
    # nothing. Under the model this is the posterior's covariance.
    cov = h_inv @ (b + np.eye(n) / prior_var) @ h_inv
    # Centre on the rated players' mean: ratings are differences, and 1500 is their average.
    rated = np.asarray([c > 0 for c in matches], dtype=np.float64)
    k = rated.sum()
    if k > 0:
        centre = rated / k
        theta = theta - float(centre @ theta)
        # (I - 1 c^T) cov (I - c 1^T), without the two n x n products.
        cc = cov @ centre
        cov = cov - cc[:, None] - cc[None, :] + float(centre @ cc)
    # A player without a match has only the prior to go on.
    for i in range(n):
        if not matches[i]:
            theta[i] = 0.0
            cov[i, :] = 0.0
            cov[:, i] = 0.0
            cov[i, i] = prior_var
    in_use = blocks.players >= 0
    clusters = np.bincount(blocks.players[in_use], minlength=n).tolist()
    return Fit(ids, theta, cov, matches, level, clusters, prior_sd)


def wilson(wins: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of a win rate of ``wins`` in ``n`` matches (SciPy's), ``(0, 1)``
    for none: the one interval of win rates, for tournaments and the ladder alike. Its ends
    are clamped to hold the rate itself, so that no rounding error ever shows a rate outside
    its own interval (the ladder's hand-written formula put the low end of a rate of 0 at
    2.8e-17)."""
    if n <= 0:
        return 0.0, 1.0
    # Imported here: scipy.stats costs a second, and every command imports this module.
    from scipy.stats import binomtest

    ci = binomtest(wins, n).proportion_ci(confidence_level=level, method="wilson")
    rate = wins / n
    return min(float(ci.low), rate), max(float(ci.high), rate)
