"""Rollouts: play a position to the end of its round with cheap policies, on the game model.

A rollout turns a guessed :class:`~referee.game.position.Position` (from :mod:`sdk.sampler`)
into a :class:`~referee.game.Match` with :func:`~referee.game.position.match_from_position`
and lets the *game model* play it: turn order, restocks, knocks, blitzes, the showdown and
who loses how many lives are all the referee's own code. The rollout stops when the round's
:class:`~referee.game.RoundResult` appears and returns it::

    rng = random.Random(1)
    pos = Sampler(view).sample(rng)
    result = rollout(pos, greedy_policy(view.rules), first=sdk.KNOCK, rng=rng)
    result.lives_lost.get(view.seat, 0)

A :data:`Policy` here is a plain function of the omniscient match, for speed. A fair policy
reads only what its seat could see: ``m.hands[m.current]``, the discard pile, the phase and
the drawn card, the knocker and the seats still in. :func:`greedy_policy` does exactly that.

:class:`Evaluator` scores several candidate actions on the same guesses (common random
numbers), which is what a Monte Carlo bot does at each decision.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence

from referee.game import (
    CALL,
    DECK,
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    SWAP_HAND,
    SWAP_UPCARDS,
    SWAP_WIDOWS,
    Action,
    Card,
    Match,
    Phase,
    Pile,
    RoundResult,
    Rules,
    value_table,
)
from referee.game.chance import Chance
from referee.game.position import Position, match_from_position
from sdk.view import mean_hand_value

#: Chooses the action of the seat to move, ``m.current``.
Policy = Callable[[Match], Action]
#: Scores a round's result for one seat: larger is better.
Score = Callable[[RoundResult], float]

# best_discard's tie-break: the cheapest card (then the lowest index) goes first.
_DISCARD_ORDER = tuple(c.value * 64 + c for c in DECK)


def discard_choice(table: Mapping[int, float], hand: Sequence[Card], forbidden: Card | None) -> tuple[Card, float]:
    """:func:`referee.game.best_discard` with the value table passed in, for hot loops.

    The same choice, ties included (the cheapest card first, then the lowest index): the
    discard that leaves the highest value, and that value. ``table`` is
    :func:`~referee.game.value_table` of the rules in force.
    """
    full = 0
    for c in hand:
        full |= 1 << c
    key = _DISCARD_ORDER
    bc = hand[0]
    bv = -1.0
    bk = 1 << 30
    for c in hand:
        if c == forbidden:
            continue
        v = table[full ^ (1 << c)]
        if v > bv or (v == bv and key[c] < bk):
            bc, bv, bk = c, v, key[c]
    return bc, bv


#: Knock threshold of :func:`greedy_policy` by default (the ``greedy`` sample bot's).
GREEDY_KNOCK_AT = 22.0


class RolloutChance:
    """Shuffles for rollouts from a :class:`random.Random`: fast, reproducible, not secret.

    A rollout's restocks must be random (the seat cannot know the order), but need none of
    the referee's cryptographic care: nobody can exploit a guess.
    """

    __slots__ = ("_rng",)

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """The deck unshuffled: a rollout stops at the end of its round, where the model
        deals the next one at once, and shuffling a deck nobody plays is a tenth of the
        rollout's time. Pass another chance to play past the round."""
        return list(cards)

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """A shuffled new stock."""
        out = list(cards)
        self._rng.shuffle(out)
        return out


