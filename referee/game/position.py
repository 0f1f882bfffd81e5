"""Positions: a round frozen mid-play, and a :class:`~referee.game.state.Match` rebuilt from one.

A :class:`Match` always starts from a deal. Search bots need to start one from *any*
position of a round: a determinization (a guess at the hidden cards consistent with what a
seat saw), or the true state for a test. :func:`position_of` takes the omniscient snapshot of
a match; :func:`match_from_position` builds a match that is in exactly that state, so that
the game model itself plays the rest of the round (its turn order, restocks, knock rules,
showdown and life losses: there is no second implementation of the rules here).

The match built has ``rounds == []``: the first :class:`~referee.game.state.RoundResult` it
appends is the result of the position's round, so a rollout ends when ``len(m.rounds)``
becomes 1.

Pure: standard library only, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from referee.game.actions import EventKind, Phase, Pile, PublicEvent
from referee.game.cards import DECK, Card
from referee.game.chance import Chance, SeededChance
from referee.game.errors import ChanceError, GameError
from referee.game.rules import MAX_PLAYERS, MIN_PLAYERS, Rules
from referee.game.state import Match
from referee.game.values import value_table


@dataclass(frozen=True, slots=True)
class Position:
    """Everything the game model needs to play on from one moment of a round.

    Lists run in the :class:`Match`'s own conventions: ``stock`` and ``pile`` have their top
    card *last*. ``hands[s]`` is empty for a seat that is out; the seat to move holds four
    cards in the ``DISCARD`` phase, every other seat still in holds three.
    """

    rules: Rules
    players: int
    round_no: int
    dealer: int
    tokens: tuple[int, ...]
    alive: tuple[bool, ...]
    hands: tuple[tuple[Card, ...], ...]
    #: Top card last.
    stock: tuple[Card, ...]
    #: Top card last.
    pile: tuple[Card, ...]
    #: Hands of seats that forfeited this round: out of play until the next deal.
    dead: tuple[Card, ...]
    #: The seat to move.
    current: int
    phase: Phase
    #: In the ``DISCARD`` phase, the card just drawn and where from.
    drawn: Card | None
    drawn_from: Pile | None
    knocker: int | None
    #: Per seat: still owes its one turn after the knock (all False without a knock).
    owes: tuple[bool, ...]
    #: Per seat: has finished a turn this round (for ``knock_ban="first_lap"``).
    had_turn: tuple[bool, ...]
    #: Turns completed in this round.
    turn: int
    #: Restocks already made this round (numbers the next restock's shuffle).
    restocks: int = 0
    #: The round's events so far (only kept for observations; the rules never read them).
    history: tuple[PublicEvent, ...] = ()
    #: Per seat: the order in which seats left the match (larger = later), None while in.
    #: Only placings read it; by default every seat out counts as having left together.
    out_order: tuple[int | None, ...] | None = None

    @property
    def turns_left(self) -> int:
        """Turns left in the round after a knock (0 without a knock)."""
        return sum(self.owes) if self.knocker is not None else 0

    def check(self) -> None:
        """Raise :class:`GameError` naming the first inconsistency, if any.

        Checks sizes and that the 52 cards are each in exactly one place; not that the
        position is reachable by play (a search may well explore one that is not).
        """
        n = self.players
        if not MIN_PLAYERS <= n <= MAX_PLAYERS:
            raise GameError(f"players must be {MIN_PLAYERS} to {MAX_PLAYERS}, got {n}")
        for name in ("tokens", "alive", "hands", "owes", "had_turn"):
            if len(getattr(self, name)) != n:
                raise GameError(f"position {name} has {len(getattr(self, name))} entries for {n} players")
        if self.out_order is not None and len(self.out_order) != n:
            raise GameError(f"position out_order has {len(self.out_order)} entries for {n} players")
        if sum(self.alive) < 2:
            raise GameError("a round needs two seats still in")
        if not 0 <= self.current < n or not self.alive[self.current]:
            raise GameError(f"seat {self.current} is to move but is not in the match")
        if self.knocker is not None and (self.knocker == self.current or not 0 <= self.knocker < n):
            raise GameError(f"seat {self.knocker} cannot be the knocker with seat {self.current} to move")
        for s in range(n):
            size = len(self.hands[s])
            want = 0 if not self.alive[s] else 4 if s == self.current and self.phase is Phase.DISCARD else 3
            if size != want:
                raise GameError(f"seat {s} holds {size} cards, expected {want}")
            if self.owes[s] and (self.knocker is None or not self.alive[s] or s == self.knocker):
                raise GameError(f"seat {s} cannot owe a turn after a knock here")
        if self.phase is Phase.DISCARD:
            if self.drawn is None or self.drawn_from is None or self.drawn not in self.hands[self.current]:
                raise GameError("in the discard phase the seat to move must hold the card it drew")
        elif self.drawn is not None or self.drawn_from is not None:
            raise GameError("a drawn card is only set in the discard phase")
        everything: list[Card] = [c for h in self.hands for c in h]
        everything += self.stock
        everything += self.pile
        everything += self.dead
        if len(everything) != 52 or set(everything) != set(DECK):
            counts: dict[Card, int] = {}
            for c in everything:
                counts[c] = counts.get(c, 0) + 1
            twice = sorted(c for c, k in counts.items() if k > 1)
            missing = sorted(set(DECK) - set(everything))
            raise GameError(
                f"position holds {len(everything)} cards; twice: {' '.join(map(str, twice)) or '-'}; "
                f"missing: {' '.join(map(str, missing)) or '-'}"
            )


class NoChance:
    """A :class:`~referee.game.chance.Chance` for positions given no source of randomness.

    Raises :class:`ChanceError` the moment the match would need a shuffle (a restock or the
    next round's deal), so nothing random happens by accident.
    """

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """Refuse: no deal was provided."""
        raise ChanceError(f"round {round_no} needs a deal, and this position has no chance (pass seed= or chance=)")

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """Refuse: no restock order was provided."""
        raise ChanceError(
            f"restock {index} of round {round_no} needs a shuffle, and this position has no chance "
            "(pass seed= or chance=)"
        )


def position_of(m: Match) -> Position:
    """The omniscient snapshot of match ``m`` (hands, stock order and all)."""
    if m.over:
        raise GameError("the match is over: there is no position to take")
    # Private fields are read here on purpose: this module is the game model's own
    # constructor of mid-round states, the one place outside Match that knows them.
    return Position(
        rules=m.rules,
        players=m.players,
        round_no=m.round_no,
        dealer=m.dealer,
        tokens=tuple(m.tokens),
        alive=tuple(m.alive),
        hands=tuple(tuple(h) for h in m.hands),
        stock=tuple(m.stock),
        pile=tuple(m.pile),
        dead=tuple(m.dead),
        current=m.current,
        phase=m.phase,
        drawn=m.drawn,
        drawn_from=m.drawn_from,
        knocker=m.knocker,
        owes=tuple(m._owes),
        had_turn=tuple(m._had_turn),
        turn=m.turn,
        restocks=m._restocks,
        history=tuple(m.history),
        out_order=tuple(m._out_step),
    )


def match_from_position(
    pos: Position,
    *,
    seed: int | None = None,
    chance: Chance | None = None,
    record: bool = False,
    check: bool = True,
) -> Match:
    """A :class:`Match` in exactly the state ``pos`` describes, ready for the seat to move.

    Randomness after this point (restocks, later deals) comes from ``chance``, or from
    ``seed`` (as in a real match), or from nowhere: then the match raises
    :class:`ChanceError` when it needs a shuffle. ``record=False`` (the default) keeps no log
    records, for fast simulation. ``check`` runs :meth:`Position.check` first; a search
    that built the position itself may skip it.

    The match's ``rounds`` starts empty and its ``history`` is ``pos.history``.
    """
    if check:
        pos.check()
    if chance is not None and seed is not None:
        raise GameError("give at most one of seed= or chance=")
    if chance is None:
        chance = SeededChance(seed) if seed is not None else NoChance()
    n = pos.players
    r = pos.rules
    # Built without __init__ (which would deal a round): every field __init__ and
    # _start_round set is set here, in the same order. tests/sdk/test_sampler.py compares
    # vars() of a rebuilt match with the original, so a new Match field cannot be missed.
    m = Match.__new__(Match)
    m.players = n
    m.rules = r
    m.seed = seed
    m._chance = chance
    m._record = record
    m._records = []
    m._values = value_table(r)
    m._showdown_stock = r.empty_stock == "showdown"
    m._min_knock = r.min_knock
    m._max_turns = r.max_turns_per_round
    m._knock_ban = r.knock_ban

    m.tokens = list(pos.tokens)
    m.alive = list(pos.alive)
    if pos.out_order is not None:
        out_step = list(pos.out_order)
    else:
        out_step = [None if a else 1 for a in pos.alive]
    m._out_step = out_step
    m._step = max((x for x in out_step if x is not None), default=0)
    m.rounds = []
    m.over = False
    m.end = None
    m.round_no = pos.round_no
    m.dealer = pos.dealer
    m.hands = [list(h) for h in pos.hands]
    m.stock = list(pos.stock)
    m.pile = list(pos.pile)
    m.dead = list(pos.dead)
    m.current = pos.current
    m.phase = pos.phase
    m.drawn = pos.drawn
    m.drawn_from = pos.drawn_from
    m.knocker = pos.knocker
    m.turns_left = pos.turns_left
    m._owes = list(pos.owes)
    m._had_turn = list(pos.had_turn)
    m.turn = pos.turn
    m._restocks = pos.restocks
    m.history = list(pos.history)
    return m


def had_turn_from_history(players: int, history: Sequence[PublicEvent]) -> tuple[bool, ...]:
    """Per seat: whether it finished a turn in the round ``history`` describes.

    A turn ends with a discard or a knock (a pass ends the round), exactly where the
    :class:`Match` marks it.
    """
    had = [False] * players
    for ev in history:
        if ev.kind is EventKind.DISCARD or ev.kind is EventKind.KNOCK:
            had[ev.seat] = True
    return tuple(had)


def owes_from_history(
    players: int, alive: Sequence[bool], knocker: int | None, history: Sequence[PublicEvent]
) -> tuple[bool, ...]:
    """Per seat: whether it still owes its last turn after the round's knock.

    Every seat still in but the knocker owes one turn from the knock on, until a discard
    ends it (a forfeit takes the seat out, a pass ends the round).
    """
    if knocker is None:
        return (False,) * players
    owes = [bool(alive[s]) and s != knocker for s in range(players)]
    after = False
    for ev in history:
        if ev.kind is EventKind.KNOCK:
            after = True
        elif after and ev.kind is EventKind.DISCARD:
            owes[ev.seat] = False
    return tuple(owes)
