"""Match logs: JSON Lines, one ``thirtyone.v1.LogRecord`` per line in protobuf's JSON mapping.

- :class:`LogWriter` hands each record's line (or one step's lines) to the operating system
  at once, unbuffered, so a referee that dies mid-match leaves a readable log up to its
  last event.
- :func:`read_log` parses a log into header, events and footer, with errors that name the
  file and line (text that is not UTF-8 included); a log cut short (a last line without its
  newline, or no footer) reads up to the cut, with a note saying so.
- :func:`walk_log` is the one re-simulation of a log: it re-plays the log through the game
  model from its recorded deals and restocks alone (no seed) and checks every line — each
  action's legality, each fault and what answers it, every deal, restock, 31 and round end
  the model produces, the footer's result and counts — stopping at the first
  :class:`Divergence`. A :class:`LogWatcher` is told what agreed, line by line; the replay
  viewer (:mod:`referee.replay.model`) builds its steps that way.
- :func:`replay_log` is the walk as a check that raises: :class:`~referee.faults.ReplayError`
  at the first divergence, else the replayed model and its result.

The encoding is protobuf's own JSON mapping, as ``json_format`` prints it, with fields at their zero
value written out (``"seat": 0``) so the file reads well without knowing proto3's rules;
fields that can be unset (``optional`` ones, messages) appear only when set. Key order is
whatever ``json_format`` gives (it varies with which fields are zero): readers parse lines,
never compare them as text. The lines are written by :mod:`referee.protojson`, which gives
``json_format``'s bytes without its reflection (the referee writes a line or two per
decision); they are read with ``json_format``. docs/log-format.md says the same, and
``tests/test_docs.py`` checks it against real lines.
Conversions between messages and the referee's values are :mod:`referee.wire`'s.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NoReturn

from google.protobuf import json_format
from thirtyone.v1 import log_pb2

from referee import protojson, wire
from referee.faults import LogError, ReplayError
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
    RoundResult,
    Rules,
)
from referee.game.errors import shown_in
from referee.text import plural

#: The log format version of a match without variants (LogHeader.schema_version): such
#: logs are written as version 1 still, so that every reader of version 1 reads them (the
#: fields added since are ones it skips, at their zero values in such a log).
SCHEMA_VERSION = 1
#: The version of a log whose rules use a variant (docs/rules.md, "Variants": the dealer's
#: option, under the gun, the dummy, the widow, the pot). A version-1 reader skips the
#: variant rules as unknown fields and would replay such a log under the plain rules,
#: reporting a valid log as diverging (a dealer's PASS "illegal", a widow deal "without an
#: up-card"); version 2 makes it refuse the log and say why instead.
VARIANT_SCHEMA_VERSION = 2
#: The versions this module reads.
SCHEMA_VERSIONS = (SCHEMA_VERSION, VARIANT_SCHEMA_VERSION)


def schema_version_for(rules: Rules) -> int:
    """The schema version of a log played under ``rules``: 2 if any variant is on, else 1."""
    plain = (
        rules.draw == "stock"
        and rules.scoring == "lives"
        and not (rules.dealer_option or rules.under_the_gun or rules.dummy)
    )
    return SCHEMA_VERSION if plain else VARIANT_SCHEMA_VERSION


#: One log line (without its newline) from a record: the record in proto JSON, zero values
#: included, exactly as ``json_format.MessageToJson(record, indent=None,
#: always_print_fields_with_no_presence=True)`` writes it (:mod:`referee.protojson`, planned
#: once from the descriptor rather than by reflection on every line).
encode_record: Callable[[log_pb2.LogRecord], str] = protojson.encoder(log_pb2.LogRecord.DESCRIPTOR)


#: The mode of a match log file: readable by the referee's user alone.
LOG_FILE_MODE = 0o600


class LogWriter:
    """Writes a match log, each batch of lines in one unbuffered write.

    Use as a context manager, or call :meth:`close`. The file is created (truncated) at once,
    with its parent directories, readable and writable by its owner only.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # 0600: a log holds every hand and the deal order, secrets until the tournament is over
        # (fchmod too: a file that was there already keeps its mode through O_CREAT).
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, LOG_FILE_MODE)
        try:
            os.fchmod(fd, LOG_FILE_MODE)
            # Unbuffered bytes: each batch of lines is one write, so nothing waits in a buffer
            # (and a text layer's encoding and flushing are not paid per decision).
            self._file: IO[bytes] | None = open(fd, "wb", buffering=0)  # noqa: SIM115
        except BaseException:
            os.close(fd)
            raise
        #: Lines written so far.
        self.lines = 0

    def write(self, record: log_pb2.LogRecord) -> None:
        """Append one record and hand it to the operating system."""
        self.write_many((record,))

    def write_many(self, records: Iterable[log_pb2.LogRecord | str]) -> None:
        """Append several records in one write; a record may come as its line already
        printed (:func:`referee.wire.action_event_line`)."""
        f = self._file
        if f is None:
            raise ValueError(f"the match log {self.path} is closed")
        lines = [record if isinstance(record, str) else encode_record(record) for record in records]
        if lines:
            # The lines are ASCII (the printer escapes the rest), so UTF-8 as the README says.
            data = memoryview(("\n".join(lines) + "\n").encode("utf-8"))
            while data:
                written = f.write(data)
                if not written:
                    raise OSError(f"the match log {self.path}: nothing could be written")
                data = data[written:]
            self.lines += len(lines)

    def close(self) -> None:
        """Close the file; idempotent."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One event line of a log."""

    line: int
    event: log_pb2.LogEvent