def greedy_policy(
    rules: Rules,
    knock_at: float | Mapping[int, float] = GREEDY_KNOCK_AT,
    call_at: Mapping[int, float] | None = None,
    stuck_margin: float = 4,
) -> Policy:
    """The ``greedy`` sample bot's play, as a fast policy over the match.

    Knock with a hand worth ``knock_at`` or more (a number, or a map from every number of
    seats still in, 2 to 9, to a threshold, like the ``threshold`` bot's); take the top discard only
    if it raises the hand's value; else draw from the stock; discard the card that leaves the
    best three. It makes the same choices as ``sample_bots.greedy.GreedyBot`` given the same
    thresholds (tests/sdk/test_montecarlo.py checks it decision by decision).

    Under the variants (docs/rules.md, "Variants"), as that bot: the dealer's option swaps
    for the up-card when that raises the hand; ``CALL`` with a hand worth ``call_at[seats
    in]`` (None: never call); the dummy is taken by a hand worth less than a random hand on
    average (:func:`sdk.view.mean_hand_value`) that the top discard does not lift to it; in
    the widow game a turn that does not knock makes the widow swap leaving the best value,
    and a hand that no swap raises knocks within ``stuck_margin`` of the threshold.
    Give ``knock_at`` the thresholds meant for the scoring in force (the pot's are higher).
    """
    table = value_table(rules)
    by_size: dict[int, float] = (
        {n: float(knock_at) for n in range(2, 10)} if isinstance(knock_at, int | float) else dict(knock_at)
    )
    best = functools.partial(discard_choice, table)
    special = rules.dealer_option or rules.under_the_gun or rules.dummy or rules.draw == "widow"
    calls = dict(call_at) if call_at is not None and rules.under_the_gun else None
    mean = mean_hand_value(rules)
    key = _DISCARD_ORDER

    def act(m: Match) -> Action:
        s = m.current
        h = m.hands[s]
        phase = m.phase
        if phase is Phase.DISCARD:
            return DISCARDS[best(h, m.drawn if m.drawn_from is Pile.DISCARD else None)[0]]
        a, b, c = h
        ma, mb, mc = 1 << a, 1 << b, 1 << c
        v = table[ma | mb | mc]
        if special:
            if phase is Phase.DEALER_OPTION:
                # Swap the card whose exchange for the up-card leaves the most (the cheapest
                # among equals), if that beats the hand as it is.
                u = 1 << m.pile[-1]
                bc, bv, bk = a, -1.0, 1 << 30
                for x, rest in ((a, mb | mc), (b, ma | mc), (c, ma | mb)):
                    w = table[rest | u]
                    if w > bv or (w == bv and key[x] < bk):
                        bc, bv, bk = x, w, key[x]
                return SWAP_UPCARDS[bc] if bv > v else PASS
            if calls is not None and m.turn == 0 and v >= calls[sum(m.alive)] and CALL in m.legal_actions():
                return CALL
            if m.widow:
                th = by_size[sum(m.alive)]
                # The best widow swap: the most value, then the cheapest card given up, then
                # the dearest widow card taken (View.best_widow_swap's order).
                bh, bw, bv = a, m.widow[0], -1.0
                bkw = 1 << 30
                for x, rest in ((a, mb | mc), (b, ma | mc), (c, ma | mb)):
                    for y in m.widow:
                        w = table[rest | (1 << y)]
                        # One number for (cheapest given, then dearest taken): both keys < 2**10.
                        kw = (key[x] << 10) - key[y]
                        if w > bv or (w == bv and kw < bkw):
                            bh, bw, bv, bkw = x, y, w, kw
                if (v >= th or (bv <= v and v >= th - stuck_margin)) and KNOCK in m.legal_actions():
                    return KNOCK
                return SWAP_WIDOWS[bh * 52 + bw]
        # Legal actions are only listed when a knock is in question: at the start of a turn
        # the discard may be taken whenever the pile has a card, and the stock drawn whenever
        # it has one (Match.legal_actions), so the common case skips building the list.
        if v >= by_size[sum(m.alive)] and KNOCK in m.legal_actions():
            return KNOCK
        pile = m.pile
        if special and m.dummy:
            # The dummy is face down: take it if neither the hand nor the top card's best
            # makes the mean of a random hand.
            with_top = v
            if pile:
                t = 1 << pile[-1]
                with_top = max(table[mb | mc | t], table[ma | mc | t], table[ma | mb | t], v)
            if with_top < mean:
                return SWAP_HAND
            if with_top > v:
                return DRAW_DISCARD
        elif pile:
            # Taking the top card helps if some hand of it and two held cards beats v (the
            # card taken may not go straight back, so the three keepable hands are these).
            t = 1 << pile[-1]
            if table[mb | mc | t] > v or table[ma | mc | t] > v or table[ma | mb | t] > v:
                return DRAW_DISCARD
        if m.stock:
            return DRAW_STOCK
        legal = m.legal_actions()
        return PASS if PASS in legal else legal[0]

    return act


