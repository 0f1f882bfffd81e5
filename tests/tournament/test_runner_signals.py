"""Stopping a run the way people and schedulers do (a signal to the whole process group while
matches are in flight), and workers that are killed or stopped: the run never hangs, leaves
no process, and loses no finished match."""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import os
import signal
import threading
from pathlib import Path

import pytest

from referee.game import Rules
from referee.timecontrol import TimeControl
from referee.tournament.pool import LocalPool
from referee.tournament.runner import run_pending
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.tasks import match_limit_s, tmp_root_of
from tests.polling import poll_until

from .conftest import (
    SANDBOX,
    copy_tournament,
    descendants,
    done_count,
    flat,
    make_tournament,
    ok,
    processes_in,
    scheduled_keys,
    start_run,
    stored_matches,
    wait_for_matches,
    wait_gone,
    wait_no_process_in,
    workers_of,
)
from .slow_workers import SlowBootPool


def writes_in(pid: int, folder: Path) -> bool:
    """Whether process ``pid`` holds a file in ``folder`` open."""
    inside = str(folder.resolve()) + "/"
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(fd).startswith(inside):
                return True
    return False


def ignores(pid: int, sig: signal.Signals) -> bool:
    """Whether process ``pid`` ignores ``sig`` now (its SigIgn mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def assert_saved(folder: Path) -> None:
    """Every recorded match has its complete log in logs/."""
    for row in stored_matches(folder):
        assert (folder / row.log_path).is_file(), row.key


#: Many short matches: the pending tasks no longer fit in one pipe's buffer (the old runner
#: then hung at exit in the thread feeding its task queue).
MANY = TournamentSettings(
    table_size=2,
    games=40,
    seed=5,
    rules=Rules(max_rounds=2, max_turns_per_round=30),
    time_control=TimeControl(budget_ms=100, bank_ms=200, grace_ms=50),
    sandbox=SANDBOX,
)


@pytest.fixture(scope="module")
def many_matches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample bots in a tournament of 240 short matches, nothing played. Copy it before use."""
    return make_tournament(tmp_path_factory.mktemp("many") / "t", MANY, ["random", "greedy", "threshold"], validate=False)


