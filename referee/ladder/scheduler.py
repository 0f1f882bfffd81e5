"""Matchmaking: which table the ladder plays next, chosen for what its result will teach.

Every table plays one deal in every seat rotation (the tournament's duplicate deals). The
choice, in order:

1. **Placement.** A version with fewer than
   :attr:`~referee.ladder.settings.ArenaSettings.placement_tables` tables plays first, the one
   with the fewest (then the oldest), against opponents spread over the whole board: the
   board sorted by strength is cut into strata and each placement table takes its opponents
   from other strata, so a newcomer's first tables see the top, the middle and the bottom.
2. **Exposure below half a share.** A version that has had less than :attr:`Rules.min_share`
   of its fair share of the window so far is seated next, with the partners worth most to
   it (as below): every active version keeps playing, even one whose order is settled (or
   looks it: a version misplaced by its placement would otherwise never be put right).
3. **Information.** Otherwise the table whose result says most about the board's order.
   For two versions ``a`` and ``b`` with log-strengths ``theta`` (the official fit's, or the
   live figure's for a version no refit has seen yet) whose difference has standard error
   ``s``, the chance that the board has them the wrong way round is ``Phi(-|dtheta| / s)``;
   one result between them carries Fisher information ``p (1 - p)`` about ``dtheta`` (``p``:
   the model's chance that ``a`` is placed above ``b``), which shrinks the variance ``s^2``
   by the share ``s^2 p (1 - p)``, about. A pair's value is the product of the three: high
   for neighbours whose order is in doubt and still movable, low for a pair already told
   apart or one whose result is a foregone conclusion (a strong bot against a hopeless one).
   The doubt is counted from :attr:`Rules.settled` up, not from nothing: a pair that stopped
   playing the moment its order looked settled would keep the estimate chance had given it
   then, too far apart as a rule (that is why it looked settled), and the intervals would
   miss the truth far more often than they say (on ``bench_ratings.py``'s boards, 77% of
   95% intervals held it with no such floor; 93-97% with it).
   Only near neighbours in ``theta`` are scored (the board sorted once, each version with
   its next :attr:`Rules.neighbours`), so a choice at 1,000 versions costs a few
   milliseconds. A larger table grows from the best pair, one seat at a time, by the seat
   that adds most value with the seats already chosen.

Subject to:

- **Fair exposure**: over any :attr:`Rules.window` consecutive tables, no version sits at
  more than :attr:`Rules.max_share` times its fair share (``window * table_size / versions``
  tables; at least one): a sliding window of the latest tables (:class:`Window`), checked
  for every table. Below the cap a version's value is damped by how much of its share it
  has had already, so the tables spread.
- **Reference bots** (an admin marks them) are capped at :attr:`Rules.reference_share` of a
  fair share.
- **No pair endlessly**: a pair's value is divided by one more than its tables together in
  the window.
- **No two versions of one owner at one table**, unless :attr:`Rules.same_owner` (in a game
  of three or more, one seat could feed another).

The caps give way only when no table could be formed under them (two versions in all, say,
one of them a reference): then the reference cap first, then the share cap. The owners'
rule never gives way: with fewer owners than seats there is no table.

Pure: the caller gives the versions, the window and the random source (which only breaks
ties and picks within placement strata).
"""

from __future__ import annotations

import math
import random
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: A value below this counts as nothing: a pair told apart to this certainty needs no table.
_TINY = 1e-300


@dataclass(frozen=True, slots=True)
class Candidate:
    """An active version, as the scheduler sees it."""

    id: int
    #: Its owner (a user id): two versions of one owner never share a table unless allowed.
    owner: int
    #: Log-strength (natural units: ``theta_a - theta_b`` is the log-odds of ``a`` placed
    #: above ``b``), and its standard error.
    theta: float
    se: float
    #: Tables it has been scheduled at so far (placement counts from these).
    tables: int
    #: Whether an admin marked it a reference bot (its share is capped lower).
    reference: bool = False


