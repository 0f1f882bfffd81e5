"""``thirtyone doctor``: can this machine run strangers' bots safely, and if not, why."""

from __future__ import annotations

import os

import typer
from rich.markup import escape
from rich.table import Table

from referee.bots.sandbox import BotLimits, probe
from referee.cli.app import app
from referee.cli.console import out


@app.command("doctor")
def doctor_command() -> None:
    """Say whether bots can be sandboxed here (bubblewrap, namespaces, limits) and, if not, why.

    Exits 0 when the sandbox works and 1 when it does not.
    """
    status = probe()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("sandbox", "[green]works[/]" if status.available else "[red]cannot be used[/]")
    table.add_row("bubblewrap", escape(f"{status.bwrap} ({status.bwrap_version})") if status.bwrap else "not installed")
    table.add_row("running as", "root" if os.geteuid() == 0 else f"uid {os.geteuid()}")
    if status.host_user:
        table.add_row("bots run as", escape(status.host_user) + (" on this machine" if status.available else ""))
    limits = BotLimits()
    if status.cgroups:
        cpu = "" if status.cpu_limit_note else " + CPU share"
        how = f"rlimits per process, and a memory + pids{cpu} cgroup per bot (total over its processes)"
    else:
        how = "rlimits per process (RLIMIT_DATA, RLIMIT_NPROC, RLIMIT_FSIZE, no core files)"
    table.add_row("limits", escape(f"{how}; defaults: {limits.describe()}"))
    if status.process_limit_note:
        table.add_row("note", f"[yellow]{escape(status.process_limit_note)}[/]")
    table.add_row("cpu", f"[yellow]{escape(status.cpu_limit_note)}[/]" if status.cpu_limit_note else "a CPU share per bot (cgroup cpu controller)")
    if status.syscall_filter:
        table.add_row("system calls", escape(status.syscall_filter))
    elif status.bwrap:
        table.add_row("system calls", "[red]no filter can be built here: bots cannot be sandboxed (see why)[/]")
    if status.bwrap:
        table.add_row(
            "user namespaces",
            "none inside a sandbox (bubblewrap --disable-userns, and the filter)" if status.userns_disabled
            else "refused by the filter (this bubblewrap has no --disable-userns)",
        )
    ended = "SIGKILL to its init (the end of its PID namespace: every process in it)"
    if status.cgroups:
        ended += ", and to every process of its cgroup"
    table.add_row("a sandbox ends", escape(f"{ended}; by the referee, by its watchdog if the referee dies, by the next run after kill -9"))
    if not status.available:
        table.add_row("why", f"[red]{escape(status.reason)}[/]")
    out.print(table)
    if not status.available:
        out.print(
            "Without a sandbox, 'thirtyone match' and 'demo' run bots unsandboxed with a warning, and "
            "'tournament run' refuses unless the tournament was made with --sandbox off.",
            highlight=False,
        )
        raise typer.Exit(1)
