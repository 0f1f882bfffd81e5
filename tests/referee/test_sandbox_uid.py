"""A sandboxed bot is never root on this machine, even when the referee is.

bubblewrap maps the bot's user inside its sandbox to the user that runs bubblewrap. Run by
root, that made the bot host root without capabilities: it passed every owner check on root's
files, so it could read any root-only file (mode 0600) in the folders it sees. As root the
referee now runs bubblewrap as ``nobody``; these tests attack that from inside, with real
sandboxes, and check that the limits, the hidden folders and the copies still work.

The attacks need root (as another user nothing changed: a bot is that user); they skip,
saying so, elsewhere and where this machine cannot sandbox.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.bots import LocalLauncher, parse_bot_spec
from referee.bots.process import LocalBotProcess, child_pids
from referee.bots.sandbox import BotLimits, SandboxConfig, probe, sandboxed_command
from referee.cli.app import app
from referee.faults import BotStartError
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.submit import submit
from tests.referee.conftest import run

pytestmark = pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")
T = TypeVar("T")
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the referee is not root here: a bot is the referee's own user, as before")

#: Reads the paths it is given, says what it found and which descriptors it holds, then waits.
PROBE = textwrap.dedent(
    """
    import json, os, sys, time
    # The paths come in a file of its own: a root-only file named on its command line
    # would be refused before the start (the launcher checks the files its command names).
    for path in open("paths.txt").read().split():
        try:
            with open(path) as f:
                print("READ", path, f.read().strip(), flush=True)
        except OSError as e:
            print("REFUSED", path, e.errno, flush=True)
    fds = {}
    listing = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    for name in os.listdir(listing):
        try:
            fds[name] = os.readlink(f"/proc/self/fd/{name}")
        except OSError as e:
            fds[name] = f"? {e.errno}"
    print("FDS", json.dumps({"fds": fds, "listing": listing}), flush=True)
    print("READY", flush=True)
    time.sleep(120)
    """
)


def root_only(path: Path, text: str) -> Path:
    """A file of root's that only root may read (mode 0600), as /etc/shadow or a key is."""
    path.write_text(text)
    path.chmod(0o600)
    os.chown(path, 0, 0)
    return path


def start_and_wait(launcher: LocalLauncher, command: str, cwd: Path, look: Callable[[LocalBotProcess], T]) -> T:
    """Launch ``command``, wait (generously) until it says READY, return what ``look`` sees
    of it then, and stop it (all in one event loop, as a referee does)."""

    async def go() -> T:
        process = await launcher.launch(parse_bot_spec(command, cwd=cwd))
        try:
            deadline = time.monotonic() + 60
            while "READY" not in process.output_tail(20000) and process.exit_code() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return look(process)
        finally:
            await process.stop(0.5)

    return run(go())


