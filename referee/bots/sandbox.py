"""Running a stranger's bot in a sandbox: bubblewrap for isolation, kernel limits for resources.

A bot is other people's code, and the referee is the only party that may know the cards. So
:func:`sandboxed_command` wraps a bot's command line in `bubblewrap
<https://github.com/containers/bubblewrap>`_ (``bwrap``, the sandbox under Flatpak) so that
the bot:

- has its own user, PID, IPC, UTS, network and cgroup namespaces and a new session: it sees
  no other process, can signal nobody outside, and has no network; the referee still reaches
  it through the Unix socket it makes in its scratch folder (a socket crosses network
  namespaces, because it is a file), found through the sandbox's own root and never through
  a link the bot could have made (:meth:`referee.bots.process.LocalBotProcess.connect_target`);
- sees a fresh root with, read-only, the system folders (``/usr`` and its links), a few files
  of ``/etc`` that programs need, the Python runtime and our packages (for sample bots and
  SDK bots), the folder of the program it runs and its own folder (and, only for one's own
  command in ``thirtyone match``, the folders of the files its words name:
  :attr:`SandboxConfig.command_files`); a /dev of the usual devices, read-only; writable,
  only one private tmpfs capped at ``scratch_mb``: its ``/tmp`` (``HOME``, ``TMPDIR``), with
  ``/dev/shm`` and its socket's folder links into it, so that nothing it writes reaches this
  machine's disk and at the cap every write gets ENOSPC;
- never sees the folders the referee names as hidden (the tournament folder with its database
  and logs, other bots' files), even when they lie under a folder that is bound: an empty
  read-only tmpfs is laid over each, before the bot's own folder is bound back in;
- runs with a clean environment: ``PATH``, a UTF-8 locale, ``HOME``/``TMPDIR``, its address,
  and only the variables the organiser names;
- ends with its PID namespace, and with it everything it started: when the sandbox's first
  process (bubblewrap's init) ends, the kernel kills every process of the namespace, so a
  ``setsid`` child that ignores SIGTERM cannot outlive it. The referee ends a sandbox by
  SIGKILL to that init (the pid bubblewrap reports on ``--info-fd``, held as a pidfd) and to
  its cgroup, never only through the outer bubblewrap, whose death (``--die-with-parent``)
  reaches the init only through a death signal the init could be made to forget
  (:meth:`referee.bots.process.LocalBotProcess.end_sandbox`; the watchdog does the same when
  the referee dies);
- runs under a system-call filter (:mod:`referee.bots.seccomp`: no ``ptrace``, namespaces,
  mounts, keyrings, BPF or perf), loaded by bubblewrap (``--seccomp``), and with no new user
  namespaces (``--disable-userns``, where bubblewrap has it);
- is held to :class:`BotLimits`: ``RLIMIT_DATA`` (memory), ``RLIMIT_NPROC`` (processes and
  threads), ``RLIMIT_FSIZE`` (file size), no core files, set inside the sandbox by
  util-linux's ``prlimit``; and, where the referee may create cgroups (as root), a memory,
  pids and CPU cgroup per bot, which also bounds the total over all its processes, gives it
  its CPU share (:attr:`BotLimits.cpus`) and tells an out-of-memory kill apart from a crash;
- is never root on this machine: bubblewrap maps the bot's user to the user that runs it, so
  as root the referee runs bubblewrap as ``nobody`` (:func:`bot_host_user`), after joining the
  cgroups and after mounting, in a mount namespace of that start alone, the folders
  ``nobody`` could not reach (:func:`sandboxed_command`). As ``nobody`` a bot cannot read
  root's private files, and ``RLIMIT_NPROC`` (which Linux does not apply to root) holds it,
  counted per user namespace, so per bot.

:func:`probe` says whether this machine can sandbox and, if not, why; ``thirtyone doctor``
prints it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import itertools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from referee.bots import seccomp
from referee.bots.bytecode import write_bytecode
from referee.faults import RefereeError

#: The environment variable that tells a bot where to serve.
ADDRESS_ENV = "THIRTYONE_BOT_ADDRESS"
#: Where a bot's scratch folder is, inside its sandbox.
SCRATCH = "/tmp"
#: The uid and gid a bot runs as inside its sandbox (``nobody``): not 0, so bwrap drops
#: every capability.
SANDBOX_UID = 65534
#: Files of /etc that ordinary programs need (the dynamic linker, TLS roots, users, time zone).
_ETC_FILES = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    # Not all of /etc/ssl: its private/ holds the machine's TLS keys (a reverse proxy's), and
    # a bot running as the organiser's user could read them where that user is root.
    "ssl/certs",
    "ssl/openssl.cnf",
)
#: The devices of a bot's /dev (bound from the host's, as bubblewrap's --dev does).
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
#: The links of a bot's /dev: its standard streams, and shared memory in its scratch folder.
_DEV_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("shm", SCRATCH),
)
#: Top-level folders that are links into /usr on merged-/usr systems, or folders elsewhere.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
#: Our packages, which sample bots and SDK bots import.
_OWN_PACKAGES = ("referee", "sdk", "sample_bots", "thirtyone")
_MIB = 1024 * 1024
#: The bounds of :attr:`BotLimits.cpus` (a hundredth of a CPU is the smallest useful quota).
CPUS_MIN = 0.01
CPUS_MAX = 1024
#: The CFS period of a bot's CPU quota, microseconds (the kernel's default).
_CPU_PERIOD_US = 100_000
#: cgroup v2's ``cpu.weight`` of a bot at work (the kernel's default) and of one idle: a bot
#: between its matches, or a spare started for the next (v1's ``cpu.shares`` in proportion).
BUSY_WEIGHT = 100
IDLE_WEIGHT = 1


class SandboxError(RefereeError, RuntimeError):
    """The sandbox cannot be used here, or a bot's sandbox cannot be set up; says why."""


