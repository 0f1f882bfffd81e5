"""What a tournament run hands out and gets back: the tasks, their results, and the seam.

A :class:`MatchTask` is one match for a worker to play (its seats, seed, settings, how its
bots start and are sandboxed); a :class:`TaskResult` is what a worker reports of it: a plain
result, or a failure of the infrastructure, which is recorded and played again, never
charged to a bot. A bot that cannot start forfeits its seat (a ``start`` fault): the match is
played among the seats that did start, the absent ones placed last (:func:`with_absent`).

:class:`Executor` is the seam for growing past one machine: anything that takes
:class:`MatchTask`\\ s and yields :class:`TaskResult`\\ s can replace the local pool
(:class:`~referee.tournament.pool.LocalPool`; Ray's is
:class:`~referee.tournament.ray_executor.RayExecutor`). Here too are the file names a
tournament gives a match's log and its bots' output, and the time limits of a match.
"""

from __future__ import annotations

import errno
import hashlib
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from referee.bots.sandbox import SandboxConfig
from referee.faults import RefereeError
from referee.tournament.results import MatchResult, SeatResult
from referee.tournament.schedule import ScheduledMatch
from referee.tournament.settings import TournamentSettings

#: Seconds a worker waits for its bots to start.
STARTUP_TIMEOUT_S = 15.0
#: Added to every wall-clock limit (with 10% more): log writing, a loaded machine.
LIMIT_MARGIN_S = 5.0
#: Times one match is tried in one run when the infrastructure fails it.
MAX_ATTEMPTS = 3
#: The fault kind of a seat whose bot could not be started (or was disqualified).
START_FAULT = "start"


@dataclass(frozen=True, slots=True)
class BotLaunch:
    """How a worker starts (or reaches) one tournament bot."""

    name: str
    #: In the referee's bot syntax, with the tournament name as its ``NAME=`` label.
    spec: str
    cwd: str
    #: The bot's kind in the tournament (``folder`` for a folder plus a command).
    kind: str = ""
    #: The copied file or folder whose hash is checked before each launch, and its hash.
    files: str = ""
    sha256: str = ""


@dataclass(frozen=True, slots=True)
class MatchTask:
    """One match for a worker to play."""

    match: ScheduledMatch
    #: Where the worker writes the log: in the private ``running/`` folder.
    log_path: str
    bots: tuple[BotLaunch, ...]
    settings: dict[str, Any]
    #: How the bots are sandboxed (None: unsandboxed, the tournament says ``sandbox = "off"``).
    sandbox: SandboxConfig | None = None
    #: Bots not to start (disqualified): their seats forfeit.
    absent: tuple[str, ...] = ()
    #: Where the bots' temporary folders go (cleaned by the next run of the tournament).
    tmp_root: str | None = None
    #: Folder for the bots' output of this match ("" keeps none).
    output_dir: str = ""
    #: Bots of this match to start a spare process of while it plays: the plan expects the
    #: worker to need them started again for its next match (:meth:`~referee.tournament.pool.Plan.restarts_after`).
    prestart: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskResult:
    """A finished match (or a failure to play it), as a worker reports it."""

    key: str
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    duration_s: float = 0.0
    #: Seconds this worker spent starting bots for this match (0 when they were running).
    startup_s: float = 0.0
    #: The failure is the infrastructure's (worker died or overran, disk full, ...), not a bot's.
    infra: bool = False
    #: The match will be tried again in this run.
    retrying: bool = False
    #: Bots that could not be started for this match: name -> why.
    start_failures: dict[str, str] = field(default_factory=dict)
    #: Bots that were started (or found running) for this match.
    started: tuple[str, ...] = ()
    #: Whether the match wrote a log (not when fewer than two bots could play).
    has_log: bool = True

    @property
    def record(self) -> MatchResult:
        """The result as a typed record (:mod:`referee.tournament.results`); only when ``ok``."""
        return MatchResult.from_json(self.result)


class RunError(RefereeError):
    """The executor could not play every task."""


class Executor(Protocol):
    """Plays tasks and yields their results as they finish."""

    def run(self, tasks: Sequence[MatchTask], prepare: Callable[[MatchTask], MatchTask] | None = None) -> Iterator[TaskResult]:
        """Play every task (``prepare`` each just before it starts); yield each result as soon
        as it is known."""
        ...


def log_name(key: str) -> str:
    """The log file name of a match key (slashes do not belong in file names)."""
    return key.replace("/", "_") + ".jsonl"


def output_dir_of(folder: Path, key: str) -> Path:
    """Where a tournament keeps the bots' output of one match."""
    return folder / "output" / log_name(key).removesuffix(".jsonl")


def output_file_name(seat: int, bot: str) -> str:
    """The file of one seat's bot output in a match's output folder."""
    return f"seat{seat}-{bot}.txt"


