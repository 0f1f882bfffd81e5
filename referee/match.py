"""Plays one match between bots: time control, the fault policy, the log, the result.

The referee is the authority. It holds the game model (:class:`~referee.game.Match`, seeded),
asks the seat to move for each decision (:class:`SeatConnection`: the bot's Play stream, or
an in-memory seat in tests) with a deadline, validates the answer once (``why_illegal``) and
applies it on the fast path (``apply_unchecked``). A bot that times out, crashes, answers
garbage or plays an illegal action commits a fault (:mod:`referee.faults`); the fault policy
decides what follows, and the match always goes on for the others. The seat speaks the
referee's own types (an observation in, an action out); the Play stream converts to and from
protobuf (:mod:`referee.wire`), so nothing here builds a wire message.

Time control (:class:`~referee.timecontrol.TimeControl`): every request carries the
decision's budget and the seat's bank left. The seat times each decision on a monotonic
clock from just before it writes the request to the answer's arrival; time beyond the
budget is taken from the bank; a decision still unanswered after budget + bank left + grace
is a TIMEOUT, and the bank is then empty. The grace is for transport delay, not thinking: an
answer past budget + bank left that arrives inside the grace is *late*. It empties the bank
and is counted (``late`` in the log's action line and in the seat's statistics); under
``strict`` it is a LATE fault. The arithmetic is :class:`MatchPolicy`'s, pure and clockless.

Fault policy ``lenient`` (default): the referee records the fault, plays a safe default
action for that decision (:func:`default_action`) and counts a strike; the seat forfeits at
its ``max_strikes``-th fault, or at once on a fatal fault (a CRASH, or a message so large
that gRPC closed the stream). A late answer is played, and counted, but is no fault.
``strict``: a late answer is a fault, and the first fault forfeits. A forfeited seat leaves
the match at once (its hand is dead) and is placed below every seat still in.

Entry points: :func:`play_match` plays with bots already started (a tournament reuses them
across matches); :func:`run_match_async` / :func:`run_match` start the bots, play, and
stop them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import os
import secrets
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from thirtyone.v1 import log_pb2

from referee import __version__, wire
from referee.bots import Answer, BotSpec, Launcher, close_bots, start_bots
from referee.bots.client import FINISH_TIMEOUT_S, STARTUP_TIMEOUT_S
from referee.faults import BotFault, IllegalFault, LateFault, TimeoutFault
from referee.game import (
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    Action,
    ActionKind,
    ActionRecord,
    Card,
    DealRecord,
    ForfeitRecord,
    Match,
    MatchEnd,
    Observation,
    Phase,
    Record,
    RestockRecord,
    RoundResult,
    Rules,
    hand_value,
)
from referee.log import LogWriter, schema_version_for
from referee.text import plural
from referee.timecontrol import TimeControl

#: Faults after which a seat forfeits under the lenient policy.
DEFAULT_MAX_STRIKES = 3
#: Time bots get to end their streams when a match is aborted, in seconds.
ABORT_FINISH_TIMEOUT_S = 0.5
#: How much of each bot's latest output a match outcome carries, in characters.
OUTPUT_TAIL_CHARS = 2000


class SeatConnection(Protocol):
    """One seat's line to its bot for one match, in the referee's own types: the Play stream
    (:class:`referee.bots.SeatStream`) or an in-memory seat (:mod:`referee.bots.memory`)."""

    async def start(self, info: wire.MatchInfo) -> None:
        """Open the line and send ``match_start``."""
        ...

    async def decide(
        self,
        observation: Observation,
        decision_id: int,
        budget_ms: int,
        bank_ms: int,
        timeout_s: float,
        while_waiting: Callable[[], None] | None = None,
    ) -> Answer:
        """Ask one decision (telling the bot its budget and bank left), running
        ``while_waiting`` once the request is out; raise a :class:`~referee.faults.BotFault`
        (with the time waited) if no usable answer comes within ``timeout_s``."""
        ...

    async def finish(self, result: wire.MatchResult, timeout_s: float = ..., wait: bool = ...) -> None:
        """Send ``match_end`` and close the line (``wait=False``: without waiting for the bot
        to hang up)."""
        ...

    def abort(self) -> None:
        """Drop the line at once."""
        ...


class Player(Protocol):
    """A bot that can take seats (:class:`referee.bots.BotHandle`)."""

    @property
    def label(self) -> str:
        """The name shown to people."""
        ...

    @property
    def source(self) -> str:
        """How the bot was named to the referee."""
        ...

    @property
    def identity(self) -> wire.BotIdentity:
        """What the bot says it is."""
        ...

    def open_seat(self) -> SeatConnection:
        """A new line for one seat of one match."""
        ...


@dataclass(frozen=True, slots=True)
class MatchConfig:
    """How matches are played, apart from who plays and the seed: one per tournament."""

    rules: Rules = field(default_factory=Rules)
    time_control: TimeControl = field(default_factory=TimeControl)
    fault_policy: wire.FaultPolicyName = "lenient"
    #: Faults after which a seat forfeits under ``lenient`` (``strict`` always uses 1).
    max_strikes: int = DEFAULT_MAX_STRIKES

    def __post_init__(self) -> None:
        if self.fault_policy not in ("lenient", "strict"):
            raise ValueError(f"fault policy must be 'lenient' or 'strict', got {self.fault_policy!r}")
        if isinstance(self.max_strikes, bool) or not isinstance(self.max_strikes, int) or self.max_strikes < 1:
            raise ValueError(f"max strikes must be a whole number of at least 1, got {self.max_strikes!r}")

    @property
    def effective_max_strikes(self) -> int:
        """The strikes that forfeit a seat under this policy (1 under ``strict``)."""
        return 1 if self.fault_policy == "strict" else self.max_strikes

    def policy(self) -> MatchPolicy:
        """The time control and fault policy as arithmetic (:class:`MatchPolicy`)."""
        tc = self.time_control
        return MatchPolicy(
            tc.budget_ms * 1_000_000, tc.grace_ms * 1_000_000, self.effective_max_strikes, self.fault_policy == "strict"
        )


class Charge(NamedTuple):
    """What one answer's time does to its seat's bank."""

    bank_left_ns: int
    #: Past the budget by more than the bank had left (inside the grace, or it would not
    #: have been taken): the bank is then empty.
    late: bool


@dataclass(frozen=True, slots=True)
class MatchPolicy:
    """The time control and the fault policy of a match as pure arithmetic: no clock, no I/O.

    The match loop asks it what a decision's deadline is, what an answer's time costs, and
    whether a fault forfeits; tests can ask it too, with any figures.
    """

    budget_ns: int
    grace_ns: int
    #: Faults that forfeit a seat (1 under ``strict``).
    max_strikes: int
    #: Whether a late answer is a fault (the ``strict`` policy) rather than only counted.
    strict: bool

    def deadline_ns(self, bank_ns: int) -> int:
        """How long a seat with ``bank_ns`` left may take before its answer is a timeout."""
        return self.budget_ns + bank_ns + self.grace_ns

    def charge(self, bank_ns: int, took_ns: int) -> Charge:
        """The bank left after an answer (or a fault) that took ``took_ns``: time past the
        budget comes off the bank; time past the bank is late, and never charged beyond it."""
        over = took_ns - self.budget_ns
        if over <= 0:
            return Charge(bank_ns, False)
        if over <= bank_ns:
            return Charge(bank_ns - over, False)
        return Charge(0, True)

    def forfeits(self, fault: BotFault, strike: int) -> bool:
        """Whether ``fault``, the seat's ``strike``-th, makes it forfeit."""
        return fault.fatal or strike >= self.max_strikes


