"""Position values: what each legal action of a decision is worth, by rollouts.

One evaluator for the whole project (docs/analysis.md): decision analysis
(:mod:`referee.analysis`) and the luck correction both use it, and a search bot may too. It
plays each legal action of the seat to move, then lets a fixed, named *reference policy*
(:data:`REFERENCE_POLICY`) play every seat to the end of the round, many times, and averages
the seat's result: lives lost playing for lives, chips won playing for a pot.

Two views of a decision:

- **the seat's** (``evaluate(observation)``): from an
  :class:`~referee.game.Observation` alone. Each sample is a guess of the hidden cards
  consistent with what the seat saw (:class:`sdk.sampler.Sampler`), so the value uses
  nothing the seat could not know;
- **the deal's** (``evaluate(position)``): from the true
  :class:`~referee.game.position.Position` (every hand, the dummy). Only the stock's
  *order* is shuffled for each sample: it is chance's, still to come, and with it known a
  deterministic reference policy would play one line and call every draw in hindsight.

Every action is played on the same samples with the same restock shuffles (common random
numbers), so the differences between actions are measured far more precisely than their
values: :attr:`ActionValue.se` is the standard error of the *difference* from the best.
The same ``seed`` gives the same figures.

Pure: the game model and the SDK's sampler and rollouts; no I/O.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from referee.game import Action, Match, Observation, RoundResult, Rules
from referee.game.position import Position, match_from_position, position_of
from sdk.sampler import Sampler
from sdk.simulate import Policy, greedy_policy, rollout

#: The reference policy's name: greedy play (take the discard only if it helps, throw the
#: card that leaves the best three) with the ``threshold`` sample bot's knock table by seats
#: in (its pot tables under ``scoring="pot"``), never calling. Fixed, so that values from
#: different days and bots compare.
REFERENCE_POLICY = "threshold-greedy"
#: Samples per decision by default: with common random numbers, enough to tell a blunder
#: from a fair choice in most positions, and a whole match in a few seconds (docs/analysis.md).
SAMPLES = 48

View = Literal["seat", "deal"]

_POLICIES: dict[Rules, Policy] = {}


def reference_policy(rules: Rules) -> Policy:
    """The :data:`REFERENCE_POLICY` for ``rules`` (built once per rules)."""
    p = _POLICIES.get(rules)
    if p is None:
        # The sample bots are built on the SDK: imported late, as sdk.harness does.
        from sample_bots.threshold import knock_table

        p = _POLICIES[rules] = greedy_policy(rules, knock_table(rules))
    return p


def payoff(rules: Rules, result: RoundResult, seat: int) -> float:
    """A seat's result of a round, larger is better: minus the lives it lost, or under the pot
    the chips it won (its share of the pot; the antes were paid at the deal, before)."""
    if rules.scoring == "pot":
        return float(result.chips_won[seat]) if result.chips_won else 0.0
    return -float(result.lives_lost.get(seat, 0))


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from any parts (a match's seed, a round, a turn...): stable across runs
    and Python versions, unlike ``hash``."""
    text = "/".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


@dataclass(frozen=True, slots=True)
class ActionValue:
    """One legal action's value to the seat to move."""

    action: Action
    #: Mean result of the seat (larger is better): minus lives lost, or chips won.
    value: float
    #: The best action's value minus this one's (0 for the best): what choosing it costs.
    loss: float
    #: Standard error of ``loss`` (paired over the same samples; 0 for the best itself).
    se: float

    @property
    def lives(self) -> float:
        """Expected lives lost (playing for lives)."""
        return -self.value


