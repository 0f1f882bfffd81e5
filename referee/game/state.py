"""The match as a state machine (docs/rules.md, from "The deal" to "The round limit").

A :class:`Match` is a whole game to the last player standing. It always waits on one seat's
decision (or is over): rounds are dealt, scored and redealt inside :meth:`Match.apply`.
``apply`` checks an action and raises :class:`IllegalActionError` naming the action, the seat
and the reason; :meth:`Match.apply_unchecked` is the fast path for callers that validated.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import NamedTuple

from referee.game.actions import (
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    Action,
    ActionKind,
    EventKind,
    Phase,
    Pile,
    PublicEvent,
)
from referee.game.cards import DECK, Card
from referee.game.chance import Chance, SeededChance
from referee.game.errors import GameError, IllegalActionError
from referee.game.observation import Observation, observe
from referee.game.rules import MAX_PLAYERS, MIN_PLAYERS, Rules
from referee.game.values import is_flush, mask, value_table

_ALL_START_ACTIONS: tuple[Action, ...] = (KNOCK, DRAW_STOCK, DRAW_DISCARD)
_DRAW_ACTIONS: tuple[Action, ...] = (DRAW_STOCK, DRAW_DISCARD)
_EMPTY_STOCK_ACTIONS: tuple[Action, ...] = (DRAW_DISCARD, PASS)
_CARD_VALUE = tuple(c.value for c in DECK)
_event = tuple.__new__  # builds a PublicEvent without NamedTuple's Python-level __new__


class RoundEnd(Enum):
    """How a round ended."""

    NATURAL_31 = "natural_31"
    BLITZ = "blitz"
    KNOCK = "knock"
    EMPTY_STOCK = "empty_stock"
    MAX_TURNS = "max_turns"
    #: Every other seat forfeited mid-round; nobody lost a life.
    ABANDONED = "abandoned"


_SHOWDOWN_ENDS = frozenset((RoundEnd.KNOCK, RoundEnd.EMPTY_STOCK, RoundEnd.MAX_TURNS))


class MatchEnd(Enum):
    """How a match ended."""

    LAST_PLAYER = "last_player"
    MAX_ROUNDS = "max_rounds"


class RoundResult(NamedTuple):
    """Everything decided at the end of one round.

    A named tuple rather than a frozen dataclass: one is built per round, and in
    simulations that is a measurable share of the time (about 1 µs against 3-5 µs).
    """

    round_no: int
    dealer: int
    end: RoundEnd
    knocker: int | None
    #: Seats that showed 31 (dealt, or the blitzing seat).
    thirty_one: tuple[int, ...]
    #: Hands and values of every seat still in when the round ended.
    hands: dict[int, tuple[Card, ...]]
    values: dict[int, float]
    #: True when hands were compared (knock, empty stock, max turns).
    showdown: bool
    #: Lives each seat was to lose (seats losing nothing are absent).
    lives_lost: dict[int, int]
    tokens_after: tuple[int, ...]
    eliminated: tuple[int, ...]
    #: The round would have eliminated everyone still in, so nobody was (docs/rules.md,
    #: "Sudden death").
    sudden_death: bool
    turns: int


class DealRecord(NamedTuple):
    """A round's deal: the whole deck in dealing order, and what it gave each seat."""

    round_no: int
    dealer: int
    deck: tuple[Card, ...]
    #: ``hands[seat]`` is empty for a seat no longer in.
    hands: tuple[tuple[Card, ...], ...]
    upcard: Card


class RestockRecord(NamedTuple):
    """The discard pile, less its top card, turned into a new stock (top first)."""

    round_no: int
    #: 0 for the round's first restock, 1 for the second, ...
    number: int
    stock: tuple[Card, ...]


class ActionRecord(NamedTuple):
    """An action and what it did, with the card drawn even from the stock."""

    round_no: int
    turn: int
    seat: int
    action: Action
    #: The card drawn for draws; the discarded card for discards.
    card: Card | None


