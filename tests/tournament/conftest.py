"""Shared helpers of the tournament tests: the CLI, folder snapshots, process checks, and
tournaments prepared once per session (copied before a test changes them).

Everything is real: bot processes, gRPC, SQLite, worker processes. Nothing is timed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.bots.sandbox import probe
from referee.cli.app import app
from referee.tournament.schedule import schedule_for
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import DB_NAME, BotEntry, TournamentStore, now
from referee.tournament.submit import submit
from sample_bots import load as load_sample
from tests.polling import alive, poll_until

# Re-exported: the tournament tests import it from here.
from tests.polling import wait_gone as wait_gone
from tests.shared import built_once

SAMPLES = ("random", "greedy", "threshold")

#: The sandbox of the test tournaments: on wherever the machine can sandbox (CI installs
#: bubblewrap), off elsewhere, so that what is not about the sandbox is still tested there
#: (the sandbox's own tests skip with the reason; the report header says which it is).
SANDBOX = "auto" if probe().available else "off"

#: The settings of the session's base tournament: 3 pairs x 6 deals x 2 rotations = 36 matches,
#: enough for a run to be caught well before its last match.
BASE_SETTINGS = TournamentSettings(table_size=2, games=6, seed=20260531, sandbox=SANDBOX)

#: A bot written with the SDK, as a user would write one: the first legal action, except that
#: it discards its worst card after drawing.
SDK_BOT = '''\
import sdk


class Plain(sdk.Bot):
    name = "plain"
    version = "0.3"
    author = "a test"

    def act(self, view: sdk.View) -> sdk.Action:
        if view.must_discard:
            card, _ = view.best_discard()
            return sdk.discard(card)
        return sdk.DRAW_STOCK if sdk.DRAW_STOCK in view.legal_actions else view.legal_actions[0]


if __name__ == "__main__":
    sdk.run(Plain)
'''

_runner = CliRunner()


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # rich wraps tables on narrow terminals; a fixed width keeps the text checkable.
    monkeypatch.setenv("COLUMNS", "200")


def cli(*args: object) -> Result:
    """Run ``thirtyone ARGS`` in this process (stdout and stderr captured apart)."""
    return _runner.invoke(app, [str(a) for a in args])


def ok(*args: object) -> Result:
    """Run a command that must succeed."""
    result = cli(*args)
    assert result.exit_code == 0, f"thirtyone {' '.join(map(str, args))} failed:\n{result.output}"
    return result


def flat(text: str) -> str:
    """Text with every run of whitespace made one space (rich wraps long lines), and table
    borders (box-drawing characters) taken out."""
    return " ".join(re.sub("[\u2500-\u257f]", " ", text).split())


def fails(*args: object, message: str, code: int = 2) -> Result:
    """Run a command that must fail cleanly: exit ``code``, ``error:`` and ``message`` on
    stderr, no traceback, no exception other than the exit itself."""
    result = cli(*args)
    assert result.exit_code == code, f"exit {result.exit_code}, expected {code}:\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    err = flat(result.stderr)
    assert "error:" in err, result.output
    assert message in err, f"{message!r} not in {err!r}"
    return result


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` (relative path -> sha256, or 'dir')."""
    out: dict[str, str] = {}
    if not folder.exists():
        return out
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def db_dump(folder: Path) -> list[str]:
    """The database's content as SQL.

    Read and write mode, though it only reads: the last connection to close removes the
    WAL files, which a read-only one would leave behind.
    """
    conn = sqlite3.connect(f"file:{folder / DB_NAME}?mode=rw", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def done_count(folder: Path) -> int:
    """Matches recorded so far (read-only, safe while a run writes)."""
    conn = sqlite3.connect(f"file:{folder / DB_NAME}?mode=ro", uri=True, timeout=5)
    try:
        (n,) = conn.execute("SELECT count(*) FROM matches").fetchone()
        return int(n)
    finally:
        conn.close()


def stored_matches(folder: Path) -> list[Any]:
    """The stored matches (:class:`MatchRow`), in key order."""
    with TournamentStore.open(folder) as store:
        return store.matches()


def scheduled_keys(folder: Path) -> list[str]:
    """The keys of the tournament's whole schedule."""
    with TournamentStore.open(folder) as store:
        s = store.settings
        return [m.key for m in schedule_for(s, [b.name for b in store.bots()])]


def outcomes(folder: Path) -> dict[str, Any]:
    """Each stored match's result without its timings: what must not depend on ``-j``."""
    out: dict[str, Any] = {}
    for row in stored_matches(folder):
        seats = [
            {k: v for k, v in seat.items() if k not in ("total_latency_us", "max_latency_us")}
            for seat in row.result["seats"]
        ]
        out[row.key] = {
            "seats": list(row.seats),
            "seed": row.seed,
            "placings": row.placings,
            "winner": row.result["winner"],
            "reason": row.result["reason"],
            "rounds": row.result["rounds"],
            "per_seat": seats,
        }
    return out


def copy_tournament(src: Path, dest: Path) -> Path:
    """A copy of a (closed) tournament folder."""
    shutil.copytree(src, dest)
    return dest


# ---------------------------------------------------------------- processes


def _stat(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None


def _ppid(stat: str) -> int:
    # The command name in brackets may hold spaces and brackets: read after the last one.
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (Linux /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is None:
            continue
        parents.setdefault(_ppid(stat), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return {p for p in found if alive(p)}


def workers_of(pid: int) -> list[int]:
    """The worker processes of the run ``pid``: its children that multiprocessing spawned.
    A process that ends while it is looked at is left out (bots come and go all the time)."""
    found = []
    for p in descendants(pid):
        stat = _stat(p)
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if stat is not None and _ppid(stat) == pid and b"spawn_main" in cmd:
            found.append(p)
    return found


def processes_in(folder: Path) -> list[str]:
    """Live processes whose working directory or command line is inside ``folder``."""
    root = str(folder.resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid() or not alive(int(entry.name)):
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + "/") or root in cmd:
            found.append(f"{entry.name}: {cmd.strip()} (in {cwd})")
    return found


def wait_no_process_in(folder: Path, timeout_s: float = 30.0) -> list[str]:
    """Wait until no process works in ``folder``; those left at the timeout."""
    with suppress(AssertionError):
        poll_until(f"no process in {folder}", lambda: not processes_in(folder), timeout_s=timeout_s)
    return processes_in(folder)


# ---------------------------------------------------------------- prepared tournaments


def make_tournament(folder: Path, settings: TournamentSettings, bots: Sequence[str], *, validate: bool = True) -> Path:
    """A tournament with ``bots`` submitted from ``folder``: validated for real (the
    compliance check and the validation match), or with ``validate=False`` (sample bots
    only) entered as submit would enter them, for a test that is not about submission."""
    with TournamentStore.create(folder, settings) as store:
        for bot in bots:
            if validate:
                submit(store, bot, cwd=folder)
            else:
                cls = load_sample(bot)
                store.add_bot(BotEntry(bot, "sample", bot, str(folder.resolve()), bot, None, cls.name, cls.version, cls.author, now()))
    return folder


@pytest.fixture(scope="session")
def base_tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample bots under :data:`BASE_SETTINGS`, nothing played (built once for the
    whole run). Copy it before use."""
    return built_once(tmp_path_factory, "base", lambda root: make_tournament(root / "t", BASE_SETTINGS, SAMPLES))


@dataclass(frozen=True)
class Played:
    """A tournament played to its end, uninterrupted, with ``-j 1``."""

    folder: Path
    standings_json: str
    outcomes: dict[str, Any]


@pytest.fixture(scope="session")
def reference_run(base_tournament: Path, tmp_path_factory: pytest.TempPathFactory) -> Played:
    """The base tournament played once with ``-j 1`` (once for the whole run): what every
    other run must equal."""

    def play(root: Path) -> Played:
        folder = copy_tournament(base_tournament, root / "t")
        result = cli("tournament", "run", folder, "-j", "1")
        assert result.exit_code == 0, result.output
        standings = ok("standings", folder, "--json").stdout
        return Played(folder, standings, outcomes(folder))

    return built_once(tmp_path_factory, "reference", play)


@pytest.fixture(scope="session")
def one_bot_tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tournament (tables of 2, 1 deal) holding only the random bot (built once for the
    whole run). Copy it before use."""
    settings = TournamentSettings(table_size=2, games=1, seed=1, sandbox=SANDBOX)
    return built_once(tmp_path_factory, "one", lambda root: make_tournament(root / "t", settings, ["random"]))


def _state(folder: Path) -> tuple[dict[str, str], list[str] | None]:
    dump = None
    if (folder / DB_NAME).is_file():
        try:
            dump = db_dump(folder)
        except sqlite3.DatabaseError:
            dump = None  # not a database: its bytes are in the snapshot
    return snapshot(folder), dump


@contextmanager
def left_as_is(*folders: Path) -> Iterator[None]:
    """Check that the block changes nothing in ``folders``: not a file, not a database row."""
    before = [_state(f) for f in folders]
    yield
    for folder, (snap, dump) in zip(folders, before, strict=True):
        now_snap, now_dump = _state(folder)
        assert now_snap == snap, f"{folder} changed: {sorted(set(now_snap.items()) ^ set(snap.items()))}"
        assert now_dump == dump, f"the database in {folder} changed"


def start_run(folder: Path, out: Path, jobs: int = 2, *, new_session: bool = False) -> subprocess.Popen[bytes]:
    """``thirtyone tournament run FOLDER -j JOBS`` as a process of its own, working in the
    tournament's folder (so every process it starts can be found by its working directory);
    with ``new_session``, in a process group of its own, as a shell runs a job."""
    cmd = [sys.executable, "-c", "from referee.cli import main; main()", "tournament", "run", str(folder), "-j", str(jobs)]
    with open(out, "wb") as f:
        return subprocess.Popen(cmd, cwd=folder, stdout=f, stderr=subprocess.STDOUT, start_new_session=new_session)


def wait_for_matches(proc: subprocess.Popen[bytes], folder: Path, at_least: int, out: Path) -> int:
    """Wait until the run has recorded ``at_least`` matches; fail if it ends first."""

    def recorded() -> int:
        n = done_count(folder) if (folder / DB_NAME).exists() else 0
        return n if n >= at_least else 0

    try:
        return poll_until(
            f"the run to record {at_least} matches", recorded, timeout_s=120, interval_s=0.02,
            while_=lambda: proc.poll() is None, detail=lambda: f"its output:\n{out.read_text()}",
        )  # fmt: skip
    except AssertionError:
        proc.kill()
        raise