# SIGTERM (a scheduler's stop) in the quick tier; Ctrl-C's SIGINT, the same path, in the slow one.
@pytest.mark.parametrize(
    ("sig", "code"), [pytest.param(signal.SIGINT, 130, marks=pytest.mark.slow), (signal.SIGTERM, 143)]
)
def test_a_signal_to_the_process_group_stops_the_run_within_seconds(
    many_matches: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    folder = copy_tournament(many_matches, tmp_path / "t")
    out = tmp_path / "run.out"
    proc = start_run(folder, out, new_session=True)
    try:
        wait_for_matches(proc, folder, 2, out)
        family = descendants(proc.pid)
        assert len(workers_of(proc.pid)) == 2
        os.killpg(proc.pid, sig)
        # Stopped, not finished: its exit code, and far fewer matches than scheduled (below).
        assert proc.wait(timeout=60) == code, out.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = flat(out.read_text())
    assert "stopped: finished matches are saved; run again to continue" in text
    assert "Traceback" not in text
    assert wait_gone(family) == []
    assert wait_no_process_in(folder) == [], processes_in(folder)
    assert_saved(folder)
    n = done_count(folder)
    assert 2 <= n < len(scheduled_keys(folder))


@pytest.mark.slow
def test_a_second_ctrl_c_does_not_break_the_stop(base_tournament: Path, tmp_path: Path) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    out = tmp_path / "run.out"
    proc = start_run(folder, out, new_session=True)
    try:
        wait_for_matches(proc, folder, 1, out)
        family = descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        # The second comes while the first is being handled: once the runner ignores more.
        poll_until("the runner to begin to stop (to ignore SIGINT)", lambda: ignores(proc.pid, signal.SIGINT),
                   while_=lambda: proc.poll() is None)  # fmt: skip
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 130, out.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = flat(out.read_text())
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert wait_gone(family) == []
    assert_saved(folder)


@pytest.mark.slow
def test_a_killed_run_leaves_temporary_folders_that_the_next_run_removes(base_tournament: Path, tmp_path: Path) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    out = tmp_path / "run.out"
    tmp = tmp_root_of(folder)
    proc = start_run(folder, out, new_session=True)
    try:
        wait_for_matches(proc, folder, 1, out)
        family = descendants(proc.pid)
        # The whole group at once: a worker that outlived the runner for a moment would close
        # its bots cleanly (its pipe says the runner is gone) and leave nothing to clean up.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # Unsandboxed bots lead sessions of their own and outlive a group kill (that their
        # watchdog dies too is why tournaments sandbox them); end them the same hard way.
        for pid in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_gone(family) == []
    left = list(tmp.iterdir())
    assert left, "the killed run's bots had temporary folders"
    ok("tournament", "run", folder, "-j", "2")
    assert not tmp.exists()  # emptied, then removed at the end of the run
    assert done_count(folder) == len(scheduled_keys(folder))


#: One short round per match, so that a match's wall-clock limit is seconds, not hours.
SHORT = TournamentSettings(
    table_size=2,
    games=3,
    seed=11,
    rules=Rules(max_rounds=1, max_turns_per_round=8),
    time_control=TimeControl(budget_ms=30, bank_ms=60, grace_ms=30),
    sandbox=SANDBOX,
)


def stop_a_worker_once_a_match_runs(folder: Path, stopped: list[int]) -> threading.Thread:
    """A thread that SIGSTOPs one of this process's pool workers once a match is under way
    (its log is in running/), and puts its pid in ``stopped``."""

    def stop() -> None:
        def a_match_runs() -> int:
            # A worker writing a log in running/ has its bots up and its match under way.
            workers = [p.pid for p in mp.active_children() if p.pid is not None]
            playing = [w for w in workers if writes_in(w, folder / "running")]
            return playing[0] if playing else 0

        pid = poll_until("a match under way", a_match_runs, timeout_s=120, interval_s=0.02)
        os.kill(pid, signal.SIGSTOP)
        stopped.append(pid)

    thread = threading.Thread(target=stop, daemon=True)
    thread.start()
    return thread


def test_a_stopped_worker_is_killed_at_the_match_limit_and_its_match_played_again(tmp_path: Path) -> None:
    """A worker stopped for good (SIGSTOP: it says nothing and plays nothing) is killed when
    its match's limit is up, the match is played again by a new worker, and its bots go.
    In this process, with a short match limit and a long silence limit, so that the match
    limit is what ends it (the CLI's own limits are tens of seconds)."""
    # Enough matches that both workers are still busy after the first one, however fast this
    # machine plays them: a worker stopped with nothing left to play makes no failure.
    folder = make_tournament(tmp_path / "t", dataclasses.replace(SHORT, games=10), ["random", "greedy"], validate=False)
    total = len(scheduled_keys(folder))
    stopped: list[int] = []
    thread = stop_a_worker_once_a_match_runs(folder, stopped)
    # An honest match of SHORT takes a fraction of a second; 15 s is room for a busy machine.
    with TournamentStore.open(folder) as store:
        report = run_pending(store, executor=LocalPool(2, match_limit_s=15.0, silence_limit_s=600.0))
        failures = store.infra_failures()
    thread.join(timeout=5)
    assert stopped and report.played == total, (stopped, report, failures)
    assert done_count(folder) == total
    assert len(failures) == 1 and "did not finish the match in time (stopped or stuck); it was killed" in failures[0][1]
    assert wait_gone(stopped) == []
    assert wait_no_process_in(folder) == [], processes_in(folder)


def test_a_silent_worker_is_killed_long_before_the_match_limit(tmp_path: Path) -> None:
    """Under the default rules a match's limit is hours; a worker that stops saying it is
    alive (its heartbeat, from its event loop) is replaced after seconds instead."""
    settings = dataclasses.replace(SHORT, rules=Rules(), games=2)
    assert match_limit_s(settings) > 3600
    folder = make_tournament(tmp_path / "t", settings, ["random", "greedy"], validate=False)
    stopped: list[int] = []
    thread = stop_a_worker_once_a_match_runs(folder, stopped)
    # A worker's boot no longer counts against it (its boot limit does: the test below), and
    # its heartbeat goes on while its bots start; 15 s leaves a loaded machine room to spare.
    with TournamentStore.open(folder) as store:
        report = run_pending(store, executor=LocalPool(2, silence_limit_s=15.0))
        failures = store.infra_failures()
    thread.join(timeout=5)
    assert stopped and report.played == len(scheduled_keys(folder)), (stopped, report, failures)
    assert len(failures) == 1 and "said nothing for 15 s" in failures[0][1], failures
    assert wait_gone(stopped) == []


def test_a_worker_slow_to_come_up_is_not_judged_silent(tmp_path: Path) -> None:
    """On a machine loaded many times over, a fresh worker's interpreter and imports take far
    longer than the silence limit: it is judged by its boot limit until it says it is up,
    and by the silence limit only from then."""
    folder = make_tournament(tmp_path / "t", dataclasses.replace(SHORT, games=1), ["random", "greedy"], validate=False)
    with TournamentStore.open(folder) as store:
        report = run_pending(store, executor=SlowBootPool(1, boot_s=6.0, silence_limit_s=4.0))
        failures = store.infra_failures()
    assert failures == [] and report.played == len(scheduled_keys(folder)), (report, failures)


def test_a_worker_that_never_comes_up_is_killed_at_its_boot_limit(tmp_path: Path) -> None:
    folder = make_tournament(tmp_path / "t", dataclasses.replace(SHORT, games=1), ["random", "greedy"], validate=False)
    keys = scheduled_keys(folder)
    with TournamentStore.open(folder) as store:
        report = run_pending(store, executor=SlowBootPool(1, boot_s=600.0, boot_limit_s=2.0), only=keys[:1])
    assert report.played == 0 and len(report.failed) == 1, report
    assert "a worker did not come up within 2 s (stopped or stuck); it was killed" in report.failed[0][1]