@dataclass(slots=True)
class MatchLog:
    """A parsed match log."""

    path: Path
    header: wire.LogHeaderInfo
    #: The header as written (the replay verifier compares messages).
    header_message: log_pb2.LogHeader
    events: list[LoggedEvent]
    #: None when the log has no footer (the referee stopped mid-match).
    footer: wire.LogFooterInfo | None
    #: The footer's line number; None when there is no footer.
    footer_line: int | None = None
    #: Why the log is incomplete, if it is (for people; empty for a whole log).
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether the log has its footer (the match was played to its end or aborted)."""
        return self.footer is not None


def _parse_line(path: Path, lineno: int, text: str) -> log_pb2.LogRecord:
    record = log_pb2.LogRecord()
    try:
        # Fields added to the schema later (without a version bump) are skipped, not errors.
        json_format.Parse(text, record, ignore_unknown_fields=True)
    except json_format.ParseError as e:
        raise LogError(f"{path}:{lineno}: not a log record: {shown_in(str(e))}") from None
    if record.WhichOneof("payload") is None:
        raise LogError(f"{path}:{lineno}: a log record holds a header, an event or a footer; this one holds none")
    return record


def iter_log(path: str | os.PathLike[str], notes: list[str] | None = None) -> Iterator[tuple[int, log_pb2.LogRecord]]:
    """Yield ``(line number, record)`` for every line of a log.

    A last line that is cut short (no newline at its end, and not a whole record, or not
    even whole UTF-8 text) is skipped with a note appended to ``notes``; any other bad line,
    text that is not UTF-8 included, raises :class:`LogError` naming it.
    """
    p = Path(path)
    try:
        f = open(p, "rb")  # noqa: SIM115 - decoded line by line, so a bad byte names its line
    except OSError as e:
        raise LogError(f"cannot read the match log {p}: {e.strerror or e}") from None
    with f:
        for lineno, raw in enumerate(f, start=1):
            whole = raw.endswith(b"\n")
            try:
                text = raw.decode("utf-8").rstrip("\n")
                if not text.strip():
                    raise LogError(f"{p}:{lineno}: empty line")
                record = _parse_line(p, lineno, text)
            except (LogError, UnicodeDecodeError) as e:
                if not whole:
                    if notes is not None:
                        notes.append(f"line {lineno} is cut short (the file ends mid-line); it was ignored")
                    return
                if isinstance(e, UnicodeDecodeError):
                    raise LogError(f"{p}:{lineno}: not UTF-8 text (byte {e.start + 1} of the line)") from None
                raise
            yield lineno, record


def read_log(path: str | os.PathLike[str]) -> MatchLog:
    """Parse a whole log: header first, events, footer last (see :func:`iter_log`)."""
    p = Path(path)
    notes: list[str] = []
    records = iter_log(p, notes)
    try:
        first = next(records)
    except StopIteration:
        raise LogError(f"{p}: the log is empty" + (f" ({notes[0]})" if notes else "")) from None
    lineno, record = first
    if not record.HasField("header"):
        raise LogError(f"{p}:{lineno}: the first line must be the header, found a {record.WhichOneof('payload')}")
    if record.header.schema_version not in SCHEMA_VERSIONS:
        raise LogError(
            f"{p}:{lineno}: log schema version {record.header.schema_version}; this program reads versions "
            + " and ".join(map(str, SCHEMA_VERSIONS))
        )
    try:
        header = wire.log_header_from_pb(record.header)
    except (wire.WireError, ValueError) as e:
        raise LogError(f"{p}:{lineno}: bad header: {e}") from None
    events: list[LoggedEvent] = []
    footer: wire.LogFooterInfo | None = None
    footer_line: int | None = None
    for lineno, record in records:
        if footer_line is not None:
            raise LogError(f"{p}:{lineno}: a line after the footer (line {footer_line})")
        kind = record.WhichOneof("payload")
        if kind == "event":
            events.append(LoggedEvent(lineno, record.event))
        elif kind == "footer":
            try:
                footer = wire.log_footer_from_pb(record.footer)
            except wire.WireError as e:
                raise LogError(f"{p}:{lineno}: bad footer: {e}") from None
            footer_line = lineno
        else:
            raise LogError(f"{p}:{lineno}: a second header")
    if footer is None:
        last = events[-1].line if events else 1
        notes.append(f"no footer: the match did not finish (the log stops after line {last})")
    return MatchLog(p, header, first[1].header, events, footer, footer_line, notes)


# ---------------------------------------------------------------- replaying: positions and divergences


@dataclass(frozen=True, slots=True)
class Position:
    """A place in a log: the line, the round and turn the event carries, and what it is."""

    line: int
    round_no: int
    turn: int
    #: What the line holds, for people: ``deal``, ``seat 1 draw stock``, ``round end``, ...
    event: str

    def where(self) -> str:
        """The line's content for people: ``round 2, turn 5, seat 1 draw stock``, ``footer``."""
        if self.event in ("header", "footer"):
            return self.event
        return f"round {self.round_no}, turn {self.turn}, {self.event}"

    def __str__(self) -> str:
        return f"line {self.line} ({self.where()})"


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
    return {
        "deal": "deal",
        "thirty_one": "31",
        "round_end": "round end",
        "ante": "antes",
        "pot_award": "pot award",
    }.get(kind or "", "empty event")


