"""Determinization: guess the cards a seat cannot see, consistently with everything it saw.

A search bot cannot look at the other hands or the stock, but it can *guess* them many times
and play each guess out (:mod:`sdk.simulate`). Each guess must be consistent with the seat's
information (RULES.md §9): its own hand, the discard pile, every card an opponent took from
the discard pile and still holds, the cards of forfeited hands it saw, and the sizes of hands
and stock. :class:`Sampler` deals exactly that, as a
:class:`~referee.game.position.Position` the game model can play on::

    sampler = Sampler(view)
    rng = random.Random(7)
    for _ in range(100):
        pos = sampler.sample(rng)      # one consistent guess, reproducible from the rng
        ...

With ``infer=True`` the sampler also reads opponents' last turns as a greedy player would
have played them (take the discard only if it helps, throw the card that leaves the best
three) and redraws a guessed hand that contradicts them a few times before accepting it:
an opponent who just threw the K of hearts rarely holds two other good hearts, and one who
passed on the 9 of spades rarely collects spades. See :attr:`Sampler.infer`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import combinations
from dataclasses import dataclass

from referee.game import Card, EventKind, Observation, Rules, best_discard, value_table
from referee.game.knowledge import Knowledge, knowledge
from referee.game.position import Position, had_turn_from_history, owes_from_history
from referee.game.values import mask
from sdk.view import View

#: Guesses tried per opponent before an inconsistent one is accepted (``infer=True``).
INFER_TRIES = 12


class SamplerError(ValueError):
    """The observation cannot be dealt: it is not this seat's decision, or it is inconsistent."""


@dataclass(frozen=True, slots=True)
class LastTurn:
    """What an opponent did on its last completed turn of the round, as public events show it."""

    seat: int
    #: The card taken from the discard pile, or None for a stock draw.
    taken: Card | None
    #: The top of the discard pile the opponent passed over by drawing from the stock.
    passed: Card | None
    discarded: Card


