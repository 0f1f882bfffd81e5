"""Stopping a run (Ctrl-C, kill -9) and running again: nothing lost, nothing played twice,
no process left behind, and the same results as a run that was never stopped; ``-j 2``
gives the same results as ``-j 1``."""

from __future__ import annotations

import collections
import os
import signal
from pathlib import Path

import pytest

from referee.log import read_log
from referee.text import plural
from referee.tournament.store import TournamentStore
from referee.tournament.tasks import log_name

from .conftest import (
    Played,
    copy_tournament,
    descendants,
    done_count,
    fails,
    flat,
    left_as_is,
    ok,
    outcomes,
    processes_in,
    scheduled_keys,
    start_run,
    stored_matches,
    wait_for_matches,
    wait_gone,
    wait_no_process_in,
    workers_of,
)


@pytest.mark.slow
def test_interrupted_and_killed_runs_resume_to_the_uninterrupted_results(
    reference_run: Played, base_tournament: Path, tmp_path: Path
) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    keys = scheduled_keys(folder)
    total = len(keys)
    out = tmp_path / "run.out"

    # 1. Ctrl-C: the run stops with 130, saying the finished matches are kept.
    proc = start_run(folder, out)
    try:
        wait_for_matches(proc, folder, 2, out)
        family = descendants(proc.pid)
        assert len(family) >= 4, family  # workers, their bots and watchdogs, the resource tracker
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130, out.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "stopped: finished matches are saved; run again to continue" in flat(out.read_text())
    assert wait_gone(family) == []
    assert wait_no_process_in(folder) == []
    after_int = done_count(folder)
    assert 2 <= after_int < total

    # 2. kill -9 of the runner: its workers and their bots go too (the watchdogs see to it).
    proc = start_run(folder, out)
    try:
        wait_for_matches(proc, folder, after_int + 2, out)
        family = descendants(proc.pid)
        assert len(family) >= 4, family
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = wait_gone(family)
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes() for p in left if Path(f"/proc/{p}").exists()]
    assert wait_no_process_in(folder) == [], processes_in(folder)
    after_kill = done_count(folder)
    assert after_int + 2 <= after_kill < total, (after_int, after_kill, total)
    # Workers stopped with their runner rather than playing on for nobody: only the matches
    # in flight (and at most one more each, started before they noticed) have unrecorded logs.
    recorded = {log_name(r.key) for r in stored_matches(folder)}
    unrecorded = {p.name for p in (folder / "logs").iterdir()} - recorded
    assert len(unrecorded) <= 2 * 2 * 2, f"{len(unrecorded)} matches played after the runner died"
    assert total - after_kill > 2 * 2 * 2 + 8  # so that playing on would show

    # 3. Run again: it plays exactly the matches still missing.
    run = ok("tournament", "run", folder, "-j", "2")
    assert f"played {plural(total - after_kill, 'match', 'matches')} in" in flat(run.stderr)
    rows = stored_matches(folder)
    assert [r.key for r in rows] == sorted(keys)  # each scheduled key exactly once
    assert collections.Counter(r.key for r in rows).most_common(1)[0][1] == 1
    logs = sorted(p.name for p in (folder / "logs").iterdir())
    assert logs == sorted(log_name(k) for k in keys)  # one log per match, no stray one
    for r in rows:
        log = read_log(folder / r.log_path)
        assert log.complete and log.footer is not None and log.footer.reason != "aborted", r.key
        assert list(log.footer.placings) == r.placings
    assert "nothing to play" in flat(ok("tournament", "run", folder).stderr)

    # 4. The same results as the run that was never stopped.
    assert outcomes(folder) == reference_run.outcomes
    assert ok("standings", folder, "--json").stdout == reference_run.standings_json


@pytest.mark.slow
def test_two_jobs_give_the_results_of_one(reference_run: Played, base_tournament: Path, tmp_path: Path) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    run = ok("tournament", "run", folder, "-j", "2")
    assert "played 36 matches" in flat(run.stderr) and "-j 2" in flat(run.stderr)
    got = outcomes(folder)
    assert len(got) == 36
    assert got == reference_run.outcomes
    assert ok("standings", folder, "--json").stdout == reference_run.standings_json


def test_a_second_run_is_refused_while_one_plays(base_tournament: Path, tmp_path: Path) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    # Holding the lock as another `thirtyone tournament run` does while it plays.
    with TournamentStore.open(folder) as store, store.run_lock(), left_as_is(folder):
        fails("tournament", "run", folder, message="is being played by another 'thirtyone tournament run'")
        fails("withdraw", folder, "greedy", message="is being played by another 'thirtyone tournament run'")
    assert done_count(folder) == 0
    assert os.path.exists(folder / "run.lock")


def test_a_killed_worker_is_replaced_and_its_match_played_again(
    reference_run: Played, base_tournament: Path, tmp_path: Path
) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    total = len(scheduled_keys(folder))
    out = tmp_path / "run.out"
    proc = start_run(folder, out)
    try:
        wait_for_matches(proc, folder, 2, out)
        workers = workers_of(proc.pid)
        assert len(workers) == 2, workers
        os.kill(workers[0], signal.SIGKILL)  # as the kernel's out-of-memory killer would
        # The worker is replaced and its match in flight played again: the run completes.
        assert proc.wait(timeout=120) == 0, out.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = flat(out.read_text())
    assert "failed for a reason of the referee's, playing it again: a worker process died (killed by SIGKILL)" in text, text
    assert "Traceback" not in text
    assert wait_no_process_in(folder) == [], processes_in(folder)
    assert done_count(folder) == total
    with TournamentStore.open(folder) as store:
        failures = store.infra_failures()
    assert len(failures) == 1 and "killed by SIGKILL" in failures[0][1]
    assert outcomes(folder) == reference_run.outcomes
    assert ok("standings", folder, "--json").stdout == reference_run.standings_json