@dataclass(frozen=True, slots=True)
class SeatOutcome:
    """How one seat fared."""

    seat: int
    label: str
    identity: wire.BotIdentity
    source: str
    placing: int
    forfeited: bool
    faults: tuple[wire.FaultInfo, ...]
    stats: wire.SeatStats
    bank_left_ms: int

    @property
    def late(self) -> int:
        """Answers past the budget that the bank did not cover (inside the grace)."""
        return self.stats.late


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """The result of one match, with everything a summary or a tournament needs."""

    match_id: str
    seed: int
    rules: Rules
    time_control: TimeControl
    fault_policy: wire.FaultPolicyName
    max_strikes: int
    #: Per seat: 1 is best, shared placings ranked 1, 2, 2, 4.
    placings: tuple[int, ...]
    winner: int | None
    reason: wire.MatchEndReasonName
    rounds: tuple[RoundResult, ...]
    seats: tuple[SeatOutcome, ...]
    #: Every fault, in the order they happened.
    faults: tuple[wire.FaultInfo, ...]
    log_path: Path | None
    duration_s: float
    #: Per seat, the end of what the bot wrote on stdout/stderr (when the referee started it).
    output_tails: tuple[str, ...] = ()
    #: Under ``scoring="pot"``: net chips per seat at the end (may be negative); empty under
    #: lives.
    chips: tuple[int, ...] = ()
    #: Under ``scoring="pot"``: chips left in the pot after the last round (nobody's).
    pot_left: int = 0

    @property
    def players(self) -> int:
        """Number of seats."""
        return len(self.seats)

    @property
    def decisions(self) -> int:
        """Decisions asked of all seats."""
        return sum(s.stats.decisions for s in self.seats)


