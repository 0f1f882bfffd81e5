"""Verifying match logs: one file or every log of a tournament folder; finding a match's log.

A log verifies when it replays through the game model from its own deals, restocks and
actions (no seed) to exactly what it records (:mod:`referee.replay.model`). Each log gets one
:class:`Verdict`, and a run of them one exit code:

====================  ====  =====================================================================
verdict               exit  meaning
====================  ====  =====================================================================
``ok``                0     whole, and every recorded outcome is the game model's
``diverged``          1     the log disagrees with the game model (a tampered or buggy log)
``unreadable``        2     not a match log that can be read: not JSON, a bad record, a card that
                            is not a card, an unknown schema version, a line after the footer
``incomplete``        3     no footer (the referee was killed): everything up to where it stops
                            replays, but there is no result to check
====================  ====  =====================================================================

For several logs the most serious verdict decides: diverged, then unreadable, then incomplete.

:func:`verify_results` checks a tournament's results store against its logs: every database
row (placings, winner, rounds, each seat's faults by kind, forfeit, lives, decisions, its bot,
the match seed) must be what its log says, every row must have its log and every finished
match's log its row. Each difference is a :class:`RowDivergence` (a divergence: exit 1).

Pure: no printing; files and the database are only read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from referee import wire
from referee.faults import LogError, RefereeError
from referee.game.cards import Card
from referee.game.state import ForfeitRecord, Match, Record, RoundResult
from referee.log import LogWatcher, MatchLog, Position, iter_log, read_log, walk_log
from referee.replay.model import Divergence, build_replay
from referee.text import printable
from referee.tournament.schedule import key_of_log
from referee.tournament.store import DB_NAME, MatchRow, TournamentStore


class Verdict(Enum):
    """What verifying one log found."""

    OK = "ok"
    DIVERGED = "diverged"
    UNREADABLE = "unreadable"
    INCOMPLETE = "incomplete"


#: The exit code of each verdict (see the module's table).
EXIT_CODES: dict[Verdict, int] = {Verdict.OK: 0, Verdict.DIVERGED: 1, Verdict.UNREADABLE: 2, Verdict.INCOMPLETE: 3}
# Most serious first: a divergence says more than a file that could not be read.
_SEVERITY = (Verdict.DIVERGED, Verdict.UNREADABLE, Verdict.INCOMPLETE, Verdict.OK)


@dataclass(frozen=True, slots=True)
class Verification:
    """The verdict on one log."""

    path: Path
    verdict: Verdict
    #: The header's match id ("" when the log could not be read).
    match_id: str
    #: Rounds replayed.
    rounds: int
    #: One line for people: the result, the divergence, where the log stops, or the error.
    detail: str
    divergence: Divergence | None = None
    notes: tuple[str, ...] = ()


def verify_log(path: str | os.PathLike[str]) -> Verification:
    """Verify one log; never raises for a bad log (its verdict says what is wrong).

    Its detail and notes are :func:`~referee.text.printable`: a name in a crafted log cannot
    send terminal escapes to whoever reads the verdict.
    """
    v = _verify_log(Path(path))
    return replace(v, match_id=printable(v.match_id), detail=printable(v.detail), notes=tuple(map(printable, v.notes)))


def _verify_log(p: Path) -> Verification:
    try:
        log = read_log(p)
        replay = build_replay(log, steps=False)
    except LogError as e:
        return Verification(p, Verdict.UNREADABLE, "", 0, str(e))
    h = log.header
    if replay.divergence is not None:
        return Verification(p, Verdict.DIVERGED, h.match_id, replay.rounds, str(replay.divergence), replay.divergence, replay.notes)
    if not replay.complete:
        detail = replay.stop_description()
        return Verification(p, Verdict.INCOMPLETE, h.match_id, replay.rounds, detail, None, replay.notes)
    footer = log.footer
    assert footer is not None
    if footer.winner is not None:
        name = h.seats[footer.winner].label or h.seats[footer.winner].identity.name
        result = f"seat {footer.winner} ({name}) won"
    else:
        why = {"max_rounds": "round limit", "pot_rounds": "a tie for the most chips"}.get(footer.reason, "aborted")
        result = f"no winner ({why})"
    rounds = f"{footer.rounds} round" + ("" if footer.rounds == 1 else "s")
    detail = f"{rounds}, {result}, placings {' '.join(map(str, footer.placings))}"
    if footer.chips:
        # Playing for a pot: the net chips the placings follow from.
        detail += ", chips " + " ".join(f"{c:+d}" if c else "0" for c in footer.chips)
    return Verification(p, Verdict.OK, h.match_id, replay.rounds, detail, None, replay.notes)


def log_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The match logs of a folder: ``FOLDER/logs/*.jsonl`` for a tournament folder, else
    ``FOLDER/*.jsonl``; sorted by name."""
    f = Path(folder)
    logs = f / "logs"
    where = logs if logs.is_dir() else f
    return sorted(p for p in where.glob("*.jsonl") if p.is_file())


