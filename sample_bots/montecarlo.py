"""``montecarlo``: guess the hidden cards many times, play each guess out, pick the best action.

The step up from ``threshold``: instead of a rule for each decision, it *searches*.

1. Deal the cards it cannot see in a way consistent with everything it saw
   (:class:`sdk.sampler.Sampler`): one guess of the other hands and the stock.
2. For every legal action (knock, draw from the stock, take the discard; or each discard
   after a draw), play the guess out to the end of the round on the game model, everyone
   playing like the ``threshold`` bot from there on (:func:`sdk.simulate.rollout`).
3. Score the round's result: this bot's chance of winning the match afterwards, from a
   simple model of the lives everyone has left (:func:`win_chance`). Losing a last life
   costs far more than losing a first one, and an opponent's lost life is worth something.
4. Repeat with many guesses, the *same* guesses for every action (common random numbers),
   and play the action with the best average, if it beats the threshold bot's own choice
   by more than ``margin`` standard errors of the paired difference; otherwise play the
   threshold bot's choice. Without that margin a few lucky guesses make decisions: in 200
   duplicate matches against three threshold bots it won 29.5% with no margin, 39.5% with
   a margin of one standard error.

Knocking is where it gains most: ``threshold`` knocks on a number; this bot knocks when the
rollouts say the others will not all beat it in their last turn. Guessing the others' hands
well is what makes that work: the sampler reads their turns as greedy play (``infer``;
without it the same 200 matches fell to a fair 25%). ``read_knocks`` would also take an
opponent who did not knock to hold less than the threshold bot's knocking value; it is off,
as it did not help (41.0% without, 39.5% with: noise) and assumes more about opponents.
(These tuning runs used deals 10000-10049; the recorded benchmark uses other deals.)

Under the variants (docs/rules.md, "Variants") it searches every legal action the same way:
the dealer's up-card swaps and ``PASS``, ``CALL``, taking the dummy, each widow swap. The
sampler deals the face-down dummy from the hidden cards and keeps the widow public; the
rollouts play the variants as ``threshold`` does (see ``sample_bots.greedy``). Playing for a
pot the score is the chips the round wins it (:func:`chips_score`): being the highest hand,
not avoiding the lowest.

Time: with ``samples=None`` (the default, and how ``python -m sample_bots.montecarlo`` serves
it) it plays guesses until it has used ``time_fraction`` of the decision's budget, at most
``max_samples``, and never touches the time bank. With a fixed ``samples=N`` it plays
exactly N guesses per decision: deterministic for a given ``seed``, for tests and benchmarks.
Its random numbers come from the seed, the match id, the seat and the decision.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

import sdk
from referee.game import RoundResult, Rules
from sample_bots.greedy import CALL_AT, POT_CALL_AT
from sample_bots.threshold import KNOCK_AT, ThresholdBot, knock_table
from sdk.sampler import TRIES, Sampler
from sdk.simulate import Evaluator, Policy, greedy_policy

#: Share of each decision's budget the bot spends, by default.
TIME_FRACTION = 0.2
#: How many standard errors better than the threshold bot's choice an action must score.
MARGIN = 1.0
#: Most guesses per decision in the time-based mode (keeps a demo quick on a fast machine).
MAX_SAMPLES = 128


@lru_cache(maxsize=65536)
def win_chance(mine: int, others: tuple[int, ...]) -> float:
    """The chance to be the last player standing with ``mine`` lives against ``others``.

    A model, not the game: each round exactly one player still in, each equally likely,
    loses one life. ``others`` must be sorted (it is a cache key). Lives here count losses
    until elimination (tokens plus one on the bus).
    """
    if mine <= 0:
        return 0.0
    if not others:
        return 1.0
    total = win_chance(mine - 1, others)
    for i in range(len(others)):
        total += win_chance(mine, _minus(others, i))
    return total / (len(others) + 1)


def _minus(others: tuple[int, ...], i: int) -> tuple[int, ...]:
    """``others`` with opponent ``i`` one life down (gone at zero), still sorted."""
    o = others[i] - 1
    rest = others[:i] + others[i + 1 :]
    if o <= 0:
        return rest
    return tuple(sorted((*rest, o)))


def lives_left(tokens: int, rules: Rules) -> int:
    """Lives a seat still in can lose before it is out: on the bus, tokens plus one."""
    return tokens + 1 if rules.bus else max(tokens, 1)


def win_chance_score(seat: int, alive: tuple[bool, ...], rules: Rules) -> Callable[[RoundResult], float]:
    """Score a round's result for ``seat`` by :func:`win_chance` after it."""

    def score(r: RoundResult) -> float:
        out = r.eliminated
        if seat in out:
            return 0.0
        tokens = r.tokens_after
        others = sorted(
            lives_left(tokens[s], rules) for s in range(len(alive)) if alive[s] and s != seat and s not in out
        )
        return win_chance(lives_left(tokens[seat], rules), tuple(others))

    return score


