"""Positions: a round frozen mid-play, and a :class:`~referee.game.state.Match` rebuilt from one.

A :class:`Match` always starts from a deal. Search bots need to start one from *any*
position of a round: a determinization (a guess at the hidden cards consistent with what a
seat saw), or the true state for a test. :func:`position_of` takes the omniscient snapshot of
a match; :func:`match_from_position` builds a match that is in exactly that state, so that
the game model itself plays the rest of the round (its turn order, restocks, knock rules,
showdown and life losses: there is no second implementation of the rules here). The match
is built by :meth:`Match.resume`, so that every field a match holds is declared in
``state.py`` alone.

Under the variants (docs/rules.md, "Variants") a position also holds the dummy (face-down cards: part of
what a seat cannot see), the face-up old hand, the widow, the widow game's unused cards, the
chips and the pot; the dealer's-option phase is a ``phase`` like the others.

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


@dataclass(frozen=True, slots=True)
class Position:
    """Everything the game model needs to play on from one moment of a round.

    Lists run in the :class:`Match`'s own conventions: ``stock`` and ``pile`` have their top
    card *last*. ``hands[s]`` is empty for a seat that is out; the seat to move holds four
    cards in the ``DISCARD`` phase, every other seat still in holds three.

    The fields after ``out_order`` belong to the variants; their defaults are the plain
    game's (no dummy, no widow, no chips).
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
    #: The dummy's face-down cards (three until taken; empty without ``dummy``).
    dummy: tuple[Card, ...] = ()
    #: The dummy-taker's old hand, face up and out of play.
    face_up: tuple[Card, ...] = ()
    #: The seat that took the dummy this round.
    dummy_taker: int | None = None
    #: The widow's three face-up cards (``draw="widow"``).
    widow: tuple[Card, ...] = ()
    #: The widow game's undealt cards (out of play for the round).
    unused: tuple[Card, ...] = ()
    #: Per seat: net chips (``scoring="pot"``); empty means all 0.
    chips: tuple[int, ...] = ()
    #: Chips in the pot.
    pot: int = 0

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
        if self.chips and len(self.chips) != n:
            raise GameError(f"position chips has {len(self.chips)} entries for {n} players")
        r = self.rules
        widow_game = r.draw == "widow"
        if len(self.widow) != (3 if widow_game else 0):
            raise GameError(f"position widow holds {len(self.widow)} cards under draw={r.draw}")
        if widow_game and (self.stock or self.pile):
            raise GameError("the widow game has no stock and no discard pile")
        if not widow_game and self.unused:
            raise GameError("only the widow game leaves cards unused")
        if self.dummy and (not r.dummy or len(self.dummy) != 3 or self.dummy_taker is not None):
            raise GameError(f"position dummy holds {len(self.dummy)} cards (dummy={r.dummy}, taken by {self.dummy_taker})")
        if r.dummy and not self.dummy and self.dummy_taker is None:
            raise GameError("the dummy is neither face down nor taken")
        if len(self.face_up) != (3 if self.dummy_taker is not None else 0):
            raise GameError(f"position face_up holds {len(self.face_up)} cards with dummy_taker={self.dummy_taker}")
        if self.phase is Phase.DEALER_OPTION and (
            not r.dealer_option or self.current != self.dealer or self.turn != 0
        ):
            raise GameError(f"the dealer's option is the dealer's (seat {self.dealer}) before the first turn")
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
        everything += self.dummy
        everything += self.face_up
        everything += self.widow
        everything += self.unused
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
        dummy=tuple(m.dummy),
        face_up=tuple(m.face_up),
        dummy_taker=m.dummy_taker,
        widow=tuple(m.widow),
        unused=tuple(m.unused),
        chips=tuple(m.chips),
        pot=m.pot,
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
    if pos.out_order is not None:
        out_step = list(pos.out_order)
    else:
        out_step = [None if a else 1 for a in pos.alive]
    return Match.resume(
        n,
        pos.rules,
        chance=chance,
        seed=seed,
        record=record,
        tokens=list(pos.tokens),
        alive=list(pos.alive),
        out_step=out_step,
        round_no=pos.round_no,
        dealer=pos.dealer,
        chips=list(pos.chips) if pos.chips else [0] * n,
        pot=pos.pot,
        hands=[list(h) for h in pos.hands],
        stock=list(pos.stock),
        pile=list(pos.pile),
        dead=list(pos.dead),
        dummy=list(pos.dummy),
        face_up=list(pos.face_up),
        dummy_taker=pos.dummy_taker,
        widow=list(pos.widow),
        unused=list(pos.unused),
        current=pos.current,
        phase=pos.phase,
        drawn=pos.drawn,
        drawn_from=pos.drawn_from,
        knocker=pos.knocker,
        turns_left=pos.turns_left,
        owes=list(pos.owes),
        had_turn=list(pos.had_turn),
        turn=pos.turn,
        restocks=pos.restocks,
        history=list(pos.history),
    )


