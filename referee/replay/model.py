"""The replay model: a match log re-simulated through the game model, as a list of steps.

:func:`build_replay` walks a parsed log (:func:`referee.log.read_log`) event by event. It
starts a :class:`~referee.game.Match` whose only source of cards is the log's own deals and
restocks (:class:`~referee.game.RecordedChance`, never the seed), feeds it every logged
action and forfeit after checking it is legal, and re-creates every line the referee would
have written (deals, restocks, 31s, round ends) through :mod:`referee.wire`, comparing each
with the logged one. The first disagreement stops the walk and becomes a
:class:`Divergence` naming the line, the round, the turn and the event.

The steps it produces are plain values for one point of view: the omniscient one (every
hand, every card drawn), or one seat's. A seat's steps hold only what that seat saw during
the match (RULES.md §9): its own hand and draws, taken from
:meth:`~referee.game.Match.observation` at each of its decisions, and public information —
discards, cards taken from the discard pile, knocks, hands shown at a showdown, the 31 hands,
lives and tokens. Renderers never have to filter anything out, so they cannot leak it.

Pure: no rich, no printing; only the log file is read, by :mod:`referee.log`.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import NoReturn

from thirtyone.v1 import log_pb2

from referee import wire
from referee.faults import LogError
from referee.game import (
    ActionKind,
    ActionRecord,
    Card,
    ChanceError,
    DealRecord,
    ForfeitRecord,
    GameError,
    Match,
    MatchEnd,
    Record,
    RecordedChance,
    RestockRecord,
    RoundEnd,
    RoundResult,
    hand_value,
)
from referee.game.actions import Action
from referee.log import MatchLog, read_log

# ---------------------------------------------------------------- positions and divergences


@dataclass(frozen=True, slots=True)
class Position:
    """A place in a log: the line, the round and turn the event carries, and what it is."""

    line: int
    round_no: int
    turn: int
    #: What the line holds, for people: ``deal``, ``seat 1 draw stock``, ``round end``, ...
    event: str

    def __str__(self) -> str:
        if self.event in ("header", "footer"):
            return f"line {self.line} ({self.event})"
        return f"line {self.line} (round {self.round_no}, turn {self.turn}, {self.event})"


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first place where a log and the game model disagree."""

    at: Position
    message: str

    def __str__(self) -> str:
        return f"{self.at}: {self.message}"


class _Diverged(Exception):
    def __init__(self, divergence: Divergence) -> None:
        super().__init__(str(divergence))
        self.divergence = divergence


# ---------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True)
class SeatHand:
    """Three (or, mid-turn, four) cards of one seat, and their value when there are three."""

    seat: int
    cards: tuple[Card, ...]
    value: float | None


@dataclass(frozen=True, slots=True)
class DealStep:
    """A round was dealt."""

    at: Position
    dealer: int
    #: Hands the viewer may see, in playing order (the seat left of the dealer first).
    hands: tuple[SeatHand, ...]
    upcard: Card
    stock_size: int
    #: Tokens and who is in, as the round starts.
    tokens: tuple[int, ...]
    in_game: tuple[bool, ...]
    #: The seat that plays first.
    first: int


@dataclass(frozen=True, slots=True)
class RestockStep:
    """The discard pile, less its top card, became a new stock."""

    at: Position
    #: The seat whose turn found the stock empty.
    seat: int
    index: int
    stock_size: int
    #: The card left on the discard pile.
    top_discard: Card | None


@dataclass(frozen=True, slots=True)
class ActionStep:
    """A seat acted, or the referee acted for it after a fault."""

    at: Position
    seat: int
    action: Action
    #: For a draw: the card taken (None when the viewer did not see it, i.e. another seat's
    #: stock draw). For a discard: the card discarded.
    card: Card | None
    #: Played by the referee after a fault (only shown to the seat itself in a seat view).
    by_referee: bool
    #: The acting seat's cards after the action, when the viewer may see them.
    hand: SeatHand | None


@dataclass(frozen=True, slots=True)
class FaultStep:
    """A bot faulted (in a seat view: only that seat's own faults)."""

    at: Position
    fault: wire.FaultInfo
    max_strikes: int


@dataclass(frozen=True, slots=True)
class ForfeitStep:
    """A seat left the match."""

    at: Position
    seat: int
    #: The referee's reason; None when the viewer was not told it (another seat's forfeit).
    reason: str | None
    #: The cards that left play with the seat, when the viewer may see them.
    dead_hand: tuple[Card, ...] | None


