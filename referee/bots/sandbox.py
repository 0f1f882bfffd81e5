"""Running a stranger's bot in a sandbox: bubblewrap for isolation, kernel limits for resources.

A bot is other people's code, and the referee is the only party that may know the cards. So
:func:`sandboxed_command` wraps a bot's command line in `bubblewrap
<https://github.com/containers/bubblewrap>`_ (``bwrap``, the sandbox under Flatpak) so that
the bot:

- has its own user, PID, IPC, UTS, network and cgroup namespaces and a new session: it sees
  no other process, can signal nobody outside, and has no network; the referee still reaches
  it through the Unix socket in a folder bound into the sandbox (a socket crosses network
  namespaces, because it is a file);
- sees a fresh root with, read-only, the system folders (``/usr`` and its links), a few files
  of ``/etc`` that programs need, the Python runtime and our packages (for sample bots and
  SDK bots), the folders of the program it runs and its own files; writable, only a private
  size-capped scratch folder (its ``/tmp``, ``HOME`` and ``TMPDIR``) and its socket's folder;
- never sees the folders the referee names as hidden (the tournament folder with its database
  and logs, other bots' files), even when they lie under a folder that is bound: an empty
  read-only tmpfs is laid over each, before the bot's own folder is bound back in;
- runs with a clean environment: ``PATH``, a UTF-8 locale, ``HOME``/``TMPDIR``, its address,
  and only the variables the organiser names;
- dies with the referee (``--die-with-parent``), and with it everything it started: when the
  sandbox's first process ends, the kernel kills every process of its PID namespace, so a
  ``setsid`` child that ignores SIGTERM cannot outlive it;
- is held to :class:`BotLimits`: ``RLIMIT_DATA`` (memory), ``RLIMIT_NPROC`` (processes and
  threads), ``RLIMIT_FSIZE`` (file size), no core files, set inside the sandbox by
  util-linux's ``prlimit``; and, where the referee may create cgroups (as root), a memory and
  pids cgroup per bot, which also bounds the total over all its processes and tells an
  out-of-memory kill apart from a crash. The process limit needs the cgroup when the referee
  runs as root, because Linux does not apply ``RLIMIT_NPROC`` to root's processes.

:func:`probe` says whether this machine can sandbox and, if not, why; ``thirtyone doctor``
prints it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
    "ssl",
)
#: Top-level folders that are links into /usr on merged-/usr systems, or folders elsewhere.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
#: Our packages, which sample bots and SDK bots import.
_OWN_PACKAGES = ("referee", "sdk", "sample_bots", "thirtyone")
_MIB = 1024 * 1024


class SandboxError(RuntimeError):
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
    #: Size of its scratch folder (a tmpfs, so it counts as memory too), MiB.
    scratch_mb: int = 256

    def __post_init__(self) -> None:
        bounds = {"memory_mb": (64, 1 << 20), "processes": (8, 100_000), "file_size_mb": (1, 1 << 20), "scratch_mb": (1, 1 << 20)}
        for name, (low, high) in bounds.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
                raise ValueError(f"limit {name} must be a whole number from {low} to {high}, got {v!r}")

    def to_dict(self) -> dict[str, int]:
        """A JSON-ready form (the keys are the constructor's)."""
        return {"memory_mb": self.memory_mb, "processes": self.processes, "file_size_mb": self.file_size_mb, "scratch_mb": self.scratch_mb}

    def describe(self) -> str:
        """Short text such as ``memory 1024 MiB · 128 processes · files 64 MiB · scratch 256 MiB``."""
        return (
            f"memory {self.memory_mb} MiB · {self.processes} processes · files {self.file_size_mb} MiB"
            f" · scratch {self.scratch_mb} MiB"
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
    #: Why the process limit is not enforced, if it is not (root without cgroups).
    process_limit_note: str


HOW_TO_ENABLE = (
    "install bubblewrap (Debian/Ubuntu: 'apt-get install bubblewrap'; Fedora: 'dnf install bubblewrap') "
    "and allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 on older Debian; "
    "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04), then run 'thirtyone doctor'"
)


@functools.cache
def probe() -> SandboxStatus:
    """Try the sandbox once (cached): is bwrap there, and does a trivial sandbox start?"""
    bwrap = shutil.which("bwrap")
    cg = BotCgroup.supported()
    note = "" if cg or os.geteuid() != 0 else (
        "the referee runs as root and cannot create cgroups, and Linux does not apply RLIMIT_NPROC "
        "to root's processes: the process limit is not enforced"
    )
    if bwrap is None:
        return SandboxStatus(False, f"bubblewrap (bwrap) is not installed; {HOW_TO_ENABLE}", None, "", cg, note)
    version = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    if shutil.which("prlimit") is None:
        return SandboxStatus(False, "util-linux's prlimit is not installed (it sets the bots' limits)", bwrap, version, cg, note)
    with tempfile.TemporaryDirectory(prefix="thirtyone-probe-") as tmp:
        argv = sandboxed_command(["/bin/true"], cwd=None, socket_dir=tmp, config=SandboxConfig(), bwrap=bwrap)
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            return SandboxStatus(False, f"bubblewrap could not be run ({e}); {HOW_TO_ENABLE}", bwrap, version, cg, note)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        return SandboxStatus(False, f"bubblewrap cannot make a sandbox here ({why}); {HOW_TO_ENABLE}", bwrap, version, cg, note)
    return SandboxStatus(True, "", bwrap, version, cg, note)


# ---------------------------------------------------------------- what a bot may read


def _existing(paths: Iterable[str]) -> list[str]:
    return [p for p in paths if p and os.path.lexists(p)]


def _is_under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _covered(path: str, folders: Iterable[str]) -> bool:
    return any(_is_under(path, f) for f in folders)


@functools.cache
def _runtime_folders() -> tuple[str, ...]:
    """The Python runtime and our packages, read-only for every bot (sample and SDK bots)."""
    found: list[str] = []
    for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))):
        found.append(os.path.realpath(p))
    # The venv's python is a link into the base runtime; both ends must be there.
    found.append(os.path.dirname(os.path.abspath(sys.executable)))
    for name in _OWN_PACKAGES:
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            for loc in (spec.submodule_search_locations or []) if spec else []:
                found.append(os.path.realpath(loc))
    return tuple(dict.fromkeys(_existing(found)))


