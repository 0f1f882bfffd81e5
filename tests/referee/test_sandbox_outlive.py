"""A bot cannot outlive its match (issue 36, High), attacked from inside by a real sandboxed bot.

The attacker (``tests/referee/bots/outliver.py``) ignores SIGTERM, traces its sandbox's pid 1
(bubblewrap's init) and makes it leave the referee's process group and forget that it dies
with the outer bubblewrap, forks a ``setsid`` child that sleeps for ever, and mounts a tmpfs
of its own in a user namespace of its own. Before, its sandbox went on after its match,
reparented to the machine's init, with its processes, memory and CPU share.

Now the system-call filter (:mod:`referee.bots.seccomp`) refuses the tracing and the
namespaces, and a sandbox is ended with its PID namespace (SIGKILL to its init, and to its
cgroup) by the referee, by the watchdog when the referee dies, and by the next run after a
kill -9. Each test runs the attacker where strangers' bots run: a tournament, the ladder, a
launcher, a referee killed by SIGKILL; as root (bots are ``nobody``, with cgroups) and not
(the referee is ``nobody`` too, run from a root test in a mount namespace of its own that
shows it the Python runtime: see :func:`as_user`). Its processes are found by the name of its
file, in their command lines (bubblewrap's init holds it too); none may be left 2 s after its
match. Two tests also take the filter away (a bot that got past it, on a kernel or
bubblewrap that let it through): the sandbox still ends.

Each skips where this machine cannot sandbox; the non-root ones, run as root, need
util-linux's ``unshare``, ``mount`` and ``setpriv`` (as the referee itself does as root).
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from referee.bots.sandbox import HostUser, probe
from tests.polling import alive, poll_until

pytestmark = pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")

REPO = Path(__file__).resolve().parents[2]
OUTLIVER = Path(__file__).resolve().parent / "bots" / "outliver.py"
#: How long after its match a bot's last process may take to be gone (the issue's bound).
AFTER_MATCH_S = 2.0
#: Run in a referee (a Python program of a test's own) before it starts a bot: takes the
#: system-call filter away, so that the bot's attack on its init works and only the way its
#: sandbox is ended stands between it and the machine. (Before the filter existed there was
#: nothing to take away.)
NO_FILTER = textwrap.dedent(
    """
    import os, tempfile
    try:
        import pyseccomp as sc
        from referee.bots import sandbox, seccomp
    except ImportError:
        pass
    else:
        def allow_all():
            f = sc.SyscallFilter(sc.ALLOW)
            with tempfile.TemporaryFile() as t:
                f.export_bpf(t)
                t.seek(0)
                bpf = t.read()
            r, w = os.pipe()
            os.write(w, bpf)
            os.close(w)
            return r
        seccomp.filter_fd = allow_all
        options = sandbox.bwrap_options
        sandbox.bwrap_options = lambda bwrap: options(bwrap) - {"--disable-userns"}
    """
)


# ---------------------------------------------------------------- who runs the referee


@dataclass(frozen=True)
class User:
    """Who runs the referee in a test: this process's user, or ``nobody`` from a root test."""

    label: str
    host: HostUser | None  # None: this process's own user

    def prefix(self, workspace: Path) -> list[str]:
        """The words that run a command as this user (none for this process's own)."""
        return [] if self.host is None else as_user(self.host, workspace)

    def env(self, workspace: Path) -> dict[str, str]:
        """The environment of its commands: a home and a temporary folder it may write."""
        if self.host is None:
            return dict(os.environ)
        return {**os.environ, "HOME": str(workspace), "TMPDIR": str(workspace / "tmp")}


def _users() -> list[object]:
    """The referee as root (where the tests are) and not: as this user, or as nobody from root."""
    root = os.geteuid() == 0
    try:
        nobody = pwd.getpwnam("nobody")
        host = HostUser("nobody", nobody.pw_uid, nobody.pw_gid) if root else None
    except KeyError:
        host = None
    return [
        pytest.param(User("root", None), id="root",
                     marks=pytest.mark.skipif(not root, reason="the referee is not root here")),
        pytest.param(User("non-root", host), id="non-root",
                     marks=pytest.mark.skipif(root and host is None, reason="no user 'nobody' to run the referee as")),
    ]  # fmt: skip


def _blocked_above(path: str, user: HostUser) -> str | None:
    """The outermost folder above ``path`` (resolved) that ``user`` may not search, or None."""
    parts = Path(os.path.realpath(path)).parts
    for i in range(1, len(parts)):
        folder = os.path.join(*parts[:i])
        if not user.may(os.stat(folder), 1):
            return folder
    return None