@dataclass(frozen=True, slots=True)
class BotLimits:
    """What one bot may use. Defaults a real bot lives with (a Node.js bot starts under them)."""

    #: Memory, MiB: per process (``RLIMIT_DATA``) and, with a cgroup, for all its processes.
    memory_mb: int = 1024
    #: Processes and threads (a gRPC server runs a dozen threads).
    processes: int = 128
    #: The largest file it may write, MiB.
    file_size_mb: int = 64
    #: Size of its scratch folder (a tmpfs, so it counts as memory too), MiB: everything the
    #: bot can write (its ``/tmp``, ``HOME``, ``/dev/shm`` and its socket's folder) is there.
    scratch_mb: int = 256
    #: CPU time, in CPUs (1.0: one core's worth over all its processes), with a cgroup.
    cpus: float = 1.0

    def __post_init__(self) -> None:
        bounds = {"memory_mb": (64, 1 << 20), "processes": (8, 100_000), "file_size_mb": (1, 1 << 20), "scratch_mb": (1, 1 << 20)}
        for name, (low, high) in bounds.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
                raise ValueError(f"limit {name} must be a whole number from {low} to {high}, got {v!r}")
        c = self.cpus
        if isinstance(c, bool) or not isinstance(c, int | float) or not CPUS_MIN <= c <= CPUS_MAX:
            raise ValueError(f"limit cpus must be a number from {CPUS_MIN:g} to {CPUS_MAX}, got {c!r}")
        object.__setattr__(self, "cpus", float(c))

    def to_dict(self) -> dict[str, int | float]:
        """A JSON-ready form (the keys are the constructor's)."""
        return {
            "memory_mb": self.memory_mb, "processes": self.processes, "file_size_mb": self.file_size_mb,
            "scratch_mb": self.scratch_mb, "cpus": self.cpus,
        }  # fmt: skip

    def describe(self) -> str:
        """Short text such as ``memory 1024 MiB · 128 processes · files 64 MiB · scratch 256 MiB · 1 CPU``."""
        return (
            f"memory {self.memory_mb} MiB · {self.processes} processes · files {self.file_size_mb} MiB"
            f" · scratch {self.scratch_mb} MiB · {self.cpus:g} CPU{'' if self.cpus == 1 else 's'}"
        )


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """How the referee sandboxes the bots it starts."""

    limits: BotLimits = field(default_factory=BotLimits)
    #: Folders and files no bot may see (the tournament folder, logs), even under bound folders.
    hidden: tuple[str, ...] = ()
    #: Extra read-only folders the organiser grants (a language runtime outside the system).
    read_only: tuple[str, ...] = ()
    #: Variables the organiser passes: ``NAME`` (its value here) or ``NAME=VALUE``.
    env: tuple[str, ...] = ()
    #: Whether the folders of host files named by a bot's command words are bound too
    #: (``python /path/to/bot.py data/``). A convenience for one's own bot in ``match`` and
    #: ``check-bot``, where the person typed the command; never for a tournament's bots, which
    #: see only their own folder whatever their command says (the default).
    command_files: bool = False


def check_env_entries(entries: Iterable[str]) -> tuple[str, ...]:
    """Validate ``NAME`` / ``NAME=VALUE`` entries; a ValueError names the bad one."""
    out = []
    for entry in entries:
        name = entry.split("=", 1)[0]
        if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name):
            raise ValueError(f"bot environment entry {entry!r} is not NAME or NAME=VALUE")
        out.append(entry)
    return tuple(out)


# ---------------------------------------------------------------- can this machine sandbox?


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether bots can be sandboxed here, and with what."""

    available: bool
    #: Why not (empty when available), with what to do about it.
    reason: str
    bwrap: str | None
    bwrap_version: str
    #: Whether a memory and pids cgroup per bot can be made (as root with cgroups mounted).
    cgroups: bool
    #: Why the process limit is not enforced, if it is not (it is now wherever a sandbox is).
    process_limit_note: str
    #: Why the bots' CPU share is not enforced, if it is not (no cgroup, or no cpu controller).
    cpu_limit_note: str = ""
    #: Which user of this machine the bots run as, in words (see :func:`bot_host_user`).
    host_user: str = ""
    #: What the bots' system-call filter refuses, in words (:mod:`referee.bots.seccomp`);
    #: empty where it cannot be built (then the sandbox is unavailable, and ``reason`` says why).
    syscall_filter: str = ""
    #: Whether bubblewrap refuses new user namespaces inside too (``--disable-userns``).
    userns_disabled: bool = False


HOW_TO_ENABLE = (
    "install bubblewrap (Debian/Ubuntu: 'apt-get install bubblewrap'; Fedora: 'dnf install bubblewrap') "
    "and allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 on older Debian; "
    "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04), then run 'thirtyone doctor'"
)


#: What to do where bubblewrap cannot run as the unprivileged user bots run as (as root).
HOW_TO_ENABLE_AS_ROOT = (
    "as root the referee runs bubblewrap as the unprivileged user 'nobody', so that no bot is root on "
    "this machine, and that needs unprivileged user namespaces: allow them (sysctl "
    "kernel.unprivileged_userns_clone=1 on older Debian; kernel.apparmor_restrict_unprivileged_userns=0 "
    "on Ubuntu 24.04, or an AppArmor profile for bwrap) and install util-linux (setpriv, unshare, mount), "
    "then run 'thirtyone doctor'"
)


class _Probe:
    """:func:`probe`: one result per process, however many threads ask at once.

    A tournament's worker starts a match's bots together, each asking from its own thread; a
    plain cache lets every one of them miss it and start a sandbox of its own, at the moment
    the bots compete for the CPU.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._status: SandboxStatus | None = None

    def __call__(self) -> SandboxStatus:
        """Try the sandbox once (cached): is bwrap there, and does a trivial sandbox start?

        As root it is tried as bots are run, as the unprivileged :func:`bot_host_user` with
        the runtime's folders staged (:func:`sandboxed_command`); where that fails the sandbox
        is unavailable (fail closed), never run with the bot as root. Where it works, the
        bytecode of our packages is written too (:func:`~referee.bots.bytecode.write_bytecode`).
        """
        with self._lock:
            if self._status is None:
                self._status = _try_sandbox()
                if self._status.available:
                    # Once per referee (a tournament's workers adopt this result): a bot
                    # cannot write the bytecode of what it imports, so every start would
                    # compile it again (see referee.bots.bytecode).
                    write_bytecode(own_package_folders())
            return self._status

    def known(self) -> SandboxStatus | None:
        """The result, if this process has one already (without trying)."""
        return self._status

    def adopt(self, status: SandboxStatus) -> None:
        """Take the result found by the process that started this one, on the same machine as
        the same user (a tournament's worker), rather than trying again."""
        with self._lock:
            if self._status is None:
                self._status = status

    def cache_clear(self) -> None:
        """Forget the result: the next call tries again (the machine changed, in a test)."""
        with self._lock:
            self._status = None


