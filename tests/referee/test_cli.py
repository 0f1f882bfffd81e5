"""``thirtyone match``: the summary, clear errors for bad input, and no process left behind
when the referee itself is interrupted or killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app
from referee.log import read_log, replay_log
from tests.polling import poll_until

from .conftest import children_of, hostile, pids_in, process_alive, wait_gone

runner = CliRunner()


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # rich wraps table headers on narrow terminals; a fixed width keeps the text checkable.
    monkeypatch.setenv("COLUMNS", "200")


def test_match_prints_a_summary_and_writes_the_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "m.jsonl"
    result = runner.invoke(
        app,
        ["match", hostile("random", "--seed", 1), hostile("first", name="alice"), hostile("illegal", "--from", 4),
         "--seed", "4242", "--log", str(log), "--rule", "lives=2", "--budget-ms", "200"],
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    for heading in ("Seats", "Rounds", "Faults", "Placings", "ILLEGAL"):
        assert heading in out
    assert "alice" in out and "seed 4242" in out
    assert "mean ms" in out and "bank left" in out
    assert ("Winner: #" in out) or ("No winner" in out)
    assert "seed 4242" in result.stderr and str(log) in result.stderr.replace("\n", "")
    parsed = read_log(log)
    assert parsed.complete and parsed.header.seed == 4242 and parsed.header.rules.lives == 2
    assert parsed.header.time_control.budget_ms == 200
    assert replay_log(parsed).complete


def test_default_log_goes_to_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path.chmod(0o755)  # the bots' folder (the current one): readable by nobody, whom they run as under root
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules.toml").write_text('[rules]\npreset = "family"\nlives = 1\n')
    result = runner.invoke(app, ["match", hostile("first"), hostile("random"), "--rules-file", "rules.toml"])
    assert result.exit_code == 0, result.output
    logs = list(tmp_path.glob("thirtyone-match-*.jsonl"))
    assert len(logs) == 1 and logs[0].name in result.stderr.replace("\n", "")
    header = read_log(logs[0]).header
    assert header.rules.preset_name == "family" and header.rules.lives == 1
    assert "seed " in result.stderr  # a random seed, printed so the match can be repeated


def test_bot_names_from_bots_are_not_markup(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["match", hostile("first", "--name", "[red]evil[/red]"), hostile("first"), "--log", str(tmp_path / "l.jsonl")]
    )
    assert result.exit_code == 0, result.output
    assert "[red]evil[/red]" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["OnlyOne"], "a match needs 2 to 9 bots, got 1"),
        (["no_such_bot_xyz", "also_missing"], "unknown bot 'no_such_bot_xyz'"),
        (["./nope.py", "./nope.py"], "no such file"),
        (["--preset", "nonsense"], "unknown preset 'nonsense'"),
        (["--rule", "lives=0"], "rule option 'lives' got"),
        (["--rule", "colour=red"], "unknown rule option 'colour'"),
        (["--rule", "lives"], "key=value"),
        (["--rules-file", "/nonexistent/rules.toml"], "cannot read the rules file"),
        (["--seed", "-1"], "--seed must be"),
        (["--budget-ms", "0"], "--budget-ms must be a whole number from 1 to 3600000, got 0"),
        (["--fault-policy", "harsh"], "fault policy must be 'lenient' or 'strict'"),
        (["--max-strikes", "0"], "--max-strikes must be a whole number from 1 to 1000, got 0"),
        (["--log", "/proc/no/such/dir/log.jsonl"], "cannot write the match log"),
        (["--startup-timeout", "0"], "--startup-timeout must be positive"),
    ],
)
def test_bad_input_is_a_clear_error(args: list[str], message: str) -> None:
    bots = [] if args[0].startswith(("Only", "no_such", "./")) else [hostile("first"), hostile("first")]
    if args == ["OnlyOne"]:
        args, bots = [], [hostile("first")]
    result = runner.invoke(app, ["match", *bots, *args])
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr and message in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


def test_bot_that_cannot_start_is_exit_1_with_its_output(tmp_path: Path) -> None:
    result = runner.invoke(app, ["match", hostile("first"), hostile("exit_at_start"), "--log", str(tmp_path / "l.jsonl")])
    assert result.exit_code == 1
    err = " ".join(result.stderr.split())
    assert "exited with code 3 before it was ready" in err
    assert "cannot load my model weights" in err
    assert "Traceback" not in result.output


#: How the referee's process finds SIGINT: as from an interactive shell (Python's own handler),
#: or ignored, as a command started with ``&`` by a script or a CI job inherits it. Set in the
#: referee's process itself, so that the test means the same however pytest was started.
SIGINT_AT_START = {
    "default": "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)",
    "ignored": "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)",
}


def _start_referee(tmp_path: Path, pid_dir: Path, sigint: str = "default") -> tuple[subprocess.Popen[str], Path]:
    log = tmp_path / "slow.jsonl"
    # Slow bots on a roomy clock: the match lasts many seconds after it gets going (dozens of
    # decisions at 500 ms each), so that the signal always comes in the middle of it, however
    # busy the machine; a stop cancels the decision under way, so it is not slowed by them.
    bots = [hostile("sleepy", "--sleep-ms", 500, "--pid-dir", pid_dir)] * 2 + [hostile("spawner", "--pid-dir", pid_dir)]
    # Unsandboxed: these tests watch the bots' own pids, which a sandbox renumbers (the
    # sandboxed case is in test_sandbox.py).
    code = f"{SIGINT_AT_START[sigint]}; from referee.cli import main; main()"
    cmd = [sys.executable, "-c", code, "match", *bots, "--log", str(log), "--seed", "8", "--sandbox", "off", "--budget-ms", "5000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Into the match: every bot up and the log past its header and first decisions.
        poll_until(
            "the match to get going", lambda: len(pids_in(pid_dir)) == 4 and log.exists() and len(log.read_text().splitlines()) >= 6,
            timeout_s=300, while_=lambda: proc.poll() is None,
        )  # fmt: skip
    except AssertionError as e:
        proc.kill()
        raise AssertionError(f"{e}: {proc.communicate()}") from None
    return proc, log


@pytest.mark.slow
def test_referee_killed_with_sigkill_leaves_no_process(tmp_path: Path, pid_dir: Path) -> None:
    proc, log = _start_referee(tmp_path, pid_dir)
    try:
        family = children_of(proc.pid)  # the bots and the watchdog
        bots = pids_in(pid_dir)  # the bots and the spawner's child
        assert set(bots) - set(family)  # a grandchild, outside the referee's reach but not the group's
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        assert wait_gone([*family, *bots], timeout_s=120) == []
    finally:
        if proc.poll() is None:
            proc.kill()
    # The log stops mid-match but reads and replays up to where it stops.
    partial = read_log(log)
    assert not partial.complete and partial.events
    assert not replay_log(partial).complete


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "sigint", "code"),
    [(signal.SIGINT, "default", 130), (signal.SIGTERM, "default", 143), (signal.SIGINT, "ignored", 130)],
    ids=["SIGINT", "SIGTERM", "SIGINT-inherited-ignored"],
)
def test_interrupted_referee_stops_cleanly(tmp_path: Path, pid_dir: Path, sig: signal.Signals, sigint: str, code: int) -> None:
    # SIGINT-inherited-ignored: a referee started with SIGINT ignored (by a script's `&`, as
    # CI's was) still stops at Ctrl-C, where asyncio.Runner alone dropped it and played on.
    proc, log = _start_referee(tmp_path, pid_dir, sigint)
    try:
        family = children_of(proc.pid)
        os.kill(proc.pid, sig)
        # Stopping closes three bots (SIGTERM, then SIGKILL past their grace) and writes the
        # log's footer: seconds on a quiet machine, more on a loaded one.
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == code, f"the match was not stopped (its log has {len(log.read_text().splitlines())} lines):\n{stderr}"
        assert "the log up to now is in" in stderr
        assert "Traceback" not in stderr
        assert wait_gone([*family, *pids_in(pid_dir)], timeout_s=120) == []
    finally:
        if proc.poll() is None:
            proc.kill()
    finished = read_log(log)
    assert finished.footer is not None and finished.footer.reason == "aborted"
    assert replay_log(finished).complete
    assert not any(process_alive(p) for p in pids_in(pid_dir))