@dataclass(frozen=True, slots=True)
class ThirtyOneStep:
    """One or more seats showed 31: dealt (natural) or reached by a discard (blitz)."""

    at: Position
    seats: tuple[int, ...]
    natural: bool
    #: The 31 hands (shown to everyone).
    hands: tuple[SeatHand, ...]


class LossReason(Enum):
    """Why a seat lost lives at the end of a round (RULES.md §4, §5, §7)."""

    #: Another seat showed 31 (natural or blitz).
    OTHER_31 = "other_31"
    #: A non-knocker at the lowest value of the showdown.
    LOWEST = "lowest"
    #: The knocker, alone at the lowest value.
    KNOCKER_ALONE = "knocker_alone"
    #: The knocker, tied at the lowest value with others (``knocker_tied``).
    KNOCKER_TIED = "knocker_tied"


@dataclass(frozen=True, slots=True)
class LifeLoss:
    """Lives one seat lost in a round, why, and what became of its tokens."""

    seat: int
    lives: int
    reason: LossReason
    tokens_before: int
    tokens_after: int
    eliminated: bool


@dataclass(frozen=True, slots=True)
class RoundEndStep:
    """The end of a round: the showdown, if any, and the lives lost."""

    at: Position
    end: RoundEnd
    knocker: int | None
    thirty_one: tuple[int, ...]
    showdown: bool
    #: The seat whose action ended the round (the pass, the blitz, the last turn), if any.
    ended_by: int | None
    #: Hands the viewer may see at the end, in seat order: all of them at a showdown, the
    #: 31 hands after a 31 (the omniscient view: every hand still in).
    shown: tuple[SeatHand, ...]
    #: The lowest value of a showdown.
    lowest: float | None
    losses: tuple[LifeLoss, ...]
    #: The knocker tied at the lowest value and lost nothing (``knocker_tied = safe``).
    knocker_safe: bool
    tokens_after: tuple[int, ...]
    in_game_after: tuple[bool, ...]
    eliminated: tuple[int, ...]
    sudden_death: bool
    turns: int


@dataclass(frozen=True, slots=True)
class ResultStep:
    """The footer: how the match ended and the placings."""

    at: Position
    placings: tuple[int, ...]
    winner: int | None
    reason: wire.MatchEndReasonName
    rounds: int
    #: Per seat: the round it was eliminated or forfeited in; None if it stayed in.
    out_round: tuple[int | None, ...]
    forfeited: tuple[bool, ...]
    #: Decision statistics, in the omniscient view only (they are the referee's).
    stats: tuple[wire.SeatStats, ...] | None


Step = DealStep | RestockStep | ActionStep | FaultStep | ForfeitStep | ThirtyOneStep | RoundEndStep | ResultStep