#: Whether bots can be sandboxed here: call it (see :meth:`_Probe.__call__`).
probe = _Probe()


def _try_sandbox() -> SandboxStatus:
    bwrap = shutil.which("bwrap")
    cg = BotCgroup.supported()
    # As root without cgroups RLIMIT_NPROC still holds each bot, counted in its own user
    # namespace (it runs as nobody, whom Linux does not exempt as it does root).
    note = ""
    cpu_note = _cpu_limit_note()
    try:
        user = bot_host_user()
    except SandboxError as e:
        return SandboxStatus(False, str(e), bwrap, "", cg, note, cpu_note, "none: bots cannot run here")
    who = user.describe() if user is not None else _own_user()
    how = HOW_TO_ENABLE if user is None else HOW_TO_ENABLE_AS_ROOT

    filt, filter_why = seccomp.status()
    described = filt.describe() if filt is not None else ""
    no_userns = bwrap is not None and "--disable-userns" in bwrap_options(bwrap)

    def status(available: bool, reason: str, found: str | None = bwrap, version: str = "") -> SandboxStatus:
        return SandboxStatus(available, reason, found, version, cg, note, cpu_note, who, described, no_userns)

    if bwrap is None:
        return status(False, f"bubblewrap (bwrap) is not installed; {HOW_TO_ENABLE}", None)
    version = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    if shutil.which("prlimit") is None:
        return status(False, "util-linux's prlimit is not installed (it sets the bots' limits)", bwrap, version)
    if filt is None:
        # As without bubblewrap: a bot that may ptrace its sandbox's init can outlive it.
        return status(False, f"the bots' system-call filter cannot be built: {filter_why}", bwrap, version)
    with tempfile.TemporaryDirectory(prefix="thirtyone-probe-") as tmp:
        fd = seccomp.filter_fd()
        try:
            argv = sandboxed_command(["/bin/true"], cwd=None, socket_dir=tmp, config=SandboxConfig(), bwrap=bwrap, seccomp_fd=fd)
            r = subprocess.run(
                argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL, cwd=tmp, pass_fds=(fd,)
            )
        except SandboxError as e:
            return status(False, f"{e}; {how}", bwrap, version)
        except (OSError, subprocess.SubprocessError) as e:
            return status(False, f"bubblewrap could not be run ({e}); {how}", bwrap, version)
        finally:
            os.close(fd)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        as_whom = f" as {user.describe()}" if user is not None else ""
        return status(False, f"bubblewrap cannot make a sandbox here{as_whom} ({why}); {how}", bwrap, version)
    return status(True, "", bwrap, version)


def _own_user() -> str:
    """The referee's own user, in words (bots run as it when the referee is not root)."""
    uid = os.geteuid()
    name = str(uid)
    with contextlib.suppress(ImportError, KeyError):
        import pwd

        name = pwd.getpwuid(uid).pw_name
    return f"the referee's own user ({name}, uid {uid})"


# ---------------------------------------------------------------- whom a bot is on this machine


@dataclass(frozen=True, slots=True)
class HostUser:
    """An unprivileged user of this machine that bubblewrap runs as (``nobody``)."""

    name: str
    uid: int
    gid: int

    def describe(self) -> str:
        """``nobody (uid 65534, gid 65534)``."""
        return f"{self.name} (uid {self.uid}, gid {self.gid})"

    def may(self, st: os.stat_result, bits: int) -> bool:
        """Whether this user, with no supplementary groups, has the permission ``bits``
        (4 read, 2 write, 1 search/execute) on a file of ``st`` (ACLs are not looked at)."""
        if st.st_uid == self.uid:
            mode = st.st_mode >> 6
        elif st.st_gid == self.gid:
            mode = st.st_mode >> 3
        else:
            mode = st.st_mode
        return mode & bits == bits


@functools.cache
def bot_host_user() -> HostUser | None:
    """The user of this machine a sandboxed bot runs as when the referee runs as root:
    ``nobody`` (65534, else), with its group and no supplementary groups. None when the
    referee is not root: then a bot is, on this machine, the referee's own user.

    Why: bubblewrap maps the bot's user inside to the user that runs bubblewrap. Run by root,
    the bot would be host root without capabilities, which still passes every owner check on
    root's files (a mode 0600 file of root's in a folder it sees would be readable).
    """
    if os.geteuid() != 0:
        return None
    name, uid, gid = "nobody", SANDBOX_UID, SANDBOX_UID
    with contextlib.suppress(ImportError, KeyError):
        import pwd

        entry = pwd.getpwnam("nobody")
        uid, gid = entry.pw_uid, entry.pw_gid
    if uid == 0 or gid == 0:
        raise SandboxError("the user 'nobody' of this machine is root (uid or gid 0); bots cannot run as it")
    return HostUser(name, uid, gid)


def _reachable(path: str, user: HostUser) -> bool:
    """Whether ``user`` can look ``path`` up: every folder above it (resolved) searchable."""
    folder = os.path.dirname(os.path.realpath(path))
    while True:
        try:
            if not user.may(os.stat(folder), 1):
                return False
        except OSError:
            return False
        if folder == "/":
            return True
        folder = os.path.dirname(folder)


