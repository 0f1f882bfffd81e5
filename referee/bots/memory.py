"""An in-memory seat: a Python callable plays a seat of a real match, on a clock the caller owns.

:class:`MemoryPlayer` is a :class:`~referee.match.Player` whose seats (:class:`MemorySeat`)
call a function instead of a bot process: the match loop, the time control, the fault
policy and the log are the referee's own (:func:`referee.match.play_match`), with no process,
no gRPC and no waiting. A bot function is told what a bot is told (the observation, its
budget and its bank left, in milliseconds) and returns an action, or a :class:`Reply` that
says how long it "took": the seat moves its :class:`ManualClock` by that much and reports it
as the answer's latency, so a bot can take 300 ms without sleeping, and a test of the bank
or the strikes is exact. A reply that takes longer than the decision's deadline (or has no
action) is a timeout, as over the wire; a bot function may also raise a
:class:`~referee.faults.BotFault` (a :class:`~referee.faults.CrashFault`, say) to misbehave.

This is python-chess's ``MockTransport`` idea: the protocol tested without a transport.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from referee import wire
from referee.bots.client import Answer
from referee.faults import BotFault, TimeoutFault
from referee.game import Action, Observation


class ManualClock:
    """A monotonic clock in nanoseconds that moves only when told to."""

    def __init__(self, start_ns: int = 0) -> None:
        self.now_ns = start_ns

    def advance(self, ns: int) -> None:
        """Move the clock ``ns`` nanoseconds on (never back)."""
        if ns < 0:
            raise ValueError(f"a clock does not go back: advance({ns})")
        self.now_ns += ns

    def __call__(self) -> int:
        """The time now, in nanoseconds."""
        return self.now_ns


class Reply(NamedTuple):
    """What an in-memory bot does with one decision."""

    #: The answer; None: the bot never answers (the decision times out).
    action: Action | None
    #: How long the bot takes to answer, in milliseconds of the seat's clock.
    took_ms: float = 0.0


#: An in-memory bot: given the observation, its budget and its bank left (ms), it answers.
MemoryBot = Callable[[Observation, int, int], "Reply | Action"]


def first_legal(observation: Observation, budget_ms: int, bank_ms: int) -> Action:
    """The in-memory bot that plays the first legal action at once."""
    return observation.legal_actions[0]


def answering_in(took_ms: float, bot: MemoryBot = first_legal) -> MemoryBot:
    """``bot``, taking ``took_ms`` over every answer."""

    def slow(observation: Observation, budget_ms: int, bank_ms: int) -> Reply:
        reply = bot(observation, budget_ms, bank_ms)
        action = reply.action if isinstance(reply, Reply) else reply
        return Reply(action, took_ms)

    return slow


@dataclass(frozen=True, slots=True)
class Asked:
    """One decision as the seat was asked it."""

    decision_id: int
    budget_ms: int
    bank_ms: int
    timeout_s: float


@dataclass(slots=True)
class MemorySeat:
    """One seat of one match played by a :class:`MemoryPlayer`'s function."""

    player: MemoryPlayer
    #: The match start it got, once it has.
    info: wire.MatchInfo | None = None
    #: Every decision asked, in order.
    asked: list[Asked] = field(default_factory=list)
    #: The match end it got, once it has.
    result: wire.MatchResult | None = None
    aborted: bool = False
    #: The fatal fault the bot raised, after which the seat is unusable.
    broken: BotFault | None = None

    async def start(self, info: wire.MatchInfo) -> None:
        """Take ``match_start``."""
        self.info = info

    async def decide(
        self,
        observation: Observation,
        decision_id: int,
        budget_ms: int,
        bank_ms: int,
        timeout_s: float,
        while_waiting: Callable[[], None] | None = None,
    ) -> Answer:
        """Ask the bot function; its reply's time moves the clock and is the latency.

        Raises :class:`TimeoutFault` for a reply past ``timeout_s`` (or without an action),
        after moving the clock by exactly the deadline, and whatever fault the bot raises.
        """
        if self.broken is not None:
            self.broken.waited_ns = 0
            raise self.broken
        self.asked.append(Asked(decision_id, budget_ms, bank_ms, timeout_s))
        if while_waiting is not None:
            while_waiting()
        try:
            reply = self.player.bot(observation, budget_ms, bank_ms)
        except BotFault as fault:
            if fault.fatal:
                self.broken = fault
            raise
        if not isinstance(reply, Reply):
            reply = Reply(reply)
        took_ns = round(reply.took_ms * 1_000_000)
        deadline_ns = round(timeout_s * 1e9)
        clock = self.player.clock
        if reply.action is None or took_ns > deadline_ns:
            clock.advance(deadline_ns)
            raise TimeoutFault(
                f"no answer within {timeout_s * 1000:.0f} ms (budget + time bank left + grace)", waited_ns=deadline_ns
            )
        clock.advance(took_ns)
        return Answer(reply.action, took_ns)

    async def finish(self, result: wire.MatchResult, timeout_s: float = 0.0, wait: bool = True) -> None:
        """Take ``match_end``."""
        self.result = result

    def abort(self) -> None:
        """Drop the seat."""
        self.aborted = True


class MemoryPlayer:
    """A :class:`~referee.match.Player` whose seats call ``bot`` (see the module doc).

    Its seats share ``clock`` (a new :class:`ManualClock` by default); ``seats`` holds every
    seat opened, in order, so a test can read what each was asked and told.
    """

    def __init__(self, bot: MemoryBot = first_legal, *, label: str = "memory", clock: ManualClock | None = None) -> None:
        self.bot = bot
        self._label = label
        self.clock = clock or ManualClock()
        self.seats: list[MemorySeat] = []

    @property
    def label(self) -> str:
        """The name shown to people."""
        return self._label

    @property
    def source(self) -> str:
        """How the bot was named: it is no command."""
        return f"in-memory:{self._label}"

    @property
    def identity(self) -> wire.BotIdentity:
        """What the bot says it is."""
        return wire.BotIdentity(self._label, "1", "in-memory", wire.PROTOCOL_VERSION)

    def open_seat(self) -> MemorySeat:
        """A new seat for one match."""
        seat = MemorySeat(self)
        self.seats.append(seat)
        return seat


__all__ = ["Asked", "ManualClock", "MemoryBot", "MemoryPlayer", "MemorySeat", "Reply", "answering_in", "first_legal"]