# ---------------------------------------------------------------- replaying: chance from the log


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
        watcher: LogWatcher,
    ) -> None:
        self._deals = deals
        self._restocks = restocks
        self._watcher = watcher

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """The logged deck of a round."""
        found = self._deals.get(round_no)
        if found is None:
            raise _Missing(f"the deal of round {round_no}")
        at, order = found
        try:
            deck = RecordedChance({round_no: order}).deal(round_no, cards)
        except ChanceError as e:
            raise _BadOrder(at, str(e)) from None
        self._watcher.shuffled(at, round_no, None, tuple(cards), order)
        return deck

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """The logged order of a restock."""
        found = self._restocks.get((round_no, index))
        if found is None:
            raise _Missing(f"restock {index} of round {round_no}")
        at, order = found
        try:
            stock = RecordedChance({}, {(round_no, index): order}).restock(round_no, index, cards)
        except ChanceError as e:
            raise _BadOrder(at, str(e)) from None
        self._watcher.shuffled(at, round_no, index, tuple(cards), order)
        return stock


# ---------------------------------------------------------------- replaying: the walk


class LogWatcher:
    """Told, line by line, what :func:`walk_log` found the log and the game model agree on.

    Every method does nothing here; a watcher overrides the ones it needs. Each is called
    once the line it reports has been checked, never for a line at or after a divergence.
    """

    def deciding(self, at: Position, match: Match, record: ActionRecord, event: log_pb2.ActionEvent) -> None:
        """A logged action, legal, is about to be applied: ``match`` is in the state the seat
        decided in; ``record`` is the action as logged."""

    def acted(self, at: Position, match: Match, record: ActionRecord, by_referee: bool) -> None:
        """The action was applied: ``record`` is the model's (with the card drawn or discarded)."""

    def faulted(self, at: Position, fault: wire.FaultInfo) -> None:
        """A fault line (the referee's action or the forfeit that answers it comes next)."""

    def forfeited(self, at: Position, record: ForfeitRecord, hand: tuple[Card, ...]) -> None:
        """A seat left the match; ``hand`` is what it held."""

    def produced(self, at: Position, kind: str, record: Record, match: Match) -> None:
        """A line the referee writes for one of the model's own records matched it: ``kind``
        is ``deal``, ``ante``, ``restock``, ``thirty_one``, ``pot_award`` or ``round_end``
        (the antes come from the deal's :class:`DealRecord`; a 31, the pot award and the
        round end from one :class:`RoundResult`; antes and pot awards only under
        ``scoring="pot"``)."""

    def finished(self, at: Position, footer: wire.LogFooterInfo, match: Match | None) -> None:
        """The footer matched the model (``match`` is None for a match aborted before its
        first deal)."""

    def shuffled(
        self, at: Position, round_no: int, restock: int | None, cards: tuple[Card, ...], order: tuple[Card, ...]
    ) -> None:
        """The game model shuffled ``cards`` (in the order it passes them to its chance: the
        whole deck for a deal, the discard pile under its top card for a restock) and the
        log's line ``at`` gave ``order``, an order of exactly those cards: the deal of round
        ``round_no`` (``restock`` None) or its ``restock``-th restock (0 first). Told when the
        model asks, in the middle of the action that empties the stock, before the line
        itself is compared; so a seed can re-derive every shuffle
        (:func:`referee.ladder.fairness.check_commitment`)."""