@dataclass(frozen=True, slots=True)
class Replay:
    """A log replayed through the game model, from one point of view."""

    path: Path
    header: wire.LogHeaderInfo
    #: The seat whose view the steps are, or None for the omniscient view.
    viewer: int | None
    steps: tuple[Step, ...]
    #: The first disagreement between log and model; None if there is none (so far).
    divergence: Divergence | None
    #: Whether the log has its footer.
    complete: bool
    #: The last line replayed (for a log that stops early, where it stops).
    last: Position
    #: Rounds started in the replayed part of the log.
    rounds: int
    #: Notes for people: a cut last line, a match aborted, where an incomplete log stops.
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whole and replayed without a divergence."""
        return self.complete and self.divergence is None

    def stop_description(self) -> str:
        """Where the replayed part ends, e.g. ``stops after round 3 turn 7 (line 58, round end)``."""
        return _stops_after(self.last)


def _stops_after(at: Position) -> str:
    if at.event == "header":
        return f"stops after the header (line {at.line}), before the first deal"
    return f"stops after round {at.round_no} turn {at.turn} (line {at.line}, {at.event})"


# ---------------------------------------------------------------- reading


def load_log(path: str | os.PathLike[str]) -> MatchLog:
    """:func:`referee.log.read_log`, with text that is not UTF-8 also a :class:`LogError`.

    ``read_log`` lets a ``UnicodeDecodeError`` through; this names the line instead.
    """
    try:
        return read_log(path)
    except UnicodeDecodeError:
        raise LogError(f"{path}:{_first_bad_utf8_line(Path(path))}: not UTF-8 text") from None


def _first_bad_utf8_line(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return lineno
    except OSError:
        pass
    return 1


# ---------------------------------------------------------------- chance from the log


class _Missing(Exception):
    """The log holds no deal or restock for what the model asks (a log cut short)."""


class _BadOrder(Exception):
    """A logged deal or restock is not an order of the cards the model has to shuffle."""

    def __init__(self, at: Position, message: str) -> None:
        super().__init__(message)
        self.at = at
        self.message = message


class _LogChance:
    """The log's deals and restocks as a :class:`~referee.game.chance.Chance`.

    Each order is checked by :class:`RecordedChance`; the wrapper only remembers which line
    recorded it, so a bad order is reported at its own line, and tells a missing order (the
    log stops early) from a bad one.
    """

    def __init__(
        self,
        deals: dict[int, tuple[Position, tuple[Card, ...]]],
        restocks: dict[tuple[int, int], tuple[Position, tuple[Card, ...]]],
    ) -> None:
        self._deals = deals
        self._restocks = restocks

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """The logged deck of a round."""
        found = self._deals.get(round_no)
        if found is None:
            raise _Missing(f"the deal of round {round_no}")
        at, order = found
        try:
            return RecordedChance({round_no: order}).deal(round_no, cards)
        except ChanceError as e:
            raise _BadOrder(at, str(e)) from None

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """The logged order of a restock."""
        found = self._restocks.get((round_no, index))
        if found is None:
            raise _Missing(f"restock {index} of round {round_no}")
        at, order = found
        try:
            return RecordedChance({}, {(round_no, index): order}).restock(round_no, index, cards)
        except ChanceError as e:
            raise _BadOrder(at, str(e)) from None


# ---------------------------------------------------------------- the replay


def describe_event(ev: log_pb2.LogEvent) -> str:
    """A log event named for people: ``deal``, ``seat 1 discard 5d``, ``round end``, ..."""
    kind = ev.WhichOneof("payload")
    if kind == "action":
        try:
            return f"seat {ev.action.seat} {wire.action_from_pb(ev.action.action)}"
        except wire.WireError:
            return f"seat {ev.action.seat} action"
    if kind == "fault":
        return f"fault of seat {ev.fault.fault.seat}"
    if kind == "forfeit":
        return f"forfeit of seat {ev.forfeit.seat}"
    if kind == "restock":
        return f"restock {ev.restock.index}"
    return {"deal": "deal", "thirty_one": "31", "round_end": "round end"}.get(kind or "", "empty event")


@dataclass(frozen=True, slots=True)
class _Expected:
    """A line the game model says comes next, and the record it comes from."""

    kind: str
    message: log_pb2.LogEvent
    record: Record

    def describe(self) -> str:
        rec = self.record
        if isinstance(rec, DealRecord):
            return f"the deal of round {rec.round_no}"
        if isinstance(rec, RestockRecord):
            return f"restock {rec.number} of round {rec.round_no}"
        if isinstance(rec, ForfeitRecord):
            return f"the forfeit of seat {rec.seat}"
        if isinstance(rec, RoundResult):
            if self.kind == "thirty_one":
                return f"the 31 of round {rec.round_no} (seats {', '.join(map(str, rec.thirty_one))})"
            return f"the end of round {rec.round_no}"
        return f"a {self.kind}"  # pragma: no cover - actions are never expected lines


def _a(what: str) -> str:
    """``a deal``, ``an action``, ``a 31``: the log's event named with its article."""
    return ("an " if what[:1] in "aeiou" else "a ") + what


def _kind_name(kind: str) -> str:
    return {"thirty_one": "31", "round_end": "round end"}.get(kind, kind)


