"""Does a bot keep the contract? A check, step by step, like fastchess's ``--compliance``.

:func:`check_bot` starts a bot exactly as the referee would (the same launcher, so the same
sandbox, address and start-up wait), then checks, in order:

1. ``health``: the health service is ready as the referee judges it (SERVING for ``""`` or
   ``thirtyone.v1.BotService``, and the other SERVING or NOT_FOUND); the step says what each
   name answers;
2. ``identity``: GetIdentity answers what the referee accepts before any match (a name, no
   control characters, protocol version 1): the referee's own check, reused;
3. ``match_start``: a Play stream opened with ``match_start`` stays open and quiet;
4. ``decision:KIND``: one decision of each kind in :data:`DECISION_CASES` is answered with a
   legal action within the decision's budget (plus the time bank it was told of). A match
   lets a bot draw on its time bank, but a bot that needs it for ordinary decisions runs out
   of it in a long match; so only the check's first decision may use it (a bot warms up on
   its first move, and a match's first decision has a full bank), unless ``use_bank`` allows
   it everywhere, as a submission does. An answer past that but inside the grace is *late*
   (the grace is for transport delay): it fails the check, and is counted
   (:attr:`CheckResult.late`), as a match counts it;
5. ``two_streams``: two Play streams open at once both get correct answers;
6. ``match_end``: after ``match_end`` and a half-close, the bot ends every stream with OK
   (a stream whose decision timed out is dropped unjudged: the bot may still be thinking,
   and the timeout is already the earlier step's failure);
7. ``sigterm``: the bot's process ends within the referee's stop grace after SIGTERM. Exit
   code 0 or death by SIGTERM itself (128 + 15 counts as that too: shells, the JVM and the
   sandbox report the death so) is the usual ending; another exit code passes as well, with
   the code said (the referee only needs the bot gone: many runtimes' shutdown paths exit 1,
   and nothing of the match depends on it). Only a bot still running at the end of the grace
   fails, as the referee must then kill it. Sandboxed, the signal goes to the bot inside the
   sandbox (:meth:`~referee.bots.process.LocalBotProcess.terminate_bot`), not to bubblewrap.

Each step gives a :class:`CheckResult` (pass, fail, skipped or not run, with the reason) and
:func:`check_bot` returns them all in a :class:`ComplianceReport`. A bot that does not even
start fails step 1 and the rest are "not run"; a bot whose process dies stops the check at
that point the same way. Step 7 is skipped for a bot at an address (not started by us).

The decisions are real: each :class:`DecisionCase` plays the game model from a seeded deal
through a few moves to a position of its kind, and the request is that position's
observation converted by :mod:`referee.wire`, as a match would send it (its decision id is
the one the match would have reached). A later variant with decisions of a new kind adds one
entry to :data:`DECISION_CASES` (and a move or two to reach it); nothing else changes.

No rich, no printing: the CLI (``thirtyone check-bot``) and ``thirtyone submit`` present it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, runtime_checkable

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from thirtyone.v1 import bot_pb2_grpc

from referee import wire
from referee.bots.client import (
    HEALTH_SERVICES,
    STARTUP_TIMEOUT_S,
    BotHandle,
    SeatStream,
    describe_health,
    identify,
    open_channel,
    wait_serving,
)
from referee.bots.process import STOP_GRACE_S, BotProcess, Launcher, LocalLauncher, describe_exit
from referee.bots.spec import BotSpec, parse_bot_spec
from referee.faults import BotError, BotFault, TimeoutFault
from referee.game import (
    CALL,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    SWAP_HAND,
    ActionKind,
    ActionRecord,
    Match,
    Observation,
    Phase,
    Pile,
    Rules,
    discard,
)
from referee.timecontrol import TimeControl

Status = Literal["pass", "fail", "skipped", "not run"]

#: How long a freshly started stream must stay open and quiet (step 3), in seconds.
SETTLE_S = 0.2
#: How long step 1 waits for the second health name to catch up with the first before it
#: reports what each says, in seconds (a server sets the names one after the other).
HEALTH_LAG_S = 0.5
#: Exit statuses that count as "ended on SIGTERM": exit code 0, death by SIGTERM itself, or
#: 128 + SIGTERM, the status by which shells, the JVM and the sandbox report that death.
SIGTERM_EXITS = (0, -signal.SIGTERM, 128 + signal.SIGTERM)


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check."""

    #: Stable identifier, e.g. ``health`` or ``decision:knock_lap`` (for JSON and tests).
    key: str
    #: What is checked, for people, e.g. ``decision: the knock lap``.
    title: str
    status: Status
    #: Why it passed or failed (what the bot did), or why it was skipped or not run.
    reason: str
    elapsed_ms: float = 0.0
    #: Late answers in this check: past the budget and the bank told, inside the grace.
    late: int = 0

    @property
    def ok(self) -> bool:
        """True unless the check failed or could not run."""
        return self.status in ("pass", "skipped")

    def to_dict(self) -> dict[str, object]:
        """The result as plain data (JSON)."""
        return {
            "key": self.key,
            "title": self.title,
            "status": self.status,
            "reason": self.reason,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "late": self.late,
        }