def play_round(m: Match, policies: Policy | Sequence[Policy]) -> RoundResult:
    """Play ``m`` with ``policies`` (one for all seats, or one per seat) to the end of its round.

    Returns the round's result: the one the match appends when the round ends.
    """
    done = len(m.rounds)
    rounds = m.rounds
    push = m.apply_unchecked
    if callable(policies):
        policy = policies
        while len(rounds) == done:
            push(policy(m))
    else:
        while len(rounds) == done:
            push(policies[m.current](m))
    return rounds[done]


def rollout(
    position: Position,
    policies: Policy | Sequence[Policy],
    *,
    first: Action | None = None,
    rng: random.Random | None = None,
    chance: Chance | None = None,
) -> RoundResult:
    """Play ``position`` to the end of its round and return the round's result.

    ``first``, if given, is the seat to move's action (it must be legal); the policies play
    everything after it. Restocks come from ``chance`` (e.g. the real match's, to reproduce
    it), else from ``rng`` through :class:`RolloutChance`, else from ``random.Random(0)``.
    The position is not checked: samplers build consistent ones (see
    :meth:`~referee.game.position.Position.check`).
    """
    if chance is None:
        chance = RolloutChance(rng if rng is not None else random.Random(0))
    m = match_from_position(position, chance=chance, check=False)
    if first is not None:
        m.apply_unchecked(first)
        if m.rounds:
            return m.rounds[0]
    return play_round(m, policies)


class Evaluator:
    """Scores candidate actions by rolling each out on the same guesses.

    Every call to :meth:`add` plays *each* candidate from the same position with the same
    restock shuffles (common random numbers): the difference between two candidates' means
    then measures the candidates, not the luck of the guesses, and few samples suffice.
    The first candidate is the *default*: :meth:`best` leaves it only for a candidate that
    is better by a margin the samples support.
    """

    def __init__(self, actions: Sequence[Action], policies: Policy | Sequence[Policy], score: Score) -> None:
        if not actions:
            raise ValueError("no candidate actions to evaluate")
        self.actions = tuple(actions)
        self.policies = policies
        self.score = score
        #: Per candidate (same order as ``actions``): the sum of its scores.
        self.totals = [0.0] * len(self.actions)
        # Per candidate: the sum of squared differences from the default's score, sample by
        # sample, for the standard error of the paired difference.
        self._diff_sq = [0.0] * len(self.actions)
        #: Guesses played so far (each candidate was played on each).
        self.samples = 0

    def add(self, position: Position, seed: int) -> None:
        """Play every candidate from ``position``; restocks shuffle from ``random.Random(seed)``."""
        base = 0.0
        for i, a in enumerate(self.actions):
            result = rollout(position, self.policies, first=a, rng=random.Random(seed))
            x = self.score(result)
            if i == 0:
                base = x
            self.totals[i] += x
            self._diff_sq[i] += (x - base) ** 2
        self.samples += 1

    def means(self) -> list[float]:
        """Each candidate's mean score so far (0 before any sample)."""
        k = self.samples or 1
        return [t / k for t in self.totals]

    def advantage(self, i: int) -> tuple[float, float]:
        """Candidate ``i``'s mean score minus the default's, and that difference's standard error."""
        k = self.samples
        if k < 2:
            return 0.0, float("inf")
        d = (self.totals[i] - self.totals[0]) / k
        var = max(0.0, (self._diff_sq[i] / k - d * d) * k / (k - 1))
        return d, (var / k) ** 0.5

    def best(self, margin: float = 0.0) -> Action:
        """The candidate with the highest mean score, if it beats the default by ``margin``
        standard errors of the paired difference; otherwise the default (the first).

        Ties go to the earlier candidate.
        """
        best_i = 0
        for i, t in enumerate(self.totals):
            if t > self.totals[best_i]:
                best_i = i
        if best_i and margin > 0:
            d, se = self.advantage(best_i)
            if d <= margin * se:
                return self.actions[0]
        return self.actions[best_i]