def _program_folder(program: str) -> str | None:
    """The installation folder of a program outside the system folders (e.g. /opt/node)."""
    path = program if "/" in program else shutil.which(program)
    if path is None:
        return None
    real = os.path.realpath(path)
    if _covered(real, ("/usr", "/bin", "/sbin", "/lib", "/lib64")):
        return None
    # .../prefix/bin/prog: bind the prefix, where its libraries and modules live.
    folder = os.path.dirname(real)
    return os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder


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
) -> list[str]:
    """The command line that runs ``argv`` in a sandbox (see the module doc).

    ``cwd`` is the bot's own folder (bound read-only and used as its working folder; None: a
    bot with no files of its own, such as a sample bot, starts in its scratch folder); ``files``
    are more folders of the bot's own, bound read-only too; ``socket_dir`` is bound writable at the same path, so the address the
    referee connects to is the one the bot serves at. Variables named in ``config.env`` take
    their values from ``base_env`` (default: this process's environment).
    """
    base_env = os.environ if base_env is None else base_env
    lim = config.limits
    args: list[str] = [bwrap or "bwrap"]
    args += ["--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "bot"]

    bound: list[str] = []

    def ro(path: str) -> None:
        if not _covered(path, bound):
            args.extend(["--ro-bind", path, path])
            bound.append(path)

    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args.extend(["--symlink", os.readlink(d), d])
        elif os.path.isdir(d):
            ro(d)
    for name in _ETC_FILES:
        p = os.path.join("/etc", name)
        if os.path.lexists(p):
            args.extend(["--ro-bind-try", p, p])
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(lim.scratch_mb * _MIB), "--perms", "1777", "--tmpfs", SCRATCH]
    for p in _runtime_folders():
        ro(p)
    # A program named without a folder is looked up in the sandbox's own PATH. One found on
    # the organiser's PATH outside the system folders (node under nvm or /opt, a tool in
    # ~/.local/bin) gets its folder bound and searched too, or it would not be found inside.
    extra_path: list[str] = []
    if argv:
        prog = _program_folder(argv[0])
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
    later = [own] if own is not None and _covered(own, hidden) and not holds_secret(own) else []
    for f in dict.fromkeys([own, *(os.path.realpath(x) for x in files)]):
        # A missing working folder is still bound: bubblewrap's error then names it.
        if f is not None and f not in later and (f == own or os.path.exists(f)) and (not _covered(f, hidden) or holds_secret(f)):
            ro(f)
    # Hide secrets that lie under anything bound so far (an empty tmpfs over a folder, an empty
    # file over a file); the bot's own folders inside a hidden folder are bound back in after.
    remount = []
    for h in hidden:
        if _covered(h, bound):
            if os.path.isdir(h):
                args += ["--perms", "0755", "--tmpfs", h]
                remount.append(h)
            else:
                args += ["--ro-bind", "/dev/null", h]
    for f in later:
        args.extend(["--ro-bind", f, f])
        bound.append(f)
    args += ["--bind", socket_dir, socket_dir]
    for h in remount:
        args += ["--remount-ro", h]
    # The sandbox's root is a tmpfs of bwrap's; mount points made, it becomes read-only.
    args += ["--remount-ro", "/"]
    args += ["--chdir", own if own is not None and _covered(own, bound) else SCRATCH]

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
    return args