def as_user(user: HostUser, workspace: Path) -> list[str]:
    """The words that run a command as ``user`` (from root), with this Python and this
    checkout reachable: in a mount namespace of the command's own, a folder ``user`` may not
    search on the way to them (a Python under ``/root``) is covered by an empty tmpfs it may
    search, and the runtime's folders are moved back in below it. Nothing outside changes."""
    tools = [shutil.which(t) for t in ("unshare", "mount", "setpriv", "mkdir")]
    if None in tools:
        pytest.skip("util-linux's unshare, mount and setpriv are needed to run a referee as nobody")
    unshare, mount, setpriv, mkdir = (str(t) for t in tools)
    needed = dict.fromkeys(os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, REPO))
    stage = workspace / "stage"
    lines = ["set -e"]
    covered: dict[str, list[str]] = {}
    for p in needed:
        top = _blocked_above(p, user)
        if top is not None and not any(p.startswith(q + "/") for q in needed if q != p):
            covered.setdefault(top, []).append(p)
    for n, (top, paths) in enumerate(covered.items()):
        # Each runtime folder is held at a point of the stage, the folder above is covered,
        # and each is moved back to its own path on the cover.
        points = [f"{stage}/{n}-{i}" for i in range(len(paths))]
        for p, point in zip(paths, points, strict=True):
            lines.append(f"{mkdir} -p {point} && {mount} --bind {shlex.quote(p)} {point}")
        lines.append(f"{mount} -t tmpfs -o mode=0755 thirtyone-test {shlex.quote(top)}")
        for p, point in zip(paths, points, strict=True):
            lines.append(f"{mkdir} -p {shlex.quote(p)} && {mount} --move {point} {shlex.quote(p)}")
    lines.append(f'exec {setpriv} --reuid={user.uid} --regid={user.gid} --clear-groups -- "$@"')
    return [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines), "sh"]


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A folder every user may enter (pytest's are root's, 0700), removed after the test."""
    folder = Path(tempfile.mkdtemp(prefix="thirtyone-outlive-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def own(workspace: Path, user: User) -> Path:
    """A folder of ``user``'s in ``workspace``, with its temporary folder."""
    folder = workspace / "home"
    (folder / "tmp").mkdir(parents=True)
    if user.host is not None:
        for p in (folder, folder / "tmp"):
            os.chown(p, user.host.uid, user.host.gid)
    return folder


def bot_copy(workspace: Path) -> tuple[Path, str]:
    """The attacker, copied under a name of its own (its mark) into a folder all may read."""
    mark = f"outliver_{uuid.uuid4().hex[:12]}"
    folder = workspace / "bot"
    folder.mkdir()
    folder.chmod(0o755)
    shutil.copy(OUTLIVER, folder / f"{mark}.py")
    (folder / f"{mark}.py").chmod(0o644)
    return folder, mark


# ---------------------------------------------------------------- what is left of it


def marked(mark: str) -> list[int]:
    """The live processes whose command line holds ``mark``."""
    found = []
    needle = mark.encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if needle in (d / "cmdline").read_bytes() and alive(int(d.name)):
                found.append(int(d.name))
        except OSError:
            continue
    return found


def describe(pids: list[int]) -> str:
    """Each process: pid, parent, pid namespace and command line."""
    out = []
    for pid in pids:
        try:
            ppid = (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            ns = os.readlink(f"/proc/{pid}/ns/pid")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"{pid} (parent {ppid}, {ns}): {cmd[:160]}")
        except OSError:
            continue
    return "; ".join(out)


def nothing_left(mark: str, after: str) -> None:
    """No process of the attacker ``mark`` is left :data:`AFTER_MATCH_S` after ``after`` (the
    end of its match); whatever is left is killed before the failure is raised."""
    try:
        poll_until(
            f"every process of {mark} to be gone {AFTER_MATCH_S:g} s after {after}",
            lambda: not marked(mark), timeout_s=AFTER_MATCH_S, interval_s=0.02,
            detail=lambda: f"left: {describe(marked(mark))}",
        )  # fmt: skip
    finally:
        for _ in range(3):
            for pid in marked(mark):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def reports(folder: Path) -> list[str]:
    """The attacker's ``OUTLIVER`` lines in the files under ``folder`` (its kept output)."""
    found = []
    for p in folder.rglob("*.txt"):
        with contextlib.suppress(OSError):
            if p.is_file() and p.stat().st_size < 1 << 20:
                found += [line for line in p.read_text(errors="replace").splitlines() if line.startswith("OUTLIVER {")]
    return found


