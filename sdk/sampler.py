"""Determinization: guess the cards a seat cannot see, consistently with everything it saw.

A search bot cannot look at the other hands or the stock, but it can *guess* them many times
and play each guess out (:mod:`sdk.simulate`). Each guess must be consistent with the seat's
information (docs/rules.md, "What a bot sees"): its own hand, the discard pile, every card an
opponent took from the discard pile and still holds, what it knows of forfeited hands, and
the sizes of hands and stock. :class:`Sampler` deals exactly that, as a
:class:`~referee.game.position.Position` the game model can play on::

    sampler = Sampler(view)
    rng = random.Random(7)
    for _ in range(100):
        pos = sampler.sample(rng)      # one consistent guess, reproducible from the rng
        ...

Under the variants (docs/rules.md, "Variants") a guess also deals the face-down dummy's three
cards from the hidden ones (and a taken dummy is simply the taker's hand, unknown to this
seat); the widow and a face-up old hand are public and stay where they are; in the widow
game there is no stock, and the deck's undealt rest (out of play, never seen) is dealt
the hidden cards no hand holds. Chips and pot come from the observation.

**Reading the opponents** (``infer=True``, the default). Dealt uniformly, the guessed hands
are far too weak: after three turns a greedy player holds about 20, a random hand about 13,
and a bot that believes the random hands knocks into a double loss. So the sampler also
reads each opponent's turns this round as a greedy player would have played them (take the
discard only if it helps, draw from the stock otherwise, throw the card that leaves the best
three and, among equals, the cheapest; knock at ``knock_at``). It replays a guessed hand
backwards through those turns and redraws a guess that contradicts them, up to ``tries``
times, then accepts what it has: against opponents who play otherwise the guesses grow
blunter, never impossible. A thrown king then means every card kept counts, and a passed
nine of spades means no spade hand that the nine would have helped.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from referee.game import Card, DummyState, EventKind, Observation, Rules, value_table
from referee.game.knowledge import Knowledge, knowledge
from referee.game.position import Position, had_turn_from_history, owes_from_history
from referee.game.values import mask
from sdk.simulate import discard_choice
from sdk.view import View

#: Guesses tried per opponent before one that contradicts its turns is accepted.
TRIES = 16
_NO_LIMIT = float("inf")


class SamplerError(ValueError):
    """The observation cannot be dealt: it is not this seat's decision, or it is inconsistent."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One completed draw-and-discard turn of an opponent, as the public events show it."""

    #: The card taken from the discard pile, or None for a stock draw.
    taken: Card | None
    #: For a stock draw, the top of the discard pile the opponent passed over (if known).
    passed: Card | None
    discarded: Card
    #: Cards known to be in its hand before this turn (taken from the pile earlier).
    held: frozenset[Card]
    #: Whether the rules let it knock at the start of this turn (so not knocking says something).
    could_knock: bool
    #: Seats still in during the turn (knock thresholds depend on it).
    seats_in: int


