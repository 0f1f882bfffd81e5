"""Starting bot processes and making sure they are gone afterwards.

A :class:`Launcher` turns a :class:`BotSpec` into a running process serving at an address.
:class:`LocalLauncher`, the default, starts it on this machine; a distributed executor
(for matches run on other machines) would provide another launcher whose processes run
next to its workers and report their address the same way.

Each local bot process:

- runs, when the launcher has a :class:`~referee.bots.sandbox.SandboxConfig`, inside a
  bubblewrap sandbox (:mod:`referee.bots.sandbox`): its own namespaces, read-only view of
  the system and its own files, a private scratch folder, limits, a clean environment, a
  system-call filter, and an end that takes every process inside with it: SIGKILL to the
  sandbox's init, which ends its PID namespace (:meth:`LocalBotProcess.end_sandbox`);
- is told its address in ``THIRTYONE_BOT_ADDRESS`` (a Unix socket in a private temporary
  directory, mode 0700, removed at the end). Sandboxed, the socket's folder is at the same
  path inside, a link into the bot's capped scratch folder, so the bot writes nothing on
  this machine's disk; the referee reaches the socket from outside through the sandbox's
  ``/proc/PID/root`` (:meth:`LocalBotProcess.connect_target`), following no link the bot
  could have made, and connects to that one socket for as long as it talks to the bot;
- is, on this machine, the referee's own user, or ``nobody`` when the referee is root
  (:func:`~referee.bots.sandbox.bot_host_user`): the cgroup prologue runs as root, then the
  drop, then bubblewrap. As root, a bot whose own folder, or a file its command names there,
  ``nobody`` cannot read is not started: the error names the file and what to do;
- runs in its own session and process group (``start_new_session``), so that stopping it
  reaches its children and a Ctrl-C in the referee's terminal does not reach it;
- writes stdout and stderr into a pipe whose last :data:`OUTPUT_TAIL_BYTES` the referee
  keeps in memory (a chatty bot can neither fill a disk nor block on a full pipe for long),
  and copies into a file, capped, while asked to (:meth:`LocalBotProcess.keep_output`: a
  tournament keeps each bot's output per match);
- is registered with the :mod:`watchdog <referee.bots.watchdog>`, a small process that
  kills the whole group, and the sandbox's init, if the referee dies without stopping it
  (even by SIGKILL).

Unsandboxed, a bot's children that leave its process group (``setsid``) escape the watchdog;
sandboxed, they cannot, because the kernel ends a PID namespace's every process with it.
Why a watchdog rather than Linux's ``PR_SET_PDEATHSIG`` for unsandboxed bots: the death
signal reaches only the direct child, not the bot's own children; it fires when the *thread*
that started the bot exits, a trap for a runner with worker threads; it needs ``preexec_fn``,
which forces a real ``fork()`` of a threaded process (gRPC logs a warning on every one, and
a lock held by another thread at that moment can deadlock the child); and it does not exist
on macOS. (bubblewrap sets it itself, in its own process, for the sandboxed case; so a
sandboxed bot must be launched from a thread that outlives it, such as the event loop's.)

Stopping sends SIGTERM to the bot (sandboxed: inside its sandbox), waits a short grace, then
SIGKILLs what is left: sandboxed, the sandbox's init and cgroup, and the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
from typing import BinaryIO, Protocol

from referee.bots import seccomp, watchdog
from referee.bots.sandbox import (
    ADDRESS_ENV,
    BUSY_WEIGHT,
    IDLE_WEIGHT,
    SCRATCH,
    BotCgroup,
    SandboxConfig,
    SandboxError,
    bot_host_user,
    covered,
    join_cgroups_command,
    probe,
    remove_stale_stages,
    sandboxed_command,
    unreadable_by,
)
from referee.bots.spec import BotSpec
from referee.faults import BotStartError
from referee.playsocket import PLAY_SOCKET_ENV, PLAY_SOCKET_NAME, TRANSPORT_ENV

#: How much of a bot's latest output the referee keeps, in bytes.
OUTPUT_TAIL_BYTES = 16 * 1024
#: Default time a stopped bot gets between SIGTERM and SIGKILL, in seconds.
STOP_GRACE_S = 1.0
#: What runtimes print when an allocation fails (Python, C libraries, Node.js, Go, Java).
_OUT_OF_MEMORY = ("MemoryError", "Cannot allocate memory", "out of memory", "OutOfMemoryError")


class BotProcess(Protocol):
    """A bot process started by a :class:`Launcher`."""

    #: The gRPC target the bot serves at.
    address: str

    @property
    def pid(self) -> int | None:
        """The process id, if the process is local."""
        ...

    def exit_code(self) -> int | None:
        """The exit status if the process has exited (negative: killed by that signal)."""
        ...

    def output_tail(self, max_chars: int = 2000) -> str:
        """The end of what the bot wrote to stdout and stderr."""
        ...

    async def output_closed(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` until all the bot's output has been read."""
        ...

    async def new_output(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` until the bot writes something (or its output closes); at
        once if it has since this was last called."""
        ...

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """End the process and everything it started; idempotent."""
        ...

    def limit_note(self, hint: str = "") -> str:
        """`` (over its memory limit of 1024 MiB)`` when a limit explains a failure, else empty.

        ``hint`` is other text about the failure (a stream's error details) to look in.
        """
        ...

    def connect_target(self) -> str | None:
        """The gRPC target to connect to the bot at, or None while it is not there yet.

        Raises :class:`~referee.faults.BotStartError` when what is there must not be
        connected to (a sandboxed bot's socket replaced by a link).
        """
        ...

    def play_socket(self) -> str | None:
        """The path to reach the bot's play socket at (:mod:`referee.playsocket`), or None if it
        serves none. Asked once the bot serves; raises as :meth:`connect_target` does."""
        ...


class Launcher(Protocol):
    """Starts bot processes: the executor seam for running bots elsewhere."""

    async def launch(self, spec: BotSpec) -> BotProcess:
        """Start the bot named by ``spec`` (a launched kind) and return its process."""
        ...


class _TailProtocol(asyncio.Protocol):
    """Keeps the last bytes read from a pipe, and copies them into a file while asked to.

    The copy is capped: past ``file_limit`` bytes a note ends the file and the pipe is no
    longer read until the next file is set, so a bot that floods its output blocks itself,
    never the referee or the disk.
    """

    def __init__(self, limit: int) -> None:
        self.buffer = bytearray()
        self.limit = limit
        self.closed = asyncio.get_running_loop().create_future()
        self.transport: asyncio.ReadTransport | None = None
        self.sink: BinaryIO | None = None
        self.sink_left = 0
        self.paused = False
        #: Set when something is read (or the pipe closes), for :meth:`LocalBotProcess.new_output`.
        self.wrote = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.wrote.set()
        buf = self.buffer
        buf += data
        if len(buf) > 2 * self.limit:
            # Trimming only past twice the limit keeps the copy cost amortised.
            del buf[: len(buf) - self.limit]
        sink = self.sink
        if sink is not None:
            try:
                if len(data) <= self.sink_left:
                    sink.write(data)
                    self.sink_left -= len(data)
                else:
                    sink.write(data[: self.sink_left])
                    sink.write(b"\n[thirtyone: output cut here: the bot wrote more than the cap for one match]\n")
                    self._end_sink()
                    if self.transport is not None:
                        self.transport.pause_reading()
                        self.paused = True
            except OSError:
                # The disk is full or gone: the referee's log matters more than this copy.
                self._end_sink()

    def set_sink(self, path: str | None, limit: int) -> None:
        """Copy what comes next into ``path`` (truncated; None: stop copying), up to ``limit`` bytes."""
        self._end_sink()
        if path is not None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            self.sink = os.fdopen(fd, "wb", buffering=0)
            self.sink_left = limit
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    def _end_sink(self) -> None:
        if self.sink is not None:
            with contextlib.suppress(OSError):
                self.sink.close()
            self.sink = None

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.wrote.set()
        self._end_sink()
        if not self.closed.done():
            self.closed.set_result(None)


def child_pids(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc; empty elsewhere)."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        # The parent's pid follows the state, after the command name (which may hold spaces).
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry))
    return found


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (empty if it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()


def _parent_of(pid: int) -> int | None:
    """The parent of ``pid``, or None."""
    fields = _stat_fields(pid)
    return int(fields[1]) if len(fields) > 1 else None


def _start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot: with the pid, names one process for good."""
    fields = _stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 else None


def describe_exit(code: int) -> str:
    """``exited with code 3`` or ``was killed by SIGKILL``."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class LocalBotProcess:
    """A bot process on this machine (see the module doc)."""

    def __init__(
        self,
        spec: BotSpec,
        proc: subprocess.Popen[bytes],
        tmpdir: str,
        address: str,
        *,
        sandbox: SandboxConfig | None = None,
        cgroup: BotCgroup | None = None,
        play_path: str | None = None,
    ) -> None:
        self.spec = spec
        self.sandbox = sandbox
        # Where the bot was told to make its play socket (None: told nothing), and the socket
        # once found in its sandbox (held open as the gRPC socket is).
        self._play_path = play_path
        self._play_fd: int | None = None
        self._cgroup = cgroup
        self.address = address
        self._proc = proc
        self._tmpdir = tmpdir
        self._pgid = proc.pid  # start_new_session: the bot leads its own group
        #: The pid (on this machine) of the sandbox's first process, whose root is the bot's.
        self.sandbox_pid: int | None = None
        # The bot's socket, once found in its sandbox: an O_PATH descriptor that the channel
        # connects through (/proc/self/fd/N), with the (device, inode) it had.
        self._socket_fd: int | None = None
        self._socket_id: tuple[int, int] | None = None
        # The read end of bubblewrap's --info-fd pipe (see LocalLauncher.launch).
        self._info_fd: int | None = None
        # A pidfd of the sandbox's init, and its (pid, start time) as the watchdog knows it.
        self._init_fd: int | None = None
        self._watched_init: tuple[int, int] | None = None
        self._tail: _TailProtocol | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._stopped = False

    @property
    def pid(self) -> int | None:
        """The bot's process id (also its process group id)."""
        return self._proc.pid

    @property
    def cgroup(self) -> BotCgroup | None:
        """The bot's cgroup (None: the machine gives none)."""
        return self._cgroup

    def set_idle(self, idle: bool) -> None:
        """Whether the bot is idle (between its matches): its CPU weight then is an idle bot's,
        so that whatever it does then takes CPU only from nobody at work. With cgroups only."""
        if self._cgroup is not None:
            self._cgroup.set_weight(IDLE_WEIGHT if idle else BUSY_WEIGHT)

    def exit_code(self) -> int | None:
        """The exit status if the process has exited (negative: killed by that signal)."""
        return self._proc.poll()

    def output_tail(self, max_chars: int = 2000) -> str:
        """The end of the bot's output, decoded leniently, cut at a line start when possible."""
        if self._tail is None:
            return ""
        text = bytes(self._tail.buffer[-4 * max_chars :]).decode("utf-8", "replace")
        if len(text) > max_chars:
            text = text[-max_chars:]
            cut = text.find("\n")
            if 0 <= cut < len(text) - 1:
                text = text[cut + 1 :]
        return text

    def limit_note(self, hint: str = "") -> str:
        """`` (over its memory limit of 1024 MiB)`` when a limit explains a failure, else empty."""
        if self.sandbox is None:
            return ""
        mb = self.sandbox.limits.memory_mb
        if self._cgroup is not None and self._cgroup.oom_killed():
            return f" (killed for going over its memory limit of {mb} MiB)"
        text = hint + "\n" + self.output_tail(4000)
        if any(m in text for m in _OUT_OF_MEMORY):
            return f" (out of memory: its memory limit is {mb} MiB)"
        return self._socket_note()

    def connect_target(self) -> str | None:
        """The gRPC target the referee connects to the bot at, or None while it is not there.

        Unsandboxed, :attr:`address` (the bot runs as the referee's user: nothing to guard).
        Sandboxed, the socket is looked up inside the bot's own root (``/proc/PID/root``), one
        component at a time, following no link: the bot controls its scratch folder and could
        have put a link there to another socket on this machine (a daemon's under ``/run``),
        which a plain ``connect`` would follow with the referee's rights. The socket found is
        held open (``O_PATH``) and the target is ``unix:/proc/self/fd/N``: every connection of
        the channel, reconnections included, reaches that very socket, however the bot renames,
        replaces or links its path afterwards (a replaced socket then refuses connections).
        The descriptor is closed by :meth:`stop` (the channel is closed before).

        Returns None while the socket does not exist yet. Raises
        :class:`~referee.faults.BotStartError` if its path holds something else (a link, a
        file) or the sandbox's root cannot be told from this machine's.
        """
        if self.sandbox is None:
            return self.address
        if self._socket_fd is not None:
            return f"unix:/proc/self/fd/{self._socket_fd}"
        if self.sandbox_pid is None:
            return None
        try:
            fd = _open_in_root(self.sandbox_pid, self._inside_path())
        except FileNotFoundError:
            return None
        except _NotSandboxed:
            return None  # the sandbox is gone (its pid no longer names it): the exit tells why
        except OSError as e:
            raise BotStartError(
                f"bot {self.spec.text!r}: the path of its socket holds a link or another folder "
                f"({e.strerror or e}){_SOCKET_RULE}"
            ) from None
        st = os.fstat(fd)
        if not stat.S_ISSOCK(st.st_mode):
            os.close(fd)
            raise BotStartError(
                f"bot {self.spec.text!r}: its address {self.address} holds {_node_kind(st.st_mode)}, "
                f"not a socket{_SOCKET_RULE}"
            )
        self._socket_fd, self._socket_id = fd, (st.st_dev, st.st_ino)
        return f"unix:/proc/self/fd/{fd}"

    def play_socket(self) -> str | None:
        """The path of the bot's play socket, or None if it made none (see :class:`BotProcess`).

        Found as :meth:`connect_target` finds the gRPC socket: sandboxed, inside the bot's own
        root, following no link, held open and reached as ``/proc/self/fd/N``. Anything but a
        socket there (a link, a file) is not connected to: the bot is then played over gRPC.
        """
        path = self._play_path
        if path is None:
            return None
        if self.sandbox is None:
            try:
                return path if stat.S_ISSOCK(os.lstat(path).st_mode) else None
            except FileNotFoundError:
                return None
        if self._play_fd is not None:
            return f"/proc/self/fd/{self._play_fd}"
        if self.sandbox_pid is None:
            return None
        try:
            fd = _open_in_root(self.sandbox_pid, os.path.join(SCRATCH, os.path.basename(path)))
        except (OSError, _NotSandboxed):
            return None
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        self._play_fd = fd
        return f"/proc/self/fd/{fd}"

    def _inside_path(self) -> str:
        """Where the socket is in the sandbox's own tree: in its scratch folder, which the
        address's folder links to inside (see :func:`~referee.bots.sandbox.sandboxed_command`)."""
        return os.path.join(SCRATCH, os.path.basename(self.address.removeprefix("unix://")))

    def _socket_note(self) -> str:
        """Why a sandboxed bot's connection may have failed: its socket is not the one found
        first any more (replaced, removed or made a link); else empty."""
        if self._socket_id is None or self.sandbox_pid is None or self._proc.poll() is not None:
            return ""
        try:
            fd = _open_in_root(self.sandbox_pid, self._inside_path())
        except FileNotFoundError:
            now = "removed"
        except OSError:
            return ""
        else:
            st = os.fstat(fd)
            os.close(fd)
            if (st.st_dev, st.st_ino) == self._socket_id:
                return ""
            now = "replaced by a link" if stat.S_ISLNK(st.st_mode) else f"replaced by {_node_kind(st.st_mode)}"
        return (
            f" (its socket at {self.address} was {now} after the referee connected; the referee "
            "connects only to the socket the bot first served at, inside its sandbox)"
        )
    def keep_output(self, path: str | None, limit: int) -> None:
        """Copy the bot's output from now on into the file ``path`` (None: stop), keeping at
        most ``limit`` bytes; past the cap the file ends with a note and the bot's output is
        not read (so it blocks) until the next call."""
        if self._tail is not None:
            self._tail.set_sink(path, limit)

    async def output_closed(self, timeout_s: float) -> None:
        """Wait until the bot's output pipe is closed (all it wrote has been read)."""
        if self._tail is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._tail.closed), timeout_s)

    async def new_output(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` until the bot writes something (or its output closes); at
        once if it has since this was last called."""
        if self._tail is None:
            await asyncio.sleep(timeout_s)
            return
        wrote = self._tail.wrote
        if not wrote.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await wrote.wait()
        wrote.clear()

    async def _attach_output(self) -> None:
        assert self._proc.stdout is not None
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_read_pipe(
            lambda: _TailProtocol(OUTPUT_TAIL_BYTES), self._proc.stdout
        )
        self._transport = transport
        self._tail = protocol

    def _group_alive(self) -> bool:
        try:
            os.killpg(self._pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._pgid, sig)

    def hold_init(self, pid: int) -> None:
        """Take ``pid`` (bubblewrap's report) as the sandbox's init: hold a pidfd of it, so
        that :meth:`end_sandbox` signals that process and no other whatever became of its
        pid, and tell the watchdog (which ends it if the referee dies first)."""
        self.sandbox_pid = pid
        fd: int | None = None
        with contextlib.suppress(OSError):  # gone already (the bot failed at once), or Linux before 5.3
            fd = os.pidfd_open(pid)
        # Our own bubblewrap's child, checked after the pidfd pins the process: not a
        # process that took a pid freed in between.
        start = _start_time(pid)
        if _parent_of(pid) != self._proc.pid or start is None:
            if fd is not None:
                os.close(fd)
            return
        self._init_fd = fd
        self._watched_init = (pid, start)
        watchdog.watch_sandbox(pid, start)

    def end_sandbox(self) -> None:
        """End the sandbox now: SIGKILL to its init and, with a cgroup, to all in it.

        The end of a PID namespace's init is the end of every process in it: the kernel kills
        them all, whatever they did to their signals, their session or their parent's death
        signal. A bot that traced bubblewrap's init and made it forget to die with the outer
        bubblewrap (or leave the process group the referee signals) is ended all the same.
        The cgroup catches what the namespace would not: a sandbox whose init is not known yet.
        """
        if self._init_fd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._init_fd, signal.SIGKILL)
        elif self._watched_init is not None:
            # No pidfd (Linux before 5.3): the pid, if it still names the process that
            # started then (the pid with its start time names one process for good).
            pid, start = self._watched_init
            if _start_time(pid) == start:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        if self._cgroup is not None:
            self._cgroup.kill()

    def _init_alive(self) -> bool:
        """Whether the sandbox's init still runs (its pidfd is readable once it has exited)."""
        if self._init_fd is not None:
            return not select.select([self._init_fd], [], [], 0)[0]
        if self._watched_init is not None:
            pid, start = self._watched_init
            fields = _stat_fields(pid)
            return len(fields) > 19 and fields[19] == str(start) and fields[0] != "Z"
        return False

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the bot, wait up to ``grace_s``, SIGKILL what is left; idempotent.

        Sandboxed, what is left is ended through the sandbox's init and cgroup
        (:meth:`end_sandbox`), not only through the process group the referee started.
        Also removes the private temporary directory (and with it the socket).
        """
        if self._stopped:
            return
        self._stopped = True
        # An idle bot (kept between matches, or a spare) would stop on the CPU nobody else
        # wants: on a busy machine, only at SIGKILL. Stopping is work.
        self.set_idle(False)
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + grace_s
            # The contract promises a bot SIGTERM and a grace before SIGKILL. Sandboxed, the
            # group's SIGTERM would reach only bubblewrap, whose death SIGKILLs the bot at
            # once; so the bot is told first, inside the sandbox, and given the grace.
            if self.sandbox is not None and self._proc.poll() is None and self._terminate_inside():
                while self._proc.poll() is None and loop.time() < deadline:
                    await asyncio.sleep(0.01)
            if self.sandbox is not None:
                # The bot had its grace: whatever is left ends now, with its PID namespace.
                self.end_sandbox()
                self._signal_group(signal.SIGKILL)
                deadline = loop.time() + 5.0
                while (self._proc.poll() is None or self._init_alive()) and loop.time() < deadline:
                    await asyncio.sleep(0.01)
            self._signal_group(signal.SIGTERM)
            # poll() reaps the leader once it exits; the group lives on while any member does.
            while (self._proc.poll() is None or self._group_alive()) and loop.time() < deadline:
                await asyncio.sleep(0.01)
            if self._proc.poll() is None or self._group_alive():
                self._signal_group(signal.SIGKILL)
                deadline = loop.time() + 5.0
                while self._proc.poll() is None and loop.time() < deadline:
                    await asyncio.sleep(0.01)
        finally:
            if self._proc.poll() is None:  # pragma: no cover - SIGKILL did not take in 5 s
                self._proc.kill()
                self._proc.wait()
            watchdog.unwatch(self._pgid)
            if self._watched_init is not None:
                watchdog.unwatch_sandbox(*self._watched_init)
            if self._init_fd is not None:
                os.close(self._init_fd)
                self._init_fd = None
            if self._cgroup is not None:
                self._cgroup.kill()
                self._cgroup.remove()
            await self.output_closed(0.2)
            if self._transport is not None:
                self._transport.close()
            if self._socket_fd is not None:
                os.close(self._socket_fd)
                self._socket_fd = None
            if self._play_fd is not None:
                os.close(self._play_fd)
                self._play_fd = None
            if self._info_fd is not None:
                os.close(self._info_fd)
                self._info_fd = None
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def terminate_bot(self) -> bool:
        """Send SIGTERM to the bot's own process group, as :meth:`stop` does first; True if sent.

        Unsandboxed, that is the group the referee started. Sandboxed, :meth:`stop`'s SIGTERM
        reaches only bubblewrap, which dies of it, and the kernel then SIGKILLs everything in
        the sandbox: the bot never sees a SIGTERM. So this signals the group of the sandbox's
        first process (bubblewrap's init, whose child is the bot) instead; that init ignores
        it, as a PID namespace's init ignores signals it has no handler for, and the bot gets
        it. A check can then tell how the bot itself reacts (:mod:`referee.bots.compliance`);
        the sandbox ends with the bot and reports the bot's exit status (128 + N when a
        signal N killed it).
        """
        if self._stopped or self._proc.poll() is not None:
            return False
        return self._terminate_inside()

    def _terminate_inside(self) -> bool:
        """SIGTERM the bot's own group (inside its sandbox, if any); True if it was sent."""
        group = self._pgid
        if self.sandbox is not None:
            inner = child_pids(self._proc.pid)
            if len(inner) != 1:
                return False
            group = inner[0]
        try:
            os.killpg(group, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def kill_now(self) -> None:
        """SIGKILL the bot's group and sandbox at once, without waiting (for emergencies and atexit)."""
        if not self._stopped:
            self.end_sandbox()
            self._signal_group(signal.SIGKILL)


def _own_folder_or_file(file: str) -> str:
    """What to bind for a bot's own ``file``: its folder, or the file alone when the folder
    holds the scratch folder (a bot in /tmp: binding /tmp would hide its scratch)."""
    folder = os.path.dirname(file)
    return file if folder == SCRATCH or SCRATCH.startswith(folder.rstrip("/") + "/") else folder


def _named_files(spec: BotSpec, cwd: str | None, folders: list[str], hidden: tuple[str, ...]) -> list[str]:
    """The bot's own files that its command words name (its program, its script): those in
    its own ``folders``, outside the ``hidden`` ones."""
    found = []
    hide = [os.path.realpath(h) for h in hidden]
    for i, word in enumerate(spec.argv):
        if i == 0 and "/" not in word:
            continue  # a program looked up on PATH
        path = os.path.realpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(word)))
        if os.path.isfile(path) and covered(path, folders) and not covered(path, hide):
            found.append(path)
    return found


class LocalLauncher:
    """Starts bots as local processes, each serving on a Unix socket of its own.

    With a :class:`~referee.bots.sandbox.SandboxConfig`, every bot runs in a sandbox (see
    :mod:`referee.bots.sandbox`); without one it runs as the referee's user, unconfined.
    """

    def __init__(
        self,
        *,
        tmp_root: str | None = None,
        extra_env: dict[str, str] | None = None,
        sandbox: SandboxConfig | None = None,
        play_socket: bool | None = None,
        idle: bool = False,
    ) -> None:
        self._tmp_root = tmp_root
        self._extra_env = dict(extra_env or {})
        self.sandbox = sandbox
        #: Whether the bots it starts are idle (a spare, started ahead for a later match):
        #: they get CPU only as the bots at work leave it, until :meth:`wake`. With cgroups only.
        self.idle = idle
        self._cgroups: list[BotCgroup] = []
        #: Whether bots are told to make a play socket (:mod:`referee.playsocket`); None: as
        #: ``THIRTYONE_PLAY_OVER`` says (``socket``, the default, or ``grpc``), read at launch.
        self.play_socket = play_socket
        if sandbox is not None and os.geteuid() == 0:
            # The cgroups of bots whose referee was killed (kill -9) are left behind, empty,
            # and so are its stage folders of empty mount points.
            BotCgroup.remove_leftovers()
            remove_stale_stages()

    def own_folders(self, spec: BotSpec) -> tuple[str | None, list[str]]:
        """The bot's working folder in its sandbox, and every folder of its own files.

        A sample bot has none (it is an installed module); a file bot's is the file's folder;
        a command's is the folder it runs in. Only with the sandbox's ``command_files`` (one's
        own bot in ``thirtyone match``) also the folder of each file its words name (``python
        /path/to/bot.py``): a tournament's bot sees its own folder, whatever its command says.
        All are bound read-only.
        """
        if spec.kind == "sample":
            return None, []
        if spec.kind == "file":
            file = os.path.realpath(spec.argv[-1])
            folder = os.path.dirname(file)
            return folder, [_own_folder_or_file(file)]
        cwd = os.path.realpath(spec.cwd or os.getcwd())
        folders = [cwd]
        if self.sandbox is not None and self.sandbox.command_files:
            for word in spec.argv[1:]:
                path = os.path.join(cwd, os.path.expanduser(word))
                if os.path.isfile(path):
                    folders.append(_own_folder_or_file(os.path.realpath(path)))
        return cwd, folders

    async def launch(self, spec: BotSpec) -> LocalBotProcess:
        """Start ``spec``'s command with its address in the environment."""
        if not spec.launched:
            raise ValueError(f"bot {spec.text!r} is an address; there is nothing to launch")
        work, folders = self.own_folders(spec) if self.sandbox is not None else (None, [])
        tmpdir = self._private_dir(folders)
        # In the referee's own folder (0700): the socket's folder ``s``, a real folder
        # unsandboxed; sandboxed, only inside the sandbox, as a link into its scratch folder.
        socket_dir = os.path.join(tmpdir, "s")
        address = f"unix://{os.path.join(socket_dir, 'bot.sock')}"
        try:
            over_socket = self.play_socket if self.play_socket is not None else play_over_socket()
        except ValueError as e:
            shutil.rmtree(tmpdir, ignore_errors=True)
            raise BotStartError(f"bot {spec.text!r} cannot be started: {e}") from None
        play_path = os.path.join(socket_dir, PLAY_SOCKET_NAME) if over_socket else None
        told = {PLAY_SOCKET_ENV: play_path} if play_path is not None else {}
        cgroup: BotCgroup | None = None
        info_r = info_w = filter_r = -1
        if self.sandbox is None:
            os.mkdir(socket_dir, 0o700)
            argv, cwd = list(spec.argv), spec.cwd
            env = {**os.environ, **self._extra_env, ADDRESS_ENV: address, **told}
            if not told:
                # Not inherited from the referee's own environment either: no socket, no path.
                env.pop(PLAY_SOCKET_ENV, None)
        else:
            status = probe()
            if not status.available:
                shutil.rmtree(tmpdir, ignore_errors=True)
                raise BotStartError(f"bot {spec.text!r} cannot be sandboxed here: {status.reason}")
            user = bot_host_user()
            mine = [*folders, *_named_files(spec, work, folders, self.sandbox.hidden)]
            why = unreadable_by(user, mine) if user is not None else None
            if user is not None and why is not None:
                shutil.rmtree(tmpdir, ignore_errors=True)
                raise BotStartError(
                    f"bot {spec.text!r}: {why} cannot be read by {user.describe()}, the user bots run as "
                    "when the referee runs as root (so that no bot is root on this machine); make the bot's "
                    f"folder and files readable by every user: chmod -R a+rX {shlex.quote(folders[0])}"
                )
            info_r, info_w = os.pipe()
            try:
                filter_r = seccomp.filter_fd()
                argv = self._sandboxed(spec, work, folders, socket_dir, status.bwrap, address, info_w, filter_r, told)
            except (SandboxError, seccomp.FilterError) as e:
                for fd in (info_r, info_w, filter_r):
                    if fd >= 0:
                        os.close(fd)
                shutil.rmtree(tmpdir, ignore_errors=True)
                raise BotStartError(f"bot {spec.text!r} cannot be sandboxed here: {e}") from None
            cwd = tmpdir
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
            if status.cgroups:
                cgroup = BotCgroup.create(self.sandbox.limits, IDLE_WEIGHT if self.idle else BUSY_WEIGHT)
                if cgroup is not None:
                    self._cgroups.append(cgroup)
            if cgroup is not None:
                env["THIRTYONE_CGROUP_PROCS"] = " ".join(cgroup.procs_files)
                argv = join_cgroups_command(argv)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
                close_fds=True,
                pass_fds=(info_w, filter_r) if info_w >= 0 else (),
            )
        except OSError as e:
            shutil.rmtree(tmpdir, ignore_errors=True)
            if cgroup is not None:
                cgroup.remove()
            if info_r >= 0:
                os.close(info_r)
            where = f" in {cwd}" if cwd and not os.path.isdir(cwd) else ""
            raise BotStartError(
                f"bot {spec.text!r}: cannot run {argv[0]!r}{where}: {e.strerror or e}"
            ) from None
        finally:
            for fd in (info_w, filter_r):
                if fd >= 0:
                    os.close(fd)
        watchdog.watch(proc.pid)
        bot = LocalBotProcess(spec, proc, tmpdir, address, sandbox=self.sandbox, cgroup=cgroup, play_path=play_path)
        # Kept open until the bot stops: bubblewrap goes on writing to it after the pid (and
        # a write to a pipe nobody reads would kill it with SIGPIPE).
        bot._info_fd = info_r if info_r >= 0 else None
        try:
            if info_r >= 0 and (init := await _sandbox_pid(proc, info_r)) is not None:
                bot.hold_init(init)
            await bot._attach_output()
        except BaseException:
            await bot.stop(0)
            raise
        return bot

    @property
    def cgroups(self) -> tuple[BotCgroup, ...]:
        """The cgroups of the bots it started, in order."""
        return tuple(self._cgroups)

    def wake(self) -> None:
        """The bots it started (and starts from now on) are at work: their CPU weight is a
        working bot's again (see :attr:`idle`)."""
        self.idle = False
        for cg in self._cgroups:
            cg.set_weight(BUSY_WEIGHT)

    def _sandboxed(
        self,
        spec: BotSpec,
        work: str | None,
        folders: list[str],
        socket_dir: str,
        bwrap: str | None,
        address: str,
        info_w: int,
        filter_r: int,
        told: dict[str, str],
    ) -> list[str]:
        """The sandbox's command line for ``spec`` (see :func:`~referee.bots.sandbox.sandboxed_command`)."""
        assert self.sandbox is not None
        return sandboxed_command(
            spec.argv,
            cwd=work,
            files=folders,
            socket_dir=socket_dir,
            # Variables the caller gives the launcher are named explicitly, like --bot-env's.
            config=dataclasses.replace(
                self.sandbox, env=(*self.sandbox.env, *(f"{k}={v}" for k, v in {**self._extra_env, **told}.items()))
            ),
            bwrap=bwrap,
            address=address,
            info_fd=info_w,
            seccomp_fd=filter_r,
        )

    def _private_dir(self, folders: list[str]) -> str:
        """A new folder of the referee's own (0700, never bound into a sandbox), short enough
        for a socket path (sockaddr_un holds 108 bytes) and outside the bot's own folders."""
        tmpdir = tempfile.mkdtemp(prefix="thirtyone-bot-", dir=self._tmp_root)
        if len(tmpdir.encode()) > 90 or any(tmpdir == f or tmpdir.startswith(f.rstrip("/") + "/") for f in folders):
            shutil.rmtree(tmpdir, ignore_errors=True)
            tmpdir = tempfile.mkdtemp(prefix="thirtyone-bot-", dir="/tmp")
        return tmpdir


