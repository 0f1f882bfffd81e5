"""The sandbox, attacked from inside by a real bot process in a real match.

Each test skips, with the reason printed in pytest's summary, only where this machine cannot
sandbox (no bubblewrap, no user namespaces); CI installs bubblewrap, so there they all run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.bots import LocalLauncher, close_bots, parse_bot_spec, start_bot, start_bots
from referee.bots.sandbox import (
    SCRATCH,
    BotCgroup,
    BotLimits,
    SandboxConfig,
    join_cgroups_command,
    probe,
    sandboxed_command,
)
from referee.cli.app import app
from referee.faults import BotStartError
from referee.log import read_log
from referee.match import MatchConfig, play_match
from referee.timecontrol import TimeControl
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from tests.polling import poll_until
from tests.referee.conftest import HOSTILE, process_alive, run

ATTACKER = Path(__file__).resolve().parent / "bots" / "attacker.py"
CHECKOUT = Path(__file__).resolve().parents[2]
TC = TimeControl(budget_ms=2000, bank_ms=5000, grace_ms=500)
SHORT = MatchConfig(time_control=TC).rules.with_options({"max_rounds": 2})
THIRTYONE = [sys.executable, "-c", "from referee.cli import main; main()"]

pytestmark = pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")


def reports(output: str) -> list[dict[str, Any]]:
    """The attacker's ATTACKS lines in a bot's output."""
    return [json.loads(line[len("ATTACKS ") :]) for line in output.splitlines() if line.startswith("ATTACKS ")]


def host_processes_with(marker: str) -> list[int]:
    """Live processes on this machine whose command line holds ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd and process_alive(int(pid)):
                found.append(int(pid))
    return found


def wait_until_none(marker: str, timeout_s: float = 30.0) -> list[int]:
    """Wait until no process holds ``marker``; the ones left after ``timeout_s``."""
    with contextlib.suppress(AssertionError):
        poll_until(f"no process holding {marker}", lambda: not host_processes_with(marker), timeout_s=timeout_s)
    return host_processes_with(marker)