def tmp_root_of(folder: Path) -> Path:
    """The folder under which a tournament's bots get their temporary folders.

    Outside the tournament folder and short (a Unix socket path holds ~100 bytes), named
    after the tournament so that the next run finds and removes what a killed run left.
    """
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"thirtyone-run-{digest}"


def outcome_to_result(outcome: Any) -> dict[str, Any]:
    """The JSON-ready summary of a :class:`referee.match.MatchOutcome` that standings need
    (under ``scoring="pot"`` each seat's net ``chips`` too): :func:`outcome_to_record`'s JSON."""
    return outcome_to_record(outcome).to_json()


def outcome_to_record(outcome: Any) -> MatchResult:
    """The typed result of a :class:`referee.match.MatchOutcome`, as the runner stores it."""
    seats = []
    chips = tuple(getattr(outcome, "chips", ()))
    for s in outcome.seats:
        lives = sum(r.lives_lost.get(s.seat, 0) for r in outcome.rounds)
        rounds_in = sum(1 for r in outcome.rounds if s.seat in r.hands)
        faults: dict[str, int] = {}
        for f in s.faults:
            faults[f.kind] = faults.get(f.kind, 0) + 1
        late = s.stats.late
        seats.append(
            SeatResult(
                bot=s.label, placing=s.placing, lives_lost=lives, rounds=rounds_in, faults=faults,
                forfeited=s.forfeited, decisions=s.stats.decisions, total_latency_us=s.stats.total_latency_us,
                max_latency_us=s.stats.max_latency_us, late=late, chips=chips[s.seat] if chips else 0,
                # Only when there were any, as in the log: rows of matches without stay as they were.
                stored=_PLAYED_SEAT_KEYS + (("late",) if late else ()) + (("chips",) if chips else ()),
            )
        )
    return MatchResult(tuple(outcome.placings), outcome.winner, outcome.reason, len(outcome.rounds), tuple(seats))


#: The keys of a seat that played, before the ones written only when they apply.
_PLAYED_SEAT_KEYS = (
    "bot", "placing", "lives_lost", "rounds", "faults", "forfeited", "decisions", "total_latency_us", "max_latency_us",
)


def with_absent(names: Sequence[str], played: dict[str, Any] | None, present: Sequence[int], why: dict[int, str]) -> dict[str, Any]:
    """The result of a whole table from the result among the ``present`` seats (None when
    fewer than two played): every absent seat forfeits (with a ``start`` fault unless it was
    disqualified) and shares the place below every present seat."""
    record = None if played is None else MatchResult.from_json(played)
    n_present = len(present)
    last = n_present + 1 if n_present else 1
    seats: list[SeatResult] = []
    for s, name in enumerate(names):
        if s in why:
            # A disqualified bot forfeits without a new fault: it was not asked to start.
            faults = {} if why[s] == "disqualified" else {START_FAULT: 1}
            seats.append(
                SeatResult(bot=name, placing=last, faults=faults, forfeited=True, absent=why[s],
                           stored=(*_PLAYED_SEAT_KEYS, "absent"))
            )
        elif record is None:  # the only seat present wins without playing
            seats.append(SeatResult(bot=name, placing=1, stored=_PLAYED_SEAT_KEYS))
        else:
            seats.append(record.seats[present.index(s)])
    placings = tuple(seat.placing for seat in seats)
    if record is None:
        winner = present[0] if n_present == 1 else None
        return MatchResult(placings, winner, "absent", 0, tuple(seats)).to_json()
    w = record.winner
    return MatchResult(placings, present[w] if w is not None else None, record.reason, record.rounds, tuple(seats)).to_json()


def describe_error(e: BaseException) -> str:
    """An error of the infrastructure, said plainly (a full disk says so)."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full ({e.filename or 'writing'}): free some space and run again"
    if isinstance(e, MemoryError):
        return "the referee ran out of memory"
    return f"{type(e).__name__}: {e}"


def match_limit_s(settings: TournamentSettings) -> float:
    """The longest a match can take once its bots are up: every decision the rules allow
    at its full budget and grace, every seat's bank, plus a margin (10% and 5 s)."""
    r, tc = settings.rules, settings.time_control
    decisions = r.max_rounds * r.max_turns_per_round * 2  # a turn is at most two decisions
    per_decision = (tc.budget_ms + tc.grace_ms) / 1000
    return 1.1 * (decisions * per_decision + settings.table_size * tc.bank_ms / 1000) + LIMIT_MARGIN_S


def startup_limit_s() -> float:
    """The longest a worker may take to start a match's bots (they start at once)."""
    # Identity may take another second after the health check's timeout (client.start_bot).
    return STARTUP_TIMEOUT_S + 1.0 + 2 * LIMIT_MARGIN_S


