"""A watchdog process that kills bots' process groups and sandboxes if the referee dies without cleaning up.

Cleaning up is the referee's job (:meth:`LocalBotProcess.stop`), but a referee killed with
SIGKILL runs no cleanup. So each referee process keeps one small watchdog:
a child Python process that reads ``+PGID`` / ``-PGID`` lines on a pipe, and ``+sPID START`` /
``-sPID START`` lines for the init of each sandbox (its pid on this machine and its start
time, which together name one process: a pid freed and taken again is never signalled). When
the pipe closes (the referee exited, cleanly or by SIGKILL) it sends SIGKILL to every
sandbox's init still registered (the end of its PID namespace, and of every process in it,
whatever the bot did to its signals, its session or its init), SIGTERM then, a second later,
SIGKILL to every group still registered, and exits. It ignores SIGINT, SIGTERM and SIGHUP so
that a Ctrl-C or a hang-up sent to the referee's whole group does not stop it first.

Unsandboxed, a bot that moves its children to a new session of their own (``setsid``)
escapes; sandboxed it cannot, because its sandbox is ended whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

_CODE = r"""
import os, signal, sys, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
groups = set()
inits = {}
def started(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
for line in sys.stdin:
    op, g = line[:1], line[1:].strip()
    if g.isdigit():
        (groups.add if op == "+" else groups.discard)(int(g))
    elif g[:1] == "s" and len(g.split()) == 2:
        pid, start = g[1:].split()
        if op == "+" and pid.isdigit():
            try:
                fd = os.pidfd_open(int(pid))
            except (OSError, AttributeError):
                fd = None
            if started(pid) == start:
                inits[(pid, start)] = fd
            elif fd is not None:
                os.close(fd)
        elif (pid, start) in inits and (fd := inits.pop((pid, start))) is not None:
            os.close(fd)
for (pid, start), fd in inits.items():
    try:
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        elif started(pid) == start:
            os.kill(int(pid), signal.SIGKILL)
    except OSError:
        pass
def alive(g):
    try:
        os.killpg(g, 0)
        return True
    except OSError:
        return False
for sig in (signal.SIGTERM, signal.SIGKILL):
    for g in list(groups):
        try:
            os.killpg(g, sig)
        except OSError:
            groups.discard(g)
    deadline = time.monotonic() + 1.0
    while groups and time.monotonic() < deadline:
        groups = {g for g in groups if alive(g)}
        time.sleep(0.02)
"""

_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None
_owner_pid = 0


def _ensure() -> subprocess.Popen[bytes] | None:
    global _proc, _owner_pid
    # After a fork (e.g. a tournament's worker processes) the child starts its own watchdog,
    # so that each one covers exactly the groups its own referee started.
    if _proc is None or _owner_pid != os.getpid() or _proc.poll() is not None:
        try:
            _proc = subprocess.Popen(
                [sys.executable, "-S", "-c", _CODE],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError:
            _proc = None
        _owner_pid = os.getpid()
    return _proc


def _send(line: str) -> None:
    with _lock:
        proc = _ensure()
        if proc is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(line.encode())
            proc.stdin.flush()
        except OSError:
            pass  # the watchdog died; the referee's own cleanup still runs


def watch(pgid: int) -> None:
    """Kill process group ``pgid`` if this process dies before :func:`unwatch` is called."""
    if os.name == "posix":
        _send(f"+{pgid}\n")


def unwatch(pgid: int) -> None:
    """Forget process group ``pgid`` (the referee has ended it)."""
    if os.name == "posix" and _proc is not None:
        _send(f"-{pgid}\n")


def watch_sandbox(pid: int, start: int) -> None:
    """SIGKILL the sandbox whose init is ``pid``, started at ``start`` (clock ticks since boot,
    ``/proc/PID/stat``), if this process dies before :func:`unwatch_sandbox` is called."""
    if os.name == "posix":
        _send(f"+s{pid} {start}\n")


def unwatch_sandbox(pid: int, start: int) -> None:
    """Forget the sandbox whose init is ``pid`` (the referee has ended it)."""
    if os.name == "posix" and _proc is not None:
        _send(f"-s{pid} {start}\n")


def watchdog_pid() -> int | None:
    """The watchdog's pid, if one is running (for tests)."""
    return _proc.pid if _proc is not None and _proc.poll() is None else None