@dataclass(frozen=True, slots=True)
class Rules:
    """What the scheduler must respect (the arena's settings, in the scheduler's terms)."""

    table_size: int
    placement_tables: int = 3
    #: The sliding window of tables over which shares are counted.
    window: int = 100
    #: The most a version may take of the window, as a multiple of its fair share.
    max_share: float = 1.5
    #: The most a reference version may take, as a multiple of a fair share.
    reference_share: float = 0.5
    #: Whether versions of one owner may share a table.
    same_owner: bool = False
    #: A version whose tables in the window fall below this multiple of its fair share (of
    #: the window so far) is seated next, with the partners worth most to it.
    min_share: float = 0.5
    #: The doubt a pair keeps however settled its order looks (see the module doc).
    settled: float = 0.1
    #: How many next neighbours in strength each version is paired with, to be scored.
    neighbours: int = 4


@dataclass(frozen=True, slots=True)
class TableChoice:
    """The next table: version ids in table order (seat 0 of rotation 0 first)."""

    seats: tuple[int, ...]
    #: Whether it is a placement table of its focus version.
    placement: bool
    #: The version the table was chosen for (a placement's newcomer; else the first of the
    #: pair that was scored best).
    focus: int


class Window:
    """The latest tables (at most ``size - 1``: with the next one, a window of ``size``), with
    each version's and each pair's count of tables in it. Rebuilt after a restart from the
    store's latest tables (:meth:`of`)."""

    def __init__(self, size: int, tables: Iterable[Sequence[int]] = ()) -> None:
        self.size = size
        self._tables: deque[tuple[int, ...]] = deque()
        self._counts: Counter[int] = Counter()
        self._pairs: Counter[tuple[int, int]] = Counter()
        for t in tables:
            self.add(t)

    @staticmethod
    def of(size: int, latest: Iterable[Sequence[int]]) -> Window:
        """A window holding the last of ``latest`` (oldest first)."""
        return Window(size, list(latest)[-(size - 1):] if size > 1 else [])

    def add(self, seats: Sequence[int]) -> None:
        """Note a scheduled table; the oldest leaves the window."""
        t = tuple(sorted(seats))
        self._tables.append(t)
        self._counts.update(t)
        self._pairs.update(_pairs(t))
        while len(self._tables) > self.size - 1:
            old = self._tables.popleft()
            self._counts.subtract(old)
            self._pairs.subtract(_pairs(old))

    def count(self, version: int) -> int:
        """Tables of ``version`` in the window."""
        return self._counts[version]

    def pair(self, a: int, b: int) -> int:
        """Tables of ``a`` and ``b`` together in the window."""
        return self._pairs[(a, b) if a < b else (b, a)]

    def __len__(self) -> int:
        return len(self._tables)


def _pairs(t: Sequence[int]) -> Iterable[tuple[int, int]]:
    return ((t[i], t[j]) for i in range(len(t)) for j in range(i + 1, len(t)))


def fair_share(rules: Rules, versions: int) -> float:
    """A version's fair share of a window's tables: ``window * table_size / versions``."""
    return rules.window * min(rules.table_size, versions) / max(versions, 1)


def cap(rules: Rules, versions: int, reference: bool) -> int:
    """The most tables a version may sit at in any window (at least one; a reference's
    at least one if its share is above nothing)."""
    share = fair_share(rules, versions)
    if reference:
        return max(int(rules.reference_share > 0), math.floor(rules.reference_share * share + 1e-9))
    return max(1, math.floor(rules.max_share * share + 1e-9))


def within_caps(seats: Sequence[int], candidates: Sequence[Candidate], window: Window, rules: Rules) -> bool:
    """Whether one more table of ``seats`` keeps every one of them within its cap (the loop
    asks before each further table of a series)."""
    by_id = {c.id: c for c in candidates}
    n = len(candidates)
    return all(v in by_id and window.count(v) + 1 <= cap(rules, n, by_id[v].reference) for v in seats)