@dataclass(frozen=True, slots=True)
class DecisionValues:
    """Every legal action of one decision, valued; see :func:`evaluate`."""

    seat: int
    view: View
    samples: int
    policy: str
    #: ``"lives"`` or ``"chips"``: the unit of the values.
    unit: str
    #: In the order of the legal actions.
    actions: tuple[ActionValue, ...]

    @property
    def best(self) -> ActionValue:
        """The action with the highest value (the first among equals)."""
        return max(self.actions, key=lambda a: a.value)

    def of(self, action: Action) -> ActionValue:
        """The value of ``action`` (a :class:`KeyError` if it was not legal)."""
        for a in self.actions:
            if a.action == action:
                return a
        raise KeyError(f"{action} is not a legal action of this decision")


def _shuffled_stock(pos: Position, rng: random.Random) -> Position:
    """``pos`` with its stock in a random order (the cards stay; the order is chance's)."""
    if len(pos.stock) < 2:
        return pos
    stock = sorted(pos.stock)
    rng.shuffle(stock)
    return replace(pos, stock=tuple(stock))


def evaluate(
    source: Observation | Position,
    *,
    samples: int = SAMPLES,
    seed: int = 0,
    actions: Sequence[Action] | None = None,
) -> DecisionValues:
    """Value every legal action (or ``actions``) of the seat to move.

    ``source`` is an :class:`Observation` of the seat to move (the seat's view: the hidden
    cards are guessed, as that seat could) or the true :class:`Position` (the deal's view).
    Deterministic for ``seed``.
    """
    if samples < 2:
        raise ValueError(f"samples must be 2 or more (a standard error needs two), got {samples}")
    rng = random.Random(seed)
    draw: Callable[[random.Random], Position]
    if isinstance(source, Observation):
        obs = source
        if not obs.to_move:
            raise ValueError(f"seat {obs.seat} is not to move: there is no decision to value")
        rules, seat = obs.rules, obs.seat
        legal: Sequence[Action] = obs.legal_actions
        sampler = Sampler(obs)
        draw = sampler.sample
        view: View = "seat"
    else:
        pos = source
        rules, seat = pos.rules, pos.current
        legal = match_from_position(pos, check=False).legal_actions()

        def draw(r: random.Random) -> Position:
            return _shuffled_stock(pos, r)

        view = "deal"
    cands = tuple(actions) if actions is not None else tuple(legal)
    if not cands:
        raise ValueError("no actions to value")
    policy = reference_policy(rules)
    scores: list[list[float]] = [[] for _ in cands]
    for _ in range(samples):
        p = draw(rng)
        restock_seed = rng.getrandbits(63)
        for i, a in enumerate(cands):
            result = rollout(p, policy, first=a, rng=random.Random(restock_seed))
            scores[i].append(payoff(rules, result, seat))
    return _summarise(seat, view, samples, rules, cands, scores)


def _summarise(
    seat: int, view: View, samples: int, rules: Rules, cands: Sequence[Action], scores: list[list[float]]
) -> DecisionValues:
    k = samples
    means = [sum(s) / k for s in scores]
    b = max(range(len(cands)), key=lambda i: (means[i], -i))
    best = scores[b]
    out = []
    for i, a in enumerate(cands):
        if i == b:
            out.append(ActionValue(a, means[i], 0.0, 0.0))
            continue
        diffs = [x - y for x, y in zip(best, scores[i], strict=True)]
        d = sum(diffs) / k
        var = sum((x - d) ** 2 for x in diffs) / (k - 1)
        out.append(ActionValue(a, means[i], d, (var / k) ** 0.5))
    unit = "chips" if rules.scoring == "pot" else "lives"
    return DecisionValues(seat, view, samples, REFERENCE_POLICY, unit, tuple(out))


def evaluate_match(m: Match, view: View, *, samples: int = SAMPLES, seed: int = 0) -> DecisionValues:
    """:func:`evaluate` at the decision ``m`` waits on, in ``view``: from the observation of
    the seat to move (``"seat"``) or from the true position (``"deal"``)."""
    if view == "seat":
        return evaluate(m.observation(m.current), samples=samples, seed=seed)
    return evaluate(position_of(m), samples=samples, seed=seed)
