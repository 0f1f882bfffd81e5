"""The replay model: a match log re-simulated through the game model, as a list of steps.

:func:`build_replay` walks a parsed log (:func:`referee.log.read_log`) with
:func:`referee.log.walk_log`, the one re-simulation of a log in the code base: a
:class:`~referee.game.Match` whose only cards are the log's own deals and restocks (never the
seed) is fed every logged action, fault and forfeit, and every line is checked; the first
disagreement stops the walk and becomes a :class:`Divergence` naming the line, the round, the
turn and the event. This module only listens to that walk (a
:class:`~referee.log.LogWatcher`) and turns what agreed into steps.

The steps it produces are plain values for one point of view: the omniscient one (every
hand, every card drawn), or one seat's. A seat's steps hold only what that seat saw during
the match (docs/rules.md, "What a bot sees"): its own hand and draws, taken from
:meth:`~referee.game.Match.observation` at each of its decisions, and public information —
discards, cards taken from the discard pile, knocks, hands shown at a showdown, the 31 hands,
lives and tokens. Renderers never have to filter anything out, so they cannot leak it.

Under the variants (docs/rules.md, "Variants") the public table grows: the widow's three
face-up cards (at the deal and after every step that changes them), a dummy-taker's old hand
lying face up, the dealer's up-card swap (both cards) or pass, a call, and under the pot the
antes, the pot, each seat's net chips and the pot's award. The dummy's cards are nobody's
while face down (only the omniscient view shows them), and once taken they are the taker's
hand, which only the taker sees until a showdown shows it.

Pure: no rich, no printing; only the log file is read, by :mod:`referee.log`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from thirtyone.v1 import log_pb2

from referee import wire
from referee.game import (
    ActionKind,
    ActionRecord,
    Card,
    DealRecord,
    ForfeitRecord,
    Match,
    Record,
    RestockRecord,
    RoundEnd,
    RoundResult,
    hand_value,
)
from referee.game.actions import Action, Phase
from referee.log import (
    Divergence,
    LogWatcher,
    MatchLog,
    Position,
    describe_event,
    read_log,
    walk_log,
)

#: :func:`referee.log.read_log` under the name this package has always exported (it once
#: added the UTF-8 check that ``read_log`` now does itself).
load_log = read_log

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
    #: None in the widow game (docs/rules.md, "Variants"), which has no up-card.
    upcard: Card | None
    stock_size: int
    #: Tokens and who is in, as the round starts.
    tokens: tuple[int, ...]
    in_game: tuple[bool, ...]
    # --- the variants (docs/rules.md, "Variants"); the defaults are the plain game's.
    #: The widow's three face-up cards (``draw="widow"``; public), else empty.
    widow: tuple[Card, ...] = ()
    #: How many cards lie face down in the dummy (3 with ``dummy=true``, else 0).
    dummy_size: int = 0
    #: The dummy's cards, when the viewer may see them (the omniscient view only), else empty.
    dummy: tuple[Card, ...] = ()
    #: Under the pot: per seat, the chips paid into the pot at this deal (0 for a seat out).
    antes: tuple[int, ...] = ()
    #: Under the pot: chips carried from the round before, and the pot after the antes.
    pot_carried: int = 0
    pot: int = 0
    #: Under the pot: per seat, net chips after the antes (public).
    chips: tuple[int, ...] = ()


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
    #: The bot's thinking time for this decision (the referee's measure, in microseconds),
    #: when the viewer may see it: the omniscient view, or the seat's own decisions. None for
    #: an action the referee played after a fault.
    latency_us: int | None = None
    # --- the variants (docs/rules.md, "Variants"); the defaults are the plain game's.
    #: The dealer's option: the action was the dealer's one decision before the first turn
    #: (a ``pass`` then means "keep my hand", a ``swap upcard`` gives ``card`` for ``taken``).
    dealer_option: bool = False
    #: The cards a swap put into the hand, when the viewer may see them: the old up-card (an
    #: up-card swap) or the widow card (a widow swap), both public; the dummy's three cards
    #: (``swap hand``), only for the taker and the omniscient view (None for the others).
    taken: tuple[Card, ...] | None = None
    #: After a ``swap hand``: the taker's old hand, now face up and out of play (public).
    face_up: tuple[Card, ...] = ()
    #: In the widow game: the widow's three cards after the action (public).
    widow: tuple[Card, ...] = ()


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
    #: For a blitz: the kind of action that made it (a discard, or under the variants an
    #: up-card, dummy or widow swap); None for a natural 31.
    by: ActionKind | None = None


class LossReason(Enum):
    """Why a seat lost lives at the end of a round (docs/rules.md: natural 31, blitz, showdown)."""

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
    # --- playing for a pot (docs/rules.md, "Playing for a pot"); public.
    #: The seats that won (share) the pot; empty under lives and when nobody won.
    winners: tuple[int, ...] = ()
    #: Chips in the pot when it was awarded (antes and any carried remainder).
    pot: int = 0
    #: Per seat: chips won this round (empty under lives).
    chips_won: tuple[int, ...] = ()
    #: Chips left in the pot for the next round (what could not be shared).
    carried: int = 0
    #: Per seat: net chips after the round (empty under lives).
    chips_after: tuple[int, ...] = ()
    #: The highest value was tied, so the pot went by card rank (A K Q ... 2).
    high_card_tie_break: bool = False
    # --- public cards of the variants as the round ended.
    #: The widow's three cards (widow game), else empty.
    widow: tuple[Card, ...] = ()
    #: The dummy-taker's old hand, face up (empty when nobody took the dummy).
    face_up: tuple[Card, ...] = ()
    dummy_taker: int | None = None
    #: A dummy nobody took, when the viewer may see it (omniscient only), else empty.
    dummy: tuple[Card, ...] = ()


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
    #: Under the pot: net chips per seat at the end (the placings follow from them), and the
    #: chips left in the pot after the last round, which are nobody's.
    chips: tuple[int, ...] = ()
    pot_left: int = 0


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



# ---------------------------------------------------------------- the steps of a walk


class _StepBuilder(LogWatcher):
    """Turns what :func:`~referee.log.walk_log` found agreeing into steps for one viewer."""

    def __init__(self, log: MatchLog, viewer: int | None) -> None:
        h = log.header
        self.n = h.players
        self.rules = h.rules
        self.max_strikes = h.max_strikes
        self.viewer = viewer
        self.steps: list[Step] = []
        self.tokens = [h.rules.lives] * self.n
        self.alive = [True] * self.n
        self.out_round: list[int | None] = [None] * self.n
        self.by_forfeit = [False] * self.n
        self.last_actor: int | None = None
        self.last_kind: ActionKind | None = None
        #: The acting seat's cards as the viewer knew them when it decided (None: unseen).
        self.before: tuple[Card, ...] | None = None
        #: Set once the viewer is out of the match: it saw nothing more until the result.
        self.viewer_out = False
        #: The thinking time of the decision being applied (None: not the viewer's to see).
        self.latency: int | None = None
        self.pot_game = h.rules.scoring == "pot"
        self.chips = [0] * self.n
        #: The round's public variant cards as the model had them when the seat decided.
        self.widow: tuple[Card, ...] = ()
        self.dummy: tuple[Card, ...] = ()
        self.old_hand: tuple[Card, ...] = ()
        self.option = False
        #: The dummy as dealt this round (shown at the end, omniscient only, if nobody took it).
        self.dealt_dummy: tuple[Card, ...] = ()

    def _sees(self, seat: int) -> bool:
        """Whether the viewer may see ``seat``'s cards (its own, or everyone's when omniscient)."""
        return self.viewer is None or self.viewer == seat

    def _hand(self, seat: int, cards: Sequence[Card]) -> SeatHand:
        value = hand_value(tuple(cards), self.rules) if len(cards) == 3 else None
        return SeatHand(seat, tuple(cards), value)

    def _add(self, step: Step) -> None:
        if not self.viewer_out or isinstance(step, ResultStep):
            self.steps.append(step)

    # ------------------------------------------------------------ inputs: actions, faults, forfeits

    def deciding(self, at: Position, match: Match, record: ActionRecord, event: log_pb2.ActionEvent) -> None:
        # The viewer's knowledge of its own hand comes from its observation at the decision.
        seat = record.seat
        if self.viewer is None:
            self.before = match.hand(seat)
        elif self.viewer == seat:
            self.before = match.observation(seat).hand
        else:
            self.before = None
        self.latency = event.latency_us if self._sees(seat) and not event.by_referee else None
        # What the variants' actions change (read here: once applied, the round may be over).
        self.option = match.phase is Phase.DEALER_OPTION
        self.widow = tuple(match.widow)
        self.dummy = tuple(match.dummy)
        self.old_hand = match.hand(seat)

    def acted(self, at: Position, match: Match, record: ActionRecord, by_referee: bool) -> None:
        seat, kind = record.seat, record.action.kind
        self.last_actor = seat
        self.last_kind = kind
        card = record.card if (kind is not ActionKind.DRAW_STOCK or self._sees(seat)) else None
        taken: tuple[Card, ...] | None = None
        face_up: tuple[Card, ...] = ()
        widow = self.widow
        if kind in (ActionKind.SWAP_UPCARD, ActionKind.SWAP_WIDOW):
            # Public exchanges: both cards are seen by everyone.
            assert record.card is not None and record.taken_card is not None
            taken = (record.taken_card,)
            if kind is ActionKind.SWAP_WIDOW:
                widow = tuple(record.card if c == record.taken_card else c for c in widow)
        elif kind is ActionKind.SWAP_HAND:
            # The old hand goes face up for everyone; the dummy's cards are the taker's.
            face_up = self.old_hand
            taken = self.dummy if self._sees(seat) else None
        hand: SeatHand | None = None
        before = self.before
        if before is not None:
            if kind in (ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD):
                assert record.card is not None
                after = (*before, record.card)
            elif kind is ActionKind.DISCARD:
                after = tuple(c for c in before if c != record.card)
            elif kind in (ActionKind.SWAP_UPCARD, ActionKind.SWAP_WIDOW):
                after = tuple(record.taken_card if c == record.card else c for c in before)  # type: ignore[misc]
            elif kind is ActionKind.SWAP_HAND:
                after = self.dummy
            else:
                after = before
            hand = self._hand(seat, after)
        self._add(
            ActionStep(
                at,
                seat,
                record.action,
                card,
                by_referee and self._sees(seat),
                hand,
                self.latency,
                dealer_option=self.option,
                taken=taken,
                face_up=face_up,
                widow=widow,
            )
        )

    def faulted(self, at: Position, fault: wire.FaultInfo) -> None:
        if self._sees(fault.seat):
            self._add(FaultStep(at, fault, self.max_strikes))

    def forfeited(self, at: Position, record: ForfeitRecord, hand: tuple[Card, ...]) -> None:
        seat = record.seat
        self.alive[seat] = False
        self.by_forfeit[seat] = True
        self.out_round[seat] = at.round_no
        own = self._sees(seat)
        self._add(ForfeitStep(at, seat, record.reason if own else None, hand if own else None))
        if seat == self.viewer:
            self.viewer_out = True

    # ------------------------------------------------------------ outputs the model produced

    def produced(self, at: Position, kind: str, record: Record, match: Match) -> None:
        rec = record
        if isinstance(rec, DealRecord):
            order = [s for s in range(rec.dealer + 1, self.n) if rec.hands[s]] + [
                s for s in range(rec.dealer + 1) if rec.hands[s]
            ]
            if kind != "deal":
                return  # the antes' line: the deal's step holds them already
            hands = tuple(self._hand(s, rec.hands[s]) for s in order if self._sees(s))
            stock = 0 if rec.widow else len(rec.deck) - 3 * len(order) - len(rec.dummy) - 1
            if rec.antes:
                self.chips = [c - a for c, a in zip(self.chips, rec.antes, strict=True)]
            self.dealt_dummy = rec.dummy
            self._add(
                DealStep(
                    at,
                    rec.dealer,
                    hands,
                    rec.upcard,
                    stock,
                    tuple(self.tokens),
                    tuple(self.alive),
                    widow=rec.widow,
                    dummy_size=len(rec.dummy),
                    dummy=rec.dummy if self.viewer is None else (),
                    antes=rec.antes,
                    pot_carried=rec.pot_carried,
                    pot=rec.pot,
                    chips=tuple(self.chips) if self.pot_game else (),
                )
            )
        elif isinstance(rec, RestockRecord):
            top = match.pile[-1] if match.pile and match.round_no == rec.round_no else None
            self._add(RestockStep(at, match.current, rec.number, len(rec.stock), top))
        elif isinstance(rec, RoundResult):
            if kind == "thirty_one":
                hands = tuple(self._hand(s, rec.hands[s]) for s in rec.thirty_one)
                natural = rec.end is RoundEnd.NATURAL_31
                self._add(ThirtyOneStep(at, rec.thirty_one, natural, hands, None if natural else self.last_kind))
            elif kind == "round_end":
                self._round_end(at, rec)
            # The pot's award line: the round end's step holds the award.

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
                winners=r.winners,
                pot=r.pot,
                chips_won=r.chips_won,
                carried=r.carried,
                chips_after=r.chips_after,
                high_card_tie_break=r.high_card_tie_break,
                widow=r.widow,
                face_up=r.face_up,
                dummy_taker=r.dummy_taker,
                dummy=self.dealt_dummy if self.viewer is None and r.dummy_taker is None else (),
            )
        )
        if r.chips_after:
            self.chips = list(r.chips_after)
        self.last_actor = None
        if self.viewer is not None and self.viewer in r.eliminated:
            self.viewer_out = True

    # ------------------------------------------------------------ the footer

    def finished(self, at: Position, footer: wire.LogFooterInfo, match: Match | None) -> None:
        # Decision statistics are the referee's: only in the omniscient view of a match that
        # was dealt.
        stats = footer.stats if self.viewer is None and match is not None else None
        f = footer
        chips = tuple(match.chips) if self.pot_game and match is not None else ()
        pot_left = match.pot if self.pot_game and match is not None else 0
        step = ResultStep(at, f.placings, f.winner, f.reason, f.rounds, tuple(self.out_round), tuple(self.by_forfeit), stats, chips, pot_left)
        self._add(step)


def build_replay(log: MatchLog, seat: int | None = None, *, steps: bool = True) -> Replay:
    """Replay ``log`` through the game model from ``seat``'s point of view (None: omniscient).

    Never raises for a log that disagrees with the model: the replay stops there and
    :attr:`Replay.divergence` says where and why. Raises :class:`~referee.faults.LogError`
    for a value that cannot be read at all (a card that is not a card), and ``ValueError``
    for a seat the match does not have. ``steps=False`` only verifies (faster).
    """
    if seat is not None and not 0 <= seat < log.header.players:
        raise ValueError(f"seat {seat} is not a seat of this {log.header.players}-player match (seats 0 to {log.header.players - 1})")
    builder = _StepBuilder(log, seat) if steps else None
    walk = walk_log(log, builder)
    return Replay(
        path=log.path,
        header=log.header,
        viewer=seat,
        steps=tuple(builder.steps) if builder is not None else (),
        divergence=walk.divergence,
        complete=log.complete,
        last=walk.last,
        rounds=walk.rounds,
        notes=walk.notes,
    )


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