def host_uids(pid: int) -> list[int]:
    """The real, effective, saved and filesystem uids of process ``pid``, as this machine sees them."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(x) for x in line.split()[1:]]
    raise AssertionError(f"no Uid line for {pid}")


@ROOT
def test_a_bot_cannot_read_root_only_files_in_the_folders_it_sees(tmp_path: Path) -> None:
    """As root: a root-only file in a read-only folder, in a root-only folder there, in the
    parent of the bot's own folder (made visible as a read-only folder) and in its own folder
    are all refused (EACCES); its own readable files are read; every process of the sandbox
    is ``nobody`` on this machine; and it holds no descriptor it did not open itself."""
    nobody = pwd.getpwnam("nobody")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    secret = root_only(shared / "secret.txt", "the seed is 12345")
    private = shared / "private"
    private.mkdir()
    private.chmod(0o700)
    (private / "inner.txt").write_text("inside a root-only folder")
    (private / "inner.txt").chmod(0o644)
    bot = shared / "bot"
    bot.mkdir()
    bot.chmod(0o755)
    (bot / "probe.py").write_text(PROBE)
    (bot / "mine.txt").write_text("my own file")
    own_secret = root_only(bot / "keys.txt", "a key of root's")
    reads = [secret, private / "inner.txt", own_secret, bot / "mine.txt"]
    (bot / "paths.txt").write_text("\n".join(map(str, reads)))
    launcher = LocalLauncher(sandbox=SandboxConfig(read_only=(str(shared),)))

    def look(process: LocalBotProcess) -> tuple[str, dict[int, list[int]]]:
        output = process.output_tail(20000)
        assert "READY" in output, output
        assert process.sandbox_pid is not None
        inside = [process.sandbox_pid, *child_pids(process.sandbox_pid)]
        return output, {pid: host_uids(pid) for pid in inside}

    output, uids = start_and_wait(launcher, f"{sys.executable} probe.py", bot, look)
    fds = json.loads(next(line for line in output.splitlines() if line.startswith("FDS "))[4:])
    assert "the seed is" not in output and "inside a root-only" not in output and "a key of root's" not in output, output
    for path in reads[:3]:
        assert f"REFUSED {path} 13" in output, output
    assert f"READ {bot / 'mine.txt'} my own file" in output, output
    assert len(uids) >= 2 and all(u == [nobody.pw_uid] * 4 for u in uids.values()), uids
    # Beyond its standard streams, only the descriptors of its own listing (os.listdir's
    # copy of it is closed by the time it is looked at: ENOENT).
    extra = {
        fd: link for fd, link in fds["fds"].items()
        if int(fd) > 2 and not re.fullmatch(r"/proc/\d+/fd", link) and link != f"? {errno.ENOENT}"
    }  # fmt: skip
    assert {"0", "1", "2"} <= set(fds["fds"]) and extra == {}, fds


@ROOT
def test_a_bot_folder_nobody_can_read_is_a_start_error_that_says_why(tmp_path: Path) -> None:
    """As root, one's own bot in a folder only root may enter (``thirtyone match --dir``, in
    place) does not start: the error names the folder, the user and what to do."""
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "probe.py").write_text(PROBE)
    bot.chmod(0o700)
    with pytest.raises(BotStartError) as e:
        start_and_wait(LocalLauncher(sandbox=SandboxConfig()), f"{sys.executable} probe.py", bot, LocalBotProcess.output_tail)
    text = str(e.value)
    assert str(bot) in text and "nobody" in text and "a+rX" in text, text
    bot.chmod(0o755)
    (bot / "probe.py").chmod(0o600)
    with pytest.raises(BotStartError) as e:
        start_and_wait(LocalLauncher(sandbox=SandboxConfig()), f"{sys.executable} probe.py", bot, LocalBotProcess.output_tail)
    assert str(bot / "probe.py") in str(e.value) and "0600" in str(e.value), str(e.value)


#: Starts threads until it has ``want`` or the kernel refuses, says how many, waits for a line.
THREADS = textwrap.dedent(
    """
    import sys, threading
    want = int(sys.argv[1])
    stop = threading.Event()
    n = 0
    try:
        while n < want:
            threading.Thread(target=stop.wait, daemon=True).start()
            n += 1
    except RuntimeError:
        pass
    print("HOLDING", n, flush=True)
    sys.stdin.readline()
    stop.set()
    """
)


def holding(proc: subprocess.Popen[str]) -> int:
    """The number of threads a THREADS bot says it holds (waits for its line)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("HOLDING "):
            return int(line.split()[1])
    raise AssertionError(f"the bot ended without saying (exit {proc.wait()})")


def threads_bot(tmp_path: Path, want: int, limit: int) -> subprocess.Popen[str]:
    """A sandboxed THREADS bot held to ``limit`` processes by RLIMIT_NPROC alone (no cgroup)."""
    (tmp_path / "s").mkdir(exist_ok=True)
    argv = sandboxed_command(
        [sys.executable, "-c", THREADS, str(want)], cwd=None, socket_dir=str(tmp_path / "s"),
        config=SandboxConfig(limits=BotLimits(processes=limit)),
    )  # fmt: skip
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def release(*procs: subprocess.Popen[str]) -> None:
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("\n")
        p.stdin.close()
    for p in procs:
        p.wait(timeout=60)


@ROOT
def test_as_root_a_bots_process_limit_holds_without_a_cgroup(tmp_path: Path) -> None:
    """Linux exempts host root from RLIMIT_NPROC; the bot is nobody now, so the limit its
    sandbox sets applies even where no pids cgroup is made."""
    bomb = threads_bot(tmp_path, 200, 40)
    try:
        n = holding(bomb)
    finally:
        release(bomb)
    assert n < 40, n


@ROOT
def test_two_bots_as_nobody_do_not_share_one_process_budget(tmp_path: Path) -> None:
    """Both run as nobody, but the kernel counts RLIMIT_NPROC per user namespace: while one
    holds 30 threads of its 40, the other still gets its own 30."""
    first = threads_bot(tmp_path, 30, 40)
    second = None
    try:
        assert holding(first) == 30
        second = threads_bot(tmp_path, 30, 40)
        assert holding(second) == 30
    finally:
        release(first, *([second] if second else []))


def test_doctor_says_which_user_bots_run_as() -> None:
    """As root: nobody; otherwise the referee's own user."""
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if line.startswith("bots run as"))
    assert ("nobody" in line) if os.geteuid() == 0 else (f"uid {os.geteuid()}" in line), line