def unreadable_by(user: HostUser, paths: Iterable[str]) -> str | None:
    """Why ``user`` cannot use a bot's own files, or None: the first of ``paths`` that it
    cannot use, as ``/path (mode 0600, owner uid 0, group 0)``. A folder needs search (x), a
    file read (r); links are followed. Folders are not walked: a file inside that the bot
    never opens is no reason to refuse it, and one it opens fails with its own error."""
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue  # gone, or not there yet: the launch says so itself
        if not user.may(st, 1 if stat.S_ISDIR(st.st_mode) else 4):
            return f"{p} (mode {stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}, group {st.st_gid})"
    return None


def make_readable(folder: str | os.PathLike[str]) -> None:
    """``chmod -R a+rX`` a copy the referee made of a bot's files (a tournament's, an arena's):
    the bot runs as an unprivileged user (:func:`bot_host_user`) and must read its own files;
    the folders above a copy stay private, so no other user of this machine gains anything.
    Links are left alone."""
    top = os.fspath(folder)
    for root, _dirs, files in os.walk(top):
        for p in (root, *(os.path.join(root, f) for f in files)):
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                continue
            add = 0o444 | (0o111 if stat.S_ISDIR(st.st_mode) or st.st_mode & 0o111 else 0)
            if st.st_mode & add != add:
                os.chmod(p, stat.S_IMODE(st.st_mode) | add)


_stage_lock = threading.Lock()
#: This process's stage folder, by pid (a forked child makes its own: its parent's goes with it).
_stage_root: dict[int, str] = {}