class Sampler:
    """Deals the cards ``view``'s seat cannot locate to the other hands and the stock.

    Build one per decision (reading the history is done once) and call :meth:`sample` for
    each guess. Only the seat to move can be sampled for: its view is complete (its own
    four cards in the discard phase, the legal actions).

    ``infer``: read opponents' turns (see the module docs). ``knock_at``: the hand value at
    which opponents are assumed to knock, by number of seats in (None: read nothing into
    their not knocking). ``tries``: guesses per opponent before accepting a misfit.
    """

    def __init__(
        self,
        view: View | Observation,
        *,
        infer: bool = True,
        knock_at: Mapping[int, float] | None = None,
        tries: int = TRIES,
    ) -> None:
        obs = view.observation if isinstance(view, View) else view
        k = view.knowledge if isinstance(view, View) else knowledge(obs)
        if not obs.to_move:
            raise SamplerError(f"seat {obs.seat} is not to move: sample at its own decisions")
        self.observation = obs
        self.knowledge: Knowledge = k
        self.infer = infer
        self.knock_at = dict(knock_at) if knock_at is not None else None
        # Not knocking says nothing below min_knock, where knocking is not allowed.
        self._knock_limit: dict[int, float] = {
            n: max(v, obs.rules.min_knock) for n, v in (knock_at or {}).items()
        }
        self.tries = tries
        me = obs.seat
        n = obs.players
        alive = obs.in_game
        self._rules: Rules = obs.rules
        self._table = value_table(obs.rules)
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
        #: The face-down dummy's three cards are among the hidden ones (``dummy=true``, not
        #: taken yet); once taken they are the taker's hand, guessed like any other hand.
        self._dummy_size = 3 if obs.dummy_state is DummyState.FACE_DOWN else 0
        need = sum(self.unknown) + self._dead_unknown + obs.stock_size + self._dummy_size
        #: The widow game deals no stock: the deck's undealt rest is out of play, unseen.
        self._unused = len(self.hidden) - need if obs.rules.draw == "widow" else 0
        if need + self._unused != len(self.hidden) or self._unused < 0:
            raise SamplerError(
                f"seat {me} cannot place {len(self.hidden)} hidden cards into {sum(self.unknown)} opponent "
                f"slots, {self._dead_unknown} dead cards, {self._dummy_size} dummy cards and a stock of "
                f"{obs.stock_size}"
            )
        self._had_turn = had_turn_from_history(n, obs.history)
        self._owes = owes_from_history(n, alive, obs.knocker, obs.history)
        self._restocks = sum(1 for ev in obs.history if ev.kind is EventKind.RESTOCK)
        self._opponents = tuple(s for s in range(n) if alive[s] and s != me)
        #: Per opponent still in: its completed turns this round, oldest first (when inferring).
        self.turns: dict[int, tuple[Turn, ...]] = opponent_turns(obs, k.upcard) if infer else {}

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
            turns = self.turns.get(s)
            if turns and u:
                self._redraw(s, turns, pool, at, u, rng)
            hands[s] = self.known[s] + tuple(pool[at : at + u])
            at += u
        dead = self._dead_known + tuple(pool[at : at + self._dead_unknown])
        at += self._dead_unknown
        dummy = tuple(pool[at : at + self._dummy_size])
        at += self._dummy_size
        stock_end = at + obs.stock_size
        return Position(
            rules=self._rules,
            players=obs.players,
            round_no=obs.round_no,
            dealer=obs.dealer,
            tokens=obs.tokens,
            alive=obs.in_game,
            hands=tuple(hands),
            stock=tuple(pool[at:stock_end]),
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
            dummy=dummy,
            face_up=obs.face_up,
            dummy_taker=obs.dummy_taker,
            widow=obs.widow,
            unused=tuple(pool[stock_end:]),
            chips=obs.chips,
            pot=obs.pot,
        )

    def samples(self, n: int, seed: int | str = 0) -> Iterator[Position]:
        """``n`` guesses from ``random.Random(seed)``: the same seed, the same guesses."""
        rng = random.Random(seed)
        for _ in range(n):
            yield self.sample(rng)

    # ------------------------------------------------------------------ inference

    def _redraw(
        self, seat: int, turns: tuple[Turn, ...], pool: list[Card], at: int, u: int, rng: random.Random
    ) -> None:
        """Swap the guess ``pool[at:at+u]`` with later pool cards until it fits ``turns``.

        After ``tries`` misfits it keeps the guess that explained the most recent turns.
        Swapping within the pool keeps every card in exactly one place; later opponents and
        the stock draw from what is left, so the cards a guess gives back return there.
        """
        end = at + u
        rest = len(pool) - end
        known = self.known[seat]
        want = len(turns)
        best: list[Card] = []
        best_depth = -1
        for _ in range(self.tries):
            guess = pool[at:end]
            depth = self.explained((*known, *guess), turns)
            if depth == want:
                return
            if depth > best_depth:
                best, best_depth = guess, depth
            if rest <= 0:
                break
            for i in range(at, end):
                j = end + rng.randrange(rest)
                pool[i], pool[j] = pool[j], pool[i]
        # Put the best guess back in the hand's slots (its cards are somewhere in pool[at:]).
        for i, c in enumerate(best):
            j = pool.index(c, at)
            pool[at + i], pool[j] = pool[j], pool[at + i]

    def fits(self, hand: tuple[Card, ...], turns: tuple[Turn, ...]) -> bool:
        """Whether a greedy player now holding ``hand`` could have played ``turns`` as it did."""
        return self.explained(hand, turns) == len(turns)

    def explained(self, hand: tuple[Card, ...], turns: tuple[Turn, ...]) -> int:
        """How many of the latest ``turns`` a greedy player now holding ``hand`` explains.

        Replays the turns backwards, undoing each: the hand before a turn is the hand after
        it plus the discard, less the card drawn. Which card a stock draw brought is unknown,
        so every possible one is tried (depth first, stopping once all turns are explained).
        """
        return self._explain(hand, turns, len(turns) - 1)

    def _explain(self, h: tuple[Card, ...], turns: tuple[Turn, ...], i: int) -> int:
        if i < 0:
            return 0
        table = self._table
        t = turns[i]
        d = t.discarded
        if d in h:
            return 0  # it threw d and holds it again: only after a restock, not this path
        four = (*h, d)
        # Greedy throws the card that leaves the most and, among equals, the cheapest.
        if discard_choice(table, four, t.taken)[0] != d:
            return 0
        m4 = mask(four)
        limit = self._knock_limit.get(t.seats_in, _NO_LIMIT) if t.could_knock else _NO_LIMIT
        if t.taken is not None:
            x = t.taken
            if x not in h:
                return 0
            before = table[m4 ^ (1 << x)]
            # It took the discard, so that card raised its hand; and it did not knock.
            if table[m4 ^ (1 << d)] <= before or before >= limit:
                return 0
            return 1 + self._explain(tuple(c for c in four if c != x), turns, i - 1)
        p = t.passed
        if p is not None and p in four:
            return 0  # the card passed over was in the pile, not in this hand
        best = 0
        for x in four:
            if x in t.held:
                continue
            m3 = m4 ^ (1 << x)
            before = table[m3]
            if before >= limit:
                continue  # it would have knocked instead
            if p is not None:
                # It drew from the stock, so the discard it passed over did not help.
                tp = 1 << p
                if any(table[(m3 ^ (1 << c)) | tp] > before for c in four if c != x):
                    continue
            depth = 1 + self._explain(tuple(c for c in four if c != x), turns, i - 1)
            if depth > i:
                return depth  # every turn explained
            best = max(best, depth)
        return best