class _Replayer:
    """One walk through a log; see :func:`build_replay`."""

    def __init__(self, log: MatchLog, viewer: int | None, collect: bool) -> None:
        self.log = log
        h = log.header
        self.n = h.players
        self.rules = h.rules
        self.viewer = viewer
        self.collect = collect
        self.steps: list[Step] = []
        self.expected: deque[_Expected] = deque()
        self.tokens = [h.rules.lives] * self.n
        self.alive = [True] * self.n
        self.out_round: list[int | None] = [None] * self.n
        self.forfeited = [False] * self.n
        self.faults = [0] * self.n
        self.decisions = [0] * self.n
        self.latency_sum = [0] * self.n
        self.latency_max = [0] * self.n
        self.pending_fault: tuple[wire.FaultInfo, Position] | None = None
        #: What the log lacks that the model needs next (set when a cut log runs out of cards).
        self.stalled: str | None = None
        self.last = Position(1, 0, 0, "header")
        self.last_actor: int | None = None
        self.notes = list(log.notes)
        self.m: Match | None = None
        #: Rounds whose deal the log and the model agreed on.
        self.rounds = 0
        #: Set once the viewer is out of the match: it saw nothing more until the result.
        self.viewer_out = False

    # ------------------------------------------------------------ helpers

    def _diverge(self, at: Position, message: str) -> NoReturn:
        raise _Diverged(Divergence(at, message))

    def _unreadable(self, at: Position, message: str) -> NoReturn:
        raise LogError(f"{self.log.path}:{at.line}: {message}")

    def _sees(self, seat: int) -> bool:
        """Whether the viewer may see ``seat``'s cards (its own, or everyone's when omniscient)."""
        return self.viewer is None or self.viewer == seat

    def _hand(self, seat: int, cards: Sequence[Card]) -> SeatHand:
        value = hand_value(tuple(cards), self.rules) if len(cards) == 3 else None
        return SeatHand(seat, tuple(cards), value)

    def _add(self, step: Step) -> None:
        if self.collect and (not self.viewer_out or isinstance(step, ResultStep)):
            self.steps.append(step)

    # ------------------------------------------------------------ the walk

    def run(self) -> Replay:
        log = self.log
        divergence: Divergence | None = None
        try:
            chance = self._chance()
            self._start(chance)
            for le in log.events:
                ev = le.event
                kind = ev.WhichOneof("payload")
                at = Position(le.line, ev.round, ev.turn, describe_event(ev))
                if kind is None:
                    self._unreadable(at, "an event with no payload")
                self._event(at, kind, ev)
                self.last = at
            self._footer()
        except _Diverged as d:
            divergence = d.divergence
        if not log.complete and divergence is None:
            self.notes.append(f"incomplete: the log {_stops_after(self.last)}; it has no result")
            if self.stalled:
                self.notes.append(f"the game model needs {self.stalled} next, which the log does not hold")
        return self._replay(divergence)

    def _replay(self, divergence: Divergence | None) -> Replay:
        return Replay(
            path=self.log.path,
            header=self.log.header,
            viewer=self.viewer,
            steps=tuple(self.steps),
            divergence=divergence,
            complete=self.log.complete,
            last=self.last,
            rounds=self.rounds,
            notes=tuple(self.notes),
        )

    def _chance(self) -> _LogChance:
        """Collect every logged deal and restock before replaying (the model asks for them
        in the middle of applying an action, so they must be at hand)."""
        deals: dict[int, tuple[Position, tuple[Card, ...]]] = {}
        restocks: dict[tuple[int, int], tuple[Position, tuple[Card, ...]]] = {}
        for le in self.log.events:
            ev = le.event
            at = Position(le.line, ev.round, ev.turn, describe_event(ev))
            try:
                if ev.HasField("deal"):
                    d = wire.deal_from_pb(ev.round, self.n, ev.deal)
                    if ev.round in deals:
                        self._diverge(at, f"a second deal of round {ev.round} (the first is at line {deals[ev.round][0].line})")
                    deals[ev.round] = (at, d.deck)
                elif ev.HasField("restock"):
                    r = wire.restock_from_pb(ev.round, ev.restock)
                    key = (ev.round, r.number)
                    if key in restocks:
                        self._diverge(at, f"a second restock {r.number} of round {ev.round} (the first is at line {restocks[key][0].line})")
                    restocks[key] = (at, r.stock)
            except wire.WireError as e:
                self._unreadable(at, str(e))
        return _LogChance(deals, restocks)

    def _start(self, chance: _LogChance) -> None:
        # Built in two steps so that a deal the log lacks (a log cut inside a chain of natural
        # 31s) leaves a match whose records up to that point can still be compared.
        m = Match.__new__(Match)
        try:
            m.__init__(self.n, self.rules, chance=chance)  # type: ignore[misc]
        except _Missing as e:
            if not hasattr(m, "_records"):
                return  # not even round 1's deal: nothing to replay
            self.stalled = str(e)
        except _BadOrder as e:
            self._diverge(e.at, e.message)
        self.m = m
        self._expect(m.take_records(), m.turn)

    def _expect(self, records: Sequence[Record], turn: int) -> None:
        """Queue the lines the referee writes for these model records (as referee.match does)."""
        for rec in records:
            if isinstance(rec, DealRecord):
                self.expected.append(_Expected("deal", wire.deal_event_to_pb(rec).event, rec))
            elif isinstance(rec, RestockRecord):
                # A restock happens as a turn starts: the model's turn after the step is its turn.
                self.expected.append(_Expected("restock", wire.restock_event_to_pb(rec, turn).event, rec))
            elif isinstance(rec, ForfeitRecord):
                self.expected.append(_Expected("forfeit", wire.forfeit_event_to_pb(rec).event, rec))
            elif isinstance(rec, RoundResult):
                if rec.thirty_one:
                    self.expected.append(_Expected("thirty_one", wire.thirty_one_event_to_pb(rec).event, rec))
                self.expected.append(_Expected("round_end", wire.round_end_event_to_pb(rec).event, rec))

    def _event(self, at: Position, kind: str, ev: log_pb2.LogEvent) -> None:
        if self.expected:
            exp = self.expected[0]
            if kind != exp.kind:
                self._diverge(at, f"the log has {_a(_kind_name(kind))} here; the game model gives {exp.describe()} first")
            self._same(at, exp.message, ev)
            self.expected.popleft()
            self._produced(at, exp.kind, exp.record)
            return
        m = self.m
        if self.stalled is not None or m is None:
            lacks = self.stalled or "the deal of round 1"
            self._diverge(at, f"the log has {_a(_kind_name(kind))} here, but it lacks {lacks}, which the game model needs first")
        if m.is_over:
            self._diverge(at, f"the log has {_a(_kind_name(kind))} after the match ended (round {m.round_no})")
        if kind == "action":
            self._action(at, ev)
        elif kind == "fault":
            self._fault(at, ev)
        elif kind == "forfeit":
            self._forfeit(at, ev)
        else:
            self._diverge(at, f"the log has {_a(_kind_name(kind))} here; {self._waits(m)}")

    def _same(self, at: Position, expected: log_pb2.LogEvent, logged: log_pb2.LogEvent) -> None:
        diff = wire.message_difference(expected, logged)
        if diff is not None:
            path, want, got = diff
            self._diverge(at, f"{path} is {got} in the log; the game model gives {want}")

    def _waits(self, m: Match) -> str:
        doing = "discard" if m.drawn is not None else "act"
        return f"the game model waits for seat {m.current} to {doing} at round {m.round_no} turn {m.turn}"

    def _apply(self, at: Position, fn: Callable[[], None]) -> list[Record]:
        """Run one model step; a deal or restock the log lacks stalls the replay there."""
        m = self.m
        assert m is not None
        try:
            fn()
        except _Missing as e:
            self.stalled = str(e)
        except _BadOrder as e:
            self._diverge(e.at, e.message)
        except GameError as e:  # pragma: no cover - every input is checked before it is applied
            self._diverge(at, str(e))
        return m.take_records()

    # ------------------------------------------------------------ inputs: actions, faults, forfeits

    def _action(self, at: Position, ev: log_pb2.LogEvent) -> None:
        m = self.m
        assert m is not None
        msg = ev.action
        try:
            rec = wire.action_record_from_pb(ev.round, ev.turn, msg)
        except wire.WireError as e:
            self._unreadable(at, str(e))
        seat = rec.seat
        if seat != m.current or ev.round != m.round_no or ev.turn != m.turn:
            self._diverge(at, f"the log has seat {seat} act at round {ev.round} turn {ev.turn}; {self._waits(m)}")
        pf = self.pending_fault
        if msg.by_referee:
            if pf is None:
                self._diverge(at, "an action played by the referee with no fault before it")
            fault, fat = pf
            if fault.forfeited:
                self._diverge(at, f"the fault at line {fat.line} forfeits seat {fault.seat}; the log has the referee act for it instead")
            if msg.decision_id != fault.decision_id:
                self._diverge(at, f"decision {msg.decision_id} played by the referee; the fault at line {fat.line} is for decision {fault.decision_id}")
            if rec.action != fault.default_action:
                self._diverge(at, f"the referee plays {rec.action}; the fault at line {fat.line} says it plays {fault.default_action}")
            if msg.latency_us != 0:
                self._diverge(at, f"an action played by the referee has a latency ({msg.latency_us} µs); it must be 0")
            self.pending_fault = None
        elif pf is not None:
            fault, fat = pf
            instead = "its forfeit" if fault.forfeited else f"the referee's {fault.default_action}"
            self._diverge(at, f"seat {fault.seat} faulted at line {fat.line}; the log then has its own action instead of {instead}")
        reason = m.why_illegal(rec.action)
        if reason is not None:
            self._diverge(at, f"{rec.action} by seat {seat} is illegal: {reason}")
        kind = rec.action.kind
        drawing = kind in (ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD)
        if not drawing and msg.drawn_card:
            self._diverge(at, f"a {rec.action} with a drawn card ({msg.drawn_card}); only draws have one")
        if drawing and rec.card is None:
            self._diverge(at, f"seat {seat}'s {rec.action} names no drawn card")
        # The viewer's knowledge of its own hand comes from its observation at the decision.
        if self.viewer is None:
            before: tuple[Card, ...] | None = m.hand(seat)
        elif self.viewer == seat:
            before = m.observation(seat).hand
        else:
            before = None
        if not msg.by_referee:
            self.decisions[seat] += 1
            self.latency_sum[seat] += msg.latency_us
            self.latency_max[seat] = max(self.latency_max[seat], msg.latency_us)

        records = self._apply(at, lambda: m.apply_unchecked(rec.action))
        done = records[0]
        assert isinstance(done, ActionRecord)
        if drawing and done.card != rec.card:
            where = "the stock" if kind is ActionKind.DRAW_STOCK else "the discard pile"
            self._diverge(at, f"the log says seat {seat} drew {rec.card} from {where}; the game model has {done.card} on top")
        self.last_actor = seat
        self._expect(records[1:], m.turn)

        card = done.card if (kind is not ActionKind.DRAW_STOCK or self._sees(seat)) else None
        hand: SeatHand | None = None
        if before is not None:
            if drawing:
                assert done.card is not None
                after = (*before, done.card)
            elif kind is ActionKind.DISCARD:
                after = tuple(c for c in before if c != done.card)
            else:
                after = before
            hand = self._hand(seat, after)
        by_referee = msg.by_referee and self._sees(seat)
        self._add(ActionStep(at, seat, rec.action, card, by_referee, hand))

    def _fault(self, at: Position, ev: log_pb2.LogEvent) -> None:
        m = self.m
        assert m is not None
        try:
            f = wire.fault_from_pb(ev.fault.fault)
        except wire.WireError as e:
            self._unreadable(at, str(e))
        if self.pending_fault is not None:
            self._diverge(at, f"a second fault before the referee acted on the one at line {self.pending_fault[1].line}")
        if f.round_no != ev.round or f.turn != ev.turn:
            self._diverge(at, f"the fault says round {f.round_no} turn {f.turn}; its line says round {ev.round} turn {ev.turn}")
        if f.seat != m.current or f.round_no != m.round_no or f.turn != m.turn:
            self._diverge(at, f"a fault of seat {f.seat} at round {f.round_no} turn {f.turn}; {self._waits(m)}")
        strikes = self.faults[f.seat] + 1
        if f.strike != strikes:
            self._diverge(at, f"strike {f.strike}; this is fault number {strikes} of seat {f.seat}")
        max_strikes = self.log.header.max_strikes
        if f.forfeited:
            if f.default_action is not None:
                self._diverge(at, f"a fault that forfeits seat {f.seat} names an action for the referee to play ({f.default_action})")
        else:
            if f.default_action is None:
                self._diverge(at, "a fault that does not forfeit the seat must name the action the referee plays")
            if max_strikes and f.strike >= max_strikes:
                self._diverge(at, f"strike {f.strike} of {max_strikes} forfeits the seat; the fault says it does not")
            reason = m.why_illegal(f.default_action)
            if reason is not None:
                self._diverge(at, f"the referee's action {f.default_action} is illegal: {reason}")
        self.faults[f.seat] += 1
        self.decisions[f.seat] += 1
        self.pending_fault = (f, at)
        if self._sees(f.seat):
            self._add(FaultStep(at, f, max_strikes))

    def _forfeit(self, at: Position, ev: log_pb2.LogEvent) -> None:
        m = self.m
        assert m is not None
        rec = wire.forfeit_from_pb(ev.round, ev.turn, ev.forfeit)
        seat = rec.seat
        if not 0 <= seat < self.n or not m.alive[seat]:
            self._diverge(at, f"a forfeit of seat {seat}, which is not in the match")
        if ev.round != m.round_no or ev.turn != m.turn:
            self._diverge(at, f"a forfeit at round {ev.round} turn {ev.turn}; the game model is at round {m.round_no} turn {m.turn}")
        pf = self.pending_fault
        if pf is not None:
            fault, fat = pf
            if not fault.forfeited or fault.seat != seat:
                what = f"the referee's {fault.default_action}" if not fault.forfeited else f"the forfeit of seat {fault.seat}"
                self._diverge(at, f"a forfeit of seat {seat}; the fault at line {fat.line} calls for {what}")
            self.pending_fault = None
        dead = m.hand(seat)
        records = self._apply(at, lambda: m.forfeit(seat, rec.reason))
        done = records[0]
        assert isinstance(done, ForfeitRecord)
        self._same(at, wire.forfeit_event_to_pb(done).event, ev)
        self.alive[seat] = False
        self.forfeited[seat] = True
        self.out_round[seat] = ev.round
        self._expect(records[1:], m.turn)
        own = self._sees(seat)
        self._add(ForfeitStep(at, seat, rec.reason if own else None, dead if own else None))
        if seat == self.viewer:
            self.viewer_out = True

    # ------------------------------------------------------------ outputs the model produced

    def _produced(self, at: Position, kind: str, rec: Record) -> None:
        """Turn a record the log agreed with into a step for the viewer."""
        if isinstance(rec, DealRecord):
            self.rounds += 1
            order = [s for s in range(rec.dealer + 1, self.n) if rec.hands[s]] + [
                s for s in range(rec.dealer + 1) if rec.hands[s]
            ]
            hands = tuple(self._hand(s, rec.hands[s]) for s in order if self._sees(s))
            stock = len(rec.deck) - 3 * len(order) - 1
            self._add(DealStep(at, rec.dealer, hands, rec.upcard, stock, tuple(self.tokens), tuple(self.alive), order[0]))
        elif isinstance(rec, RestockRecord):
            m = self.m
            assert m is not None
            top = m.pile[-1] if m.pile and m.round_no == rec.round_no else None
            self._add(RestockStep(at, m.current, rec.number, len(rec.stock), top))
        elif isinstance(rec, RoundResult):
            if kind == "thirty_one":
                hands = tuple(self._hand(s, rec.hands[s]) for s in rec.thirty_one)
                self._add(ThirtyOneStep(at, rec.thirty_one, rec.end is RoundEnd.NATURAL_31, hands))
            else:
                self._round_end(at, rec)

    def _round_end(self, at: Position, r: RoundResult) -> None:
        # A showdown shows every hand to everyone; a 31 ends the round with only the 31 shown.
        visible = sorted(r.hands) if r.showdown or self.viewer is None else sorted(r.thirty_one)
        shown = tuple(SeatHand(s, r.hands[s], r.values.get(s)) for s in visible)
        lowest = min(r.values.values()) if r.showdown and r.values else None
        at_low = [s for s, v in r.values.items() if v == lowest] if lowest is not None else []
        losses = []
        for s, lives in sorted(r.lives_lost.items()):
            if not r.showdown:
                reason = LossReason.OTHER_31
            elif s == r.knocker:
                reason = LossReason.KNOCKER_ALONE if len(at_low) == 1 else LossReason.KNOCKER_TIED
            else:
                reason = LossReason.LOWEST
            losses.append(LifeLoss(s, lives, reason, self.tokens[s], r.tokens_after[s], s in r.eliminated))
        knocker_safe = r.knocker is not None and r.knocker in at_low and r.knocker not in r.lives_lost
        self.tokens = list(r.tokens_after)
        for s in r.eliminated:
            self.alive[s] = False
            self.out_round[s] = r.round_no
        ended_by = None if r.end in (RoundEnd.NATURAL_31, RoundEnd.ABANDONED) else self.last_actor
        self._add(
            RoundEndStep(
                at=at,
                end=r.end,
                knocker=r.knocker,
                thirty_one=r.thirty_one,
                showdown=r.showdown,
                ended_by=ended_by,
                shown=shown,
                lowest=lowest,
                losses=tuple(losses),
                knocker_safe=knocker_safe,
                tokens_after=r.tokens_after,
                in_game_after=tuple(self.alive),
                eliminated=r.eliminated,
                sudden_death=r.sudden_death,
                turns=r.turns,
            )
        )
        self.last_actor = None
        if self.viewer is not None and self.viewer in r.eliminated:
            self.viewer_out = True

    # ------------------------------------------------------------ the footer

    def _footer(self) -> None:
        log = self.log
        f = log.footer
        if f is None:
            return
        m = self.m
        line = (log.events[-1].line if log.events else 1) + 1  # read_log allows nothing after it
        at = Position(line, m.round_no if m else 0, m.turn if m else 0, "footer")
        if m is None and not log.events and f.reason == "aborted":
            # The referee stopped before dealing (a bot did not start): a header and a footer.
            if any(p != 1 for p in f.placings) or f.winner is not None:
                self._diverge(at, "a match aborted before the first deal has every seat placed 1 and no winner")
            self.notes.append("the match was aborted before the first deal")
            self._add(ResultStep(at, f.placings, None, f.reason, f.rounds, tuple(self.out_round), tuple(self.forfeited), None))
            return
        if self.expected:
            self._diverge(at, f"the log ends here; the game model still gives {self.expected[0].describe()}")
        if self.stalled is not None or m is None:
            self._diverge(at, f"the log lacks {self.stalled or 'the deal of round 1'}, which the game model needs")
        if self.pending_fault is not None:
            fat = self.pending_fault[1]
            self._diverge(at, f"the fault at line {fat.line} is followed by neither the referee's action nor a forfeit")
        want = {"last_player": MatchEnd.LAST_PLAYER, "max_rounds": MatchEnd.MAX_ROUNDS, "aborted": None}[f.reason]
        if m.end is not want:
            have = m.end.value if m.end is not None else "still running"
            self._diverge(at, f"the match ended by {f.reason} in the log; in the game model it is {have}")
        if f.reason == "aborted":
            self.notes.append(f"the referee aborted the match in round {m.round_no}, turn {m.turn}")
        if tuple(f.placings) != tuple(m.placings):
            self._diverge(at, f"placings {list(f.placings)} in the log; the game model gives {list(m.placings)}")
        if f.winner != m.winner:
            self._diverge(at, f"winner {_seat_or_none(f.winner)} in the log; the game model gives {_seat_or_none(m.winner)}")
        if f.rounds != m.round_no:
            self._diverge(at, f"{f.rounds} rounds in the log; the game model played {m.round_no}")
        self._check_stats(at, f.stats)
        stats = f.stats if self.viewer is None else None
        self._add(ResultStep(at, f.placings, f.winner, f.reason, f.rounds, tuple(self.out_round), tuple(self.forfeited), stats))

    def _check_stats(self, at: Position, stats: tuple[wire.SeatStats, ...]) -> None:
        """Decision counts and fault counts follow from the events; latencies are bounded by
        them (a fault's waiting time counts but is not logged, so only without faults are
        the sums exact)."""
        if len(stats) != self.n:
            self._diverge(at, f"statistics for {len(stats)} seats; the match has {self.n}")
        for i, s in enumerate(stats):
            if s.seat != i:
                self._diverge(at, f"seats[{i}].seat is {s.seat}; statistics are listed in seat order")
            if s.decisions != self.decisions[i]:
                self._diverge(at, f"seat {i} made {s.decisions} decisions in the log's footer; its events show {self.decisions[i]}")
            if s.faults != self.faults[i]:
                self._diverge(at, f"seat {i} has {s.faults} faults in the log's footer; its events show {self.faults[i]}")
            exact = self.faults[i] == 0
            if s.total_latency_us < self.latency_sum[i] or (exact and s.total_latency_us != self.latency_sum[i]):
                self._diverge(at, f"seat {i}'s total latency is {s.total_latency_us} µs; its actions add up to {self.latency_sum[i]} µs")
            if s.max_latency_us < self.latency_max[i] or (exact and s.max_latency_us != self.latency_max[i]):
                self._diverge(at, f"seat {i}'s longest decision is {s.max_latency_us} µs; its actions show {self.latency_max[i]} µs")


def _seat_or_none(seat: int | None) -> str:
    return "none" if seat is None else f"seat {seat}"


def build_replay(log: MatchLog, seat: int | None = None, *, steps: bool = True) -> Replay:
    """Replay ``log`` through the game model from ``seat``'s point of view (None: omniscient).

    Never raises for a log that disagrees with the model: the replay stops there and
    :attr:`Replay.divergence` says where and why. Raises :class:`~referee.faults.LogError`
    for a value that cannot be read at all (a card that is not a card), and ``ValueError``
    for a seat the match does not have. ``steps=False`` only verifies (faster).
    """
    if seat is not None and not 0 <= seat < log.header.players:
        raise ValueError(f"seat {seat} is not a seat of this {log.header.players}-player match (seats 0 to {log.header.players - 1})")
    return _Replayer(log, seat, steps).run()


__all__ = [
    "ActionStep",
    "DealStep",
    "Divergence",
    "FaultStep",
    "ForfeitStep",
    "LifeLoss",
    "LossReason",
    "Position",
    "Replay",
    "RestockStep",
    "ResultStep",
    "RoundEndStep",
    "SeatHand",
    "Step",
    "ThirtyOneStep",
    "build_replay",
    "describe_event",
    "load_log",
]