#: How each status is labelled where results are printed (``check-bot``, an arena's report).
STATUS_LABELS: dict[str, str] = {"pass": "PASS", "fail": "FAIL", "skipped": "SKIP", "not run": "----"}
#: The width of the titles' column (the longest title of the standard checks).
TITLE_WIDTH = 42


def result_text(result: CheckResult) -> str:
    """One check as plain text, as ``check-bot`` prints it: ``PASS  decision: turn start  ...``;
    a reason of several lines (a bot's last output) continues indented."""
    first, *more = result.reason.splitlines() or [""]
    lines = [f"{STATUS_LABELS[result.status]}  {result.title:<{TITLE_WIDTH}}  {first}".rstrip()]
    lines += [" " * (TITLE_WIDTH + 8) + extra for extra in more]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class ComplianceReport:
    """Every check's result for one bot, in order."""

    #: The bot as named (its spec's text).
    source: str
    #: Whether the check started the bot (False: a bot at an address).
    launched: bool
    sandboxed: bool
    time_control: TimeControl
    #: What the bot said it is (None if it never said).
    identity: wire.BotIdentity | None
    results: tuple[CheckResult, ...]
    #: The end of what the bot wrote on stdout and stderr (a bot the check started).
    output_tail: str = ""

    @property
    def passed(self) -> bool:
        """True when every check passed or was skipped."""
        return all(r.ok for r in self.results)

    @property
    def late(self) -> int:
        """Late answers over every check (see :attr:`CheckResult.late`)."""
        return sum(r.late for r in self.results)

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The checks that failed (not those that could not run)."""
        return tuple(r for r in self.results if r.status == "fail")

    def to_dict(self) -> dict[str, object]:
        """The report as plain data (JSON)."""
        ident = self.identity
        return {
            "bot": self.source,
            "passed": self.passed,
            "late": self.late,
            "launched": self.launched,
            "sandboxed": self.sandboxed,
            "time_control": {
                "budget_ms": self.time_control.budget_ms,
                "bank_ms": self.time_control.bank_ms,
                "grace_ms": self.time_control.grace_ms,
            },
            "identity": None
            if ident is None
            else {
                "name": ident.name,
                "version": ident.version,
                "author": ident.author,
                "protocol_version": ident.protocol_version,
            },
            "checks": [r.to_dict() for r in self.results],
        }


# ---------------------------------------------------------------- the decisions asked

#: One move on the way to a position: it plays the next action(s) on the match.
Move = Callable[[Match], None]


def draw_stock(m: Match) -> None:
    """The player to move draws from the stock."""
    m.apply(DRAW_STOCK)


def draw_discard(m: Match) -> None:
    """The player to move takes the top discard."""
    m.apply(DRAW_DISCARD)


def throw_drawn(m: Match) -> None:
    """The player discards the card just drawn (the hand is as before: no blitz can follow)."""
    assert m.drawn is not None, "throw_drawn needs a draw first"
    m.apply(discard(m.drawn))


def knock(m: Match) -> None:
    """The player to move knocks."""
    m.apply(KNOCK)


def turns_until_stock_empty(m: Match) -> None:
    """Every player draws from the stock and throws the card back, until the stock is empty."""
    while m.stock and not m.is_over:
        draw_stock(m)
        throw_drawn(m)


class Position(NamedTuple):
    """A position of a real match, ready to be asked of the seat to move."""

    match: Match
    observation: Observation
    #: The decision id the match would send here (1 + the decisions asked before).
    decision_id: int


@dataclass(frozen=True, slots=True)
class DecisionCase:
    """A kind of decision, and how to reach one in a real match.

    The match is dealt from ``seed`` under ``rules`` with ``players`` seats, then ``moves``
    are played; ``claim`` says whether the position reached is of this kind (checked each time,
    so that a change of the rules or a seed that deals otherwise cannot silently test
    something else).
    """

    key: str
    title: str
    players: int
    rules: Rules
    seed: int
    moves: tuple[Move, ...]
    claim: Callable[[Match], bool]
    #: What a bot must get right here, for people (shown when the check fails).
    hint: str = ""
    #: Whether matches under the given rules can ask this kind of decision.
    used_by: Callable[[Rules], bool] = lambda rules: rules.draw == "stock"

    def position(self) -> Position:
        """Play the moves and return the position (AssertionError if it is not of this kind)."""
        m = Match(self.players, self.rules, seed=self.seed)
        for move in self.moves:
            move(m)
        if m.is_over or not self.claim(m):
            raise AssertionError(f"decision case {self.key!r} (seed {self.seed}) did not reach a position of its kind")
        asked = sum(1 for r in m.take_records() if isinstance(r, ActionRecord))
        return Position(m, m.observation(m.current), asked + 1)


def _legal(m: Match) -> frozenset[object]:
    return frozenset(m.legal_actions())


#: The decisions step 4 asks, one check each, in order. Add a kind here (variants: the
#: dealer's option, a call under the gun, the dummy, the widow) and every check-bot run and
#: every submission asks it.
DECISION_CASES: tuple[DecisionCase, ...] = (
    DecisionCase(
        "turn_start",
        "turn start",
        players=2,
        rules=Rules(),
        seed=1,
        moves=(),
        claim=lambda m: m.phase is Phase.TURN_START and _legal(m) == {DRAW_STOCK, DRAW_DISCARD},
    ),
    DecisionCase(
        "discard_after_stock",
        "discard after a stock draw",
        players=2,
        rules=Rules(),
        seed=1,
        moves=(draw_stock,),
        claim=lambda m: m.phase is Phase.DISCARD and m.drawn_from is Pile.STOCK and len(m.legal_actions()) == 4,
    ),
    DecisionCase(
        "discard_after_pile",
        "discard after taking the discard",
        players=2,
        rules=Rules(),
        seed=1,
        moves=(draw_discard,),
        claim=lambda m: m.phase is Phase.DISCARD and m.drawn_from is Pile.DISCARD and len(m.legal_actions()) == 3,
        hint="legal_actions leaves out the card just taken: answer from it",
    ),
    DecisionCase(
        "knock_lap",
        "knock lap",
        players=3,
        rules=Rules(),
        seed=1,
        moves=(draw_stock, throw_drawn, knock),
        claim=lambda m: m.knocker is not None and m.phase is Phase.TURN_START and KNOCK not in m.legal_actions(),
        hint="legal_actions holds no knock in the last lap: answer from it",
    ),
    DecisionCase(
        "empty_stock",
        "empty stock (showdown rule)",
        players=2,
        rules=Rules.preset("pagat"),
        seed=1,
        moves=(turns_until_stock_empty,),
        claim=lambda m: not m.stock and _legal(m) == {DRAW_DISCARD, PASS},
        hint="only draw discard or pass: there is no stock to draw from",
    ),
    # The variants (docs/rules.md, "Variants"): one decision of each kind they add.
    DecisionCase(
        "dealer_option",
        "the dealer's option",
        players=2,
        rules=Rules(dealer_option=True),
        seed=1,
        moves=(),
        claim=lambda m: m.phase is Phase.DEALER_OPTION
        and PASS in m.legal_actions()
        and {a.kind for a in m.legal_actions()} == {ActionKind.PASS, ActionKind.SWAP_UPCARD},
        hint="phase DEALER_OPTION: answer PASS (keep the hand) or a SWAP_UPCARD from legal_actions",
        used_by=lambda rules: rules.dealer_option,
    ),
    DecisionCase(
        "call_first_turn",
        "call under the gun",
        players=3,
        rules=Rules(under_the_gun=True),
        seed=1,
        moves=(),
        claim=lambda m: m.turn == 0 and _legal(m) == {CALL, DRAW_STOCK, DRAW_DISCARD},
        hint="legal_actions holds CALL, a kind of action of its own: answer from it",
        used_by=lambda rules: rules.under_the_gun,
    ),
    DecisionCase(
        "swap_hand",
        "the dummy hand",
        players=3,
        rules=Rules(dummy=True),
        seed=1,
        moves=(draw_stock, throw_drawn),
        claim=lambda m: len(m.dummy) == 3 and SWAP_HAND in m.legal_actions() and KNOCK in m.legal_actions(),
        hint="legal_actions holds SWAP_HAND (no card): answer from it",
        used_by=lambda rules: rules.dummy,
    ),
    DecisionCase(
        "swap_widow",
        "the widow, after a knock",
        players=3,
        rules=Rules.preset("bicycle"),
        seed=1,
        moves=(knock,),
        claim=lambda m: m.knocker is not None
        and len(m.legal_actions()) == 9
        and all(a.kind is ActionKind.SWAP_WIDOW for a in m.legal_actions()),
        hint="no knock and no pass: answer a SWAP_WIDOW from legal_actions, with its card and widow_card",
        used_by=lambda rules: rules.draw == "widow",
    ),
)


def cases_for(rules: Rules | None) -> tuple[DecisionCase, ...]:
    """The decision cases that matches under ``rules`` can ask; every case for ``None``.

    A tournament played under the standard rules has no business refusing a bot that does not
    know the widow; a bicycle tournament asks no discard after a stock draw.
    """
    if rules is None:
        return DECISION_CASES
    return tuple(c for c in DECISION_CASES if c.used_by(rules))


# How the checks word the failures that a match copes with on its own (see is_soft_failure).
_NO_ANSWER = "no answer within "
#: How a late answer's reason starts (an answer past its budget and bank, inside the grace).
LATE_PREFIX = "late: "
_PAST_DEADLINE = " ms deadline"
_NO_EXIT = "still running "


def is_soft_failure(result: CheckResult) -> bool:
    """Whether a failed check is one a match copes with on its own: no answer in time (there a
    timeout fault), a late answer (there counted, a fault under the strict policy) or a bot
    still running after SIGTERM (there killed a second later).

    ``thirtyone check-bot`` fails on them, as an author wants to know; ``submit`` does not
    refuse a bot for them (its validation match judges the bot's timing over a real match,
    bank and fault policy included): a slow answer on a busy machine is not a broken bot.
    """
    if result.status != "fail":
        return False
    if result.key == "sigterm":
        return result.reason.startswith(_NO_EXIT)
    return result.key.startswith("decision:") and (
        result.reason.startswith((_NO_ANSWER, LATE_PREFIX)) or result.reason.endswith(_PAST_DEADLINE)
    )


# ---------------------------------------------------------------- the check


@runtime_checkable
class _Signallable(Protocol):
    def terminate_bot(self) -> bool: ...


class _Stop(Exception):
    """This check failed and the remaining ones cannot run.

    The message is this check's reason; ``rest`` says why the others do not run.
    """

    def __init__(self, reason: str, rest: str) -> None:
        super().__init__(reason)
        self.rest = rest


_StepResult = tuple[Status, str]


class _Checker:
    """One compliance check of one bot: the steps, in order, and what they share."""

    def __init__(
        self,
        spec: BotSpec,
        *,
        time_control: TimeControl,
        startup_timeout_s: float,
        launcher: Launcher,
        cases: Sequence[DecisionCase],
        on_identity: Callable[[wire.BotIdentity], None] | None,
        on_result: Callable[[CheckResult], None] | None,
        use_bank: bool,
    ) -> None:
        if not cases:
            raise ValueError("a compliance check needs at least one decision case")
        self.spec = spec
        self.tc = time_control
        self.startup_timeout_s = startup_timeout_s
        self.launcher = launcher
        self.cases = tuple(cases)
        self.on_identity = on_identity
        self.on_result = on_result
        self.use_bank = use_bank
        # Decisions asked so far (the first may use the time bank: see _ask), and late answers.
        self.asked = 0
        self.late_answers = 0
        self.process: BotProcess | None = None
        self.channel: grpc.aio.Channel | None = None
        self.identity: wire.BotIdentity | None = None
        self.handle: BotHandle | None = None
        self.results: list[CheckResult] = []
        # The stream step 3 opened, for the first decision case.
        self.first_stream: SeatStream | None = None
        # Streams ended so far (step 4 ends each case's), and streams step 6 is to end.
        self.ended: list[tuple[str, BotFault | None]] = []
        # Streams dropped unended: a decision on them had timed out (see _end).
        self.unjudged = 0
        self.to_end: list[tuple[str, SeatStream, wire.MatchResult]] = []
        self.open_streams: list[SeatStream] = []

    # ------------------------------------------------------------ the plan

    def steps(self) -> list[tuple[str, str, Callable[[], Awaitable[_StepResult]]]]:
        """Every check as (key, title, step), in the order they run and print."""

        def decision(case: DecisionCase) -> Callable[[], Awaitable[_StepResult]]:
            return lambda: self.decision(case)

        return [
            ("health", "health service", self.health),
            ("identity", "identity and protocol version", self.check_identity),
            ("match_start", "match start", self.match_start),
            *((f"decision:{c.key}", f"decision: {c.title}", decision(c)) for c in self.cases),
            ("two_streams", "two streams at once", self.two_streams),
            ("match_end", "match end", self.match_end),
            ("sigterm", "exit on SIGTERM", self.sigterm),
        ]

    async def run(self) -> list[CheckResult]:
        """Run every step in order; after a stop, the rest are "not run" with the reason."""
        stopped: str | None = None
        try:
            for key, title, step in self.steps():
                if stopped is not None:
                    self._record(CheckResult(key, title, "not run", stopped))
                    continue
                t0 = time.monotonic()
                late_before = self.late_answers
                try:
                    status, reason = await step()
                except _Stop as e:
                    status, reason = "fail", str(e)
                    stopped = f"not run: {e.rest}"
                late = self.late_answers - late_before
                self._record(CheckResult(key, title, status, reason, (time.monotonic() - t0) * 1000, late))
                if stopped is None and key != "sigterm":
                    stopped = self._process_gone()
        finally:
            await self.cleanup()
        return self.results

    def _record(self, result: CheckResult) -> None:
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result)

    def _process_gone(self) -> str | None:
        """Why the remaining checks cannot run if the bot's process has exited, else None."""
        if self.process is None or (code := self.process.exit_code()) is None:
            return None
        return f"not run: the bot process {describe_exit(code)}"

    async def cleanup(self) -> None:
        """Drop every stream, close the channel, stop the process (and its group)."""
        for stream in self.open_streams:
            stream.abort()
        if self.channel is not None:
            with contextlib.suppress(Exception):
                await self.channel.close(grace=None)
        if self.process is not None:
            await self.process.stop(0.2)

    # ------------------------------------------------------------ helpers

    def _deadline_s(self, bank: bool) -> float:
        """How long a decision may take: its budget plus the grace, plus the whole time bank
        if ``bank`` (as at a match's first decision)."""
        return (self.tc.budget_ms + (self.tc.bank_ms if bank else 0) + self.tc.grace_ms) / 1000

    def _match_info(self, match_id: str, pos: Position) -> wire.MatchInfo:
        m = pos.match
        return wire.MatchInfo(match_id, pos.observation.seat, m.players, m.rules, self.tc)

    async def _open(self, match_id: str, pos: Position) -> SeatStream:
        assert self.handle is not None
        stream = self.handle.open_seat()
        self.open_streams.append(stream)
        await stream.start(self._match_info(match_id, pos))
        return stream

    async def _ask(self, stream: SeatStream, pos: Position) -> tuple[bool, str]:
        """Ask the position's decision on ``stream``: (passed, what happened); a late answer
        is also counted in ``late_answers``.

        The check's first decision may draw on the time bank, as a match's first decision
        may: a bot warms up on its first move (imports, tables), and a match's bank covers
        that. Later ones must fit the budget, unless ``use_bank``; so they tell the bot its bank
        is empty, as a match does once a bot has used it up, and a bot that heeds
        ``time_bank_ms`` is not failed for planning on a bank it was told it has. An answer
        past the budget and the bank told, inside the grace, is late: it fails, as the strict
        policy faults it (the lenient one counts it).
        """
        bank = self.use_bank or self.asked == 0
        self.asked += 1
        deadline_s = self._deadline_s(bank)
        told = self.tc.bank_ms if bank else 0
        try:
            answer = await stream.decide(pos.observation, pos.decision_id, self.tc.budget_ms, told, deadline_s)
        except TimeoutFault:
            banked = f" + {self.tc.bank_ms} ms time bank" if bank else ""
            return False, (
                f"{_NO_ANSWER}{deadline_s * 1000:.0f} ms "
                f"(its budget of {self.tc.budget_ms} ms{banked} + {self.tc.grace_ms} ms grace)"
            )
        except BotFault as fault:
            return False, f"{fault.kind}: {fault.message}"
        ms = answer.latency_ns / 1e6
        why = pos.match.why_illegal(answer.action)
        if why is not None:
            legal = ", ".join(map(str, pos.observation.legal_actions))
            return False, f"illegal action {answer.action}: {why} (legal: {legal})"
        if ms > deadline_s * 1000:  # in time for the wait, over it by the clock
            return False, f"{answer.action} after {ms:.0f} ms, past the {deadline_s * 1000:.0f}{_PAST_DEADLINE}"
        if ms > self.tc.budget_ms + told:
            self.late_answers += 1
            with_bank = f" and its {told} ms time bank" if told else " with no time bank left"
            return False, (
                f"{LATE_PREFIX}{answer.action} after {ms:.0f} ms, past its budget of {self.tc.budget_ms} ms{with_bank}, "
                f"inside the {self.tc.grace_ms} ms grace (for transport delay, not thinking): a match counts it late, "
                "and the strict fault policy forfeits the seat for it"
            )
        if ms > self.tc.budget_ms:
            return True, f"{answer.action} in {ms:.0f} ms ({ms - self.tc.budget_ms:.0f} ms over its budget: from its time bank)"
        return True, f"{answer.action} in {ms:.0f} ms"

    async def _end(self, label: str, stream: SeatStream, result: wire.MatchResult) -> None:
        """End ``stream`` with ``result`` and note how the bot took it (for step 6)."""
        if stream.broken is not None:
            return  # its failure is the earlier step's
        if stream.gave_up_on:
            # The bot may still be thinking about the decision that timed out (the earlier
            # step's failure): how long it takes to end the stream then says nothing more
            # about its match end, so the stream is dropped unjudged.
            stream.abort()
            self.unjudged += 1
            return
        self.ended.append((label, await stream.end(result)))

    # ------------------------------------------------------------ the steps

    async def health(self) -> _StepResult:
        spec = self.spec
        try:
            if spec.launched:
                self.process = await self.launcher.launch(spec)
            t0 = time.monotonic()
            self.channel = await open_channel(spec, self.process, self.startup_timeout_s)
            await wait_serving(spec, self.channel, self.process, self.startup_timeout_s, spent_s=time.monotonic() - t0)
        except BotError as e:
            raise _Stop(str(e), "the bot did not start") from None
        stub = health_pb2_grpc.HealthStub(self.channel)
        # Ready is judged once, by wait_serving, as match and submit judge it; this only says
        # what each name answers, so that a bot author sees what other clients will see.
        loop = asyncio.get_running_loop()
        lag_until = loop.time() + HEALTH_LAG_S
        while True:
            seen = {name: await _health_status(stub, name) for name in HEALTH_SERVICES}
            if all(s == "SERVING" for s in seen.values()) or loop.time() >= lag_until:
                break
            await asyncio.sleep(0.05)
        took = f"{time.monotonic() - t0:.2f} s after start"
        serving = [n for n, s in seen.items() if s == "SERVING"]
        if len(serving) == len(seen):
            return "pass", f"SERVING for {' and '.join(repr(n) for n in serving)}, {took}"
        return "pass", (
            f"{describe_health(seen)}, {took} (the referee needs one name SERVING and the other "
            "SERVING or NOT_FOUND; other gRPC clients may ask for either name)"
        )

    async def check_identity(self) -> _StepResult:
        assert self.channel is not None
        stub = bot_pb2_grpc.BotServiceStub(self.channel)
        try:
            ident = await identify(self.spec, stub, self.process, max(1.0, self.startup_timeout_s))
        except BotError as e:
            raise _Stop(str(e), "the referee plays no bot whose identity it refuses") from None
        self.identity = ident
        self.handle = BotHandle(self.spec, self.channel, ident, self.process)
        if self.on_identity is not None:
            self.on_identity(ident)  # may refuse the bot: the caller's exception ends the check
        by = f" by {ident.author}" if ident.author else ""
        return "pass", f"{ident.name} {ident.version}{by}, protocol version {ident.protocol_version}".replace("  ", " ")

    async def match_start(self) -> _StepResult:
        pos = self.cases[0].position()
        stream = await self._open(f"check-{self.cases[0].key}", pos)
        fault = await stream.settle(SETTLE_S)
        if fault is None:
            self.first_stream = stream
            return "pass", f"the stream stays open and quiet for {SETTLE_S * 1000:.0f} ms"
        if stream.broken is None:
            self.first_stream = stream  # the stray message is dropped; the stream goes on
        return "fail", f"{fault.kind}: {fault.message}"

    async def decision(self, case: DecisionCase) -> _StepResult:
        pos = case.position()
        match_id = f"check-{case.key}"
        stream = self.first_stream if case is self.cases[0] else None
        if stream is None:
            stream = await self._open(match_id, pos)
        ok, said = await self._ask(stream, pos)
        # The check stops this match here: the referee tells the bot so, as after Ctrl-C.
        players = pos.match.players
        await self._end(
            f"decision: {case.title}",
            stream,
            wire.MatchResult(match_id, (1,) * players, 1, "aborted"),
        )
        if ok:
            return "pass", said
        return "fail", said + (f"; {case.hint}" if case.hint and "illegal" in said else "")

    async def two_streams(self) -> _StepResult:
        first, second = self.cases[0], self.cases[1 % len(self.cases)]
        p1, p2 = first.position(), second.position()
        ids = ("check-two-1", "check-two-2")
        s1, s2 = await asyncio.gather(self._open(ids[0], p1), self._open(ids[1], p2))
        # Both requests are out before either answer is awaited: a bot that serves one
        # stream at a time leaves the second unanswered.
        (ok1, said1), (ok2, said2) = await asyncio.gather(self._ask(s1, p1), self._ask(s2, p2))
        for match_id, stream, pos in ((ids[0], s1, p1), (ids[1], s2, p2)):
            seat = pos.observation.seat
            placings = tuple(1 if s == seat else 2 for s in range(pos.match.players))
            self.to_end.append(
                (f"stream {match_id}", stream, wire.MatchResult(match_id, placings, 1, "last_player"))
            )
        if ok1 and ok2:
            return "pass", f"both answered, one {first.title} ({said1}), one {second.title} ({said2})"
        said = "; ".join(f"stream {i}: {s}" for i, (ok, s) in enumerate(((ok1, said1), (ok2, said2)), 1) if not ok)
        return "fail", f"{said} (a bot must serve several Play streams at once)"

    async def match_end(self) -> _StepResult:
        pending, self.to_end = self.to_end, []
        await asyncio.gather(*(self._end(label, stream, result) for label, stream, result in pending))
        if not self.ended:
            return "not run", "not run: no stream was still open to end"
        bad = [(label, f"{fault.kind}: {fault.message}") for label, fault in self.ended if fault is not None]
        if bad:
            said = {what for _, what in bad}
            if len(said) == 1:
                which = "every stream" if len(bad) == len(self.ended) else f"{len(bad)} of {len(self.ended)} streams"
                return "fail", f"{which}: {bad[0][1]}"
            more = f"; and {len(bad) - 2} more" if len(bad) > 2 else ""
            return "fail", "; ".join(f"{label}: {what}" for label, what in bad[:2]) + more
        unjudged = f" (and {self.unjudged} more, left on a decision that timed out, were dropped unjudged)" if self.unjudged else ""
        return "pass", f"the bot ended all {len(self.ended)} Play streams with OK after match end{unjudged}"

    async def sigterm(self) -> _StepResult:
        process = self.process
        if process is None:
            return "skipped", "skipped: not started by us (a bot at an address)"
        if not isinstance(process, _Signallable):
            return "skipped", "skipped: this launcher cannot signal the bot's process"
        # As the referee closes a bot: the channel first, then the signal.
        if self.channel is not None:
            with contextlib.suppress(Exception):
                await self.channel.close(grace=None)
        t0 = time.monotonic()
        if not process.terminate_bot():
            return "fail", "could not find the bot's process to send SIGTERM to"
        while (code := process.exit_code()) is None and time.monotonic() - t0 < STOP_GRACE_S:
            await asyncio.sleep(0.01)
        ms = (time.monotonic() - t0) * 1000
        if code is None:
            return "fail", (
                f"{_NO_EXIT}{STOP_GRACE_S:g} s after SIGTERM (the referee's grace; it then kills the bot "
                "with SIGKILL): exit when you get SIGTERM"
            )
        if code in SIGTERM_EXITS:
            how = "exited with code 0" if code == 0 else "ended by SIGTERM"
            return "pass", f"{how} {ms:.0f} ms after SIGTERM"
        # Gone within the grace is all the referee needs; the code is said, not held against it.
        return "pass", f"{describe_exit(code)} {ms:.0f} ms after SIGTERM (any exit within the grace will do; 0 is usual)"