def _dead_hand_cards(obs: Observation) -> int:
    """How many cards the hands forfeited this round took out of play.

    A seat forfeiting between its draw and its discard drops four cards, otherwise three.
    Another seat's forfeit may come between the draw and the forfeit: only the last event
    that is not a forfeit tells whether a turn was half done.
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
        else:
            prev = ev
    return total


def opponent_turns(obs: Observation, upcard: Card | None = None) -> dict[int, tuple[Turn, ...]]:
    """Each opponent's completed draw-and-discard turns this round, oldest first.

    Replays the discard pile's top through the history to know what each stock draw passed
    over (where the top is the round's up-card and the seat cannot name it, ``passed`` is
    None). Only seats still in are listed.
    """
    rules = obs.rules
    pile: list[Card | None] = [upcard]
    turns: dict[int, list[Turn]] = {}
    held: dict[int, set[Card]] = {}
    knocked = False
    turn_no = 0
    first_done: set[int] = set()
    seats_in = sum(obs.in_game) + sum(1 for ev in obs.history if ev.kind is EventKind.FORFEIT)
    draw: tuple[int, Card | None, Card | None, bool] | None = None
    for ev in obs.history:
        kind = ev.kind
        s = ev.seat
        if kind is EventKind.DRAW_STOCK or kind is EventKind.DRAW_DISCARD:
            ban = rules.knock_ban
            could = not knocked and not (
                (ban == "first_turn" and turn_no == 0) or (ban == "first_lap" and s not in first_done)
            )
            if kind is EventKind.DRAW_STOCK:
                draw = (s, None, pile[-1] if pile else None, could)
            else:
                if pile:
                    pile.pop()
                # Under empty_stock=showdown a discard draw may mean the stock was empty.
                draw = (s, ev.card, None, could and rules.empty_stock != "showdown")
        elif kind is EventKind.DISCARD and ev.card is not None:
            h = held.setdefault(s, set())
            if draw is not None and draw[0] == s and s != obs.seat:
                taken = draw[1]
                turns.setdefault(s, []).append(
                    Turn(taken, draw[2], ev.card, frozenset(h), draw[3], seats_in)
                )
                if taken is not None:
                    h.add(taken)
            h.discard(ev.card)
            pile.append(ev.card)
            draw = None
            turn_no += 1
            first_done.add(s)
        elif kind is EventKind.KNOCK:
            knocked = True
            turn_no += 1
            first_done.add(s)
        elif kind is EventKind.SWAP_HAND:
            # A new hand (the dummy): the turns before explain the old one, now face up.
            turns.pop(s, None)
            held[s] = set()
            draw = None
            turn_no += 1
            first_done.add(s)
        elif kind is EventKind.SWAP_WIDOW:
            turn_no += 1
            first_done.add(s)
        elif kind is EventKind.SWAP_UPCARD and ev.card is not None:
            # The dealer's option (no turn): the old up-card joined the dealer's hand, known.
            if pile:
                pile[-1] = ev.card
            if ev.taken_card is not None:
                held.setdefault(s, set()).add(ev.taken_card)
        elif kind is EventKind.RESTOCK:
            pile = pile[-1:]
        elif kind is EventKind.FORFEIT:
            turns.pop(s, None)
            draw = None
        elif kind is EventKind.PASS:
            turn_no += 1
    return {s: tuple(t) for s, t in turns.items() if obs.in_game[s] and s != obs.seat}


def deal(view: View | Observation, rng: random.Random, *, infer: bool = True) -> Position:
    """One consistent guess of the position behind ``view`` (a one-off :class:`Sampler`)."""
    return Sampler(view, infer=infer).sample(rng)