@dataclass(frozen=True, slots=True)
class LogWalk:
    """What :func:`walk_log` found."""

    log: MatchLog
    #: The model after the last line that agreed (None if the log holds no deal of round 1).
    match: Match | None
    #: The first disagreement between log and model; None if there is none (so far).
    divergence: Divergence | None
    #: The last line that agreed (for a log that stops early, where it stops).
    last: Position
    #: Rounds whose deal the log and the model agreed on.
    rounds: int
    #: Notes for people: a cut last line, a match aborted, where an incomplete log stops.
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Expected:
    """A line the game model says comes next, and the record it comes from."""

    kind: str
    message: log_pb2.LogEvent
    record: Record

    def describe(self) -> str:
        rec = self.record
        if isinstance(rec, DealRecord):
            if self.kind == "ante":
                return f"the antes of round {rec.round_no}"
            return f"the deal of round {rec.round_no}"
        if isinstance(rec, RestockRecord):
            return f"restock {rec.number} of round {rec.round_no}"
        if isinstance(rec, ForfeitRecord):
            return f"the forfeit of seat {rec.seat}"
        if isinstance(rec, RoundResult):
            if self.kind == "thirty_one":
                return f"the 31 of round {rec.round_no} (seats {', '.join(map(str, rec.thirty_one))})"
            if self.kind == "pot_award":
                return f"the pot award of round {rec.round_no}"
            return f"the end of round {rec.round_no}"
        return f"a {self.kind}"  # pragma: no cover - actions are never expected lines


def _a(what: str) -> str:
    """``a deal``, ``an action``, ``a 31``: the log's event named with its article."""
    return ("an " if what[:1] in "aeiou" else "a ") + what


def _kind_name(kind: str) -> str:
    return {"thirty_one": "31", "round_end": "round end", "pot_award": "pot award"}.get(kind, kind)


def _seat_or_none(seat: int | None) -> str:
    return "none" if seat is None else f"seat {seat}"


_END_OF: dict[wire.MatchEndReasonName, MatchEnd | None] = {
    "last_player": MatchEnd.LAST_PLAYER,
    "max_rounds": MatchEnd.MAX_ROUNDS,
    "pot_rounds": MatchEnd.POT_ROUNDS,
    "aborted": None,
}