def can_seat(candidates: Sequence[Candidate], rules: Rules) -> bool:
    """Whether a table can be seated at all: enough versions, and of enough owners unless
    versions of one owner may share a table."""
    k = rules.table_size
    return len(candidates) >= k and (rules.same_owner or len({c.owner for c in candidates}) >= k)


def choose_table(
    candidates: Sequence[Candidate], rules: Rules, window: Window, rng: random.Random
) -> TableChoice | None:
    """The next table (see the module doc), or None when no table can be seated: fewer
    versions than seats, or fewer owners than seats while owners may not share a table."""
    if not can_seat(candidates, rules):
        return None
    n = len(candidates)
    caps = {False: cap(rules, n, False), True: cap(rules, n, True)}
    # The caps as they are, then without the reference cap, then none (see the module doc).
    for strict_ref, strict_share in ((True, True), (False, True), (False, False)):
        eligible = [
            c for c in candidates
            if not strict_share or window.count(c.id) + 1 <= caps[c.reference and strict_ref]
        ]  # fmt: skip
        choice = _choose(eligible, rules, window, rng, fair_share(rules, n))
        if choice is not None:
            return choice
    return None


def _choose(eligible: list[Candidate], rules: Rules, window: Window, rng: random.Random, share: float) -> TableChoice | None:
    k = rules.table_size
    if len(eligible) < k:
        return None
    new = [c for c in eligible if c.tables < rules.placement_tables]
    for focus in sorted(new, key=lambda c: (c.tables, c.id)):
        seats = _placement(focus, eligible, rules, rng)
        if seats is not None:
            return TableChoice(tuple(sorted(seats)), True, focus.id)
    # The share a version should have had of the window so far (none while it is empty).
    so_far = share * len(window) / max(window.size - 1, 1)
    starved = [c for c in eligible if window.count(c.id) < rules.min_share * so_far]
    if starved:
        focus = min(starved, key=lambda c: (window.count(c.id), c.tables, c.id))
        choice = _informative(eligible, rules, window, rng, share, focus=focus.id)
        if choice is not None:
            return choice
    return _informative(eligible, rules, window, rng, share)


def _placement(focus: Candidate, eligible: list[Candidate], rules: Rules, rng: random.Random) -> list[int] | None:
    """The newcomer and opponents from strata spread over the board (None if the owners'
    rule leaves too few)."""
    k = rules.table_size
    others = sorted((c for c in eligible if c.id != focus.id), key=lambda c: (c.theta, c.id))
    chosen = [focus]
    strata = (k - 1) * max(rules.placement_tables, 1)
    for j in range(k - 1):
        s = j * max(rules.placement_tables, 1) + focus.tables % max(rules.placement_tables, 1)
        lo, hi = s * len(others) // strata, max((s + 1) * len(others) // strata, s * len(others) // strata + 1)
        stratum = [c for c in others[lo:hi] if _seatable(c, chosen, rules)]
        pool = stratum or [c for c in others if _seatable(c, chosen, rules)]
        if not pool:
            return None
        chosen.append(rng.choice(pool))
    return [c.id for c in chosen]


def _seatable(c: Candidate, chosen: Sequence[Candidate], rules: Rules) -> bool:
    return all(c.id != x.id and (rules.same_owner or c.owner != x.owner) for x in chosen)