# ---------------------------------------------------------------- cgroups (as root)


_counter = itertools.count()


class BotCgroup:
    """A memory and pids cgroup for one bot (cgroup v2, or v1's two hierarchies)."""

    ROOT = "/sys/fs/cgroup"

    def __init__(self, dirs: list[str], v2: bool) -> None:
        self.dirs = dirs
        self.v2 = v2

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
                out["memory"] = out["pids"] = os.path.join(BotCgroup.ROOT, path.lstrip("/"))
            for c in controllers.split(","):
                if c in ("memory", "pids") and not v2:
                    out[c] = os.path.join(BotCgroup.ROOT, c, path.lstrip("/"))
        return v2, out

    @staticmethod
    @functools.cache
    def supported() -> bool:
        """Whether a bot's cgroup can be made here (tried once)."""
        if os.geteuid() != 0:
            return False
        cg = BotCgroup.create(BotLimits())
        if cg is None:
            return False
        cg.remove()
        return True

    @staticmethod
    def create(limits: BotLimits) -> BotCgroup | None:
        """A new cgroup with ``limits``, or None where cgroups cannot be made."""
        v2, parents = BotCgroup._parents()
        if set(parents) != {"memory", "pids"}:
            return None
        name = f"thirtyone-bot-{os.getpid()}-{next(_counter)}"
        made: list[str] = []
        try:
            if v2:
                parent = parents["memory"]
                with contextlib.suppress(OSError):
                    Path(parent, "cgroup.subtree_control").write_text("+memory +pids")
                d = os.path.join(parent, name)
                os.mkdir(d)
                made.append(d)
                Path(d, "memory.max").write_text(str(limits.memory_mb * _MIB))
                with contextlib.suppress(OSError):
                    Path(d, "memory.swap.max").write_text("0")
                Path(d, "pids.max").write_text(str(limits.processes))
            else:
                for c in ("memory", "pids"):
                    d = os.path.join(parents[c], name)
                    os.mkdir(d)
                    made.append(d)
                Path(made[0], "memory.limit_in_bytes").write_text(str(limits.memory_mb * _MIB))
                with contextlib.suppress(OSError):
                    Path(made[0], "memory.memsw.limit_in_bytes").write_text(str(limits.memory_mb * _MIB))
                Path(made[1], "pids.max").write_text(str(limits.processes))
        except OSError:
            for d in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
            return None
        return BotCgroup(made, v2)

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

    def remove(self) -> None:
        """Remove the cgroup (once its processes are gone); errors are ignored."""
        for d in self.dirs:
            with contextlib.suppress(OSError):
                os.rmdir(d)


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