def play_over_socket() -> bool:
    """Whether launched bots are offered the play socket, by ``THIRTYONE_PLAY_OVER``: ``socket``
    (the default) or ``grpc`` (every Play stream over gRPC, as a bot in another process is).
    Raises ValueError for another value."""
    value = os.environ.get(TRANSPORT_ENV, "").strip().lower()
    if value in ("", "socket"):
        return True
    if value == "grpc":
        return False
    raise ValueError(f"{TRANSPORT_ENV}={value!r} is neither 'socket' (the default) nor 'grpc'")


#: How long bubblewrap may take to make a sandbox's namespaces, in seconds.
_SETUP_LIMIT_S = 10.0
_CHILD_PID = re.compile(rb'"child-pid"\s*:\s*([0-9]+)')
#: What a bot whose socket's path holds something else is told.
_SOCKET_RULE = (
    "; a bot must serve at the Unix socket it is given, itself, and the referee follows no "
    "link from there (it connects only to a socket inside the bot's own sandbox)"
)


async def _sandbox_pid(proc: subprocess.Popen[bytes], info_fd: int) -> int | None:
    """The pid of the first process of the sandbox that ``proc`` is making, as bubblewrap
    writes it to ``info_fd``; None if bubblewrap ends (or hangs) before.

    The sandbox's root, and the bot's socket in it, are reached through ``/proc/PID/root``
    (:meth:`LocalBotProcess.connect_target`); nothing on this machine's disk leads there.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _SETUP_LIMIT_S
    os.set_blocking(info_fd, False)
    data = b""
    while True:
        try:
            chunk: bytes | None = os.read(info_fd, 4096)
        except BlockingIOError:
            chunk = None
        if chunk == b"" or proc.poll() is not None or loop.time() > deadline:
            return None
        if chunk:
            data += chunk
            if (m := _CHILD_PID.search(data)) is not None:
                return int(m.group(1))
        await asyncio.sleep(0.002)


class _NotSandboxed(Exception):
    """``/proc/PID/root`` is this machine's root: the sandbox has no root of its own yet, or
    is gone and its pid names another process."""


def _open_in_root(pid: int, path: str) -> int:
    """An ``O_PATH`` descriptor of ``path`` (absolute) inside the root of process ``pid``,
    looked up one component at a time from that root with ``O_NOFOLLOW``: a link anywhere
    on the way is never followed (a link as the last component is opened as the link
    itself, for the caller to refuse). Raises :class:`OSError` (``FileNotFoundError`` when
    something on the way is missing) or :class:`_NotSandboxed`."""
    fd = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_DIRECTORY)
    try:
        st, host = os.fstat(fd), os.stat("/")
        if (st.st_dev, st.st_ino) == (host.st_dev, host.st_ino):
            raise _NotSandboxed(pid)
        parts = [p for p in path.split("/") if p]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_PATH | os.O_NOFOLLOW | (0 if last else os.O_DIRECTORY)
            inner = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def _node_kind(mode: int) -> str:
    """What a file of ``mode`` is, in words, for a message."""
    for test, what in (
        (stat.S_ISLNK, "a link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a file"),
        (stat.S_ISFIFO, "a FIFO"),
    ):
        if test(mode):
            return what
    return "a device or other special file"