class _Walker:
    """One walk through a log; see :func:`walk_log`."""

    def __init__(self, log: MatchLog, watcher: LogWatcher) -> None:
        self.log = log
        self.watcher = watcher
        self.n = log.header.players
        self.expected: deque[_Expected] = deque()
        self.faults = [0] * self.n
        self.late = [0] * self.n
        self.decisions = [0] * self.n
        self.latency_sum = [0] * self.n
        self.latency_max = [0] * self.n
        self.pending_fault: tuple[wire.FaultInfo, Position] | None = None
        #: What the log lacks that the model needs next (set when a cut log runs out of cards).
        self.stalled: str | None = None
        self.last = Position(1, 0, 0, "header")
        self.notes = list(log.notes)
        self.m: Match | None = None
        self.rounds = 0

    def _diverge(self, at: Position, message: str) -> NoReturn:
        raise _Diverged(Divergence(at, message))

    def _unreadable(self, at: Position, message: str) -> NoReturn:
        raise LogError(f"{self.log.path}:{at.line}: {message}")

    def run(self) -> LogWalk:
        log = self.log
        divergence: Divergence | None = None
        try:
            self._start(self._chance())
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
        if not log.complete and divergence is None and self.stalled:
            self.notes.append(f"the game model needs {self.stalled} next, which the log does not hold")
        return LogWalk(log, self.m, divergence, self.last, self.rounds, tuple(self.notes))

    def _chance(self) -> _LogChance:
        """Collect every logged deal and restock before replaying (the model asks for them
        in the middle of applying an action, so they must be at hand)."""
        deals: dict[int, tuple[Position, tuple[Card, ...]]] = {}
        restocks: dict[tuple[int, int], tuple[Position, tuple[Card, ...]]] = {}
        for le in self.log.events:
            ev = le.event
            if not (ev.HasField("deal") or ev.HasField("restock")):
                continue
            at = Position(le.line, ev.round, ev.turn, describe_event(ev))
            try:
                if ev.HasField("deal"):
                    d = wire.deal_from_pb(ev.round, self.n, ev.deal)
                    if ev.round in deals:
                        self._diverge(at, f"a second deal of round {ev.round} (the first is at line {deals[ev.round][0].line})")
                    deals[ev.round] = (at, d.deck)
                else:
                    r = wire.restock_from_pb(ev.round, ev.restock)
                    key = (ev.round, r.number)
                    if key in restocks:
                        self._diverge(at, f"a second restock {r.number} of round {ev.round} (the first is at line {restocks[key][0].line})")
                    restocks[key] = (at, r.stock)
            except wire.WireError as e:
                self._unreadable(at, str(e))
        return _LogChance(deals, restocks, self.watcher)

    def _start(self, chance: _LogChance) -> None:
        # Built in two steps so that a deal the log lacks (a log cut inside a chain of natural
        # 31s) leaves a match whose records up to that point can still be compared.
        m = Match.__new__(Match)
        try:
            m.__init__(self.n, self.log.header.rules, chance=chance)  # type: ignore[misc]
        except _Missing as e:
            if m.round_no == 1:
                return  # not even round 1's deal: nothing to replay (self.m stays None)
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
                ante = wire.ante_event_to_pb(rec)
                if ante is not None:
                    self.expected.append(_Expected("ante", ante.event, rec))
            elif isinstance(rec, RestockRecord):
                # A restock happens as a turn starts: the model's turn after the step is its turn.
                self.expected.append(_Expected("restock", wire.restock_event_to_pb(rec, turn).event, rec))
            elif isinstance(rec, ForfeitRecord):
                self.expected.append(_Expected("forfeit", wire.forfeit_event_to_pb(rec).event, rec))
            elif isinstance(rec, RoundResult):
                if rec.thirty_one:
                    self.expected.append(_Expected("thirty_one", wire.thirty_one_event_to_pb(rec).event, rec))
                award = wire.pot_award_event_to_pb(rec)
                if award is not None:
                    self.expected.append(_Expected("pot_award", award.event, rec))
                self.expected.append(_Expected("round_end", wire.round_end_event_to_pb(rec).event, rec))

    def _event(self, at: Position, kind: str, ev: log_pb2.LogEvent) -> None:
        if self.expected:
            exp = self.expected[0]
            if kind != exp.kind:
                self._diverge(at, f"the log has {_a(_kind_name(kind))} here; the game model gives {exp.describe()} first")
            self._same(at, exp.message, ev)
            self.expected.popleft()
            if exp.kind == "deal":
                self.rounds += 1
            assert self.m is not None
            self.watcher.produced(at, exp.kind, exp.record, self.m)
            return
        m = self.m
        if self.stalled is not None or m is None:
            lacks = self.stalled or "the deal of round 1"
            self._diverge(at, f"the log has {_a(_kind_name(kind))} here, but it lacks {lacks}, which the game model needs first")
        if m.is_over:
            self._diverge(at, f"the log has {_a(_kind_name(kind))} after the match ended (round {m.round_no})")
        if kind == "action":
            self._action(at, m, ev)
        elif kind == "fault":
            self._fault(at, m, ev)
        elif kind == "forfeit":
            self._forfeit(at, m, ev)
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

    def _apply(self, at: Position, m: Match, fn: Callable[[], None]) -> list[Record]:
        """Run one model step; a deal or restock the log lacks stalls the replay there."""
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

    def _action(self, at: Position, m: Match, ev: log_pb2.LogEvent) -> None:
        msg = ev.action
        try:
            rec = wire.action_record_from_pb(ev.round, ev.turn, msg)
        except wire.WireError as e:
            self._unreadable(at, str(e))
        seat = rec.seat
        pf = self.pending_fault
        if pf is not None and (pf[0].forfeited or not msg.by_referee):
            fault, fat = pf
            instead = "its forfeit" if fault.forfeited else f"the referee's {fault.default_action} for it"
            self._diverge(at, f"seat {fault.seat} faulted at line {fat.line}; the log then has seat {seat} {rec.action} instead of {instead}")
        if seat != m.current or ev.round != m.round_no or ev.turn != m.turn:
            self._diverge(at, f"the log has seat {seat} act at round {ev.round} turn {ev.turn}; {self._waits(m)}")
        if msg.by_referee:
            if pf is None:
                self._diverge(at, "an action played by the referee with no fault before it")
            fault, fat = pf
            if msg.decision_id != fault.decision_id:
                self._diverge(at, f"decision {msg.decision_id} played by the referee; the fault at line {fat.line} is for decision {fault.decision_id}")
            if rec.action != fault.default_action:
                self._diverge(at, f"the referee plays {rec.action}; the fault at line {fat.line} says it plays {fault.default_action}")
            if msg.latency_us != 0:
                self._diverge(at, f"an action played by the referee has a latency ({msg.latency_us} us); it must be 0")
            self.pending_fault = None
        reason = m.why_illegal(rec.action)
        if reason is not None:
            self._diverge(at, f"{rec.action} by seat {seat} is illegal: {reason}")
        kind = rec.action.kind
        drawing = kind in (ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD)
        if not drawing and msg.drawn_card:
            self._diverge(at, f"a {rec.action} with a drawn card ({msg.drawn_card}); only draws have one")
        if drawing and rec.card is None:
            self._diverge(at, f"seat {seat}'s {rec.action} names no drawn card")
        try:
            phase = wire.phase_from_pb(msg.phase)
        except wire.WireError as e:
            self._unreadable(at, str(e))
        if phase is None:
            # Logs of version 1 written before the field existed lack it; version 2 has it.
            if self.log.header.schema_version != SCHEMA_VERSION:
                self._diverge(at, f"seat {seat}'s {rec.action} names no phase; the game model is at {m.phase.name}")
        elif phase is not m.phase:
            self._diverge(at, f"the log has seat {seat} decide in phase {phase.name}; the game model is at {m.phase.name}")
        dummy = tuple(m.dummy)
        if not msg.by_referee:
            self.decisions[seat] += 1
            self.latency_sum[seat] += msg.latency_us
            self.latency_max[seat] = max(self.latency_max[seat], msg.latency_us)
        if msg.late:
            self._check_late(at, seat, msg)
        self.watcher.deciding(at, m, rec, msg)

        records = self._apply(at, m, lambda: m.apply_unchecked(rec.action))
        done = records[0]
        assert isinstance(done, ActionRecord)
        if drawing and done.card != rec.card:
            where = "the stock" if kind is ActionKind.DRAW_STOCK else "the discard pile"
            self._diverge(at, f"the log says seat {seat} drew {rec.card} from {where}; the game model has {done.card} on top")
        want_taken = wire.taken_cards(done, dummy)
        got_taken = tuple(msg.taken_cards)
        if got_taken != tuple(c.text for c in want_taken):
            have = " ".join(got_taken) or "none"
            give = " ".join(map(str, want_taken)) or "none"
            self._diverge(at, f"the log says seat {seat}'s {rec.action} took {have}; the game model gives {give}")
        self._expect(records[1:], m.turn)
        self.watcher.acted(at, m, done, msg.by_referee)

    def _check_late(self, at: Position, seat: int, msg: log_pb2.ActionEvent) -> None:
        """A late answer is the bot's own, past its budget, and played only under lenient."""
        if msg.by_referee:
            self._diverge(at, "an action played by the referee is marked late; only a bot's answer can be")
        if self.log.header.fault_policy == "strict":
            self._diverge(at, f"seat {seat}'s late answer was played; under the strict policy it is a late fault")
        budget_us = self.log.header.time_control.budget_ms * 1000
        if msg.latency_us < budget_us:
            self._diverge(at, f"seat {seat}'s answer is marked late after {msg.latency_us} us, within its {budget_us} us budget")
        self.late[seat] += 1

    def _fault(self, at: Position, m: Match, ev: log_pb2.LogEvent) -> None:
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
        if f.kind == "late":
            if self.log.header.fault_policy != "strict":
                self._diverge(at, f"a late fault of seat {f.seat} under the {self.log.header.fault_policy} policy; only strict makes lateness a fault")
            self.late[f.seat] += 1
        self.faults[f.seat] += 1
        self.decisions[f.seat] += 1
        self.pending_fault = (f, at)
        self.watcher.faulted(at, f)

    def _forfeit(self, at: Position, m: Match, ev: log_pb2.LogEvent) -> None:
        rec = wire.forfeit_from_pb(ev.round, ev.turn, ev.forfeit)
        seat = rec.seat
        if not 0 <= seat < self.n or not m.alive[seat]:
            self._diverge(at, f"a forfeit of seat {seat}, which is not in the match")
        if ev.round != m.round_no or ev.turn != m.turn:
            self._diverge(at, f"a forfeit at round {ev.round} turn {ev.turn}; the game model is at round {m.round_no} turn {m.turn}")
        # A forfeit follows the fault that caused it; one with no fault before it is accepted,
        # as the referee may one day take a seat out for other reasons (its reason says why).
        pf = self.pending_fault
        if pf is not None:
            fault, fat = pf
            if not fault.forfeited or fault.seat != seat:
                what = f"the referee's {fault.default_action}" if not fault.forfeited else f"the forfeit of seat {fault.seat}"
                self._diverge(at, f"a forfeit of seat {seat}; the fault at line {fat.line} calls for {what}")
            self.pending_fault = None
        hand = m.hand(seat)
        records = self._apply(at, m, lambda: m.forfeit(seat, rec.reason))
        done = records[0]
        assert isinstance(done, ForfeitRecord)
        self._same(at, wire.forfeit_event_to_pb(done).event, ev)
        self._expect(records[1:], m.turn)
        self.watcher.forfeited(at, done, hand)

    # ------------------------------------------------------------ the footer

    def _footer(self) -> None:
        log = self.log
        f = log.footer
        if f is None:
            return
        m = self.m
        assert log.footer_line is not None
        at = Position(log.footer_line, m.round_no if m else 0, m.turn if m else 0, "footer")
        if m is None and not log.events and f.reason == "aborted":
            # The referee stopped before dealing (a bot did not start): a header and a footer.
            if any(p != 1 for p in f.placings) or len(f.placings) != self.n or f.winner is not None:
                self._diverge(at, "a match aborted before the first deal has every seat placed 1 and no winner")
            pot = log.header.rules.scoring == "pot"
            if f.chips != ((0,) * self.n if pot else ()) or f.pot_left != 0:
                self._diverge(at, "a match aborted before the first deal has no chips won or lost and nothing in the pot")
            self._check_stats(at, f.stats)
            self.notes.append("the match was aborted before the first deal")
            self.watcher.finished(at, f, None)
            return
        if self.expected:
            self._diverge(at, f"the log ends here; the game model still gives {self.expected[0].describe()}")
        if self.stalled is not None or m is None:
            self._diverge(at, f"the log lacks {self.stalled or 'the deal of round 1'}, which the game model needs")
        if self.pending_fault is not None:
            fat = self.pending_fault[1]
            self._diverge(at, f"the fault at line {fat.line} is followed by neither the referee's action nor a forfeit")
        want = _END_OF[f.reason]
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
            self._diverge(at, f"{plural(f.rounds, 'round')} in the log; the game model played {m.round_no}")
        pot = m.rules.scoring == "pot"
        want_chips = tuple(m.chips) if pot else ()
        if f.chips != want_chips:
            self._diverge(at, f"chips {list(f.chips)} in the log; the game model gives {list(want_chips)}")
        want_left = m.pot if pot else 0
        if f.pot_left != want_left:
            self._diverge(at, f"{plural(f.pot_left, 'chip')} left in the pot in the log; the game model gives {want_left}")
        self._check_stats(at, f.stats)
        self.watcher.finished(at, f, m)

    def _check_stats(self, at: Position, stats: tuple[wire.SeatStats, ...]) -> None:
        """Decision counts and fault counts follow from the events; latencies are bounded by
        them (a fault's waiting time counts but is not logged, so only without faults are
        the sums exact)."""
        if len(stats) != self.n:
            self._diverge(at, f"statistics for {plural(len(stats), 'seat')}; the match has {self.n}")
        for i, s in enumerate(stats):
            if s.seat != i:
                self._diverge(at, f"seats[{i}].seat is {s.seat}; statistics are listed in seat order")
            if s.decisions != self.decisions[i]:
                self._diverge(at, f"seat {i} made {plural(s.decisions, 'decision')} in the log's footer; its events show {self.decisions[i]}")
            if s.faults != self.faults[i]:
                self._diverge(at, f"seat {i} has {plural(s.faults, 'fault')} in the log's footer; its events show {self.faults[i]}")
            if s.late != self.late[i]:
                self._diverge(at, f"seat {i} has {plural(s.late, 'late answer')} in the log's footer; its events show {self.late[i]}")
            # Exact without faults, unless a latency hit the log's 32-bit ceiling (71 minutes).
            exact = self.faults[i] == 0 and self.latency_max[i] < 2**32 - 1
            if s.total_latency_us < self.latency_sum[i] or (exact and s.total_latency_us != self.latency_sum[i]):
                self._diverge(at, f"seat {i}'s total latency is {s.total_latency_us} us; its actions add up to {self.latency_sum[i]} us")
            if s.max_latency_us < self.latency_max[i] or (exact and s.max_latency_us != self.latency_max[i]):
                self._diverge(at, f"seat {i}'s longest decision is {s.max_latency_us} us; its actions show {self.latency_max[i]} us")