def chips_score(seat: int) -> Callable[[RoundResult], float]:
    """Playing for a pot: score a round's result for ``seat`` by the chips it won (its share
    of the pot; the antes are paid whatever it does). Only the highest hand scores."""

    def score(r: RoundResult) -> float:
        won = r.chips_won
        return float(won[seat]) if won else 0.0

    return score


def lives_score(seat: int) -> Callable[[RoundResult], float]:
    """Score a round's result for ``seat`` by the lives it lost (fewer is better)."""

    def score(r: RoundResult) -> float:
        return -float(r.lives_lost.get(seat, 0))

    return score


class MonteCarloBot(ThresholdBot):
    """Determinized Monte Carlo search over the current decision (see the module docs).

    ``samples``: guesses per decision (None: as many as ``time_fraction`` of the budget
    allows, up to ``max_samples``). ``seed``: with the match id, seat and decision, seeds
    the guesses. ``objective``: ``"win"`` scores results by the modelled chance of winning
    the match, ``"lives"`` by the lives lost this round. ``margin``: standard errors by which
    an action must beat the threshold bot's choice. ``infer``, ``read_knocks``, ``tries``:
    how opponents' hands are guessed (see :class:`sdk.sampler.Sampler`).
    """

    name = "montecarlo"
    version = "1.0"

    def __init__(
        self,
        samples: int | None = None,
        *,
        seed: int = 0,
        time_fraction: float = TIME_FRACTION,
        max_samples: int = MAX_SAMPLES,
        objective: Literal["win", "lives"] = "win",
        infer: bool = True,
        read_knocks: bool = False,
        margin: float = MARGIN,
        tries: int = TRIES,
    ) -> None:
        if samples is not None and samples < 1:
            raise ValueError(f"samples must be at least 1 (or None for time-based), got {samples}")
        if not 0 < time_fraction <= 1:
            raise ValueError(f"time_fraction must be in (0, 1], got {time_fraction}")
        if objective not in ("win", "lives"):
            raise ValueError(f"objective must be 'win' or 'lives', got {objective!r}")
        self.samples = samples
        self.seed = seed
        self.time_fraction = time_fraction
        self.max_samples = max_samples
        self.objective = objective
        self.infer = infer
        self.read_knocks = read_knocks
        self.margin = margin
        self.tries = tries
        self.match_id = ""
        self._policies: dict[Rules, Policy] = {}
        #: Decisions made and guesses played (each guess plays every candidate once).
        self.decisions = 0
        self.guesses = 0

    def on_match_start(self, info: sdk.MatchInfo) -> None:
        # The match id seeds the guesses, so that a match replays exactly.
        self.match_id = info.match_id

    def act(self, view: sdk.View) -> sdk.Action:
        legal = view.legal_actions
        if len(legal) == 1:
            return legal[0]
        fallback = super().act(view)  # threshold's choice: the answer when time is short
        # The fallback goes first, so that it wins ties (such as "nothing is lost either way").
        candidates = [fallback, *(a for a in legal if a != fallback)]
        rules = view.rules
        pot = rules.scoring == "pot"
        policy = self._policies.get(rules)
        if policy is None:
            # Everyone plays on as the threshold bot would, with the thresholds of the scoring.
            policy = self._policies[rules] = greedy_policy(rules, knock_table(rules), POT_CALL_AT if pot else CALL_AT)
        if pot:
            score = chips_score(view.seat)
        elif self.objective == "win":
            score = win_chance_score(view.seat, view.in_game, rules)
        else:
            score = lives_score(view.seat)
        evaluator = Evaluator(candidates, policy, score)
        sampler = Sampler(view, infer=self.infer, knock_at=KNOCK_AT if self.read_knocks else None, tries=self.tries)
        rng = random.Random(
            f"{self.seed}/{self.match_id}/{view.seat}/{view.round_no}/{view.turn}/{int(view.phase)}"
        )
        self.decisions += 1
        if self.samples is not None:
            for _ in range(self.samples):
                evaluator.add(sampler.sample(rng), rng.getrandbits(32))
        else:
            # Stop before a guess would cross the line: the average guess so far predicts the next.
            stop = view.received_at + self.time_fraction * view.budget_ms / 1000
            start = time.monotonic()
            while evaluator.samples < self.max_samples:
                now = time.monotonic()
                if (evaluator.samples and now + (now - start) / evaluator.samples > stop) or now >= stop:
                    break
                evaluator.add(sampler.sample(rng), rng.getrandbits(32))
            if not evaluator.samples:
                return fallback
        self.guesses += evaluator.samples
        return evaluator.best(self.margin)


if __name__ == "__main__":
    sdk.run(MonteCarloBot)