#: Events that end a turn that does not end the round.
_TURN_ENDS = frozenset((EventKind.DISCARD, EventKind.KNOCK, EventKind.SWAP_HAND, EventKind.SWAP_WIDOW))


def had_turn_from_history(players: int, history: Sequence[PublicEvent]) -> tuple[bool, ...]:
    """Per seat: whether it finished a turn in the round ``history`` describes.

    A turn ends with a discard, a knock, or a dummy or widow swap (a pass or a call ends the
    round; the dealer's option is no turn), exactly where the :class:`Match` marks it.
    """
    had = [False] * players
    for ev in history:
        if ev.kind in _TURN_ENDS:
            had[ev.seat] = True
    return tuple(had)


def owes_from_history(
    players: int, alive: Sequence[bool], knocker: int | None, history: Sequence[PublicEvent]
) -> tuple[bool, ...]:
    """Per seat: whether it still owes its last turn after the round's knock.

    Every seat still in but the knocker owes one turn from the knock on, until a discard
    or a dummy or widow swap ends it (a forfeit takes the seat out, a pass ends the round).
    """
    if knocker is None:
        return (False,) * players
    owes = [bool(alive[s]) and s != knocker for s in range(players)]
    after = False
    for ev in history:
        if ev.kind is EventKind.KNOCK:
            after = True
        elif after and ev.kind in _TURN_ENDS:
            owes[ev.seat] = False
    return tuple(owes)


def match_at_deal(
    rules: Rules,
    players: int,
    *,
    round_no: int,
    dealer: int,
    tokens: Sequence[int],
    alive: Sequence[bool],
    chance: Chance,
    chips: Sequence[int] = (),
    pot: int = 0,
) -> Match:
    """A match that has just dealt round ``round_no``, ``dealer`` dealing, from ``chance``.

    ``tokens``, ``alive``, ``chips`` (before this deal's antes) and ``pot`` (carried from the
    round before) are the table as the round starts. The deal is the game model's own
    (antes, the deal order, the dummy or widow, natural 31s, the dealer's option): a position
    values a deal to come by dealing it many times (:mod:`referee.analysis.luck`). A natural
    31 ends the round at once, and then ``rounds[0]`` is its result.
    """
    n = players
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise GameError(f"players must be {MIN_PLAYERS} to {MAX_PLAYERS}, got {n}")
    m = Match.resume(
        n,
        rules,
        chance=chance,
        tokens=list(tokens),
        alive=list(alive),
        out_step=[None if a else 1 for a in alive],
        round_no=round_no - 1,
        dealer=dealer,
        chips=list(chips) if chips else [0] * n,
        pot=pot,
        hands=[[] for _ in range(n)],
        stock=[],
        pile=[],
        dead=[],
        dummy=[],
        face_up=[],
        dummy_taker=None,
        widow=[],
        unused=[],
        current=dealer,
        phase=Phase.TURN_START,
        drawn=None,
        drawn_from=None,
        knocker=None,
        turns_left=0,
        owes=[False] * n,
        had_turn=[False] * n,
        turn=0,
        restocks=0,
        history=[],
    )
    # The first deal of a match does not move the dealer on: the dealer is the one given.
    m._start_round(first=True)
    return m