def verify_folder(folder: str | os.PathLike[str]) -> list[Verification]:
    """Verify every log of a folder (see :func:`log_files`)."""
    return [verify_log(p) for p in log_files(folder)]


def exit_code(results: list[Verification]) -> int:
    """The exit code for a run of verifications: the most serious verdict's."""
    found = {r.verdict for r in results}
    for verdict in _SEVERITY:
        if verdict in found:
            return EXIT_CODES[verdict]
    return 0


# ---------------------------------------------------------------- the results store against the logs


@dataclass(frozen=True, slots=True)
class RowDivergence:
    """A database row and its match log disagree (or one of them is missing)."""

    #: The match key (for a log without a row: the log's file name).
    match: str
    #: What differs, in the stored result's names: ``placings``, ``seats[1].faults.illegal``;
    #: ``log`` for a row without its log, ``row`` for a log without its row.
    field: str
    detail: str

    def __str__(self) -> str:
        return f"match {self.match}: {self.field}: {self.detail}"


@dataclass(frozen=True, slots=True)
class ResultsCheck:
    """What :func:`verify_results` found."""

    #: Database rows checked.
    rows: int
    divergences: tuple[RowDivergence, ...]


class _Tally(LogWatcher):
    """Counts, seat by seat, what the runner stores of a match (see ``outcome_to_result``)."""

    def __init__(self, seats: int) -> None:
        self.faults: list[dict[str, int]] = [{} for _ in range(seats)]
        self.forfeits = [False] * seats
        self.lives_lost = [0] * seats
        self.rounds = [0] * seats

    def faulted(self, at: Position, fault: wire.FaultInfo) -> None:
        """Count the fault by kind."""
        self.faults[fault.seat][fault.kind] = self.faults[fault.seat].get(fault.kind, 0) + 1

    def forfeited(self, at: Position, record: ForfeitRecord, hand: tuple[Card, ...]) -> None:
        """Mark the seat forfeited."""
        self.forfeits[record.seat] = True

    def produced(self, at: Position, kind: str, record: Record, match: Match) -> None:
        """Count lives lost and rounds played at each round's end."""
        if kind == "round_end" and isinstance(record, RoundResult):
            for seat, n in record.lives_lost.items():
                self.lives_lost[seat] += n
            for seat in record.hands:
                self.rounds[seat] += 1


def stored_result_of(log: MatchLog) -> dict[str, Any] | None:
    """The result the runner stores for a finished match, rebuilt from its log alone by a walk
    through the game model; None when the log diverges (or has no footer)."""
    if log.footer is None:
        return None
    tally = _Tally(log.header.players)
    if walk_log(log, tally).divergence is not None:
        return None
    return _expected_result(log, tally)