def walk_log(log: MatchLog | str | os.PathLike[str], watcher: LogWatcher | None = None) -> LogWalk:
    """Re-simulate a log through the game model, line by line, and check every line.

    The game model's only source of cards is the log's own deals and restocks (each checked
    to be an order of the cards the model has to shuffle, and reported at its own line),
    never the seed. Every logged action and forfeit is checked to be legal and to come from
    the seat the model waits on, then applied; every fault line is checked against the
    match (seat, turn, strike count, the action the referee plays or the forfeit) and the
    line that answers it; every line the referee writes for the model's own records (deals,
    restocks, 31s, round ends) is re-created through :mod:`referee.wire` and compared field by
    field; the footer's result and per-seat counts are compared with the model's and the
    events'. A log cut short (no footer) is checked as far as it goes.

    This is the one re-simulation of a log: :func:`replay_log` and
    :func:`referee.replay.model.build_replay` are built on it. ``watcher`` is told what
    agreed, line by line (see :class:`LogWatcher`).

    Never raises for a log that disagrees with the model: the walk stops there and
    :attr:`LogWalk.divergence` says where and why. Raises :class:`LogError` for a log that
    cannot be read (see :func:`read_log`) or holds a value that is not one (a card that is
    not a card).
    """
    if not isinstance(log, MatchLog):
        log = read_log(log)
    return _Walker(log, watcher or LogWatcher()).run()


