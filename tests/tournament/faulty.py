"""A small real tournament whose bots commit every kind of fault, played once per test run
and copied before a test changes it; and fault counts read back from its logs.

The hostile test bot (``tests/referee/bots/hostile.py``) plays in four modes next to the
random sample bot: ``illegal`` (illegal actions), ``garbage`` (malformed answers),
``silent`` (timeouts) and ``die`` (a crash on its second decision). They are entered with
:meth:`TournamentStore.add_bot` (no validation match: they would fail it, on purpose) and run
unsandboxed (``sandbox="off"``), being test commands outside the tournament.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

from referee import wire
from referee.log import LogWatcher, Position, read_log, walk_log
from referee.replay.verify import log_files
from referee.tournament.runner import run_pending
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import BotEntry, TournamentStore, now
from tests.shared import built_once

HOSTILE = Path(__file__).resolve().parents[1] / "referee" / "bots" / "hostile.py"

#: name -> hostile mode (and extra arguments).
FAULTY = {
    "illegal": ["--mode", "illegal"],
    "garbage": ["--mode", "garbage"],
    "silent": ["--mode", "silent"],
    "dies": ["--mode", "die", "--from", "2"],
}

#: One table of five seats, one deal, five rotations: 5 matches of at most 3 rounds, with
#: short clocks (a silent bot costs 100 + 300 + 100 ms, then 200 ms a decision), yet room
#: enough that a well-behaved bot on a busy machine does not time out.
SETTINGS = TournamentSettings.from_dict(
    {
        "rules": {"max_rounds": 3},
        "table_size": 5,
        "games": 1,
        "seed": 86_753_091_234_577,  # long, so that no other number in the output contains it
        "time_control": {"budget_ms": 100, "bank_ms": 300, "grace_ms": 100},
        "max_strikes": 4,
        "sandbox": "off",
    }
)

_played: dict[str, Path] = {}


def make_faulty(folder: Path, settings: TournamentSettings = SETTINGS) -> Path:
    """The faulty tournament, created in ``folder`` with nothing played."""
    with TournamentStore.create(folder, settings) as store:
        store.add_bot(entry("random", "sample", "random"))
        for name, args in FAULTY.items():
            store.add_bot(entry(name, "command", shlex.join([sys.executable, str(HOSTILE), *args])))
    return folder


def entry(name: str, kind: str, spec: str) -> BotEntry:
    """A bot entry as :func:`referee.tournament.submit.submit` would store it, unvalidated."""
    return BotEntry(name, kind, spec, "", spec, None, name, "0.1", "tests", now())


def faulty_played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The faulty tournament played to its end (once for the whole run, whatever the number
    of test processes). Copy it before changing it."""

    def play(root: Path) -> Path:
        folder = make_faulty(root / "t")
        with TournamentStore.open(folder) as store:
            report = run_pending(store, jobs=1)
        assert not report.failed, report.failed
        assert report.played == 5
        return folder

    if "folder" not in _played:
        _played["folder"] = built_once(tmp_path_factory, "faulty", play)
    return _played["folder"]


def copy_of(folder: Path, dest: Path) -> Path:
    """A copy of a closed tournament folder."""
    shutil.copytree(folder, dest)
    return dest


class _Faults(LogWatcher):
    def __init__(self) -> None:
        self.by_seat: Counter[tuple[int, str]] = Counter()
        self.forfeits: set[int] = set()

    def faulted(self, at: Position, fault: wire.FaultInfo) -> None:
        self.by_seat[(fault.seat, fault.kind)] += 1
        if fault.forfeited:
            self.forfeits.add(fault.seat)


def faults_in_logs(folder: Path) -> tuple[dict[str, Counter[str]], Counter[str]]:
    """Faults by bot and kind, and forfeits by bot, counted from the logs' events alone
    (each log re-simulated; its seats named by its header)."""
    faults: dict[str, Counter[str]] = {}
    forfeits: Counter[str] = Counter()
    for path in log_files(folder):
        log = read_log(path)
        watcher = _Faults()
        walk = walk_log(log, watcher)
        assert walk.divergence is None, walk.divergence
        names = [s.label for s in log.header.seats]
        for (seat, kind), n in watcher.by_seat.items():
            faults.setdefault(names[seat], Counter())[kind] += n
        for seat in watcher.forfeits:
            forfeits[names[seat]] += 1
    return faults, forfeits


__all__ = ["FAULTY", "SETTINGS", "copy_of", "entry", "faults_in_logs", "faulty_played", "make_faulty"]
