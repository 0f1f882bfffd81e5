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

Pure: no printing; files are only read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from referee.faults import LogError
from referee.log import iter_log, read_log
from referee.replay.model import Divergence, build_replay


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
    """Verify one log; never raises for a bad log (its verdict says what is wrong)."""
    p = Path(path)
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
        result = "no winner (" + ("round limit" if footer.reason == "max_rounds" else "aborted") + ")"
    rounds = f"{footer.rounds} round" + ("" if footer.rounds == 1 else "s")
    detail = f"{rounds}, {result}, placings {' '.join(map(str, footer.placings))}"
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


class MatchNotFound(LookupError):
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
    some = ", ".join(p.stem for p in files[:5]) + (f", ... ({len(files)} logs)" if len(files) > 5 else "")
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
    "Verdict",
    "Verification",
    "exit_code",
    "find_match_log",
    "log_files",
    "verify_folder",
    "verify_log",
]