def _informative(
    eligible: list[Candidate], rules: Rules, window: Window, rng: random.Random, share: float, focus: int | None = None
) -> TableChoice | None:
    """The best pair by value among near neighbours, grown to a table (see the module doc);
    with ``focus``, the best pair that includes it."""
    # Imported here: the settings (read by every arena command) import this module's Rules.
    import numpy as np

    k = rules.table_size
    order = sorted(eligible, key=lambda c: (c.theta, c.id))
    theta = np.fromiter((c.theta for c in order), float, len(order))
    se2 = np.fromiter((c.se * c.se for c in order), float, len(order))
    owner = np.fromiter((c.owner for c in order), np.int64, len(order))
    seen = np.fromiter((window.count(c.id) for c in order), float, len(order))
    # Damped by the share already had: 1 at none, 1/2 at a full share.
    expo = share / (share + seen)
    firsts, seconds, values = [], [], []
    for j in range(1, min(rules.neighbours, len(order) - 1) + 1):
        a, b = np.arange(len(order) - j), np.arange(j, len(order))
        v = _value(theta[b] - theta[a], se2[a] + se2[b], rules.settled) * expo[a] * expo[b]
        if not rules.same_owner:
            v = np.where(owner[a] == owner[b], 0.0, v)
        firsts.append(a)
        seconds.append(b)
        values.append(v)
    if not values:
        return None
    first, second, value = np.concatenate(firsts), np.concatenate(seconds), np.concatenate(values)
    if focus is not None:
        at = next(i for i, c in enumerate(order) if c.id == focus)
        keep = (first == at) | (second == at)
        first, second, value = first[keep], second[keep], value[keep]
    # The repeat penalty needs a look-up per pair: only the best few are looked at.
    top = np.argsort(-value, kind="stable")[: 4 * k + 12]
    best: tuple[float, int, int] | None = None
    for i in top:
        x, y = int(first[i]), int(second[i])
        if not rules.same_owner and order[x].owner == order[y].owner:
            continue
        worth = float(value[i]) / (1 + window.pair(order[x].id, order[y].id)) * (1 + 1e-6 * rng.random())
        if best is None or worth > best[0]:
            best = (worth, x, y)
    if best is None:
        # Every neighbour pair shares an owner: any two versions of different owners.
        pairs = [
            (x, y) for x in range(len(order)) for y in range(x + 1, len(order))
            if (rules.same_owner or order[x].owner != order[y].owner) and focus in (None, order[x].id, order[y].id)
        ]  # fmt: skip
        if not pairs:
            return None
        x, y = rng.choice(pairs)
        best = (0.0, x, y)
    seats = [best[1], best[2]]
    while len(seats) < k:
        nxt = _grow(seats, order, theta, se2, expo, rules)
        if nxt is None:
            return None
        seats.append(nxt)
    return TableChoice(tuple(sorted(order[i].id for i in seats)), False, order[best[1]].id)


def _grow(seats: list[int], order: list[Candidate], theta: np.ndarray, se2: np.ndarray, expo: np.ndarray, rules: Rules) -> int | None:
    """The index of the seat that adds most value with the seats chosen: near neighbours of
    theirs first, then anyone seatable."""
    import numpy as np

    m = rules.neighbours
    near = {i for s in seats for i in range(max(0, s - m), min(len(order), s + m + 1))}
    chosen = [order[s] for s in seats]
    for pool in (sorted(near), range(len(order))):
        options = [i for i in pool if i not in seats and _seatable(order[i], chosen, rules)]
        if options:
            idx = np.array(options)
            total = np.zeros(len(options))
            for s in seats:
                total += _value(theta[idx] - theta[s], se2[idx] + se2[s], rules.settled) * expo[s]
            total *= expo[idx]
            return int(idx[int(np.argmax(total))])
    return None


def _value(d: np.ndarray, s2: np.ndarray, settled: float) -> np.ndarray:
    """A pair's value: the chance its order is wrong, times the share of its difference's
    variance one result removes (see the module doc)."""
    import numpy as np
    from scipy.special import ndtr

    s2 = np.maximum(s2, 1e-12)
    doubt = ndtr(-np.abs(d) / np.sqrt(s2))
    p = 1.0 / (1.0 + np.exp(-np.clip(d, -50, 50)))
    out: np.ndarray = np.maximum((np.asarray(doubt, dtype=float) + settled) * p * (1 - p) * s2, _TINY)
    return out


def pair_value(a: Candidate, b: Candidate, settled: float = 0.0) -> float:
    """The value of a table of ``a`` and ``b`` alone (the module doc's product), for tests
    and the docs."""
    import numpy as np

    return float(_value(np.array([b.theta - a.theta]), np.array([a.se**2 + b.se**2]), settled)[0])