class Sampler:
    """Deals the cards ``view``'s seat cannot locate to the other hands and the stock.

    Build one per decision (the work of reading the history is done once) and call
    :meth:`sample` for each guess. Only the seat to move can be sampled for: its view is
    complete (own four cards in the discard phase, the legal actions).
    """

    def __init__(self, view: View | Observation, *, infer: bool = False, looks: float = 0.0) -> None:
        obs = view.observation if isinstance(view, View) else view
        k = view.knowledge if isinstance(view, View) else knowledge(obs)
        if not obs.to_move:
            raise SamplerError(f"seat {obs.seat} is not to move: sample at its own decisions")
        self.observation = obs
        self.knowledge: Knowledge = k
        #: Whether guesses are checked against opponents' last turns (see the module docs).
        self.infer = infer
        me = obs.seat
        n = obs.players
        alive = obs.in_game
        self._rules: Rules = obs.rules
        self._me = me
        #: Per seat: the cards known to be in its hand (this seat: the whole hand).
        self.known: tuple[tuple[Card, ...], ...] = tuple(tuple(sorted(k.known[s])) for s in range(n))
        #: Per seat: how many of its cards are unknown (0 for this seat and seats out).
        self.unknown: tuple[int, ...] = tuple(
            3 - len(k.known[s]) if alive[s] and s != me else 0 for s in range(n)
        )
        if any(u < 0 for u in self.unknown):
            raise SamplerError(f"an opponent is known to hold more than three cards: {self.known}")
        # Cards of hands forfeited this round: the known ones are placed, the rest are hidden.
        self._dead_known = tuple(sorted(k.dead))
        self._dead_unknown = _dead_hand_cards(obs) - len(self._dead_known)
        #: Cards whose place this seat does not know, in a fixed order (for reproducibility).
        self.hidden: tuple[Card, ...] = tuple(sorted(k.hidden))
        need = sum(self.unknown) + self._dead_unknown + obs.stock_size
        if need != len(self.hidden):
            raise SamplerError(
                f"seat {me} cannot place {len(self.hidden)} hidden cards into {sum(self.unknown)} opponent "
                f"slots, {self._dead_unknown} dead cards and a stock of {obs.stock_size}"
            )
        self._had_turn = had_turn_from_history(n, obs.history)
        self._owes = owes_from_history(n, alive, obs.knocker, obs.history)
        self._restocks = sum(1 for ev in obs.history if ev.kind is EventKind.RESTOCK)
        self._opponents = tuple(s for s in range(n) if alive[s] and s != me)
        self.last_turns: dict[int, LastTurn] = _last_turns(obs, k.upcard) if infer else {}
        #: Per opponent: how many extra cards its guessed hand is the best of.
        self.looks: dict[int, int] = {}
        if looks:
            for s in self._opponents:
                draws = sum(1 for ev in obs.history if ev.seat == s and ev.kind is EventKind.DRAW_STOCK)
                self.looks[s] = int(looks * draws + 0.5)
        self._table = value_table(obs.rules)

    def sample(self, rng: random.Random) -> Position:
        """One consistent guess of the whole position, drawn with ``rng``."""
        obs = self.observation
        pool = list(self.hidden)
        rng.shuffle(pool)
        hands: list[tuple[Card, ...]] = [()] * obs.players
        hands[self._me] = obs.hand
        at = 0
        for s in self._opponents:
            u = self.unknown[s]
            looks = self.looks.get(s, 0)
            if looks and u:
                guess = self._best_of(s, pool, at, u, looks, rng)
            else:
                guess = pool[at : at + u]
                last = self.last_turns.get(s)
                if last is not None and u:
                    guess = self._redraw(s, last, guess, pool, at, rng)
            hands[s] = self.known[s] + tuple(guess)
            at += u
        dead = self._dead_known + tuple(pool[at : at + self._dead_unknown])
        at += self._dead_unknown
        return Position(
            rules=self._rules,
            players=obs.players,
            round_no=obs.round_no,
            dealer=obs.dealer,
            tokens=obs.tokens,
            alive=obs.in_game,
            hands=tuple(hands),
            stock=tuple(pool[at:]),
            pile=obs.discard_pile,
            dead=dead,
            current=self._me,
            phase=obs.phase,
            drawn=obs.drawn_card,
            drawn_from=obs.drawn_from,
            knocker=obs.knocker,
            owes=self._owes,
            had_turn=self._had_turn,
            turn=obs.turn,
            restocks=self._restocks,
            history=obs.history,
        )

    def samples(self, n: int, seed: int | str = 0) -> Iterator[Position]:
        """``n`` guesses from ``random.Random(seed)``: the same seed, the same guesses."""
        rng = random.Random(seed)
        for _ in range(n):
            yield self.sample(rng)

    # ------------------------------------------------------------------ inference

    def _best_of(self, seat: int, pool: list[Card], at: int, u: int, looks: int, rng: random.Random) -> list[Card]:
        """Fill ``seat``'s ``u`` unknown slots with the best of ``u + looks`` pool cards.

        The chosen cards move to ``pool[at:at+u]``; the cards passed over are swapped with
        random later pool cards, so that the next hands and the stock are not left the
        weak ones.
        """
        end = min(len(pool), at + u + looks)
        seg = pool[at:end]
        known = self.known[seat]
        km = mask(known)
        table = self._table
        last = self.last_turns.get(seat) if self.infer else None
        best: tuple[Card, ...] | None = None
        best_v = -1.0
        for combo in combinations(seg, u):
            v = table[km | mask(combo)]
            if v > best_v and (last is None or self._fits((*known, *combo), last)):
                best, best_v = combo, v
        if best is None:
            best = tuple(seg[:u])
        chosen = set(best)
        rest = [c for c in seg if c not in chosen]
        pool[at:end] = [*best, *rest]
        for j in range(at + u, end):
            k = rng.randrange(j, len(pool))
            pool[j], pool[k] = pool[k], pool[j]
        return list(best)

    def _redraw(
        self, seat: int, last: LastTurn, guess: list[Card], pool: list[Card], at: int, rng: random.Random
    ) -> list[Card]:
        """Swap cards of ``guess`` with later pool cards until it fits ``last``, or give up.

        Swapping within ``pool`` (rather than drawing afresh) keeps every card in one place.
        Guessed hands are accepted after :data:`INFER_TRIES` misfits so that an opponent who
        does not play greedily is still guessed at, only less sharply.
        """
        u = len(guess)
        rest = len(pool) - at - u
        known = self.known[seat]
        for _ in range(INFER_TRIES):
            if self._fits((*known, *pool[at : at + u]), last) or rest <= 0:
                break
            for i in range(at, at + u):
                j = at + u + rng.randrange(rest)
                pool[i], pool[j] = pool[j], pool[i]
        return pool[at : at + u]

    def _fits(self, hand: tuple[Card, ...], last: LastTurn) -> bool:
        """Whether a greedy player holding ``hand`` now would have played ``last`` as it did."""
        table = self._table
        rules = self._rules
        d = last.discarded
        four = mask(hand) | (1 << d)
        kept = table[four ^ (1 << d)]
        # The discard: nothing else it could throw would have left more.
        for c in hand:
            if c != last.taken and table[four ^ (1 << c)] > kept:
                return False
        if last.taken is not None:
            # It took the discard, so that card raised the hand it held before.
            before = four ^ (1 << last.taken)
            return kept > table[before]
        if last.passed is None:
            return True
        # It drew from the stock, so the discard it passed over did not help. Which of the four
        # cards came from the stock is unknown, so any of them may have (a loose but safe test).
        p = last.passed
        for x in (*hand, d):
            before = four ^ (1 << x)
            three = tuple(c for c in (*hand, d) if c != x)
            if best_discard((*three, p), rules, forbidden=p)[1] <= table[before]:
                return True
        return False