class ForfeitRecord(NamedTuple):
    """A seat left the match (the referee's fault policy)."""

    round_no: int
    turn: int
    seat: int
    reason: str


#: What :meth:`Match.take_records` yields, in order.
Record = DealRecord | RestockRecord | ActionRecord | ForfeitRecord | RoundResult


class Match:
    """A match of 31 between ``players`` seats under ``rules``.

    Randomness comes from ``seed`` (HMAC-derived shuffles) or from an explicit ``chance``
    (e.g. recorded deals, to replay a log without the seed). With ``record=False`` the
    match keeps no log records, for fast simulations.
    """

    def __init__(
        self,
        players: int,
        rules: Rules | None = None,
        *,
        seed: int | None = None,
        chance: Chance | None = None,
        record: bool = True,
    ) -> None:
        if isinstance(players, bool) or not isinstance(players, int) or not (
            MIN_PLAYERS <= players <= MAX_PLAYERS
        ):
            raise GameError(f"players must be {MIN_PLAYERS} to {MAX_PLAYERS}, got {players!r}")
        if (seed is None) == (chance is None):
            raise GameError("give exactly one of seed= or chance=")
        self.players = players
        self.rules = rules or Rules()
        self.seed = seed
        self._chance: Chance = chance if chance is not None else SeededChance(seed)  # type: ignore[arg-type]
        self._record = record
        self._records: list[Record] = []
        self._values = value_table(self.rules)
        r = self.rules
        self._showdown_stock = r.empty_stock == "showdown"
        self._min_knock = r.min_knock
        self._max_turns = r.max_turns_per_round
        self._knock_ban = r.knock_ban

        self.tokens = [r.lives] * players
        self.alive = [True] * players
        #: Order in which seats left (larger = later = better placing); None while in.
        self._out_step: list[int | None] = [None] * players
        self._step = 0
        self.rounds: list[RoundResult] = []
        self.over = False
        self.end: MatchEnd | None = None
        self.round_no = 0
        self.dealer = players - 1
        # Round state (set by _start_round).
        self.hands: list[list[Card]] = [[] for _ in range(players)]
        self.stock: list[Card] = []  # top is the last element
        self.pile: list[Card] = []  # top is the last element
        self.dead: list[Card] = []  # hands of seats that forfeited this round
        self.current = 0
        self.phase = Phase.TURN_START
        self.drawn: Card | None = None
        self.drawn_from: Pile | None = None
        self.knocker: int | None = None
        self.turns_left = 0
        self._owes = [False] * players
        self._had_turn = [False] * players
        self.turn = 0
        self._restocks = 0
        #: The round's events in order (omniscient: stock draws carry their card).
        self.history: list[PublicEvent] = []
        self._start_round(first=True)

    # ------------------------------------------------------------------ queries

    @property
    def is_over(self) -> bool:
        """True once the match has ended."""
        return self.over

    @property
    def current_seat(self) -> int | None:
        """The seat whose decision the match waits on, or None when it is over."""
        return None if self.over else self.current

    @property
    def seats_in(self) -> list[int]:
        """Seats still in the match."""
        return [s for s in range(self.players) if self.alive[s]]

    def hand(self, seat: int) -> tuple[Card, ...]:
        """A seat's cards (omniscient; the referee's view)."""
        return tuple(self.hands[seat])

    def value(self, seat: int) -> float:
        """A seat's three-card hand value."""
        h = self.hands[seat]
        if len(h) != 3:
            raise GameError(f"seat {seat} holds {len(h)} cards, not three")
        return self._values[mask(h)]

    def legal_actions(self) -> Sequence[Action]:
        """The actions the seat to move may take (empty when the match is over)."""
        if self.over:
            return ()
        if self.phase is Phase.DISCARD:
            h = self.hands[self.current]
            if self.drawn_from is Pile.DISCARD:
                d = self.drawn
                return [DISCARDS[c] for c in h if c != d]
            return [DISCARDS[c] for c in h]
        if not self.pile:
            # Only after a forfeit took the last discard out of play with a dead hand.
            if not self.stock:
                return (PASS,)
            return (KNOCK, DRAW_STOCK) if self._may_knock(self.current) else (DRAW_STOCK,)
        if not self.stock:
            # Under empty_stock=showdown, or when too few discards are left to restock.
            return _EMPTY_STOCK_ACTIONS
        if self._may_knock(self.current):
            return _ALL_START_ACTIONS
        return _DRAW_ACTIONS

    def _may_knock(self, seat: int) -> bool:
        if self.knocker is not None or not self.stock:
            return False
        ban = self._knock_ban
        if ban == "first_turn" and self.turn == 0:
            return False
        if ban == "first_lap" and not self._had_turn[seat]:
            return False
        if self._min_knock > 0:
            h = self.hands[seat]
            if self._values[mask(h)] < self._min_knock and not (
                self.rules.flush_may_knock and is_flush(h)
            ):
                return False
        return True

    def why_illegal(self, action: Action, seat: int | None = None) -> str | None:
        """Why ``action`` by ``seat`` (default: the seat to move) is illegal, or None if legal."""
        if self.over:
            return "the match is over"
        if seat is not None and seat != self.current:
            return f"it is seat {self.current}'s turn, not seat {seat}'s"
        if not isinstance(action, Action):
            return f"{action!r} is not an action"
        if action in self.legal_actions():
            return None
        kind = action.kind
        s = self.current
        if kind is not ActionKind.DISCARD and action.card is not None:
            return f"{kind.name.lower().replace('_', ' ')} takes no card, got {action.card}"
        if kind is ActionKind.DISCARD and action.card is None:
            return "a discard must name a card"
        if self.phase is Phase.DISCARD:
            if kind is not ActionKind.DISCARD:
                return "after drawing, the player must discard one card"
            if action.card not in self.hands[s]:
                return f"{action.card} is not in the hand ({' '.join(map(str, self.hands[s]))})"
            return f"{action.card} was just taken from the discard pile and may not be discarded this turn"
        if kind is ActionKind.DISCARD:
            return "the player must knock or draw before discarding"
        stock_empty = not self.stock
        if kind is ActionKind.KNOCK:
            if self.knocker is not None:
                return f"seat {self.knocker} has already knocked this round"
            if stock_empty:
                return "no knocking when the stock is empty (empty_stock=showdown)"
            if self.rules.knock_ban == "first_turn" and self.turn == 0:
                return "no knocking on the round's first turn (knock_ban=first_turn)"
            if self.rules.knock_ban == "first_lap" and not self._had_turn[s]:
                return "no knocking on one's own first turn of the round (knock_ban=first_lap)"
            return (
                f"hand value {self.value(s):g} is below min_knock={self._min_knock:g}"
                + (" and is not a flush" if self.rules.flush_may_knock else "")
            )
        if kind is ActionKind.DRAW_STOCK:
            return "the stock is empty"
        if kind is ActionKind.DRAW_DISCARD:
            return "the discard pile is empty"
        if kind is ActionKind.PASS:
            return "passing is only allowed when the stock is empty under empty_stock=showdown"
        return "not allowed now"  # pragma: no cover - every kind is handled above

    # ------------------------------------------------------------------ actions

    def apply(self, action: Action, seat: int | None = None) -> None:
        """Apply ``action`` for ``seat`` (default: the seat to move) after checking it.

        Raises :class:`IllegalActionError` and changes nothing if the action is illegal.
        """
        reason = self.why_illegal(action, seat)
        if reason is not None:
            raise IllegalActionError(action, self.current if seat is None else seat, reason)
        self.apply_unchecked(action)

    def apply_unchecked(self, action: Action) -> None:
        """Apply a legal action without checking it (the referee validates first)."""
        kind = action.kind
        s = self.current
        if kind is ActionKind.DISCARD:
            c = action.card
            assert c is not None
            h = self.hands[s]
            h.remove(c)
            self.pile.append(c)
            self.history.append(_event(PublicEvent, (EventKind.DISCARD, s, c)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c))
            self.drawn = None
            self.drawn_from = None
            self.phase = Phase.TURN_START
            a, b, d = h
            if _CARD_VALUE[a] + _CARD_VALUE[b] + _CARD_VALUE[d] == 31 and (a & 3) == (b & 3) == (d & 3):
                self.turn += 1
                self._finish_round(RoundEnd.BLITZ, thirty_one=(s,))
                return
            # The common case of _end_turn, inlined: this is the simulator's hottest path.
            self.turn += 1
            self._had_turn[s] = True
            if self.knocker is not None:
                self._end_turn_after_knock(s)
            elif self.turn >= self._max_turns:
                self._finish_round(RoundEnd.MAX_TURNS)
            else:
                alive = self.alive
                n = self.players
                t = s + 1
                if t == n:
                    t = 0
                while not alive[t]:
                    t += 1
                    if t == n:
                        t = 0
                self.current = t
                if not self.stock and not self._showdown_stock:
                    self._restock()
        elif kind is ActionKind.DRAW_STOCK:
            c = self.stock.pop()
            self.hands[s].append(c)
            self.drawn = c
            self.drawn_from = Pile.STOCK
            self.phase = Phase.DISCARD
            self.history.append(_event(PublicEvent, (EventKind.DRAW_STOCK, s, c)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c))
        elif kind is ActionKind.DRAW_DISCARD:
            c = self.pile.pop()
            self.hands[s].append(c)
            self.drawn = c
            self.drawn_from = Pile.DISCARD
            self.phase = Phase.DISCARD
            self.history.append(_event(PublicEvent, (EventKind.DRAW_DISCARD, s, c)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c))
        elif kind is ActionKind.KNOCK:
            self.knocker = s
            n = 0
            owes = self._owes
            for t in range(self.players):
                if t != s and self.alive[t]:
                    owes[t] = True
                    n += 1
            self.turns_left = n
            self.history.append(_event(PublicEvent, (EventKind.KNOCK, s, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, None))
            self._end_turn(s)
        else:  # PASS
            self.history.append(_event(PublicEvent, (EventKind.PASS, s, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, None))
            self.turn += 1
            self._finish_round(RoundEnd.EMPTY_STOCK)

    push = apply_unchecked

    def forfeit(self, seat: int, reason: str = "") -> None:
        """Take ``seat`` out of the match at once (the referee's fault policy).

        Its hand is dead and it is placed below every seat still in. The match goes on
        for the others (or ends, if one is left).
        """
        if self.over:
            raise GameError("the match is over")
        if not 0 <= seat < self.players or not self.alive[seat]:
            raise GameError(f"seat {seat} is not in the match")
        self.alive[seat] = False
        self._step += 1
        self._out_step[seat] = self._step
        self.dead.extend(self.hands[seat])
        self.hands[seat] = []
        self.history.append(_event(PublicEvent, (EventKind.FORFEIT, seat, None)))
        if self._record:
            self._records.append(ForfeitRecord(self.round_no, self.turn, seat, reason))
        if self._owes[seat]:
            self._owes[seat] = False
            self.turns_left -= 1
        if sum(self.alive) == 1:
            self._finish_round(RoundEnd.ABANDONED)
            return
        if seat == self.current:
            self.drawn = None
            self.drawn_from = None
            self.phase = Phase.TURN_START
            if self.knocker is not None and self.turns_left == 0:
                self._finish_round(RoundEnd.KNOCK)
            else:
                self._advance()

    # ------------------------------------------------------------------ flow

    def _next_seat(self, seat: int) -> int:
        alive = self.alive
        n = self.players
        t = (seat + 1) % n
        while not alive[t]:
            t = (t + 1) % n
        return t

    def _advance(self) -> None:
        t = self._next_seat(self.current)
        if t == self.knocker:
            t = self._next_seat(t)
        self.current = t
        self._begin_turn()

    def _begin_turn(self) -> None:
        if not self.stock and not self._showdown_stock:
            self._restock()

    def _restock(self) -> None:
        pile = self.pile
        if len(pile) < 2:
            # Nothing to turn over (only possible once forfeits took cards out of play):
            # the turn then offers what empty_stock=showdown offers.
            return
        top = pile.pop()
        order = self._chance.restock(self.round_no, self._restocks, pile)
        self._restocks += 1
        self.stock = order[::-1]
        self.pile = [top]
        self.history.append(_event(PublicEvent, (EventKind.RESTOCK, self.current, None)))
        if self._record:
            self._records.append(RestockRecord(self.round_no, self._restocks - 1, tuple(order)))

    def _end_turn(self, s: int) -> None:
        self.turn += 1
        self._had_turn[s] = True
        self._end_turn_after_knock(s)

    def _end_turn_after_knock(self, s: int) -> None:
        if self._owes[s]:
            self._owes[s] = False
            self.turns_left -= 1
        if self.knocker is not None and self.turns_left == 0:
            self._finish_round(RoundEnd.KNOCK)
        elif self.turn >= self._max_turns:
            self._finish_round(RoundEnd.MAX_TURNS)
        else:
            self._advance()

    def _start_round(self, first: bool = False) -> None:
        n = self.players
        self.round_no += 1
        if not first:
            self.dealer = self._next_seat(self.dealer)
        deck = self._chance.deal(self.round_no, DECK)
        alive = self.alive
        d = self.dealer
        # Dealing starts left of the dealer and goes clockwise among the seats still in.
        order = [t for t in range(d + 1, n) if alive[t]] + [t for t in range(d + 1) if alive[t]]
        k = len(order)
        hands: list[list[Card]] = [[] for _ in range(n)]
        # One card at a time: seat order[j] gets cards j, j+k and j+2k.
        naturals: list[int] = []
        for j, seat in enumerate(order):
            h = hands[seat] = deck[j : 3 * k : k]
            a, b, c = h
            if _CARD_VALUE[a] + _CARD_VALUE[b] + _CARD_VALUE[c] == 31 and (a & 3) == (b & 3) == (c & 3):
                naturals.append(seat)
        i = 3 * k
        self.hands = hands
        upcard = deck[i]
        self.pile = [upcard]
        self.stock = deck[:i:-1]  # top of the stock is the list's end
        self.dead = []
        self.current = order[0]
        self.phase = Phase.TURN_START
        self.drawn = None
        self.drawn_from = None
        self.knocker = None
        self.turns_left = 0
        self._owes = [False] * n
        self._had_turn = [False] * n
        self.turn = 0
        self._restocks = 0
        self.history = []
        if self._record:
            self._records.append(
                DealRecord(self.round_no, self.dealer, tuple(deck), tuple(tuple(h) for h in hands), upcard)
            )
        if naturals:
            self._finish_round(RoundEnd.NATURAL_31, thirty_one=tuple(naturals))

    def _finish_round(self, end: RoundEnd, thirty_one: tuple[int, ...] = ()) -> None:
        r = self.rules
        seats = [s for s in range(self.players) if self.alive[s]]
        table = self._values
        values: dict[int, float] = {}
        for s in seats:
            h = self.hands[s]
            if len(h) == 3:
                values[s] = table[(1 << h[0]) | (1 << h[1]) | (1 << h[2])]
        losses: dict[int, int] = {}
        showdown = end in _SHOWDOWN_ENDS
        if end is RoundEnd.NATURAL_31 or end is RoundEnd.BLITZ:
            loss = r.simultaneous_31_loss if len(thirty_one) > 1 else 1
            losses = {s: loss for s in seats if s not in thirty_one}
        elif showdown:
            low = min(values.values())
            at_low = [s for s in seats if values[s] == low]
            k = self.knocker
            for s in at_low:
                if s != k:
                    losses[s] = 1
            if k is not None and k in at_low:
                if len(at_low) == 1 or r.knocker_tied == "double":
                    loss = r.knocker_alone_loss
                elif r.knocker_tied == "single":
                    loss = 1
                else:
                    loss = 0
                if loss:
                    losses[k] = loss
        tokens = self.tokens
        new_tokens = list(tokens)
        out: list[int] = []
        for s, loss in losses.items():
            t = new_tokens[s]
            for _ in range(loss):
                if t == 0:
                    out.append(s)
                    break
                t -= 1
                if t == 0 and not r.bus:
                    out.append(s)
                    break
            new_tokens[s] = t
        sudden = bool(out) and len(out) == len(seats)
        if sudden:
            out = []
            for s in seats:
                new_tokens[s] = 0
        self.tokens = new_tokens
        if out:
            self._step += 1
            for s in out:
                self.alive[s] = False
                self._out_step[s] = self._step
        result = RoundResult(
            round_no=self.round_no,
            dealer=self.dealer,
            end=end,
            knocker=self.knocker,
            thirty_one=thirty_one,
            hands={s: tuple(self.hands[s]) for s in seats},
            values=values,
            showdown=showdown,
            lives_lost=losses,
            tokens_after=tuple(new_tokens),
            eliminated=tuple(sorted(out)),
            sudden_death=sudden,
            turns=self.turn,
        )
        self.rounds.append(result)
        if self._record:
            self._records.append(result)
        if sum(self.alive) <= 1:
            self.over = True
            self.end = MatchEnd.LAST_PLAYER
        elif self.round_no >= r.max_rounds:
            self.over = True
            self.end = MatchEnd.MAX_ROUNDS
        else:
            self._start_round()

    # ------------------------------------------------------------------ results

    @property
    def placings(self) -> tuple[int, ...]:
        """Each seat's placing (1 = best; shared placings ranked 1, 2, 2, 4).

        While the match runs, seats still in share the best placing.
        """
        keys: list[tuple[float, int]] = []
        for s in range(self.players):
            step = self._out_step[s]
            if step is None:
                # Still in: above everyone out; after max_rounds, ranked by tokens.
                tok = self.tokens[s] if self.end is MatchEnd.MAX_ROUNDS else 0
                keys.append((float("inf"), tok))
            else:
                keys.append((float(step), 0))
        return tuple(1 + sum(1 for o in keys if o > k) for k in keys)

    @property
    def winner(self) -> int | None:
        """The last seat standing, or None (match not over, or stopped at max_rounds)."""
        if self.end is MatchEnd.LAST_PLAYER:
            return next(s for s in range(self.players) if self.alive[s])
        return None

    def take_records(self) -> list[Record]:
        """The records made since the last call (deals, restocks, actions, forfeits, rounds)."""
        out = self._records
        self._records = []
        return out

    def cards_in_play(self) -> list[Card]:
        """Every card in hands, stock, discard pile and dead hands (52 while rules hold)."""
        out: list[Card] = []
        for h in self.hands:
            out.extend(h)
        out.extend(self.stock)
        out.extend(self.pile)
        out.extend(self.dead)
        return out

    def observation(self, seat: int) -> Observation:
        """What ``seat`` may know now: its information set (docs/rules.md, "What a bot sees")."""
        return observe(self, seat)


def replay_actions(
    players: int, rules: Rules, actions: Sequence[Action], *, seed: int | None = None, chance: Chance | None = None
) -> Match:
    """Play ``actions`` in order from a fresh match (checked) and return the match."""
    m = Match(players, rules, seed=seed, chance=chance)
    for a in actions:
        m.apply(a)
    return m

