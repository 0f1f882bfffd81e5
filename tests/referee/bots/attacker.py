"""A test bot that attacks everything outside itself, then plays the first legal action.

    python attacker.py [--read PATH]... [--write PATH]... [--kill PID]... [--stop PID]...
                       [--tcp PORT] [--orphan MARKER] [--hog] [--strict]

Before serving it tries every attack it was given and a few it always tries (look for
tournament databases and match logs anywhere it can see, list the processes it can see,
signal its parent), then writes one line ``ATTACKS {json}`` to stderr: for each attempt,
``"ok: ..."`` if it worked or ``"failed: ..."`` with the error. A second report follows at its
first decision (a match's log only exists once the match is under way). With ``--orphan`` it
leaves a ``setsid`` child that ignores SIGTERM and has MARKER in its command line; with
``--hog`` it allocates memory without bound at its first decision. With ``--strict`` it
crashes at its first decision if any attack worked (a read counts when it got any bytes), so
that a match's faults show it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # unsandboxed runs from a checkout

import sdk

_SKIP = ("/proc", "/sys", "/dev")


def _try(report: dict[str, str], key: str, fn: Any) -> None:
    try:
        what = fn()
    except BaseException as e:  # every failure is the expected outcome, whatever its kind
        report[key] = f"failed: {type(e).__name__}: {e}"
    else:
        report[key] = f"ok: {what}"


def _secrets_in_sight() -> list[str]:
    """Every tournament database and match log it can open for reading."""
    found = []
    for root, dirs, files in os.walk("/"):
        if root.startswith(_SKIP):
            dirs[:] = []
            continue
        for f in files:
            if f == "tournament.db" or f.endswith(".jsonl"):
                path = os.path.join(root, f)
                try:
                    with open(path, "rb") as fh:
                        fh.read(1)
                    found.append(path)
                except OSError:
                    pass
    return found


def _processes() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            out.append(f"{pid}:{cmd.strip()[:80]}")
    return out


def attack(args: argparse.Namespace) -> dict[str, Any]:
    """Try every attack; the report says which worked."""
    report: dict[str, Any] = {}
    for path in args.read:
        _try(report, f"read {path}", lambda p=path: len(Path(p).read_bytes()))
    for path in args.write:
        _try(report, f"write {path}", lambda p=path: Path(p).write_text("pwned"))
    for pid in args.kill:
        _try(report, f"kill {pid}", lambda p=pid: os.kill(p, signal.SIGKILL))
    for pid in args.stop:
        _try(report, f"stop {pid}", lambda p=pid: os.kill(p, signal.SIGSTOP))
    # Its parent, seen from inside: outside a sandbox the referee, inside it the sandbox's
    # own first process (which ignores these signals from inside its namespace).
    report["parent"] = os.getppid()
    _try(report, "signal-parent STOP", lambda: os.kill(os.getppid(), signal.SIGSTOP))
    _try(report, "signal-parent KILL", lambda: os.kill(os.getppid(), signal.SIGKILL))
    if args.tcp:
        _try(report, f"tcp {args.tcp}", lambda: socket.create_connection(("127.0.0.1", args.tcp), timeout=2).close())
    report["secrets"] = _secrets_in_sight()
    report["processes"] = _processes()
    report["env"] = sorted(os.environ)
    report["cwd"] = os.getcwd()
    return report


def emit(report: dict[str, Any]) -> None:
    """One report line on stderr."""
    print("ATTACKS " + json.dumps(report, sort_keys=True), file=sys.stderr, flush=True)


class Attacker(sdk.Bot):
    """Plays the first legal action; reports its attacks once more at its first decision."""

    name = "attacker"
    version = "1"
    author = "tests"
    args: argparse.Namespace

    def __init__(self) -> None:
        self.reported = False

    def act(self, view: sdk.View) -> sdk.Action:
        if not self.reported:
            self.reported = True
            if self.args.hog:
                hoard = []
                while True:
                    hoard.append(bytearray(b"x" * (32 << 20)))
            report = attack(self.args)
            emit(report)
            if self.args.strict and breached(report):
                raise RuntimeError(f"ATTACK SUCCEEDED: {breached(report)}")
        return view.legal_actions[0]


def breached(report: dict[str, Any]) -> list[str]:
    """The attacks in ``report`` that worked: a read that got bytes, a write, a signal to a
    process named on the command line, a connection, and logs found outside its own folder."""
    kinds = ("read", "write", "kill", "stop", "tcp")
    # Its own scratch folder is its to write: in a sandbox, a path under it (say a checkout
    # that lies in /tmp) lands in the sandbox's private copy, not on the machine.
    scratch = os.environ.get("TMPDIR", "").rstrip("/") + "/"
    worked = [
        k
        for k, v in report.items()
        if k.split()[0] in kinds and isinstance(v, str) and v.startswith("ok") and v != "ok: 0"
        and not (k.startswith("write ") and scratch != "/" and k[len("write ") :].startswith(scratch))
    ]
    own = report["cwd"].rstrip("/") + "/"
    return worked + [p for p in report.get("secrets", []) if not p.startswith(own)]


def main() -> None:
    """Attack, report, orphan a child if asked, then serve."""
    # @FILE reads more arguments from FILE, one a line: a tournament refuses a command that
    # names host paths outside the bot's folder, so its targets come from a file inside it.
    p = argparse.ArgumentParser(fromfile_prefix_chars="@")
    p.add_argument("--read", action="append", default=[])
    p.add_argument("--write", action="append", default=[])
    p.add_argument("--kill", action="append", type=int, default=[])
    p.add_argument("--stop", action="append", type=int, default=[])
    p.add_argument("--tcp", type=int, default=0)
    p.add_argument("--orphan", default="")
    p.add_argument("--hog", action="store_true")
    p.add_argument("--strict", action="store_true")
    args, rest = p.parse_known_args()
    sys.argv[1:] = rest  # the SDK's own options
    Attacker.args = args
    emit(attack(args))
    if args.orphan:
        code = "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
        subprocess.Popen([sys.executable, "-c", code, args.orphan], start_new_session=True)
    sdk.run(Attacker)


if __name__ == "__main__":
    main()