@pytest.fixture
def tools() -> Iterator[Path]:
    """A folder of programs that nobody may run (pytest's own folders are root's, 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="thirtyone-tools-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@ROOT
def test_where_bubblewrap_cannot_run_as_nobody_the_sandbox_fails_closed(
    tmp_path: Path, tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bubblewrap that cannot make a user namespace as nobody (Ubuntu's AppArmor rule, a
    sysctl) makes the sandbox unavailable with what to change; 'on' refuses to run a match,
    and no bot is ever run as root instead."""
    real = shutil.which("bwrap")
    fake = tools / "bwrap"  # what bubblewrap says when user namespaces are denied to its user
    fake.write_text(f"#!/bin/sh\n[ \"$(id -u)\" = 0 ] && exec {real} \"$@\"\n"
                    "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1\n")  # fmt: skip
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    probe.cache_clear()
    try:
        status = probe()
        assert not status.available
        assert "as nobody" in status.reason and "uid map" in status.reason, status.reason
        assert "apparmor_restrict_unprivileged_userns" in status.reason, status.reason
        log = tmp_path / "m.jsonl"
        on = CliRunner().invoke(app, ["match", "greedy", "random", "--sandbox", "on", "--log", str(log)])
        assert on.exit_code == 2 and "as nobody" in " ".join(on.stderr.split()), on.output
        assert not log.exists()
        doctor = CliRunner().invoke(app, ["doctor"])
        assert doctor.exit_code == 1 and "nobody" in doctor.stdout, doctor.output
    finally:
        monkeypatch.undo()
        probe.cache_clear()


def test_make_readable_opens_a_copy_to_all_users_and_keeps_its_links(tmp_path: Path) -> None:
    """Files get a+r (and a+x where the owner had x), folders a+rx; links are left alone."""
    from referee.bots.sandbox import make_readable

    copy = tmp_path / "copy"
    (copy / "sub").mkdir(parents=True)
    (copy / "bot.py").write_text("x")
    (copy / "run.sh").write_text("x")
    (copy / "sub" / "data").write_text("x")
    (copy / "bot.py").chmod(0o600)
    (copy / "run.sh").chmod(0o700)
    (copy / "sub").chmod(0o700)
    (copy / "link").symlink_to("bot.py")
    copy.chmod(0o700)
    make_readable(copy)
    modes = {p.name: p.lstat().st_mode & 0o777 for p in [copy, *copy.rglob("*")] if not p.is_symlink()}
    assert modes == {"copy": 0o755, "bot.py": 0o644, "run.sh": 0o755, "sub": 0o755, "data": 0o644}, modes


@ROOT
def test_a_submitted_folder_of_private_files_is_copied_readable_and_its_bot_runs(tmp_path: Path) -> None:
    """``submit --dir`` of a folder whose files only its owner may read: the copy under the
    tournament folder (which stays 0700) is readable by all, and the bot starts and plays
    in its sandbox as nobody (the submission's own check match)."""
    folder = tmp_path / "t"
    TournamentStore.create(folder, TournamentSettings(sandbox="on")).close()
    src = tmp_path / "src"
    src.mkdir()
    bot = src / "mybot.py"
    bot.write_text("import sdk\nfrom sample_bots.greedy import GreedyBot\nsdk.run(GreedyBot)\n")
    bot.chmod(0o600)
    src.chmod(0o700)
    with TournamentStore.open(folder) as store:
        entry = submit(store, f"{sys.executable} mybot.py", bot_dir=src)
    copy = folder / "bots" / entry.name
    assert (copy.stat().st_mode & 0o777, (copy / "mybot.py").stat().st_mode & 0o777) == (0o755, 0o644)
    assert folder.stat().st_mode & 0o077 == 0


def test_a_copy_made_before_the_readable_rule_is_made_readable_when_checked(tmp_path: Path) -> None:
    """A tournament's or an arena's copy made private (0700/0600) by an older referee is
    opened to all when its hash is checked before a launch; the hash is the same."""
    from referee.tournament.botfiles import check_unchanged, folder_sha256

    copy = tmp_path / "bots" / "old"
    copy.mkdir(parents=True)
    (copy / "main.py").write_text("print('hi')\n")
    sha = folder_sha256(copy)
    (copy / "main.py").chmod(0o600)
    copy.chmod(0o700)
    check_unchanged(copy, sha, name="old")
    assert (copy.stat().st_mode & 0o777, (copy / "main.py").stat().st_mode & 0o777) == (0o755, 0o644)
    assert folder_sha256(copy) == sha


@ROOT
def test_the_stage_folder_of_a_killed_referee_is_removed_by_the_next_launcher() -> None:
    """A referee killed by SIGKILL leaves its folder of empty mount points in /tmp; the next
    launcher removes it (and only folders of referees that are gone)."""
    code = (
        "import os, sys\n"
        "from referee.bots.sandbox import SandboxConfig, sandboxed_command, _stage_root\n"
        "sandboxed_command(['/bin/true'], cwd=sys.argv[1], socket_dir='/tmp/x', config=SandboxConfig())\n"
        "print(_stage_root[os.getpid()], flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    hidden = Path(tempfile.mkdtemp(prefix="thirtyone-private-"))  # 0700: what is inside needs a stage
    (hidden / "bot").mkdir(mode=0o755)
    try:
        r = subprocess.run([sys.executable, "-c", code, str(hidden / "bot")], capture_output=True, text=True, timeout=60)
        stage = Path(r.stdout.strip())
        assert r.returncode == -9 and stage.name.startswith("thirtyone-stage-") and stage.is_dir(), (r.stdout, r.stderr)
        LocalLauncher(sandbox=SandboxConfig())
        assert not stage.exists()
    finally:
        shutil.rmtree(hidden, ignore_errors=True)