def new_seed() -> int:
    """A fresh random match seed (63 bits, so it prints and pastes easily)."""
    return secrets.randbits(63)


def seeded_match_id(seed: int) -> str:
    """The match id of a match played from ``seed``: 16 hex digits, the same for the same seed.

    Bots see the match id (``MatchStart.match_id``) and may seed their own randomness from it,
    as the ``random`` sample bot does; an id that follows from the seed makes the same seed
    replay the same match, bots' choices included. It is a one-way function of the seed
    (HMAC-SHA256 keyed with it), so it tells a bot nothing about the deck that its own cards do
    not: a seed drawn at random (the default, 63 bits) cannot be recovered from it, and a seed
    from a small range could be found from the dealt hand whatever the id says.
    """
    if not 0 <= seed < 2**64:
        raise ValueError(f"a match seed is a whole number from 0 to 2**64-1, got {seed}")
    return hmac.digest(seed.to_bytes(8, "big"), b"thirtyone match id", "sha256")[:8].hex()


def default_action(m: Match) -> Action:
    """The safe legal action the referee plays for a faulty seat: the one that changes the
    seat's hand least, never a knock or a call where anything else is legal.

    At the start of a turn: draw from the stock if legal, else take the discard (else, under
    ``empty_stock=showdown``, pass); never a call under the gun or taking the dummy. After
    drawing: discard the card just drawn if legal (the hand is then as before the turn), else
    the lowest-valued legal card (ties: lowest rank, then suit order c d h s).
    At the dealer's option (``dealer_option``): pass, keeping the hand. In the widow game
    (``draw="widow"``), which has no draw and no pass: knock if legal (the hand stays as it
    is), else the widow swap that leaves the best hand value (ties: the first in the legal
    actions' order, hand card then widow card as dealt).
    """
    legal = m.legal_actions()
    if m.phase is Phase.DEALER_OPTION:
        return PASS
    if m.phase is Phase.TURN_START:
        for a in (DRAW_STOCK, DRAW_DISCARD, PASS):
            if a in legal:
                return a
        if m.rules.draw == "widow":
            if KNOCK in legal:
                return KNOCK
            hand = m.hand(m.current)
            swaps = [a for a in legal if a.kind is ActionKind.SWAP_WIDOW]
            return max(swaps, key=lambda a: _value_after_swap(hand, a, m.rules))
        quiet = [a for a in legal if a.kind not in (ActionKind.KNOCK, ActionKind.CALL, ActionKind.SWAP_HAND)]
        return quiet[0] if quiet else legal[0]
    if m.drawn is not None and DISCARDS[m.drawn] in legal:
        return DISCARDS[m.drawn]

    def key(a: Action) -> tuple[int, int]:
        assert a.card is not None
        return a.card.value, int(a.card)

    return min(legal, key=key)


def _value_after_swap(hand: Sequence[Card], a: Action, rules: Rules) -> float:
    return hand_value([a.widow_card if c == a.card else c for c in hand], rules)  # type: ignore[misc]