@pytest.fixture
def tournament_in_checkout() -> Iterator[Path]:
    """A real tournament folder inside the project checkout, with a finished match's log."""
    folder = Path(tempfile.mkdtemp(prefix="sandbox-test-", dir=CHECKOUT))
    try:
        TournamentStore.create(folder / "t", TournamentSettings(sandbox="on")).close()
        (folder / "t" / "logs" / "old.jsonl").write_text('{"header": "secret"}\n')
        yield folder / "t"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_every_attack_fails_and_the_match_finishes(tournament_in_checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read secrets, write outside, signal the referee and another bot, connect out, leave an
    orphan: none of it works, the other bot plays to the end, nothing is left running.

    The attacker is a command bot run from the checkout itself, so the checkout is bound into
    its sandbox and the tournament folder inside it must be hidden on top.
    """
    folder = tournament_in_checkout
    monkeypatch.setenv("ORGANISER_SECRET", "hunter2")
    victim = subprocess.Popen(["sleep", "60"])  # stands for the referee's own processes
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    marker = f"orphan-{os.getpid()}-{time.monotonic_ns()}"
    running_log = folder / "logs" / "live.jsonl"
    config = SandboxConfig(hidden=(str(folder),), env=("GIVEN=1",))
    launcher = LocalLauncher(sandbox=config)

    async def play() -> tuple[Any, str, int | None]:
        other = await start_bot("greedy", launcher=launcher)
        assert other.pid is not None
        words = [
            sys.executable, str(ATTACKER.relative_to(CHECKOUT)),
            "--read", str(folder / "tournament.db"), "--read", str(folder / "logs" / "old.jsonl"),
            "--read", str(running_log), "--write", str(folder / "pwned"), "--write", str(CHECKOUT / "pwned"),
            "--write", str(ATTACKER.parent / "pwned"), "--kill", str(victim.pid), "--kill", str(other.pid),
            "--stop", str(victim.pid), "--stop", str(os.getpid()), "--tcp", str(listener.getsockname()[1]),
            "--orphan", marker,
        ]  # fmt: skip
        # Its attacks run before it serves (a connection attempt alone may take 2 s): on a busy
        # machine the default 10 s to start is too tight for them and a Python start together.
        attacker = await start_bot(parse_bot_spec(shlex.join(words), cwd=CHECKOUT), launcher=launcher, startup_timeout_s=40)
        try:
            outcome = await play_match(
                [attacker, other], seed=7, config=MatchConfig(SHORT, TC), log_path=running_log
            )
            assert attacker.process is not None
            await attacker.process.output_closed(0)  # nothing to wait for: it is still running
            return outcome, attacker.process.output_tail(16000), other.exit_code()
        finally:
            await close_bots([attacker, other])

    try:
        outcome, output, other_exit = run(play())
        assert wait_until_none(marker) == [], "the setsid orphan outlived its bot"
        assert process_alive(victim.pid) and Path(f"/proc/{victim.pid}/stat").read_text().split(") ")[1][0] != "T"
    finally:
        victim.kill()
        victim.wait()
        listener.close()
    assert other_exit is None, "the other bot was killed during the match"
    assert not any(s.forfeited for s in outcome.seats) and not outcome.faults
    assert len(outcome.rounds) == 2
    found = reports(output)
    assert len(found) == 2, output  # at start, and at the first decision (log under way)
    for report in found:
        attempts = {k: v for k, v in report.items() if k.split()[0] in ("read", "write", "kill", "stop", "tcp")}
        assert len(attempts) == 11, attempts
        worked = {k: v for k, v in attempts.items() if not v.startswith("failed")}
        assert worked == {}, worked
        assert report["parent"] == 1  # the sandbox's own reaper, not the referee
        # Logs it may find are its own folder's (a developer's stray match logs in the checkout);
        # nothing of the tournament's, nothing anywhere else.
        own = [p for p in report["secrets"] if p.startswith(f"{CHECKOUT}/") and not p.startswith(f"{folder}/")]
        assert report["secrets"] == own
        # Only its own sandbox: bubblewrap's reaper, the bot, its orphan (and nothing of ours).
        assert all("pytest" not in p and "greedy" not in p for p in report["processes"]), report["processes"]
        assert len(report["processes"]) <= 3, report["processes"]
        assert set(report["env"]) == {
            "PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "THIRTYONE_BOT_ADDRESS",
            "THIRTYONE_PLAY_SOCKET", "GIVEN", "PWD",
        }  # fmt: skip
        assert report["cwd"] == str(CHECKOUT)
    assert not (folder / "pwned").exists() and not (CHECKOUT / "pwned").exists()
    assert not (ATTACKER.parent / "pwned").exists()


def test_a_memory_hog_is_a_crash_fault_that_names_the_limit() -> None:
    """Allocating without bound ends the bot's seat with a CRASH that says which limit; the
    other seats play on and the referee is unharmed."""
    spec = shlex.join([sys.executable, str(ATTACKER), "--hog"])
    launcher = LocalLauncher(sandbox=SandboxConfig(limits=BotLimits(memory_mb=256)))

    async def play() -> Any:
        bots = await start_bots([spec, "greedy", "random"], launcher=launcher)
        try:
            return await play_match(bots, seed=3, config=MatchConfig(SHORT, TC))
        finally:
            await close_bots(bots)

    outcome = run(play())
    hog = outcome.seats[0]
    assert hog.forfeited
    assert [f.kind for f in hog.faults] == ["crash"]
    assert "memory limit is 256 MiB" in hog.faults[0].message or "memory limit of 256 MiB" in hog.faults[0].message
    assert not outcome.seats[1].forfeited and not outcome.seats[2].forfeited


def test_the_referee_killed_with_its_whole_group_leaves_no_bot(tmp_path: Path) -> None:
    """SIGKILL to the referee's process group (what `timeout -s KILL` or a cancelled CI job
    does) takes every sandboxed bot with it, setsid children included."""
    unique = str(time.time_ns())
    marker = f"orphan-{unique}"
    # The slow bot carries the marker too, as a seed it does not use.
    slow = shlex.join([sys.executable, str(HOSTILE), "--mode", "sleepy", "--sleep-ms", "300", "--seed", unique])
    attacker = shlex.join([sys.executable, str(ATTACKER), "--orphan", marker])
    referee = subprocess.Popen(
        [*THIRTYONE, "match", attacker, slow, "--sandbox", "on", "--log", str(tmp_path / "m.jsonl")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        poll_until("the bots to start", lambda: len(host_processes_with(unique)) >= 3, timeout_s=90,
                   while_=lambda: referee.poll() is None)  # fmt: skip
        # Into the match: the log has its header and the first decisions.
        log = tmp_path / "m.jsonl"
        poll_until("the match to get going", lambda: log.exists() and len(log.read_bytes().splitlines()) >= 6,
                   timeout_s=90, while_=lambda: referee.poll() is None)  # fmt: skip
        os.killpg(referee.pid, signal.SIGKILL)
        referee.wait()
        assert wait_until_none(unique) == []
    finally:
        for pid in host_processes_with(unique):
            os.kill(pid, signal.SIGKILL)


def test_a_sandbox_that_cannot_be_built_is_a_clear_error(tmp_path: Path) -> None:
    """A bot whose folder vanished after it was named: the error names the bot and the cause."""
    bot_dir = tmp_path / "gone"
    bot_dir.mkdir()
    (bot_dir / "bot.py").write_text("print('never runs')\n")
    spec = parse_bot_spec(str(bot_dir / "bot.py"))
    shutil.rmtree(bot_dir)
    with pytest.raises(BotStartError) as e:
        run(start_bot(spec, launcher=LocalLauncher(sandbox=SandboxConfig()), startup_timeout_s=10))
    text = str(e.value)
    assert "bot.py" in text and "sandbox" in text and str(bot_dir) in text


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed here")
def test_node_starts_under_the_default_limits(tmp_path: Path) -> None:
    """Node.js reserves gigabytes of address space at start; the default limits allow it."""
    tmp_path.chmod(0o755)  # a bot's own folder is readable by every user (as root bots run as nobody)
    script = tmp_path / "alloc.js"
    script.write_text("const b = Buffer.alloc(200 * 1024 * 1024, 1); console.log('ok', b.length);\n")
    argv = sandboxed_command(["node", str(script)], cwd=str(tmp_path), socket_dir=str(tmp_path), config=SandboxConfig())
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ok {200 * 1024 * 1024}"


def test_scratch_is_private_writable_and_capped(tmp_path: Path) -> None:
    """The scratch folder is HOME and TMPDIR, writable up to its size; nothing else is."""
    code = (
        "import os\n"
        "open(os.environ['HOME'] + '/a', 'w').write('x' * 1000)\n"
        "try:\n"
        "    open(os.environ['TMPDIR'] + '/big', 'wb').write(b'x' * (8 << 20))\n"
        "    print('big ok')\n"
        "except OSError as e:\n"
        "    print('big refused', e.errno)\n"
        "for p in ('/etc/x', '/usr/x', os.getcwd() + '/x'):\n"
        "    try:\n"
        "        open(p, 'w')\n"
        "        print('wrote', p)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    config = SandboxConfig(limits=BotLimits(scratch_mb=4))
    tmp_path.chmod(0o755)  # a bot's own folder is readable by every user (as root bots run as nobody)
    argv = sandboxed_command([sys.executable, "-c", code], cwd=str(tmp_path), socket_dir=str(tmp_path / "s"), config=config)
    (tmp_path / "s").mkdir()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0].startswith("big refused"), r.stdout
    assert "wrote" not in r.stdout
    assert SCRATCH == "/tmp"


def test_without_bubblewrap_match_warns_and_on_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where bwrap is missing: auto runs with a one-line warning that says how to enable the
    sandbox; on refuses; doctor says why and exits 1."""
    cli = CliRunner()
    assert cli.invoke(app, ["doctor"]).exit_code == 0
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, and no bwrap
    probe.cache_clear()
    try:
        log = str(tmp_path / "m.jsonl")
        auto = cli.invoke(app, ["match", "greedy", "random", "--seed", "1", "--log", log, "--rule", "max_rounds=1"])
        assert auto.exit_code == 0, auto.output
        warning = [line for line in auto.stderr.splitlines() if "UNSANDBOXED" in line]
        assert len(warning) == 1 and "apt-get install bubblewrap" in warning[0]
        refused_log = tmp_path / "refused.jsonl"
        on = cli.invoke(app, ["match", "greedy", "random", "--sandbox", "on", "--log", str(refused_log)])
        assert on.exit_code == 2 and "bubblewrap (bwrap) is not installed" in " ".join(on.stderr.split())
        assert not refused_log.exists()  # a refused match leaves no log
        doctor = cli.invoke(app, ["doctor"])
        assert doctor.exit_code == 1 and "not installed" in doctor.stdout
    finally:
        monkeypatch.undo()
        probe.cache_clear()