def _dead_hand_cards(obs: Observation) -> int:
    """How many cards the hands forfeited this round took out of play.

    A seat forfeiting between its draw and its discard drops four cards, otherwise three.
    """
    total = 0
    prev = None
    for ev in obs.history:
        if ev.kind is EventKind.FORFEIT:
            mid_turn = prev is not None and prev.seat == ev.seat and prev.kind in (
                EventKind.DRAW_STOCK,
                EventKind.DRAW_DISCARD,
            )
            total += 4 if mid_turn else 3
        prev = ev
    return total


def _last_turns(obs: Observation, upcard: Card | None) -> dict[int, LastTurn]:
    """Each opponent's last completed draw-and-discard this round, with the pile top it saw.

    Replays the discard pile's top through the history. Where the top is the round's up-card
    and the seat cannot name it, the pass is not read.
    """
    pile: list[Card | None] = [upcard]
    out: dict[int, LastTurn] = {}
    draw: tuple[int, Card | None, Card | None] | None = None
    for ev in obs.history:
        kind = ev.kind
        if kind is EventKind.DRAW_STOCK:
            draw = (ev.seat, None, pile[-1] if pile else None)
        elif kind is EventKind.DRAW_DISCARD:
            if pile:
                pile.pop()
            draw = (ev.seat, ev.card, None)
        elif kind is EventKind.DISCARD and ev.card is not None:
            if draw is not None and draw[0] == ev.seat and ev.seat != obs.seat:
                out[ev.seat] = LastTurn(ev.seat, draw[1], draw[2], ev.card)
            pile.append(ev.card)
            draw = None
        elif kind is EventKind.RESTOCK:
            pile = pile[-1:]
        elif kind is EventKind.FORFEIT:
            out.pop(ev.seat, None)
            draw = None
    # Only seats still in (and holding three cards) are read.
    return {s: t for s, t in out.items() if obs.in_game[s]}


def deal(view: View | Observation, rng: random.Random, *, infer: bool = False) -> Position:
    """One consistent guess of the position behind ``view`` (a one-off :class:`Sampler`)."""
    return Sampler(view, infer=infer).sample(rng)