# ---------------------------------------------------------------- replay_log

#: Called for each logged action before it is applied, with the model in the state the seat
#: decided in: ``(match, action record, decision id, played by the referee)``.
ActionHook = Callable[[Match, ActionRecord, int, bool], None]


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """A log replayed through the game model."""

    #: The model after the last replayed event (None if the log holds no deal of round 1).
    match: Match | None
    rounds: tuple[RoundResult, ...]
    placings: tuple[int, ...]
    winner: int | None
    #: Whether the log was whole (had a footer), so the result was checked against it.
    complete: bool
    #: Why the replay stopped early, if it did.
    notes: tuple[str, ...]


class _HookWatcher(LogWatcher):
    def __init__(self, hook: ActionHook) -> None:
        self.hook = hook

    def deciding(self, at: Position, match: Match, record: ActionRecord, event: log_pb2.ActionEvent) -> None:
        self.hook(match, record, event.decision_id, event.by_referee)


def replay_log(log: MatchLog | str | os.PathLike[str], *, on_action: ActionHook | None = None) -> ReplayResult:
    """Re-play a log through the game model without its seed and check it (:func:`walk_log`).

    Raises :class:`ReplayError` naming the first line where the log and the model disagree
    (``FILE:LINE: round R, turn T, EVENT: what differs``), and :class:`LogError` for a log
    that cannot be read. A log with no footer replays as far as it goes
    (``complete`` is False); a match aborted before its first deal replays to a complete
    result with no rounds and no model (``match`` is None).
    """
    walk = walk_log(log, _HookWatcher(on_action) if on_action is not None else None)
    path = walk.log.path
    d = walk.divergence
    if d is not None:
        raise ReplayError(f"{path}:{d.at.line}: {d.at.where()}: {d.message}")
    m = walk.match
    footer = walk.log.footer
    if m is None:
        placings = footer.placings if footer is not None else ()
        return ReplayResult(None, (), placings, None, walk.log.complete, walk.notes)
    return ReplayResult(m, tuple(m.rounds), tuple(m.placings), m.winner, walk.log.complete, walk.notes)