def test_the_process_limit_stops_a_fork_bomb(tmp_path: Path) -> None:
    """Forking without bound stops at the limit; the machine is unharmed."""
    code = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while n < 1000:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('stopped at', n, e.errno)\n"
    )
    (tmp_path / "s").mkdir()
    argv = sandboxed_command(
        [sys.executable, "-c", code], cwd=None, socket_dir=str(tmp_path / "s"), config=SandboxConfig(limits=BotLimits(processes=40))
    )
    # As the launcher does: as root a pids cgroup holds the limit too (and RLIMIT_NPROC, the
    # bot being nobody); otherwise RLIMIT_NPROC.
    cgroup = BotCgroup.create(BotLimits(processes=40)) if os.geteuid() == 0 else None
    env = dict(os.environ)
    if cgroup is not None:
        env["THIRTYONE_CGROUP_PROCS"] = " ".join(cgroup.procs_files)
        argv = join_cgroups_command(argv)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    finally:
        if cgroup is not None:
            # A cgroup can be removed once its last process has gone.
            with contextlib.suppress(AssertionError):
                poll_until("an empty cgroup", lambda: all(not Path(f).read_text().strip() for f in cgroup.procs_files))
            cgroup.remove()
    words = r.stdout.split()
    assert words[:2] == ["stopped", "at"], (r.stdout, r.stderr)
    assert int(words[2]) < 40