_END_NAMES: dict[MatchEnd, wire.MatchEndReasonName] = {
    MatchEnd.LAST_PLAYER: "last_player",
    MatchEnd.MAX_ROUNDS: "max_rounds",
    MatchEnd.POT_ROUNDS: "pot_rounds",
}


class _LazyLines:
    """The log lines of one step's model records, converted only when written."""

    __slots__ = ("by_referee", "decision_id", "dummy", "late", "latency_us", "phase", "records", "turn")

    def __init__(
        self,
        records: Sequence[Record],
        decision_id: int,
        latency_us: int,
        by_referee: bool,
        turn: int,
        phase: Phase | None = None,
        dummy: tuple[Card, ...] = (),
        late: bool = False,
    ) -> None:
        self.records = records
        self.decision_id = decision_id
        self.latency_us = latency_us
        self.by_referee = by_referee
        self.late = late
        # The phase the action was decided in, and the dummy as it lay before it (the cards
        # a SWAP_HAND takes): both gone from the model once the action is applied.
        self.phase = phase
        self.dummy = dummy
        # A restock happens as a turn starts, so the model's turn counter after the step is its turn.
        self.turn = turn

    def add_lines(self, out: list[log_pb2.LogRecord | str]) -> None:
        """Append the step's log lines to ``out``, in order: the lines of every decision and
        deal and round end as their text (printed without building their messages), the
        rarer ones as messages."""
        for rec in self.records:
            if type(rec) is ActionRecord:
                taken = wire.taken_cards(rec, self.dummy) if rec.action.kind >= ActionKind.SWAP_UPCARD else ()
                out.append(
                    wire.action_event_line(
                        rec, self.decision_id, self.latency_us, self.by_referee, self.phase, taken, self.late
                    )
                )
            elif type(rec) is DealRecord:
                out.append(wire.deal_event_line(rec))
                ante = wire.ante_event_to_pb(rec)
                if ante is not None:
                    out.append(ante)
            elif type(rec) is RestockRecord:
                out.append(wire.restock_event_to_pb(rec, self.turn))
            elif type(rec) is ForfeitRecord:
                out.append(wire.forfeit_event_to_pb(rec))
            elif isinstance(rec, RoundResult):
                if rec.thirty_one:
                    out.append(wire.thirty_one_event_to_pb(rec))
                award = wire.pot_award_event_to_pb(rec)
                if award is not None:
                    out.append(award)
                out.append(wire.round_end_event_line(rec))