async def _health_status(stub: health_pb2_grpc.HealthStub, service: str) -> str:
    """What Health.Check answers for ``service``: a status name or a gRPC error code's name."""
    try:
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=1.0)
    except grpc.aio.AioRpcError as e:
        return str(e.code().name)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


async def check_bot(
    spec: BotSpec | str,
    *,
    time_control: TimeControl | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    launcher: Launcher | None = None,
    cases: Sequence[DecisionCase] = DECISION_CASES,
    on_identity: Callable[[wire.BotIdentity], None] | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
    use_bank: bool = False,
) -> ComplianceReport:
    """Check that the bot named ``spec`` keeps the contract (see the module doc).

    The bot is started with ``launcher`` (default: unsandboxed, on this machine) and always
    stopped again. ``on_identity`` is called with the bot's identity as soon as it is known,
    before any match starts; an exception it raises ends the check and propagates (a
    submission refuses a taken name that way). ``on_result`` is called with each result as it
    comes. A decision must be answered within its budget plus the grace (the first may use the
    time bank too); with ``use_bank`` every one may, as at a match's first decision (an answer
    over the budget then passes, with a note). Raises :class:`~referee.faults.BotSpecError` for a bad name;
    every failure of the bot itself is a result, never an exception.
    """
    if isinstance(spec, str):
        spec = parse_bot_spec(spec)
    launcher = launcher or LocalLauncher()
    tc = time_control or TimeControl()
    checker = _Checker(
        spec,
        time_control=tc,
        startup_timeout_s=startup_timeout_s,
        launcher=launcher,
        cases=cases,
        on_identity=on_identity,
        on_result=on_result,
        use_bank=use_bank,
    )
    results = await checker.run()
    tail = checker.process.output_tail() if checker.process is not None else ""
    return ComplianceReport(
        source=spec.text,
        launched=spec.launched,
        sandboxed=spec.launched and getattr(launcher, "sandbox", None) is not None,
        time_control=tc,
        identity=checker.identity,
        results=tuple(results),
        output_tail=tail,
    )


__all__ = [
    "DECISION_CASES",
    "SETTLE_S",
    "SIGTERM_EXITS",
    "CheckResult",
    "ComplianceReport",
    "DecisionCase",
    "Move",
    "Position",
    "Status",
    "cases_for",
    "check_bot",
    "draw_discard",
    "draw_stock",
    "is_soft_failure",
    "knock",
    "throw_drawn",
    "turns_until_stock_empty",
]
