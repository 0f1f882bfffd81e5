"""``thirtyone doctor``: can this machine run strangers' bots safely, and if not, why."""

from __future__ import annotations

import os

import typer
from rich.text import Text

from referee.bots.sandbox import BotLimits, probe
from referee.cli.app import app
from referee.cli.console import out


@app.command("doctor")
def doctor_command() -> None:
    """Say whether bots can be sandboxed here (bubblewrap, namespaces, limits) and, if not, why.

    Exits 0 when the sandbox works and 1 when it does not.
    """
    status = probe()
    rows: list[tuple[str, Text]] = []

    def row(key: str, value: str, style: str = "") -> None:
        rows.append((key, Text(value, style=style)))

    row("sandbox", "works" if status.available else "cannot be used", "green" if status.available else "red")
    row("bubblewrap", f"{status.bwrap} ({status.bwrap_version})" if status.bwrap else "not installed")
    row("running as", "root" if os.geteuid() == 0 else f"uid {os.geteuid()}")
    if status.host_user:
        row("bots run as", status.host_user + (" on this machine" if status.available else ""))
    limits = BotLimits()
    if status.cgroups:
        cpu = "" if status.cpu_limit_note else " + CPU share"
        how = f"rlimits per process, and a memory + pids{cpu} cgroup per bot (total over its processes)"
    else:
        how = "rlimits per process (RLIMIT_DATA, RLIMIT_NPROC, RLIMIT_FSIZE, no core files)"
    row("limits", f"{how}; defaults: {limits.describe()}")
    if status.process_limit_note:
        row("note", status.process_limit_note, "yellow")
    row("cpu", status.cpu_limit_note or "a CPU share per bot (cgroup cpu controller)", "yellow" if status.cpu_limit_note else "")
    if status.syscall_filter:
        row("system calls", status.syscall_filter)
    elif status.bwrap:
        row("system calls", "no filter can be built here: bots cannot be sandboxed (see why)", "red")
    if status.bwrap:
        row(
            "user namespaces",
            "none inside a sandbox (bubblewrap --disable-userns, and the filter)" if status.userns_disabled
            else "refused by the filter (this bubblewrap has no --disable-userns)",
        )
    ended = "SIGKILL to its init (the end of its PID namespace: every process in it)"
    if status.cgroups:
        ended += ", and to every process of its cgroup"
    row("a sandbox ends", f"{ended}; by the referee, by its watchdog if the referee dies, by the next run after kill -9")
    if not status.available:
        row("why", status.reason, "red")
    # Lines rather than a table: a table pads every row to its widest one, and a pipe (or a
    # narrow terminal) then gets lines of trailing blanks.
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        out.print(Text.assemble((key.ljust(width), "bold"), "  ", value), soft_wrap=True, highlight=False)
    if not status.available:
        out.print(
            "Without a sandbox, 'thirtyone match' and 'demo' run bots unsandboxed with a warning, and "
            "'tournament run' refuses unless the tournament was made with --sandbox off.",
            highlight=False,
        )
        raise typer.Exit(1)