class _Referee:
    """The state of one match being refereed."""

    def __init__(
        self,
        players: Sequence[Player],
        *,
        seed: int,
        config: MatchConfig,
        writer: LogWriter | None,
        match_id: str,
        on_round: Callable[[RoundResult], None] | None,
    ) -> None:
        n = len(players)
        self.players = players
        self.seed = seed
        self.rules = rules = config.rules
        self.config = config
        self.tc = time_control = config.time_control
        self.policy = config.policy()
        self.writer = writer
        self.match_id = match_id
        self.on_round = on_round
        self.m = Match(n, rules, seed=seed)
        self.conns: list[SeatConnection] = []
        self.bank_ns = [time_control.bank_ms * 1_000_000] * n
        self.faults: list[list[wire.FaultInfo]] = [[] for _ in range(n)]
        self.all_faults: list[wire.FaultInfo] = []
        self.forfeited = [False] * n
        self.decisions = [0] * n
        self.total_us = [0] * n
        self.max_us = [0] * n
        self.late = [0] * n
        self.next_id = 0
        self.header_written = False
        #: Whether the first deal went to the log (a match aborted before has no chips).
        self.dealt = False
        self._pending: list[log_pb2.LogRecord | _LazyLines] = []

    # ---------------------------------------------------------------- the log

    # Log lines are not written the moment their event happens but queued, and written by
    # flush_log() right after the next decision request is sent: converting and encoding the
    # lines (a few microseconds each since referee.protojson) and the write then overlap the
    # bot's thinking instead of delaying the request. A crash of the referee loses at most
    # the events of its last step.

    def _write(self, line: log_pb2.LogRecord) -> None:
        self._pending.append(line)

    def flush_log(self) -> None:
        """Write the queued log lines (one flush)."""
        pending = self._pending
        if pending:
            self._pending = []
            if self.writer is not None:
                lines: list[log_pb2.LogRecord | str] = []
                for item in pending:
                    if isinstance(item, _LazyLines):
                        item.add_lines(lines)
                    else:
                        lines.append(item)
                self.writer.write_many(lines)

    def _record(
        self,
        records: Sequence[Record],
        decision_id: int = 0,
        latency_us: int = 0,
        by_referee: bool = False,
        phase: Phase | None = None,
        dummy: tuple[Card, ...] = (),
        late: bool = False,
    ) -> None:
        """Queue the model's records of one step for the log (and report finished rounds);
        ``phase`` and ``dummy`` are the model's before an action (see :class:`_LazyLines`)."""
        if self.writer is not None:
            self._pending.append(
                _LazyLines(records, decision_id, latency_us, by_referee, self.m.turn, phase, dummy, late)
            )
        if self.on_round is not None:
            for rec in records:
                if isinstance(rec, RoundResult):
                    self.on_round(rec)

    def _header(self) -> log_pb2.LogRecord:
        return wire.log_header_to_pb(
            wire.LogHeaderInfo(
                schema_version=schema_version_for(self.rules),
                software_version=__version__,
                protocol_version=wire.PROTOCOL_VERSION,
                match_id=self.match_id,
                seed=self.seed,
                players=len(self.players),
                rules=self.rules,
                time_control=self.tc,
                seats=tuple(wire.SeatInfo(s, p.identity, p.source, p.label) for s, p in enumerate(self.players)),
                fault_policy=self.config.fault_policy,
                max_strikes=self.policy.max_strikes,
            )
        )

    def stats(self, seat: int) -> wire.SeatStats:
        """A seat's decision statistics so far."""
        return wire.SeatStats(
            seat, self.decisions[seat], self.total_us[seat], self.max_us[seat], len(self.faults[seat]), self.late[seat]
        )

    # ---------------------------------------------------------------- playing

    async def run(self) -> wire.MatchEndReasonName:
        """Play the match to its end; on any exception (Ctrl-C included) close it as aborted."""
        m = self.m
        try:
            self._write(self._header())
            self.flush_log()
            self.header_written = True
            n = len(self.players)
            self.conns = [p.open_seat() for p in self.players]
            await asyncio.gather(
                *(conn.start(wire.MatchInfo(self.match_id, s, n, self.rules, self.tc)) for s, conn in enumerate(self.conns))
            )
            self._record(m.take_records())
            self.dealt = True
            while not m.is_over:
                await self._decide()
        except BaseException:
            await self._close("aborted", ABORT_FINISH_TIMEOUT_S)
            raise
        assert m.end is not None
        reason = _END_NAMES[m.end]
        await self._close(reason)
        return reason

    async def _decide(self) -> None:
        m = self.m
        seat = m.current
        self.next_id += 1
        did = self.next_id
        round_no, turn = m.round_no, m.turn
        bank = self.bank_ns[seat]
        policy = self.policy
        try:
            answer = await self.conns[seat].decide(
                m.observation(seat), did, self.tc.budget_ms, bank // 1_000_000, policy.deadline_ns(bank) / 1e9, self.flush_log
            )
        except BotFault as fault:
            waited = fault.waited_ns
            self.bank_ns[seat] = 0 if isinstance(fault, TimeoutFault) else policy.charge(bank, waited).bank_left_ns
            self._count(seat, waited)
            self._fault(seat, did, round_no, turn, fault)
            return
        latency = answer.latency_ns
        # The grace is never charged: an answer inside it empties the bank, no more.
        self.bank_ns[seat], late = policy.charge(bank, latency)
        self._count(seat, latency)
        if late and policy.strict:
            self.late[seat] += 1
            self._fault(seat, did, round_no, turn, LateFault(self._late_message(latency, bank)))
            return
        action = answer.action
        reason = m.why_illegal(action)
        if reason is not None:
            # Its lateness is not counted: the action the log shows is the referee's.
            self._fault(seat, did, round_no, turn, IllegalFault(f"illegal action {action}: {reason}"))
            return
        if late:
            self.late[seat] += 1
        phase, dummy = m.phase, tuple(m.dummy)
        m.apply_unchecked(action)
        self._record(m.take_records(), did, latency // 1000, phase=phase, dummy=dummy, late=late)

    def _late_message(self, latency_ns: int, bank_ns: int) -> str:
        tc = self.tc
        bank = f"and the {bank_ns / 1e6:.0f} ms left in its time bank" if bank_ns else "with no time bank left"
        return (
            f"answered after {latency_ns / 1e6:.0f} ms, past its {tc.budget_ms} ms budget {bank}: "
            f"the {tc.grace_ms} ms grace is for transport delay, not thinking"
        )

    def _count(self, seat: int, latency_ns: int) -> None:
        us = latency_ns // 1000
        self.decisions[seat] += 1
        self.total_us[seat] += us
        if us > self.max_us[seat]:
            self.max_us[seat] = us

    def _fault(self, seat: int, decision_id: int, round_no: int, turn: int, fault: BotFault) -> None:
        m = self.m
        strike = len(self.faults[seat]) + 1
        forfeit = self.policy.forfeits(fault, strike)
        action = None if forfeit else default_action(m)
        info = wire.FaultInfo(fault.kind, seat, round_no, turn, decision_id, fault.message, strike, forfeit, action)
        self.faults[seat].append(info)
        self.all_faults.append(info)
        self._write(wire.fault_event_to_pb(info))
        if action is not None:
            phase, dummy = m.phase, tuple(m.dummy)
            m.apply_unchecked(action)
            self._record(m.take_records(), decision_id, 0, by_referee=True, phase=phase, dummy=dummy)
            return
        if fault.fatal:
            self.conns[seat].abort()
        self.forfeited[seat] = True
        m.forfeit(seat, self._forfeit_reason(seat, fault))
        self._record(m.take_records())

    def _forfeit_reason(self, seat: int, fault: BotFault) -> str:
        if fault.fatal:
            return f"{fault.kind}: {fault.message}"
        if self.policy.strict:
            return f"first fault under the strict policy: {fault.kind}"
        return f"{plural(len(self.faults[seat]), 'strike')}: " + ", ".join(f.kind for f in self.faults[seat])

    def chips(self) -> tuple[tuple[int, ...], int]:
        """Net chips per seat and the chips left in the pot (``scoring="pot"``; else ``()``
        and 0); before the first deal reached the log, nobody has paid anything."""
        if self.rules.scoring != "pot":
            return (), 0
        if not self.dealt:
            return (0,) * len(self.players), 0
        return tuple(self.m.chips), self.m.pot

    async def _close(self, reason: wire.MatchEndReasonName, finish_timeout_s: float | None = None) -> None:
        """Write the footer and tell every bot the match is over (best effort when aborting)."""
        m = self.m
        placings = tuple(m.placings)
        chips, pot_left = self.chips()
        if self.header_written:
            footer = wire.LogFooterInfo(
                placings=placings,
                winner=m.winner,
                reason=reason,
                rounds=m.round_no,
                stats=tuple(self.stats(s) for s in range(len(self.players))),
                chips=chips,
                pot_left=pot_left,
            )
            try:
                self._write(wire.log_footer_to_pb(footer))
                self.flush_log()
            except OSError:
                if reason != "aborted":
                    raise
        ends = []
        for s, conn in enumerate(self.conns):
            result = wire.MatchResult(self.match_id, placings, placings[s], reason, tuple(self.faults[s]), chips)
            if finish_timeout_s is None:
                ends.append(conn.finish(result, FINISH_TIMEOUT_S, wait=False))
            else:
                ends.append(conn.finish(result, finish_timeout_s))
        await asyncio.gather(*ends, return_exceptions=True)

    def outcome(
        self, reason: wire.MatchEndReasonName, log_path: Path | None, duration_s: float
    ) -> MatchOutcome:
        """The match's outcome once :meth:`run` has returned ``reason``."""
        m = self.m
        config = self.config
        placings = tuple(m.placings)
        seats = tuple(
            SeatOutcome(
                seat=s,
                label=p.label,
                identity=p.identity,
                source=p.source,
                placing=placings[s],
                forfeited=self.forfeited[s],
                faults=tuple(self.faults[s]),
                stats=self.stats(s),
                bank_left_ms=self.bank_ns[s] // 1_000_000,
            )
            for s, p in enumerate(self.players)
        )
        chips, pot_left = self.chips()
        return MatchOutcome(
            match_id=self.match_id,
            seed=self.seed,
            rules=config.rules,
            time_control=config.time_control,
            fault_policy=config.fault_policy,
            max_strikes=self.policy.max_strikes,
            placings=placings,
            winner=m.winner,
            reason=reason,
            rounds=tuple(m.rounds),
            seats=seats,
            faults=tuple(self.all_faults),
            log_path=log_path,
            duration_s=duration_s,
            chips=chips,
            pot_left=pot_left,
        )


async def play_match(
    players: Sequence[Player],
    *,
    seed: int,
    config: MatchConfig | None = None,
    log_path: str | os.PathLike[str] | None = None,
    match_id: str | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
) -> MatchOutcome:
    """Play one match between ``players`` (seat ``i`` is ``players[i]``, bots already started).

    The same player may take several seats, and a player may play any number of matches
    (one Play stream per seat and match). The match id defaults to :func:`seeded_match_id`,
    so the same seed and bots play the same match. Writes the log to ``log_path`` if given;
    ``on_round`` is called after each round. Bot faults never raise: they are recorded in
    the outcome and the log. Cancelling the task (Ctrl-C) closes the log with an ABORTED
    footer and tells the bots, then re-raises.
    """
    config = config or MatchConfig()
    match_id = match_id or seeded_match_id(seed)
    started = time.monotonic()
    writer = LogWriter(log_path) if log_path is not None else None
    try:
        ref = _Referee(players, seed=seed, config=config, writer=writer, match_id=match_id, on_round=on_round)
        reason = await ref.run()
    finally:
        if writer is not None:
            writer.close()
    return ref.outcome(reason, writer.path if writer is not None else None, time.monotonic() - started)


async def run_match_async(
    bots: Sequence[str | BotSpec],
    *,
    seed: int | None = None,
    config: MatchConfig | None = None,
    log_path: str | os.PathLike[str] | None = None,
    match_id: str | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    launcher: Launcher | None = None,
    handle_sigterm: bool = False,
) -> MatchOutcome:
    """Start ``bots`` (names as :func:`referee.bots.parse_bot_spec` reads them), play one
    match (:func:`play_match`; a random seed if none is given), and stop the bots.

    With ``handle_sigterm`` a SIGTERM cancels the match as Ctrl-C does, so the log gets its
    footer and the bots are stopped.
    """
    loop = asyncio.get_running_loop()
    if handle_sigterm:
        task = asyncio.current_task()
        assert task is not None
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        handles = await start_bots(bots, startup_timeout_s=startup_timeout_s, launcher=launcher)
        try:
            outcome = await play_match(
                handles,
                seed=new_seed() if seed is None else seed,
                config=config,
                log_path=log_path,
                match_id=match_id,
                on_round=on_round,
            )
        finally:
            await close_bots(handles)
        # Read after closing: a bot that crashed has had its last words read by then.
        tails = tuple(h.process.output_tail(OUTPUT_TAIL_CHARS) if h.process is not None else "" for h in handles)
        return dataclasses.replace(outcome, output_tails=tails)
    finally:
        if handle_sigterm:
            loop.remove_signal_handler(signal.SIGTERM)


def run_match(
    bots: Sequence[str | BotSpec],
    *,
    seed: int | None = None,
    config: MatchConfig | None = None,
    log_path: str | os.PathLike[str] | None = None,
    match_id: str | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    launcher: Launcher | None = None,
) -> MatchOutcome:
    """:func:`run_match_async` in a fresh event loop, for callers outside one."""
    with asyncio.Runner() as runner:
        return runner.run(
            run_match_async(
                bots,
                seed=seed,
                config=config,
                log_path=log_path,
                match_id=match_id,
                startup_timeout_s=startup_timeout_s,
                launcher=launcher,
            )
        )