def assert_refused(lines: list[str]) -> None:
    """Every report says the tracing and the tmpfs failed (the child is not refused: a bot
    may fork; it ends with its sandbox)."""
    assert lines, "the attacker's report is not in its output"
    for line in lines:
        assert '"ptrace": "failed: PermissionError' in line, line
        assert '"tmpfs": "failed:' in line, line


# ---------------------------------------------------------------- the paths a bot is run by


def cli(user: User, workspace: Path, *args: str, cwd: Path | None = None) -> str:
    """``thirtyone ARGS`` as ``user``; its output, failing the test unless it succeeds."""
    argv = [*user.prefix(workspace), sys.executable, "-c", "from referee.cli import main; main()", *args]
    r = subprocess.run(argv, cwd=cwd or workspace, env=user.env(own_home(workspace)), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"thirtyone {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr


def own_home(workspace: Path) -> Path:
    return workspace / "home"


@pytest.mark.slow
@pytest.mark.parametrize("user", _users())
def test_in_a_tournament_nothing_of_the_attacker_outlives_its_matches(workspace: Path, user: User) -> None:
    """``submit`` (its check match) and ``tournament run``: after each, within 2 s, no process
    of the attacker is left; its tracing and its tmpfs were refused."""
    home = own(workspace, user)
    bot, mark = bot_copy(workspace)
    t = home / "t"
    cli(user, workspace, "tournament", "new", str(t), "--table-size", "2", "--games", "1", "--seed", "5", "--sandbox", "on")
    cli(user, workspace, "submit", str(t), f"{sys.executable} {mark}.py", "--name", "outliver", cwd=bot)
    nothing_left(mark, "the submission's check match")
    cli(user, workspace, "submit", str(t), "greedy")
    cli(user, workspace, "tournament", "run", str(t), "-j", "1")
    nothing_left(mark, "the tournament's matches")
    assert_refused(reports(t))


LADDER = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from referee.ladder.accounts import add_user
    from referee.ladder.loop import Ladder
    from referee.ladder.settings import ArenaSettings
    from referee.ladder.store import ArenaStore, create
    from referee.ladder.uploads import accept_upload
    from referee.tournament.settings import TournamentSettings

    folder, bot, want = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="on")))
    with ArenaStore.open(folder) as store:
        # Two owners: the ladder never seats two versions of one owner at a table.
        mallory, _ = add_user(store, "mallory")
        alice, _ = add_user(store, "alice")
        for user, name, data in ((mallory, bot.name, bot.read_bytes()), (alice, "plain.py", b"import sdk\\nfrom sample_bots.greedy import GreedyBot\\nsdk.run(GreedyBot)\\n")):
            store.set_status(accept_upload(store, user, name, data).id, "active")
    played = []

    class Counting(Ladder):
        def _result(self, store, r):
            super()._result(store, r)
            if r.ok and not r.retrying:
                played.append(r.key)
                if len(played) >= want:
                    self.stopping.set()

    ladder = Counting(folder, 1, seed=3)
    bound = threading.Timer(240, ladder.stopping.set)  # should the matches never end
    bound.daemon = True
    bound.start()
    ladder.run()
    print("PLAYED", len(played), flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("user", _users())
def test_on_the_ladder_nothing_of_the_attacker_outlives_its_matches(workspace: Path, user: User) -> None:
    """The ladder starts the attacker for every rotation it plays (a real ladder, its worker,
    SQLite): once it has played and stopped, within 2 s, no process of the attacker is left."""
    home = own(workspace, user)
    bot, mark = bot_copy(workspace)
    argv = [*user.prefix(workspace), sys.executable, "-c", LADDER, str(home / "arena"), str(bot / f"{mark}.py"), "2"]
    r = subprocess.run(argv, cwd=REPO, env=user.env(home), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "PLAYED 2" in r.stdout, f"exit {r.returncode}:\n{r.stdout}\n{r.stderr}"
    nothing_left(mark, "the ladder's matches")
    assert_refused(reports(home / "arena"))


# ---------------------------------------------------------------- the way a sandbox ends


REFEREE = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from referee.bots import LocalLauncher, parse_bot_spec
    from referee.bots.sandbox import SandboxConfig

    async def main():
        bot = await LocalLauncher(sandbox=SandboxConfig()).launch(parse_bot_spec(sys.argv[1], cwd=Path(sys.argv[2])))
        while "serving thirtyone" not in bot.output_tail():
            if bot.exit_code() is not None:
                sys.exit(f"the bot exited: {bot.output_tail()}")
            await asyncio.sleep(0.02)
        print(bot.output_tail(), flush=True)
        if sys.argv[3] == "stop":
            await bot.stop(0.5)
            print("STOPPED", flush=True)
        else:
            print("READY", flush=True)
            time.sleep(600)  # until the test kills this referee

    asyncio.run(main())
    """
)


def referee(user: User, workspace: Path, bot: Path, mark: str, how: str, *, filtered: bool) -> subprocess.Popen[str]:
    """A referee (as ``user``, in a process group of its own, with its watchdog) that starts
    the attacker; then stops it (``stop``) or waits to be killed."""
    code = REFEREE if filtered else NO_FILTER + REFEREE
    argv = [*user.prefix(workspace), sys.executable, "-c", code, f"{sys.executable} {mark}.py", str(bot), how]
    return subprocess.Popen(
        argv, cwd=REPO, env=user.env(own(workspace, user)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


def read_until(proc: subprocess.Popen[str], word: str) -> str:
    """What ``proc`` prints up to a line ``word`` (failing with it all if it ends first)."""
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.strip() == word:
            return "".join(seen)
    raise AssertionError(f"the referee exited {proc.wait()} before {word}:\n{''.join(seen)}")


@pytest.mark.parametrize("user", _users())
def test_a_stopped_bot_s_sandbox_ends_even_when_the_bot_got_past_the_filter(workspace: Path, user: User) -> None:
    """Without the filter the attack on bubblewrap's init works (the bot says so); the referee
    still ends the sandbox, through its init and its cgroup, and nothing is left within 2 s."""
    bot, mark = bot_copy(workspace)
    proc = referee(user, workspace, bot, mark, "stop", filtered=False)
    try:
        output = read_until(proc, "STOPPED")
        nothing_left(mark, "the referee stopped it")
    finally:
        proc.kill()
        proc.wait()
    if platform.machine() == "x86_64":
        assert '"ptrace": "ok: injected' in output and 'prctl(PR_SET_PDEATHSIG, 0) -> 0"' in output, output


@pytest.mark.parametrize("user", _users())
def test_a_referee_killed_by_sigkill_leaves_no_sandbox_behind(workspace: Path, user: User) -> None:
    """The referee is killed with the attacker running (without the filter, so that its init
    no longer dies with bubblewrap): the watchdog ends the sandbox, within 2 s."""
    bot, mark = bot_copy(workspace)
    proc = referee(user, workspace, bot, mark, "wait", filtered=False)
    try:
        output = read_until(proc, "READY")
    finally:
        proc.kill()
        proc.wait()
    nothing_left(mark, "its referee was killed")
    if platform.machine() == "x86_64":
        assert '"ptrace": "ok: injected' in output, output


@pytest.mark.parametrize("user", _users())
def test_a_referee_killed_with_its_watchdog_leaves_no_sandbox_behind(workspace: Path, user: User) -> None:
    """``kill -9`` of the referee's whole process group, its watchdog included: the outer
    bubblewrap dies with the referee and the init with it, a death signal the attacker could
    take from its init before the filter. Nothing is left within 2 s."""
    bot, mark = bot_copy(workspace)
    proc = referee(user, workspace, bot, mark, "wait", filtered=True)
    try:
        output = read_until(proc, "READY")
    finally:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    nothing_left(mark, "its referee and its watchdog were killed")
    assert_refused([line for line in output.splitlines() if line.startswith("OUTLIVER {")])


# ---------------------------------------------------------------- what the filter refuses


#: Makes each refused call with harmless arguments and prints ``name errno`` (0: it worked).
PROBE = textwrap.dedent(
    """
    import ctypes, errno, os, platform, threading
    libc = ctypes.CDLL(None, use_errno=True)
    numbers = {
        "x86_64": {"keyctl": 250, "add_key": 248, "bpf": 321, "perf_event_open": 298, "mount": 165, "unshare": 272,
                   "setns": 308, "io_uring_setup": 425, "ptrace": 101, "process_vm_readv": 310, "kexec_load": 246},
        "aarch64": {"keyctl": 219, "add_key": 217, "bpf": 280, "perf_event_open": 241, "mount": 40, "unshare": 97,
                    "setns": 268, "io_uring_setup": 425, "ptrace": 117, "process_vm_readv": 270, "kexec_load": 104},
    }[platform.machine()]
    args = {
        "keyctl": (0, -3), "add_key": (b"user", b"k", b"v", 1, -3), "bpf": (0, 0, 0), "perf_event_open": (0, 0, -1, -1, 0),
        "mount": (b"none", b"/tmp", b"tmpfs", 0, 0), "unshare": (0x10000000,), "setns": (0, 0), "io_uring_setup": (1, 0),
        "ptrace": (16, 1, 0, 0), "process_vm_readv": (1, 0, 0, 0, 0, 0), "kexec_load": (0, 0, 0, 0),
    }
    for name, nr in numbers.items():
        ctypes.set_errno(0)
        r = libc.syscall(nr, *args[name])
        print(name, ctypes.get_errno() if r == -1 else 0, flush=True)
    t = threading.Thread(target=print, args=("thread", 0))
    t.start()
    t.join()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    print("fork 0", flush=True)
    """
)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="system call numbers of x86_64 and aarch64 only")
def test_the_filter_refuses_what_a_bot_never_needs_and_lets_it_run(workspace: Path) -> None:
    """Tracing, namespaces, mounts, keyrings, BPF, perf and kexec fail with EPERM, io_uring
    with ENOSYS; threads and processes still start."""
    bot, mark = bot_copy(workspace)
    (bot / "probe.py").write_text(PROBE)
    (bot / "probe.py").chmod(0o644)
    code = textwrap.dedent(
        """
        import asyncio, sys
        from pathlib import Path
        from referee.bots import LocalLauncher, parse_bot_spec
        from referee.bots.sandbox import SandboxConfig

        async def main():
            bot = await LocalLauncher(sandbox=SandboxConfig()).launch(parse_bot_spec(sys.argv[1], cwd=Path(sys.argv[2])))
            while bot.exit_code() is None:
                await asyncio.sleep(0.02)
            await bot.output_closed(5)
            print(bot.output_tail(), flush=True)
            await bot.stop(0)

        asyncio.run(main())
        """
    )
    r = subprocess.run([sys.executable, "-c", code, f"{sys.executable} probe.py", str(bot)], capture_output=True, text=True, timeout=120)
    got = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2 and line.split()[1].isdigit())
    want = {name: str(errno.EPERM) for name in ("keyctl", "add_key", "bpf", "perf_event_open", "mount", "unshare", "setns", "ptrace", "process_vm_readv", "kexec_load")}
    want |= {"io_uring_setup": str(errno.ENOSYS), "thread": "0", "fork": "0"}
    assert got == want, f"{r.stdout}\n{r.stderr}"
    assert not marked(mark)


# ---------------------------------------------------------------- what the organiser is told


def thirtyone(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``thirtyone ARGS`` in a process of its own (its own probe of the sandbox)."""
    argv = [sys.executable, "-c", "from referee.cli import main; main()", *args]
    return subprocess.run(argv, env={**os.environ, "COLUMNS": "250", **(env or {})}, capture_output=True, text=True, timeout=120)


def test_doctor_says_what_is_filtered_and_how_a_sandbox_ends() -> None:
    r = thirtyone("doctor")
    text = " ".join(r.stdout.split())
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("ptrace", "unshare", "setns", "mount", "keyctl", "bpf", "perf_event_open", "NEWUSER", "clone3"):
        assert name in text, text
    assert "SIGKILL to its init (the end of its PID namespace" in text, text
    assert "its watchdog if the referee dies" in text and "after kill -9" in text, text


def test_without_libseccomp_the_sandbox_is_unavailable_and_says_why(tmp_path: Path) -> None:
    """Where the filter cannot be built the sandbox is unavailable, as without bubblewrap:
    ``doctor`` says why and what to install, and ``--sandbox on`` refuses to start a match.
    (pyseccomp raises this very error where no libseccomp.so.2 is found.)"""
    fake = tmp_path / "no-libseccomp"
    fake.mkdir()
    (fake / "pyseccomp.py").write_text('raise RuntimeError("Unable to find libseccomp")\n')
    env = {"PYTHONPATH": os.pathsep.join([str(fake), *filter(None, [os.environ.get("PYTHONPATH")])])}
    doctor = thirtyone("doctor", env=env)
    text = " ".join(doctor.stdout.split())
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "cannot be used" in text and "system-call filter cannot be built" in text, text
    assert "Unable to find libseccomp" in text and "apt-get install libseccomp2" in text, text
    log = tmp_path / "m.jsonl"
    match = thirtyone("match", "greedy", "random", "--sandbox", "on", "--log", str(log), env=env)
    assert match.returncode == 2 and "system-call filter cannot be built" in " ".join(match.stderr.split()), match.stderr
    assert not log.exists()
