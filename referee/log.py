"""Match logs: JSON Lines, one ``thirtyone.v1.LogRecord`` per line in canonical proto JSON.

- :class:`LogWriter` writes and flushes one line per record, so a referee that dies
  mid-match leaves a readable log up to its last event.
- :func:`read_log` parses a log into header, events and footer, with errors that name the
  file and line; a log cut short (a last line without its newline, or no footer) reads up
  to the cut, with a note saying so.
- :func:`replay_log` re-plays a log through the game model from its recorded deals and
  restocks alone (:class:`~referee.game.RecordedChance`, no seed) and checks that every
  event the model produces, every round result and the placings are the ones recorded.

The encoding is protobuf's own JSON mapping (``json_format``), with fields at their zero
value written out (``"seat": 0``) so the file reads well without knowing proto3's rules.
Conversions between messages and the referee's values are :mod:`referee.wire`'s.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from google.protobuf import json_format
from thirtyone.v1 import log_pb2

from referee import wire
from referee.faults import LogError, ReplayError
from referee.game import (
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
)

#: The log format version this module writes and reads (LogHeader.schema_version).
SCHEMA_VERSION = 1


def encode_record(record: log_pb2.LogRecord) -> str:
    """One log line (without its newline): the record in canonical proto JSON."""
    return json_format.MessageToJson(record, indent=None, always_print_fields_with_no_presence=True)


class LogWriter:
    """Writes a match log, one flushed line per record.

    Use as a context manager, or call :meth:`close`. The file is created (truncated) at once,
    with its parent directories.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = open(self.path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        #: Lines written so far.
        self.lines = 0

    def write(self, record: log_pb2.LogRecord) -> None:
        """Append one record and flush it to the operating system."""
        self.write_many((record,))

    def write_many(self, records: Iterable[log_pb2.LogRecord]) -> None:
        """Append several records, flushing once after them."""
        f = self._file
        if f is None:
            raise ValueError(f"the match log {self.path} is closed")
        n = 0
        for record in records:
            f.write(encode_record(record) + "\n")
            n += 1
        if n:
            f.flush()
            self.lines += n

    def close(self) -> None:
        """Flush and close the file; idempotent."""
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
        raise LogError(f"{path}:{lineno}: not a log record: {e}") from None
    if record.WhichOneof("payload") is None:
        raise LogError(f"{path}:{lineno}: a log record holds a header, an event or a footer; this one holds none")
    return record


def iter_log(path: str | os.PathLike[str], notes: list[str] | None = None) -> Iterator[tuple[int, log_pb2.LogRecord]]:
    """Yield ``(line number, record)`` for every line of a log.

    A last line that is cut short (no newline at its end, and not a whole record) is
    skipped with a note appended to ``notes``; any other bad line raises :class:`LogError`.
    """
    p = Path(path)
    try:
        f = open(p, encoding="utf-8", newline="\n")  # noqa: SIM115
    except OSError as e:
        raise LogError(f"cannot read the match log {p}: {e.strerror or e}") from None
    with f:
        for lineno, raw in enumerate(f, start=1):
            text = raw.rstrip("\n")
            if not text.strip():
                raise LogError(f"{p}:{lineno}: empty line")
            try:
                record = _parse_line(p, lineno, text)
            except LogError:
                if not raw.endswith("\n"):
                    if notes is not None:
                        notes.append(f"line {lineno} is cut short (the file ends mid-line); it was ignored")
                    return
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
    if record.header.schema_version != SCHEMA_VERSION:
        raise LogError(
            f"{p}:{lineno}: log schema version {record.header.schema_version}; this program reads version {SCHEMA_VERSION}"
        )
    try:
        header = wire.log_header_from_pb(record.header)
    except (wire.WireError, ValueError) as e:
        raise LogError(f"{p}:{lineno}: bad header: {e}") from None
    events: list[LoggedEvent] = []
    footer: wire.LogFooterInfo | None = None
    footer_line = 0
    for lineno, record in records:
        if footer is not None:
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
    return MatchLog(p, header, first[1].header, events, footer, notes)


# ---------------------------------------------------------------- replaying

#: Called for each logged action before it is applied, with the model in the state the seat
#: decided in: ``(match, action record, decision id, played by the referee)``.
ActionHook = Callable[[Match, ActionRecord, int, bool], None]


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """A log replayed through the game model."""

    #: The model after the last replayed event (None if the log holds no deal at all).
    match: Match | None
    rounds: tuple[RoundResult, ...]
    placings: tuple[int, ...]
    winner: int | None
    #: Whether the log was whole (had a footer), so the result was checked against it.
    complete: bool
    #: Why the replay stopped early, if it did.
    notes: tuple[str, ...]


def _same(expected: log_pb2.LogEvent, got: log_pb2.LogEvent, where: str) -> None:
    if expected != got:
        exp = json_format.MessageToJson(expected, indent=None)
        act = json_format.MessageToJson(got, indent=None)
        raise ReplayError(f"{where}: the log says {act}, the game model gives {exp}")


def replay_log(log: MatchLog | str | os.PathLike[str], *, on_action: ActionHook | None = None) -> ReplayResult:
    """Re-play a log through the game model without its seed and check it (module doc).

    Raises :class:`ReplayError` naming the first line where the log and the model disagree,
    or where the log asks for an action the rules forbid.
    """
    if not isinstance(log, MatchLog):
        log = read_log(log)
    h = log.header
    notes = list(log.notes)
    deals: dict[int, list[Card]] = {}
    restocks: dict[tuple[int, int], list[Card]] = {}
    try:
        for le in log.events:
            ev = le.event
            if ev.HasField("deal"):
                deals[ev.round] = list(wire.deal_from_pb(ev.round, h.players, ev.deal).deck)
            elif ev.HasField("restock"):
                rs = wire.restock_from_pb(ev.round, ev.restock)
                restocks[(rs.round_no, rs.number)] = list(rs.stock)
    except wire.WireError as e:
        raise ReplayError(f"{log.path}:{le.line}: {e}") from None

    where = f"{log.path}:1"
    try:
        m = Match(h.players, h.rules, chance=RecordedChance(deals, restocks))
    except ChanceError as e:
        if log.complete:
            raise ReplayError(f"{where}: {e}") from None
        notes.append(f"nothing to replay: {e}")
        return ReplayResult(None, (), (), None, False, tuple(notes))
    pending: deque[Record] = deque(m.take_records())
    stalled = ""  # set when a truncated log lacks the chance the model needs next

    def expect(kind: type, what: str) -> Record:
        if not pending or not isinstance(pending[0], kind):
            have = type(pending[0]).__name__ if pending else "nothing more"
            raise ReplayError(f"{where}: the log has a {what} here; the game model gives {have}")
        return pending.popleft()

    for le in log.events:
        ev = le.event
        where = f"{log.path}:{le.line}"
        kind = ev.WhichOneof("payload")
        if kind == "fault":
            continue  # faults are the referee's business; their effects are logged as events
        if stalled and kind in ("action", "forfeit"):
            # Only the records of the step that stalled (a round end) may still follow.
            raise ReplayError(f"{where}: a {kind} after the log lost the chance it needs ({stalled})")
        try:
            if kind == "action":
                if pending:
                    raise ReplayError(f"{where}: an action where the game model still has a {type(pending[0]).__name__} to record")
                rec = wire.action_record_from_pb(ev.round, ev.turn, ev.action)
                if m.is_over:
                    raise ReplayError(f"{where}: an action after the match ended")
                if rec.seat != m.current or ev.round != m.round_no or ev.turn != m.turn:
                    raise ReplayError(
                        f"{where}: action by seat {rec.seat} at round {ev.round} turn {ev.turn}; the game model "
                        f"waits on seat {m.current} at round {m.round_no} turn {m.turn}"
                    )
                reason = m.why_illegal(rec.action)
                if reason is not None:
                    raise ReplayError(f"{where}: {rec.action} by seat {rec.seat} is illegal: {reason}")
                if on_action is not None:
                    on_action(m, rec, ev.action.decision_id, ev.action.by_referee)
                try:
                    m.apply_unchecked(rec.action)
                except ChanceError as e:
                    if log.complete:
                        raise ReplayError(f"{where}: {e}") from None
                    stalled = str(e)
                pending.extend(m.take_records())
                done = expect(ActionRecord, "action")
                assert isinstance(done, ActionRecord)
                if done.card != rec.card:
                    raise ReplayError(f"{where}: the log says seat {rec.seat} drew {rec.card}; the model says {done.card}")
            elif kind == "forfeit":
                if pending:
                    raise ReplayError(f"{where}: a forfeit where the game model still has a {type(pending[0]).__name__} to record")
                try:
                    m.forfeit(ev.forfeit.seat, ev.forfeit.reason)
                except ChanceError as e:
                    if log.complete:
                        raise ReplayError(f"{where}: {e}") from None
                    stalled = str(e)
                pending.extend(m.take_records())
                f = expect(ForfeitRecord, "forfeit")
                assert isinstance(f, ForfeitRecord)
                _same(wire.forfeit_event_to_pb(f).event, ev, where)
            elif kind == "deal":
                d = expect(DealRecord, "deal")
                assert isinstance(d, DealRecord)
                _same(wire.deal_event_to_pb(d).event, ev, where)
            elif kind == "restock":
                r = expect(RestockRecord, "restock")
                assert isinstance(r, RestockRecord)
                _same(wire.restock_event_to_pb(r, ev.turn).event, ev, where)
            elif kind == "thirty_one":
                if not pending or not isinstance(pending[0], RoundResult):
                    raise ReplayError(f"{where}: a 31 where the game model ends no round")
                _same(wire.thirty_one_event_to_pb(pending[0]).event, ev, where)
            elif kind == "round_end":
                rr = expect(RoundResult, "round end")
                assert isinstance(rr, RoundResult)
                _same(wire.round_end_event_to_pb(rr).event, ev, where)
            else:
                raise ReplayError(f"{where}: an event with no payload")
        except (GameError, wire.WireError) as e:
            raise ReplayError(f"{where}: {e}") from None

    result_where = f"{log.path}: footer"
    if log.footer is not None:
        f_ = log.footer
        if pending:
            raise ReplayError(f"{result_where}: the log ends where the game model still has a {type(pending[0]).__name__}")
        want_end = {"last_player": MatchEnd.LAST_PLAYER, "max_rounds": MatchEnd.MAX_ROUNDS, "aborted": None}[f_.reason]
        if m.end is not want_end:
            raise ReplayError(f"{result_where}: the match ended ({f_.reason}); the game model has it {m.end}")
        if tuple(m.placings) != f_.placings:
            raise ReplayError(f"{result_where}: placings {list(f_.placings)}; the game model gives {list(m.placings)}")
        if m.winner != f_.winner:
            raise ReplayError(f"{result_where}: winner {f_.winner}; the game model gives {m.winner}")
        if m.round_no != f_.rounds:
            raise ReplayError(f"{result_where}: {f_.rounds} rounds; the game model played {m.round_no}")
    elif stalled:
        notes.append(f"replay stopped where the log does: {stalled}")
    return ReplayResult(m, tuple(m.rounds), tuple(m.placings), m.winner, log.complete, tuple(notes))

