"""A test bot that tries to outlive its match, then plays the first legal action.

    python outliver_MARK.py    (a copy of this file, named so that its processes can be found)

Before it serves it does what a bot that wants to stay on the machine would do:

1. ignores SIGTERM, SIGINT and SIGHUP;
2. ``PTRACE_ATTACH`` to its sandbox's pid 1 (bubblewrap's init: the same user, the same user
   namespace) and, on x86_64, makes it call ``setsid()`` (out of the process group the
   referee signals) and ``prctl(PR_SET_PDEATHSIG, 0)`` (so that it no longer dies with the
   outer bubblewrap), by setting its registers at a ``syscall`` instruction and single-stepping;
3. makes a user and mount namespace of its own (``unshare -Urm``) and mounts a tmpfs there,
   past its scratch folder's cap;
4. forks a child that leaves for a session of its own (``setsid``), ignores SIGTERM and
   sleeps for ever: with the file's name, and so MARK, in its command line, as the bot has.

It writes one line ``OUTLIVER {json}`` to stderr, each attack's outcome: ``"ok: ..."`` if it
worked, ``"failed: ..."`` with the error; again at each match start (a tournament keeps a
bot's output from its match's start). A test then looks for any process whose command
line holds MARK (the bot, its child, and bubblewrap's init, whose command line holds the
bot's) once its match is over.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

try:
    import sdk
except ImportError:  # unsandboxed, run from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    import sdk

PTRACE_PEEKTEXT, PTRACE_GETREGS, PTRACE_SETREGS = 1, 12, 13
PTRACE_SINGLESTEP, PTRACE_ATTACH, PTRACE_DETACH = 9, 16, 17
#: x86_64 system call numbers.
SYS_SETSID, SYS_PRCTL = 112, 157
PR_SET_PDEATHSIG = 1
#: waitpid's __WALL: wait for a traced process that is not our child.
WALL = 0x40000000


_REGISTERS = (
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi", "rdi",
    "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
)  # fmt: skip


class Regs(ctypes.Structure):
    """x86_64's ``struct user_regs_struct``."""

    _fields_ = [(name, ctypes.c_ulonglong) for name in _REGISTERS]


libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(request: int, pid: int, addr: int = 0, data: Any = None) -> int:
    """One ptrace request; raises OSError with the errno."""
    ctypes.set_errno(0)
    r = libc.ptrace(request, pid, ctypes.c_void_p(addr), data)
    err = ctypes.get_errno()
    if r == -1 and err:
        raise OSError(err, os.strerror(err))
    return int(r)


def inject_into_init() -> str:
    """Attach to pid 1 and make it leave the referee's process group and forget its death signal."""
    ptrace(PTRACE_ATTACH, 1)
    os.waitpid(1, WALL)
    try:
        if platform.machine() != "x86_64":
            return "attached (no injection on this architecture)"
        saved = Regs()
        ptrace(PTRACE_GETREGS, 1, 0, ctypes.byref(saved))
        # Stopped in a system call (bubblewrap's init waits for its children): the two bytes
        # before its instruction pointer are that call's ``syscall`` instruction (0f 05).
        at = saved.rip - 2
        word = ptrace(PTRACE_PEEKTEXT, 1, at) & 0xFFFF
        if word != 0x050F:
            return f"attached, but no syscall instruction before rip ({word:#x})"
        results = []
        for nr, a1, a2 in ((SYS_SETSID, 0, 0), (SYS_PRCTL, PR_SET_PDEATHSIG, 0)):
            regs = Regs.from_buffer_copy(saved)
            regs.rax, regs.orig_rax, regs.rip, regs.rdi, regs.rsi = nr, 2**64 - 1, at, a1, a2
            ptrace(PTRACE_SETREGS, 1, 0, ctypes.byref(regs))
            ptrace(PTRACE_SINGLESTEP, 1)
            os.waitpid(1, WALL)
            ptrace(PTRACE_GETREGS, 1, 0, ctypes.byref(regs))
            results.append(ctypes.c_longlong(regs.rax).value)
        ptrace(PTRACE_SETREGS, 1, 0, ctypes.byref(saved))
        return f"injected setsid -> {results[0]}, prctl(PR_SET_PDEATHSIG, 0) -> {results[1]}"
    finally:
        ptrace(PTRACE_DETACH, 1)


def own_tmpfs() -> str:
    """A user and mount namespace of its own, and a tmpfs in it."""
    r = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=4g none /tmp && echo MOUNTED"],
        capture_output=True, text=True, timeout=20,
    )  # fmt: skip
    if "MOUNTED" not in r.stdout:
        raise OSError(f"exit {r.returncode}: {r.stderr.strip()}")
    return "a tmpfs of 4 GiB mounted in a mount namespace of its own"


def leave_a_child() -> str:
    """A child in a session of its own that ignores SIGTERM and never ends by itself."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(s, signal.SIG_IGN)
            while True:
                time.sleep(3600)
        finally:
            os._exit(0)
    return f"child {pid} in a session of its own"


#: What it says of its attacks.
REPORT = ""


class Outliver(sdk.Bot):
    """The first legal action (the worst card, when one must be discarded)."""

    name = "outliver"
    version = "1.0"
    author = "a test"

    def on_match_start(self, info: sdk.MatchInfo) -> None:
        """Say again what worked (for the match's kept output)."""
        print(REPORT, file=sys.stderr, flush=True)

    def act(self, view: sdk.View) -> sdk.Action:
        """The first legal action."""
        if view.must_discard:
            card, _ = view.best_discard()
            return sdk.discard(card)
        return view.legal_actions[0]


def main() -> None:
    """Attack, report, then serve."""
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    report: dict[str, str] = {}
    for key, attack in (("ptrace", inject_into_init), ("tmpfs", own_tmpfs), ("child", leave_a_child)):
        try:
            report[key] = f"ok: {attack()}"
        except BaseException as e:  # every failure is the expected outcome, whatever its kind
            report[key] = f"failed: {type(e).__name__}: {e}"
    global REPORT
    REPORT = "OUTLIVER " + json.dumps(report)
    print(REPORT, file=sys.stderr, flush=True)
    sdk.run(Outliver)


if __name__ == "__main__":
    main()