def _expected_result(log: MatchLog, tally: _Tally) -> dict[str, Any]:
    """The result a database row must hold for this log (the runner's ``outcome_to_result``)."""
    footer = log.footer
    assert footer is not None
    stats = {s.seat: s for s in footer.stats}
    seats = []
    for i, info in enumerate(log.header.seats):
        st = stats.get(i)
        seats.append(
            {
                "bot": info.label or info.identity.name,
                "placing": footer.placings[i] if i < len(footer.placings) else None,
                "lives_lost": tally.lives_lost[i],
                "rounds": tally.rounds[i],
                "faults": tally.faults[i],
                "forfeited": tally.forfeits[i],
                "decisions": st.decisions if st else None,
                "total_latency_us": st.total_latency_us if st else None,
                "max_latency_us": st.max_latency_us if st else None,
                # Late answers: the footer's count, checked against the events by the walk.
                **({"late": st.late} if st and st.late else {}),
                # Playing for a pot: the seat's net chips (the footer's, checked by the walk).
                **({"chips": footer.chips[i]} if i < len(footer.chips) else {}),
            }
        )
    return {
        "placings": list(footer.placings),
        "winner": footer.winner,
        "reason": footer.reason,
        "rounds": footer.rounds,
        "seats": seats,
    }


def _differences(path: str, stored: Any, logged: Any) -> list[tuple[str, str]]:
    """Every field where ``stored`` (the row) and ``logged`` (the log) differ, by path.

    Fields the log cannot speak of (added to rows later) are not differences; a fault kind
    counted in the row but absent from the log is.
    """
    faults = path.endswith("faults")
    if isinstance(stored, Mapping) and isinstance(logged, Mapping):
        if faults:
            # A kind with no fault may be stored as 0 or not at all.
            stored = {k: v for k, v in stored.items() if v != 0}
        out: list[tuple[str, str]] = []
        for k in sorted(set(logged) | (set(stored) if faults else set()), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in stored:
                out.append((sub, f"missing in the database; the log has {logged[k]!r}"))
            elif k not in logged:
                out.append((sub, f"the database has {stored[k]!r}; the log has none"))
            else:
                out.extend(_differences(sub, stored[k], logged[k]))
        return out
    if path == "seats" and isinstance(stored, list) and isinstance(logged, list) and len(stored) == len(logged):
        return [d for i, (a, b) in enumerate(zip(stored, logged, strict=True)) for d in _differences(f"seats[{i}]", a, b)]
    if stored != logged:
        return [(path, f"the database has {stored!r}; the log has {logged!r}")]
    return []


def _check_row(folder: Path, row: MatchRow) -> list[RowDivergence]:
    from referee.tournament.tasks import with_absent

    def div(field: str, detail: str) -> list[RowDivergence]:
        return [RowDivergence(row.key, field, printable(detail))]

    # Seats whose bot never started (or was disqualified) are not in the log: the match was
    # played among the rest, and the row places them last (the runner's with_absent).
    seats = row.result.get("seats", []) if isinstance(row.result, dict) else []
    why = {s: str(seat["absent"]) for s, seat in enumerate(seats) if isinstance(seat, dict) and "absent" in seat}
    present = [s for s in range(len(row.seats)) if s not in why]
    if why and len(present) < 2 and not row.log_path:
        expected = with_absent(row.seats, None, present, why)
        return [RowDivergence(row.key, f, d) for f, d in _differences("", row.result, expected)]
    logs = (folder / "logs").resolve()
    path = (folder / row.log_path).resolve()
    if not path.is_relative_to(logs):
        return div("log_path", f"{row.log_path!r} is not a log in the tournament's logs folder")
    if not path.is_file():
        return div("log", f"the database records this match, but its log {row.log_path} is missing")
    try:
        log = read_log(path)
    except LogError as e:
        return div("log", f"the log {row.log_path} cannot be read: {e}")
    if log.footer is None:
        return div("log", f"the database records this match as finished; its log {row.log_path} has no footer")
    played = stored_result_of(log)
    if played is None:
        # The log itself diverges (its own verdict says where); a row cannot be checked against it.
        return div("log", f"the log {row.log_path} diverges from the game model, so the row cannot be checked")
    expected = played
    if why:
        expected = with_absent(row.seats, expected, present, why)
    out = [RowDivergence(row.key, f, d) for f, d in _differences("", row.result, expected)]
    h = log.header
    if h.match_id != row.key:
        out += div("key", f"the log {row.log_path} is of match {h.match_id!r}")
    labels = [s.label or s.identity.name for s in h.seats]
    if [row.seats[s] for s in present] != labels:
        out += div("seats", f"the database has {[row.seats[s] for s in present]} playing; the log has {labels}")
    if row.seed != h.seed:
        out += div("seed", f"the database has {row.seed}; the log has {h.seed}")
    return out


def verify_results(folder: str | os.PathLike[str]) -> ResultsCheck:
    """Check a tournament's database against its logs, row by row (see the module doc).

    The database is opened read-only. Raises
    :class:`~referee.tournament.store.StoreError` if it cannot be read at all.
    """
    f = Path(folder)
    with TournamentStore.open(f, readonly=True) as store:
        rows = store.matches()
    out: list[RowDivergence] = []
    referenced: set[Path] = set()
    for row in rows:
        referenced.add((f / row.log_path).resolve())
        out.extend(_check_row(f, row))
    for p in log_files(f):
        if p.resolve() in referenced:
            continue
        try:
            log = read_log(p)
        except LogError:
            continue  # its own verdict says so
        # A log without a footer is a match in flight when a run stopped (reported as
        # incomplete); a finished match must have its row.
        if log.footer is not None:
            out.append(RowDivergence(p.name, "row", "a finished match's log has no row in the database"))
    return ResultsCheck(len(rows), tuple(out))


def has_results(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a tournament's results store."""
    return (Path(folder) / DB_NAME).is_file()


class MatchNotFound(RefereeError, LookupError):
    """No log (or more than one) in a folder answers to a match name."""


def find_match_log(folder: str | os.PathLike[str], match: str) -> Path:
    """The log of ``match`` in a tournament folder.

    ``match`` may be a log's file name or stem (``r1_t2_g1``), a match key (``r1/t2/g1``,
    stored with its slashes as underscores), or a header's ``match_id``. Raises
    :class:`MatchNotFound` with a message that lists a few of the logs there are.
    """
    files = log_files(folder)
    key_stem = match.replace("/", "_")
    by_name = [p for p in files if match in (p.name, p.stem) or p.stem == key_stem]
    if len(by_name) == 1:
        return by_name[0]
    by_id = [p for p in files if _match_id(p) == match]
    if len(by_id) == 1:
        return by_id[0]
    if len(by_id) > 1:
        names = ", ".join(p.name for p in by_id[:5])
        raise MatchNotFound(f"{len(by_id)} logs in {folder} have match id {match!r}: {names}")
    if not files:
        raise MatchNotFound(f"no match logs in {folder} (looked for {Path(folder) / 'logs'}/*.jsonl)")
    some = ", ".join(key_of_log(p) for p in files[:5]) + (f", ... ({len(files)} logs)" if len(files) > 5 else "")
    raise MatchNotFound(f"no log of match {match!r} in {folder}; there are: {some}")


def _match_id(path: Path) -> str | None:
    """The header's match id, from the first line only; None if it cannot be read."""
    try:
        # The generator, dropped after its first record, closes the file at once.
        _, record = next(iter(iter_log(path)))
    except (StopIteration, LogError):
        return None
    return record.header.match_id if record.HasField("header") else None


__all__ = [
    "EXIT_CODES",
    "MatchNotFound",
    "ResultsCheck",
    "RowDivergence",
    "Verdict",
    "Verification",
    "exit_code",
    "find_match_log",
    "has_results",
    "log_files",
    "verify_folder",
    "verify_log",
    "verify_results",
]