def _stage_folder() -> str:
    """This process's folder of mount points for staged binds (made once, removed at exit).

    A folder of root's (0711) in /tmp, holding only empty mount points (0700): the sources
    are mounted on them only inside the mount namespace of one bot's start (see
    :func:`sandboxed_command`), so on this machine they stay empty, and the same point
    serves every bot at once.
    """
    pid = os.getpid()
    with _stage_lock:
        if pid not in _stage_root:
            user = bot_host_user()
            base = next(
                (d for d in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm")
                 if os.path.isdir(d) and (user is None or (_reachable(os.path.join(d, "x"), user)))),
                None,
            )  # fmt: skip
            if base is None:
                raise SandboxError("no temporary folder here (/tmp) can be searched by the user bots run as")
            root = os.path.realpath(tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{_pid_namespace()}-{pid}-", dir=base))
            os.chmod(root, 0o711)
            _stage_root[pid] = root
            atexit.register(_remove_stage, pid, root)
        return _stage_root[pid]


def _remove_stage(pid: int, root: str) -> None:
    """At exit: remove this process's stage folder (never a parent's, in a forked child)."""
    if os.getpid() == pid:
        shutil.rmtree(root, ignore_errors=True)


#: The names of stage folders: ``thirtyone-stage-<pid namespace>-<pid of their referee>-<random>``.
STAGE_PREFIX = "thirtyone-stage-"
_STAGE_NAME = re.compile(re.escape(STAGE_PREFIX) + r"([0-9]+)-([0-9]+)-[A-Za-z0-9_]+")


def remove_stale_stages() -> list[str]:
    """Remove the stage folders (empty mount points) of referees that are gone (killed by
    SIGKILL, so their exit did not); only root's, of this PID namespace. Returns them."""
    removed: list[str] = []
    ns = _pid_namespace()
    for base in dict.fromkeys((tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm")):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            m = _STAGE_NAME.fullmatch(name)
            if m is None or m.group(1) != ns or int(m.group(2)) == os.getpid() or pid_alive(int(m.group(2))):
                continue
            path = os.path.join(base, name)
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if stat.S_ISDIR(st.st_mode) and st.st_uid == 0:
                    shutil.rmtree(path)
                    removed.append(path)
    return removed


def _stage_point(n: int, is_dir: bool) -> str:
    """The ``n``-th mount point (a folder or a file) of the stage folder, made if need be."""
    point = os.path.join(_stage_folder(), f"{'d' if is_dir else 'f'}{n}")
    if not os.path.lexists(point):
        if is_dir:
            with contextlib.suppress(FileExistsError):
                os.mkdir(point, 0o700)
        else:
            with contextlib.suppress(FileExistsError):
                os.close(os.open(point, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return point


def _cpu_limit_note() -> str:
    """Why a bot's CPU share cannot be enforced here ("" when it can)."""
    if os.geteuid() != 0:
        return (
            "the referee does not run as root, so it cannot give each bot a cgroup: bots' CPU shares "
            "(--cpus) are not enforced, and a bot that burns CPU slows the others on the same cores"
        )
    made, cpu = BotCgroup.capabilities()
    if not made:
        return "cgroups cannot be made here: bots' CPU shares (--cpus) are not enforced"
    if not cpu:
        return "the cgroups' cpu controller is not available here: bots' CPU shares (--cpus) are not enforced"
    return ""


# ---------------------------------------------------------------- what a bot may read


def _existing(paths: Iterable[str]) -> list[str]:
    return [p for p in paths if p and os.path.lexists(p)]


def _is_under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def covered(path: str, folders: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``folders`` or lies inside one (paths as given, not resolved)."""
    return any(_is_under(path, f) for f in folders)


@functools.cache
def _runtime_folders() -> tuple[str, ...]:
    """The Python runtime and our packages, read-only for every bot (sample and SDK bots)."""
    found: list[str] = []
    for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))):
        found.append(os.path.realpath(p))
    # The venv's python is a link into the base runtime; both ends must be there.
    found.append(os.path.dirname(os.path.abspath(sys.executable)))
    found.extend(own_package_folders())
    return tuple(dict.fromkeys(_existing(found)))


def own_package_folders() -> list[str]:
    """The folders of our packages, as this interpreter finds them (without importing them)."""
    found: list[str] = []
    for name in _OWN_PACKAGES:
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            for loc in (spec.submodule_search_locations or []) if spec else []:
                found.append(os.path.realpath(loc))
    return found


def _home_folders() -> set[str]:
    """The home folders of this machine's users (and ``HOME``), resolved."""
    homes = {os.path.realpath(os.path.expanduser("~"))}
    with contextlib.suppress(ImportError, OSError):
        import pwd

        homes.update(os.path.realpath(u.pw_dir) for u in pwd.getpwall() if u.pw_dir not in ("", "/"))
    return homes


def _program_folder(program: str, *, strict: bool = False) -> str | None:
    """The installation folder of a program outside the system folders (e.g. /opt/node).

    ``strict`` (a tournament's bots): only for a program named without a folder (so found on
    the organiser's PATH: a runtime the organiser installed), and never a home folder or a
    folder directly in one (``~/bin/tool`` would open all of ``~``, ``~/.local/bin/tool`` all
    of ``~/.local``): then only the program's own folder.
    """
    if strict and "/" in program:
        return None
    path = program if "/" in program else shutil.which(program)
    if path is None:
        return None
    real = os.path.realpath(path)
    if covered(real, ("/usr", "/bin", "/sbin", "/lib", "/lib64")):
        return None
    # .../prefix/bin/prog: bind the prefix, where its libraries and modules live.
    folder = os.path.dirname(real)
    prefix = os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder
    if strict:
        homes = _home_folders()
        if prefix in ("/", "") or any(_is_under(h, prefix) or os.path.dirname(prefix) == h for h in homes):
            return folder if not any(_is_under(h, folder) for h in homes) else None
    return prefix


def outside_paths(argv: Sequence[str], folder: str) -> list[str]:
    """The paths on this machine that the words of a command name outside ``folder``.

    A tournament's bot sees its own folder, the system's folders and the runtime's, and its
    scratch: a word naming anything else (``/etc/shadow``, ``../notes.txt``, a ``--opt=PATH``)
    names a file its sandbox does not have, so ``submit`` refuses the command up front rather
    than start a bot that cannot find it. Words that name nothing that exists are not paths.
    """
    own = os.path.realpath(folder)
    seen = (own, "/dev", "/proc", *_SYSTEM_DIRS, *_runtime_folders())
    found: list[str] = []
    for i, word in enumerate(argv):
        for text in dict.fromkeys((word, word.partition("=")[2])):
            if not text or (i == 0 and "/" not in text) or text.rstrip("/") == SCRATCH:
                continue  # a program named without a folder is looked up on PATH; /tmp is its scratch
            path = os.path.abspath(os.path.join(own, os.path.expanduser(text)))
            if os.path.lexists(path) and not covered(os.path.realpath(path), seen) and path not in found:
                found.append(path)
    return found


def sandboxed_command(
    argv: Sequence[str],
    *,
    cwd: str | None,
    socket_dir: str,
    files: Sequence[str] = (),
    config: SandboxConfig,
    bwrap: str | None = None,
    address: str = "",
    base_env: Mapping[str, str] | None = None,
    info_fd: int | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The command line that runs ``argv`` in a sandbox (see the module doc).

    ``cwd`` is the bot's own folder (bound read-only and used as its working folder; None: a
    bot with no files of its own, such as a sample bot, starts in its scratch folder); ``files``
    are more folders of the bot's own, bound read-only too. ``socket_dir`` is the folder of
    the bot's socket as the referee names it: inside the sandbox that path is a link to the
    scratch folder, so the socket the bot makes there counts against the scratch's cap like
    everything else it writes, and the referee reaches it from outside through the sandbox's
    own root, following no link (:meth:`~referee.bots.process.LocalBotProcess.connect_target`). (A ``socket_dir`` in
    a folder bound read-only gets no link.) Variables named in ``config.env`` take their values
    from ``base_env`` (default: this process's environment). ``info_fd``: bubblewrap writes the
    pid of the sandbox's first process there (``--info-fd``). ``seccomp_fd``: the system-call
    filter to read (:func:`referee.bots.seccomp.filter_fd`), loaded by bubblewrap before it
    runs the bot's command; every bot the referee starts has one (None: none, for tests of
    other parts). New user namespaces are refused inside (``--disable-userns``) where this
    bubblewrap can (0.8 and later), besides the filter's own refusal of ``unshare``.

    As root the command starts with the drop to :func:`bot_host_user` (util-linux's
    ``setpriv``), preceded, when a source is not reachable by that user, by the mounts that
    stage it (``unshare --mount`` and ``mount --rbind``, as root, in a mount namespace of this
    start only); a :class:`SandboxError` says which of those tools is missing. Put the cgroup
    prologue (:func:`join_cgroups_command`) in front of all of it: moving a process between
    cgroups needs root.
    """
    base_env = os.environ if base_env is None else base_env
    lim = config.limits
    user = bot_host_user()
    args: list[str] = [bwrap or "bwrap"]
    args += ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    if "--disable-userns" in bwrap_options(bwrap or "bwrap"):
        args.append("--disable-userns")
    args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "bot"]

    bound: list[str] = []
    # As root, bubblewrap runs as ``user``, who may not search the folders above a source
    # (a runtime under /root, a tournament folder of mode 0700): such a source is mounted
    # first, by root, on a mount point ``user`` can reach, in a mount namespace of this start
    # alone, and bound from there. (bubblewrap's --ro-bind-fd does not help: it turns the
    # descriptor back into a path, looked up as ``user``.)
    staged: list[str] = []

    def source(path: str) -> str:
        if user is None or _reachable(path, user):
            return path
        real = os.path.realpath(path)
        point = _stage_point(len(staged) // 2, os.path.isdir(real))
        staged.extend([real, point])
        return point

    def ro(path: str) -> None:
        if not covered(path, bound):
            args.extend(["--ro-bind", source(path), path])
            bound.append(path)

    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args.extend(["--symlink", os.readlink(d), d])
        elif os.path.isdir(d):
            ro(d)
    for name in _ETC_FILES:
        p = os.path.join("/etc", name)
        if os.path.lexists(p):
            args.extend(["--ro-bind-try", source(p) if os.path.exists(p) else p, p])
    args += ["--proc", "/proc"]
    # A /dev of our own rather than bubblewrap's --dev, whose tmpfs and /dev/shm the bot may
    # write without a cap: the usual devices, read-only, and /dev/shm (POSIX shared memory,
    # Python's multiprocessing) a link into the scratch folder, under its cap.
    args += ["--perms", "0755", "--tmpfs", "/dev"]
    for dev in _DEVICES:
        args += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
    for name, target in _DEV_LINKS:
        args += ["--symlink", target, f"/dev/{name}"]
    args += ["--remount-ro", "/dev"]
    args += ["--size", str(lim.scratch_mb * _MIB), "--perms", "1777", "--tmpfs", SCRATCH]
    for p in _runtime_folders():
        ro(p)
    # A program named without a folder is looked up in the sandbox's own PATH. One found on
    # the organiser's PATH outside the system folders (node under nvm or /opt, a tool in
    # ~/.local/bin) gets its folder bound and searched too, or it would not be found inside.
    extra_path: list[str] = []
    if argv:
        prog = _program_folder(argv[0], strict=not config.command_files)
        if prog is not None:
            ro(prog)
            if "/" not in argv[0]:
                found = shutil.which(argv[0])
                if found is not None:
                    extra_path.append(os.path.dirname(os.path.abspath(found)))
                    ro(extra_path[-1])
    for p in _existing(os.path.realpath(x) for x in config.read_only):
        ro(p)
    own = os.path.realpath(cwd) if cwd else None
    hidden = sorted({os.path.realpath(x) for x in config.hidden if os.path.exists(x)})

    def holds_secret(f: str) -> bool:
        return any(_is_under(h, f) for h in hidden)

    # The working folder may lie inside a hidden one (a tournament's bots/NAME): it is bound
    # back in after the hiding. Other folders named by the command never reopen a secret.
    later = [own] if own is not None and covered(own, hidden) and not holds_secret(own) else []
    for f in dict.fromkeys([own, *(os.path.realpath(x) for x in files)]):
        # A folder holding the scratch folder (the bot's own folder is /tmp) would hide it,
        # and its socket's folder with it: the bot gets its own files bound one by one instead.
        if f is not None and _is_under(SCRATCH, f):
            continue
        # A missing working folder is still bound: bubblewrap's error then names it.
        if f is not None and f not in later and (f == own or os.path.exists(f)) and (not covered(f, hidden) or holds_secret(f)):
            ro(f)
    # Hide secrets that lie under anything bound so far (an empty tmpfs over a folder, an empty
    # file over a file); the bot's own folders inside a hidden folder are bound back in after.
    remount: list[str] = []
    for h in hidden:
        if covered(h, bound):
            # Run as ``user``, bubblewrap cannot reach a secret below a folder ``user`` may not
            # search (nor can the bot): that folder is covered instead, whole.
            cover = _unsearchable_on_the_way(h, bound, user) if user is not None else None
            if cover is not None:
                if not covered(cover, remount):
                    args += ["--perms", "0755", "--tmpfs", cover]
                    remount.append(cover)
            elif os.path.isdir(h):
                if not covered(h, remount):
                    args += ["--perms", "0755", "--tmpfs", h]
                    remount.append(h)
            else:
                args += ["--ro-bind", "/dev/null", h]
    for f in later:
        args.extend(["--ro-bind", source(f), f])
        bound.append(f)
    if not covered(socket_dir, bound):
        args += ["--symlink", SCRATCH, socket_dir]
    for h in remount:
        args += ["--remount-ro", h]
    # The sandbox's root is a tmpfs of bwrap's; mount points made, it becomes read-only.
    args += ["--remount-ro", "/"]
    args += ["--chdir", own if own is not None and covered(own, bound) else SCRATCH]

    env = {
        "PATH": ":".join(dict.fromkeys([os.path.dirname(os.path.abspath(sys.executable)), *extra_path, "/usr/local/bin", "/usr/bin", "/bin"])),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": SCRATCH,
        "TMPDIR": SCRATCH,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if address:
        env[ADDRESS_ENV] = address
    for entry in config.env:
        name, eq, value = entry.partition("=")
        if eq:
            env[name] = value
        elif name in base_env:
            env[name] = base_env[name]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args.append("--clearenv")
    for k, v in env.items():
        args += ["--setenv", k, v]
    # The limits are set inside the sandbox, after its user namespace exists: RLIMIT_NPROC
    # then counts only the bot's own processes, not all of the organiser's.
    args += [
        "--",
        shutil.which("prlimit") or "prlimit",
        f"--data={lim.memory_mb * _MIB}",
        f"--nproc={lim.processes}",
        f"--fsize={lim.file_size_mb * _MIB}",
        "--core=0",
        "--",
        *argv,
    ]
    if user is None:
        return args
    return [*_as_user(user, staged), *args]


@functools.cache
def bwrap_options(bwrap: str) -> frozenset[str]:
    """The options this bubblewrap knows (from its ``--help``; empty where it cannot say)."""
    try:
        text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(re.findall(r"^\s+(--[a-z0-9-]+)", text, re.MULTILINE))


def _unsearchable_on_the_way(path: str, bound: Sequence[str], user: HostUser) -> str | None:
    """The first folder from the innermost bound folder holding ``path`` down to the folder of
    ``path`` that ``user`` may not search (where a sandbox run as ``user`` stops), or None."""
    top = max((f for f in bound if _is_under(path, f)), key=len)
    folders = [top]
    for part in [p for p in path[len(top) :].split("/") if p][:-1]:
        folders.append(os.path.join(folders[-1], part))
    for folder in folders:
        try:
            st = os.stat(folder)
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode) and not user.may(st, 1):
            return folder
    return None


#: Run by root in a mount namespace of its own: mount each staged source on its point, then
#: run the rest (the drop to the unprivileged user, then bubblewrap).
_STAGE = 'm=$1; shift; while [ "$1" != -- ]; do "$m" -n --rbind "$1" "$2" || exit 125; shift 2; done; shift; exec "$@"'


def _as_user(user: HostUser, staged: Sequence[str]) -> list[str]:
    """The words before bubblewrap's that run it as ``user`` (util-linux's setpriv: real,
    effective and saved ids, no supplementary groups; the capabilities go with the uid),
    after mounting the ``staged`` (source, point) pairs in a private mount namespace."""
    tools = {name: shutil.which(name) for name in ("setpriv", *(("unshare", "mount") if staged else ()))}
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        raise SandboxError(f"util-linux's {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed")
    drop = [str(tools["setpriv"]), f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups", "--"]
    if not staged:
        return drop
    return [
        str(tools["unshare"]), "--mount", "--propagation", "private", "--",
        "/bin/sh", "-c", _STAGE, "sh", str(tools["mount"]), *staged, "--", *drop,
    ]  # fmt: skip


# ---------------------------------------------------------------- cgroups (as root)


_counter = itertools.count()
#: The names of our per-bot cgroups: ``thirtyone-bot-<pid namespace>-<pid of the referee
#: that made it>-<n>`` (the namespace, so that a pid is never read in another namespace).
CGROUP_PREFIX = "thirtyone-bot-"
_CGROUP_NAME = re.compile(re.escape(CGROUP_PREFIX) + r"(?:([0-9]+)-)?([0-9]+)-([0-9]+)")


def _pid_namespace() -> str:
    """This process's PID namespace, as a number ("0" where it cannot be told)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def pid_alive(pid: int) -> bool:
    """Whether a process of that id exists here (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class BotCgroup:
    """A memory, pids and CPU cgroup for one bot (cgroup v2, or v1's hierarchies).

    The CPU share (:attr:`BotLimits.cpus`) is a CFS quota: ``cpu.max`` on v2,
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` on v1. Where the cpu controller is missing the
    cgroup is made without it (:attr:`cpu` False) and ``thirtyone doctor`` says so.
    """

    ROOT = "/sys/fs/cgroup"

    def __init__(self, dirs: list[str], v2: bool, cpu: bool = False) -> None:
        self.dirs = dirs
        self.v2 = v2
        #: Whether this cgroup holds the bot to its CPU share.
        self.cpu = cpu
        self._weight = BUSY_WEIGHT

    @staticmethod
    def _parents() -> tuple[bool, dict[str, str]]:
        """Whether cgroup v2, and the folder of this process's cgroup for each controller."""
        out: dict[str, str] = {}
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return False, out
        v2 = os.path.exists(os.path.join(BotCgroup.ROOT, "cgroup.controllers"))
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if v2 and controllers == "":
                out["memory"] = out["pids"] = out["cpu"] = os.path.join(BotCgroup.ROOT, path.lstrip("/"))
            names = controllers.split(",")
            for c in names:
                if c in ("memory", "pids", "cpu") and not v2:
                    # v1 mounts cpu with cpuacct, at /sys/fs/cgroup/cpu,cpuacct (and a cpu link).
                    mount = ",".join(names) if c == "cpu" and not os.path.isdir(os.path.join(BotCgroup.ROOT, c)) else c
                    out[c] = os.path.join(BotCgroup.ROOT, mount, path.lstrip("/"))
        return v2, out

    @staticmethod
    @functools.cache
    def supported() -> bool:
        """Whether a bot's cgroup can be made here (tried once)."""
        return BotCgroup.capabilities()[0]

    @staticmethod
    @functools.cache
    def capabilities() -> tuple[bool, bool]:
        """Whether a bot's memory and pids cgroup can be made here, and whether it can hold a
        CPU share too (tried once)."""
        if os.geteuid() != 0:
            return False, False
        cg = BotCgroup.create(BotLimits())
        if cg is None:
            return False, False
        cg.remove()
        return True, cg.cpu

    @staticmethod
    def create(limits: BotLimits, weight: int = BUSY_WEIGHT) -> BotCgroup | None:
        """A new cgroup with ``limits`` and CPU ``weight`` (:meth:`set_weight`), or None where
        cgroups cannot be made."""
        v2, parents = BotCgroup._parents()
        if not {"memory", "pids"} <= set(parents):
            return None
        name = f"{CGROUP_PREFIX}{_pid_namespace()}-{os.getpid()}-{next(_counter)}"
        quota = max(1000, round(limits.cpus * _CPU_PERIOD_US))
        made: list[str] = []
        cpu = False
        try:
            if v2:
                parent = parents["memory"]
                with contextlib.suppress(OSError):
                    Path(parent, "cgroup.subtree_control").write_text("+memory +pids")
                with contextlib.suppress(OSError):
                    Path(parent, "cgroup.subtree_control").write_text("+cpu")
                d = os.path.join(parent, name)
                os.mkdir(d)
                made.append(d)
                Path(d, "memory.max").write_text(str(limits.memory_mb * _MIB))
                with contextlib.suppress(OSError):
                    Path(d, "memory.swap.max").write_text("0")
                Path(d, "pids.max").write_text(str(limits.processes))
                with contextlib.suppress(OSError):
                    Path(d, "cpu.max").write_text(f"{quota} {_CPU_PERIOD_US}")
                    cpu = True
            else:
                for c in ("memory", "pids"):
                    d = os.path.join(parents[c], name)
                    os.mkdir(d)
                    made.append(d)
                Path(made[0], "memory.limit_in_bytes").write_text(str(limits.memory_mb * _MIB))
                with contextlib.suppress(OSError):
                    Path(made[0], "memory.memsw.limit_in_bytes").write_text(str(limits.memory_mb * _MIB))
                Path(made[1], "pids.max").write_text(str(limits.processes))
                if "cpu" in parents:
                    d = os.path.join(parents["cpu"], name)
                    try:
                        os.mkdir(d)
                    except OSError:
                        pass
                    else:
                        made.append(d)
                        try:
                            Path(d, "cpu.cfs_period_us").write_text(str(_CPU_PERIOD_US))
                            Path(d, "cpu.cfs_quota_us").write_text(str(quota))
                            cpu = True
                        except OSError:
                            made.pop()
                            with contextlib.suppress(OSError):
                                os.rmdir(d)
        except OSError:
            for d in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
            return None
        cg = BotCgroup(made, v2, cpu)
        cg.set_weight(weight)
        return cg

    def set_weight(self, weight: int) -> None:
        """The bot's CPU weight against the other bots (:data:`BUSY_WEIGHT`,
        :data:`IDLE_WEIGHT`): under contention each gets CPU in proportion, so an idle bot
        gets only what the bots at work leave, whatever it does. Within its CPU share; a
        no-op without the cpu controller, and errors are ignored."""
        if not self.cpu or weight == self._weight:
            return
        self._weight = weight
        name, value = ("cpu.weight", weight) if self.v2 else ("cpu.shares", max(2, weight * 1024 // BUSY_WEIGHT))
        with contextlib.suppress(OSError):
            Path(self.dirs[-1], name).write_text(str(value))

    def weight(self) -> int | None:
        """The CPU weight the kernel holds for the bot (:meth:`set_weight`'s scale), read back
        from the cgroup; None without the cpu controller."""
        if not self.cpu:
            return None
        name = "cpu.weight" if self.v2 else "cpu.shares"
        try:
            value = int(Path(self.dirs[-1], name).read_text())
        except (OSError, ValueError):
            return None
        return value if self.v2 else max(1, value * BUSY_WEIGHT // 1024)

    @property
    def procs_files(self) -> list[str]:
        """The files a process writes its pid to, to join this cgroup."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of this cgroup for want of memory."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            text = Path(self.dirs[0], name).read_text()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def kill(self, wait_s: float = 2.0) -> None:
        """SIGKILL every process in the cgroup, and wait up to ``wait_s`` for them to be gone.

        cgroup v2's ``cgroup.kill`` kills them all at once, forks in flight included; on v1
        (or a kernel before 5.14) each pid listed is killed, again until none is left. The bot
        cannot leave its cgroup (it sees no cgroup file system), so nothing it started escapes.
        """
        kill_all(self.dirs, self.v2, wait_s)

    def remove(self) -> None:
        """Remove the cgroup (once its processes are gone); errors are ignored."""
        for d in self.dirs:
            with contextlib.suppress(OSError):
                os.rmdir(d)

    @staticmethod
    def remove_leftovers(wait_s: float = 2.0) -> list[str]:
        """Remove the per-bot cgroups that referees which are gone left behind; return them.

        A referee killed by SIGKILL cannot remove its bots' cgroups, and the kernel keeps an
        empty cgroup until someone removes it. Only ours are touched: a name of
        :data:`CGROUP_PREFIX` with this PID namespace and the pid of the referee that made it,
        where that process no longer exists. A process still in one is a bot that outlived its referee (started in
        the very instant the referee was killed, before bubblewrap's death signal was armed):
        it is killed first. The kernel refuses to remove a cgroup that still holds a process
        or a child cgroup, so nothing else can go; up to ``wait_s`` is spent waiting for the
        killed ones to be gone.
        """
        removed: list[str] = []
        _, parents = BotCgroup._parents()
        ns = _pid_namespace()
        stale: list[tuple[str, bool]] = []
        for parent in dict.fromkeys(parents.values()):
            try:
                names = os.listdir(parent)
            except OSError:
                continue
            for n in names:
                m = _CGROUP_NAME.fullmatch(n)
                # A pid means something only in its own namespace; a name without one (made
                # by an older referee) is removed only when empty, nothing in it is killed.
                if m is None or (m.group(1) is not None and m.group(1) != ns):
                    continue
                owner = int(m.group(2))
                if owner != os.getpid() and not pid_alive(owner):
                    stale.append((os.path.join(parent, n), m.group(1) is not None))
        deadline = time.monotonic() + wait_s
        v2 = os.path.exists(os.path.join(BotCgroup.ROOT, "cgroup.controllers"))
        for d, ours in stale:
            if ours:
                kill_all([d], v2, max(0.0, deadline - time.monotonic()))
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass
            except OSError:
                pass  # a child cgroup, or a process that takes its time to go
            else:
                removed.append(d)
        return removed


def _cgroup_pids(d: str) -> list[int] | None:
    """The pids in cgroup folder ``d`` (None: it cannot be read, or is gone)."""
    try:
        return [int(p) for p in Path(d, "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return None


def kill_all(dirs: Sequence[str], v2: bool, wait_s: float) -> None:
    """SIGKILL every process in the cgroup folders ``dirs`` until none is left (up to
    ``wait_s``): ``cgroup.kill`` where the kernel has it (v2, Linux 5.14), else pid by pid."""
    deadline = time.monotonic() + wait_s
    for d in dirs:
        if v2:
            with contextlib.suppress(OSError):
                Path(d, "cgroup.kill").write_text("1")
        while (pids := _cgroup_pids(d)) and time.monotonic() <= deadline:
            # A process forked between the read and the kill is in the next read.
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)


#: A shell prologue that moves itself into the bot's cgroup(s), then runs the sandbox, so
#: that bwrap and everything it starts are counted from their first instruction.
_JOIN_CGROUPS = 'for f in $THIRTYONE_CGROUP_PROCS; do echo $$ > "$f" || exit 125; done; exec "$@"'


def join_cgroups_command(argv: list[str]) -> list[str]:
    """``argv`` behind the shell prologue that joins the cgroups named in the environment."""
    return ["/bin/sh", "-c", _JOIN_CGROUPS, "sh", *argv]



def choose_sandbox(mode: str, config: SandboxConfig, *, required: bool = False) -> tuple[SandboxConfig | None, str]:
    """The sandbox to use under ``mode`` (auto, on, off), and a warning to print, if any.

    ``auto`` sandboxes where the machine can and otherwise runs unsandboxed with a warning,
    unless ``required`` (a tournament run), when it refuses like ``on`` does.
    """
    if mode == "off":
        return None, ""
    if mode not in ("auto", "on"):
        raise SandboxError(f"--sandbox must be auto, on or off, got {mode!r}")
    status = probe()
    if status.available:
        return config, ""
    if mode == "on" or required:
        raise SandboxError(f"bots cannot be sandboxed on this machine: {status.reason}")
    return None, f"warning: bots run UNSANDBOXED (they can read and change your files): {status.reason}"
