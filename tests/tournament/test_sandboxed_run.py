"""A real `tournament run` of a hostile bot, sandboxed: the tournament lies inside the project
checkout (whose packages the bots import), the bot attacks from inside, and nothing it tries
works; and SIGKILL to the runner's whole process group leaves no bot behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.bots.sandbox import probe
from tests.polling import poll_until
from tests.referee.test_sandbox import (
    ATTACKER,
    CHECKOUT,
    host_processes_with,
    reports,
    wait_until_none,
)

from .conftest import fails, ok

pytestmark = pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")

THIRTYONE = [sys.executable, "-c", "from referee.cli import main; main()"]


@pytest.fixture
def in_checkout() -> Iterator[Path]:
    """A scratch folder inside the project checkout, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="sandbox-test-", dir=CHECKOUT))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def attacker_folder(where: Path) -> Path:
    """A bot folder holding a copy of the attacking test bot."""
    where.mkdir()
    shutil.copy(ATTACKER, where / "attacker.py")
    return where


@pytest.mark.slow
def test_a_hostile_bot_in_a_real_tournament_finds_nothing(in_checkout: Path) -> None:
    t = in_checkout / "league"
    marker = f"orphan-{time.time_ns()}"
    ok("tournament", "new", t, "-n", 2, "--rule", "max_rounds=2", "--seed", 9)
    bot = attacker_folder(in_checkout / "src")
    targets = ["--read", t / "tournament.db", "--write", t / "pwned", "--write", CHECKOUT / "pwned"]
    # submit refuses a command that names those paths (outside the bot's folder): the bot
    # finds them in a file of its own instead, and tries them all the same.
    (bot / "targets.txt").write_text("".join(f"{w}\n" for w in targets))
    command = f"{sys.executable} attacker.py --strict --orphan {marker} @targets.txt --stop {os.getpid()}"
    fails("submit", t, f"{sys.executable} attacker.py --read {t / 'tournament.db'}", "--dir", bot, message="outside the bot's folder")
    ok("submit", t, command, "--dir", bot, "--name", "attacker")
    ok("submit", t, "greedy")
    ok("tournament", "run", t, "-j", "2")
    assert wait_until_none(marker) == [], "a setsid child outlived the run"
    data = json.loads(ok("standings", t, "--json").stdout)
    row = next(r for r in data["standings"] if r["bot"] == "attacker")
    # --strict crashes the bot at its first decision if anything worked.
    assert (row["faults_crash"], row["forfeits"], row["matches"]) == (0, 0, 4), row
    said = [r for p in t.glob("output/*/seat*-attacker.txt") for r in reports(p.read_text())]
    assert len(said) >= 4  # at least one report per match (at its first decision)
    for report in said:
        assert report["secrets"] == [] and report["parent"] == 1
        assert all(v.startswith("failed") for k, v in report.items() if k.split()[0] in ("read", "stop"))
    assert not (t / "pwned").exists() and not (CHECKOUT / "pwned").exists()
    ok("replay", "--verify", t)


@pytest.mark.slow
def test_sigkill_to_the_runners_process_group_leaves_no_bot(tmp_path: Path) -> None:
    """What `timeout -s KILL` or a cancelled CI job does: every process of the run dies at
    once, workers included; the sandboxes die with their workers, and everything in them."""
    marker = f"orphan-{time.time_ns()}"
    t = tmp_path / "t"
    ok("tournament", "new", t, "-n", 20, "--seed", 4)
    ok("submit", t, f"{sys.executable} attacker.py --orphan {marker}", "--dir", attacker_folder(tmp_path / "src"), "--name", "a")
    ok("submit", t, "greedy")
    assert wait_until_none(marker) == []  # the validation match's orphan went with its sandbox
    earlier = set(host_processes_with("sample_bots.greedy"))  # not this test's to judge
    run = subprocess.Popen([*THIRTYONE, "tournament", "run", str(t), "-j", "2"], start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        poll_until("the bots of both workers to start", lambda: len(host_processes_with(marker)) >= 4, timeout_s=120,
                   while_=lambda: run.poll() is None)  # fmt: skip
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        assert wait_until_none(marker) == []
        with contextlib.suppress(AssertionError):
            poll_until("the greedy bots to be gone", lambda: not set(host_processes_with("sample_bots.greedy")) - earlier)
        assert set(host_processes_with("sample_bots.greedy")) - earlier == set()
    finally:
        for pid in host_processes_with(marker):
            os.kill(pid, signal.SIGKILL)