def test_the_log_of_a_match_in_the_bots_own_folder_reads_empty(tmp_path: Path) -> None:
    """`thirtyone match` writing its log into the folder of a bot: the bot, which may read its
    own folder, finds the log empty while the match runs (and no other log anywhere)."""
    bot = tmp_path / "bot"
    bot.mkdir()
    shutil.copy(ATTACKER, bot / "attacker.py")
    (bot / "old.jsonl").write_text("not a secret: the bot's own file\n")
    r = subprocess.run(
        [*THIRTYONE, "match", f"{shlex.quote(sys.executable)} attacker.py --read m.jsonl --strict", "greedy", "--log", "m.jsonl",
         "--sandbox", "on", "--rule", "max_rounds=2", "--seed", "3"],
        cwd=bot, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert read_log(bot / "m.jsonl").complete
    text = (bot / "m.jsonl").read_text()
    assert "ATTACK SUCCEEDED" not in text and '"fault"' not in text
    footer = read_log(bot / "m.jsonl").footer
    assert footer is not None and [s.faults for s in footer.stats] == [0, 0]


def test_a_program_found_on_the_organisers_path_is_found_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``node bot.js`` works when node lives outside the system folders (nvm, /opt)."""
    tool_bin = tmp_path / "opt" / "tool" / "bin"
    tool_bin.mkdir(parents=True)
    tool = tool_bin / "arena-test-tool"
    tool.write_text("#!/bin/sh\necho tool ran\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool_bin}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "s").mkdir()
    argv = sandboxed_command(["arena-test-tool"], cwd=str(tmp_path / "s"), socket_dir=str(tmp_path / "s"), config=SandboxConfig())
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "tool ran"


def test_a_stopped_sandboxed_bot_gets_its_sigterm() -> None:
    """Stopping a sandboxed bot delivers SIGTERM to the bot itself, which shuts down cleanly.

    bubblewrap's death would SIGKILL the bot at once, so the referee signals the bot inside the
    sandbox first; the SDK prints a line when it gets the signal, and exits with code 0.
    """

    async def go() -> tuple[str, int | None]:
        handle = await start_bot("greedy", launcher=LocalLauncher(sandbox=SandboxConfig()))
        process = handle.process
        assert process is not None
        await close_bots([handle])
        await process.output_closed(2.0)
        return process.output_tail(), process.exit_code()

    output, code = run(go())
    assert "SIGTERM: stopping" in output, output
    assert code == 0, output
