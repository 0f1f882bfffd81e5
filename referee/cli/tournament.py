"""Tournament commands: ``tournament new|run|rerun``, ``submit``, ``bots``, ``withdraw``,
``disqualify``, ``standings`` and ``demo``."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from referee.bots.sandbox import (
    CPUS_MAX,
    CPUS_MIN,
    BotLimits,
    SandboxConfig,
    SandboxError,
    choose_sandbox,
)
from referee.cli.app import app
from referee.cli.console import err, fail, out
from referee.cli.options import BotEnvOpt, SandboxOpt, check_numbers
from referee.cli.standings_view import standings_csv, standings_json, standings_table
from referee.cli.stopping import exit_code, signals_stop
from referee.game import MAX_PLAYERS, RulesError, parse_overrides
from referee.game.errors import shown, shown_in
from referee.text import plural
from referee.timecontrol import TimeControl
from referee.tournament.runner import RunReport, run_pending
from referee.tournament.schedule import key_of_log, not_runnable, schedule_for
from referee.tournament.settings import SettingsError, TournamentSettings, section
from referee.tournament.standings import FAULT_KINDS, tournament_standings
from referee.tournament.store import StoreError, TournamentStore
from referee.tournament.submit import submit, submit_many
from referee.tournament.tasks import Executor, RunError, TaskResult, describe_error, log_name

tournament_app = typer.Typer(help="Create and run tournaments (a tournament is a folder).", no_args_is_help=True)
app.add_typer(tournament_app, name="tournament")

_TC = TimeControl()
_SETTINGS = TournamentSettings()
_LIMITS = BotLimits()
DirArg = Annotated[Path, typer.Argument(help="The tournament's folder.", show_default=False)]


def _open(folder: Path, *, readonly: bool = False) -> TournamentStore:
    return TournamentStore.open(folder, readonly=readonly)


@tournament_app.command("new")
def new_command(
    folder: DirArg,
    preset: Annotated[str | None, typer.Option(help="Rules preset: standard, pagat, family, cadillac or bicycle.")] = None,
    rule: Annotated[list[str] | None, typer.Option("--rule", help="A rule option on top, key=value (repeatable).")] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Settings from a TOML file: \\[tournament], \\[rules], \\[time_control] and \\[limits] tables.",
        ),
    ] = None,
    # The defaults are in the help, not given: an option left out takes its value from --config.
    table_size: Annotated[
        int | None,
        typer.Option("--table-size", "-k", help=f"Seats per table (2 to {MAX_PLAYERS}). \\[default: {_SETTINGS.table_size}]"),
    ] = None,
    games: Annotated[
        int | None,
        typer.Option(
            "--games",
            "-n",
            help=f"Deals per table (1 to 100000); each is played in every seat rotation. \\[default: {_SETTINGS.games}]",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Tournament seed, 0 to 2**64-1 (kept secret until the end).", show_default="random")
    ] = None,
    budget_ms: Annotated[
        int | None,
        typer.Option("--budget-ms", help=f"Time per decision, ms (1 to 3600000). \\[default: {_TC.budget_ms}]"),
    ] = None,
    bank_ms: Annotated[
        int | None,
        typer.Option("--bank-ms", help=f"Time bank per seat and match, ms (0 to 3600000). \\[default: {_TC.bank_ms}]"),
    ] = None,
    grace_ms: Annotated[
        int | None,
        typer.Option("--grace-ms", help=f"Allowance for transport, ms (0 to 3600000). \\[default: {_TC.grace_ms}]"),
    ] = None,
    fault_policy: Annotated[
        str | None, typer.Option("--fault-policy", help=f"lenient or strict. \\[default: {_SETTINGS.fault_policy}]")
    ] = None,
    max_strikes: Annotated[
        int | None,
        typer.Option(
            "--max-strikes", help=f"Faults that forfeit a seat under lenient (1 to 1000). \\[default: {_SETTINGS.max_strikes}]"
        ),
    ] = None,
    sandbox: Annotated[
        str | None,
        typer.Option(
            "--sandbox",
            help="auto or on: every bot runs in a sandbox, and 'tournament run' refuses where the machine "
            f"cannot sandbox; off: bots run unsandboxed (the standings say so). \\[default: {_SETTINGS.sandbox}]",
        ),
    ] = None,
    memory_mb: Annotated[
        int | None,
        typer.Option("--memory-mb", help=f"Memory each bot may use, MiB (64 to 1048576). \\[default: {_LIMITS.memory_mb}]"),
    ] = None,
    max_processes: Annotated[
        int | None,
        typer.Option(
            "--max-processes",
            help=f"Processes and threads each bot may run (8 to 100000). \\[default: {_LIMITS.processes}]",
        ),
    ] = None,
    cpus: Annotated[
        float | None,
        typer.Option("--cpus", help=f"CPU time each bot may use, in CPUs over all its processes (0.01 to 1024). \\[default: {_LIMITS.cpus:g}]"),
    ] = None,
    bot_env: BotEnvOpt = None,
    tournament_format: Annotated[
        str | None,
        typer.Option("--format", help="round-robin (every table of the bots; default) or gauntlet (only tables with a --challenger)."),
    ] = None,
    challenger: Annotated[
        list[str] | None,
        typer.Option("--challenger", help="A gauntlet's challenger, by its name in the tournament (repeatable; implies --format gauntlet)."),
    ] = None,
) -> None:
    """Create a tournament in a new folder. Options override the --config file."""
    check_numbers(
        {
            "--table-size": table_size,
            "--games": games,
            "--seed": seed,
            "--budget-ms": budget_ms,
            "--bank-ms": bank_ms,
            "--grace-ms": grace_ms,
            "--max-strikes": max_strikes,
            "--memory-mb": memory_mb,
            "--max-processes": max_processes,
        }
    )
    if cpus is not None and not CPUS_MIN <= cpus <= CPUS_MAX:  # NaN too
        fail(f"--cpus must be a number from {CPUS_MIN:g} to {CPUS_MAX}, got {cpus:g}")
    data: dict[str, Any] = {}
    if config is not None:
        try:
            data = tomllib.loads(config.read_text(encoding="utf-8"))
        except OSError as e:
            fail(f"cannot read {config}: {e.strerror or e}")
        except (tomllib.TOMLDecodeError, ValueError) as e:
            # ValueError: a number of more digits than Python reads (4300).
            fail(f"{config} is not valid TOML: {shown_in(str(e))}")
    try:
        rules = section(data, "rules")
        if preset is not None:
            rules["preset"] = preset
        rules.update(parse_overrides(rule or []))
        data["rules"] = rules
        tc = section(data, "time_control")
        for key, value in (("budget_ms", budget_ms), ("bank_ms", bank_ms), ("grace_ms", grace_ms)):
            if value is not None:
                tc[key] = value
        data["time_control"] = tc
        tour = section(data, "tournament")
        for key, v in (
            ("table_size", table_size),
            ("games", games),
            ("seed", seed),
            ("fault_policy", fault_policy),
            ("max_strikes", max_strikes),
            ("sandbox", sandbox),
            ("bot_env", list(bot_env) if bot_env else None),
            ("format", tournament_format or ("gauntlet" if challenger else None)),
            ("challengers", list(challenger) if challenger else None),
        ):
            if v is not None:
                tour[key] = v
        data["tournament"] = tour
        limits = section(data, "limits")
        for key, lv in (("memory_mb", memory_mb), ("processes", max_processes), ("cpus", cpus)):
            if lv is not None:
                limits[key] = lv
        data["limits"] = limits
        settings = TournamentSettings.from_dict(data)
        store = TournamentStore.create(folder, settings)
    except RulesError as e:
        fail(str(e))
    store.close()
    out.print(f"created tournament [bold]{escape(str(folder))}[/]")
    out.print(settings.describe(), highlight=False)
    out.print(escape(f"next: thirtyone submit {folder} BOT   (then: thirtyone tournament run {folder})"), highlight=False)


@app.command("submit")
def submit_command(
    folder: DirArg,
    bot: Annotated[
        str,
        typer.Argument(
            help="A sample bot's name, a Python file (copied in), a command, or a running bot's address.",
            show_default=False,
        ),
    ],
    name: Annotated[str | None, typer.Option(help="Name in the tournament (default: the bot's own name).")] = None,
    bot_dir: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="The bot's folder: copied into the tournament (with a hash checked at every launch); "
            "BOT is then a command run inside the copy, e.g. \"node bot.js\".",
        ),
    ] = None,
) -> None:
    """Submit a bot: it must pass 'thirtyone check-bot' and a short match against the random bot first.

    A name that is taken or malformed is refused before anything starts (the bot's own name,
    when --name is not given, as soon as the bot has said it).
    """
    store = _open(folder)
    with store:
        err.print(
            escape(f"checking {bot!r} (as 'thirtyone check-bot' does), then a short match against the random bot…"),
            highlight=False,
        )
        try:
            entry = submit(store, bot, name, bot_dir=bot_dir)
        except OSError as e:
            fail(f"cannot copy the bot into the tournament: {e}")
    extra = f" (copied, sha256 {entry.sha256[:12]}…)" if entry.sha256 else ""
    out.print(
        # The bot's identity is the bot's own text, never markup.
        f"submitted [bold]{entry.name}[/]: {escape(entry.bot_name)} {escape(entry.bot_version)}"
        + (f" by {escape(entry.author)}" if entry.author else "")
        + extra,
        highlight=False,
    )


@app.command("bots")
def bots_command(folder: DirArg) -> None:
    """List the tournament's bots."""
    with _open(folder, readonly=True) as store:
        t = Table(title=f"Bots in {escape(str(folder))}")
        for col in ("name", "bot", "version", "author", "kind", "runs as", "matches"):
            t.add_column(col)
        for b in store.bots():
            # Name, version and author are the bot's own text: shown as text, never as markup.
            cells = (b.name, b.bot_name, b.bot_version, b.author, b.kind, b.spec, str(store.matches_of(b.name)))
            t.add_row(*map(escape, cells))
        out.print(t)


@app.command("withdraw")
def withdraw_command(folder: DirArg, name: Annotated[str, typer.Argument(help="The bot's name in the tournament.")]) -> None:
    """Take a bot out of the tournament before it has played."""
    with _open(folder) as store:
        entry = store.remove_bot(name)
        if entry.kind in ("file", "folder"):
            shutil.rmtree(store.folder / "bots" / entry.name, ignore_errors=True)
    out.print(f"withdrew [bold]{name}[/]")


def _run(
    store: TournamentStore, jobs: int, quiet: bool = False, only: list[str] | None = None, executor: Executor | None = None
) -> RunReport:
    faults = dict.fromkeys(FAULT_KINDS, 0)
    failed = 0
    progress = Progress(
        TextColumn("[bold]matches"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=err,
        disable=quiet,
        transient=False,
    )
    task_id = progress.add_task("", total=None)

    def fault_text() -> str:
        shown = " ".join(f"{k.lower()} {v}" for k, v in faults.items() if v)
        return f"faults: {shown or 'none'}" + (f" · [red]{failed} not played[/]" if failed else "")

    def on_start(pending: int, total: int) -> None:
        if only is not None:
            progress.update(task_id, total=pending, completed=0, description=fault_text())
        else:
            progress.update(task_id, total=total, completed=total - pending, description=fault_text())

    def on_result(r: TaskResult) -> None:
        nonlocal failed
        if r.ok:
            for seat in r.record.seats:
                for k, n in seat.faults.items():
                    faults[k] = faults.get(k, 0) + n
            for name, why in r.start_failures.items():
                first = why.splitlines()[0] if why else ""
                err.print(f"[yellow]{escape(name)} could not start[/] for {r.key} (forfeits it): {escape(first)}", highlight=False)
            progress.advance(task_id)
        elif r.retrying:
            err.print(f"[yellow]match {r.key} failed for a reason of the referee's, playing it again:[/] {escape(r.error)}", highlight=False)
        else:
            failed += 1
            err.print(f"[red]match {r.key} not played:[/] {escape(r.error)}", highlight=False)
        progress.update(task_id, description=fault_text())

    with progress:
        report = run_pending(store, jobs, executor=executor, on_start=on_start, on_result=on_result, only=only)
    for name, reason in report.disqualified.items():
        err.print(f"[red]{escape(name)} is disqualified:[/] {escape(reason)}", highlight=False)
    return report


def _report(report: RunReport, jobs: int, how: str = "") -> None:
    if report.played:
        startup_share = report.startup_s / report.match_s if report.match_s else 0.0
        err.print(
            f"played {plural(report.played, 'match', 'matches')} in {report.seconds:.1f} s {how or f'with -j {jobs}'} "
            f"({report.played / report.seconds:.2f} matches/s; bot start-up {startup_share:.0%} of match time)",
            highlight=False,
        )
    elif not report.failed:
        done = "the one scheduled match is" if report.total == 1 else f"all {report.total} scheduled matches are"
        err.print(f"nothing to play: {done} done", highlight=False)


def _play(
    folder: Path, store: TournamentStore, jobs: int, only: list[str] | None = None, executor: Executor | None = None
) -> RunReport:
    """Run with Ctrl-C and SIGTERM stopping the run cleanly (exit 130 / 143)."""
    with signals_stop():
        try:
            return _run(store, jobs, only=only, executor=executor)
        except KeyboardInterrupt as e:
            err.print("[yellow]stopped[/]: finished matches are saved; run again to continue", highlight=False)
            raise typer.Exit(exit_code(e)) from None
        except StoreError as e:  # another run holds the folder
            fail(str(e))
        except SandboxError as e:  # the machine cannot sandbox, and the tournament wants it
            fail(f"{e}; or make the tournament with --sandbox off to run its bots unsandboxed")
        except RunError as e:
            fail(str(e), 1)
        except OSError as e:  # the referee's own files: the disk, the folder
            fail(f"the run stopped: {describe_error(e)}; finished matches are saved", 1)
        except sqlite3.Error as e:  # SQLite says "database or disk is full" for a full disk
            what = "the disk is full" if "full" in str(e) else f"the tournament database cannot be written ({e})"
            fail(f"the run stopped: {what}; finished matches are saved", 1)


@tournament_app.command("run")
def run_command(
    folder: DirArg,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Matches played at once (at least 1).")] = 1,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Play the matches on a Ray cluster (HOST:PORT of its head, or 'auto'), or 'local' to start "
            "Ray on this machine for the run; needs the ray extra. This machine still writes every result.",
            show_default=False,
        ),
    ] = None,
    ray_jobs: Annotated[
        int | None,
        typer.Option("--ray-jobs", help="With --ray: matches played at once (at least 1). \\[default: one per CPU of the cluster]", show_default=False),
    ] = None,
) -> None:
    """Play every pending match (resumes where a stopped run left off)."""
    check_numbers({"--jobs": jobs})
    executor: Executor | None = None
    if ray_jobs is not None and ray is None:
        fail("--ray-jobs goes with --ray ADDRESS")
    if ray is not None and jobs != 1:
        fail("-j sets the local workers; with --ray, --ray-jobs N sets the matches played at once")
    if ray is not None:
        from referee.tournament import ray_executor

        if ray_jobs is not None and ray_jobs < 1:
            fail(f"--ray-jobs must be a whole number of at least 1, got {shown(ray_jobs)}")
        try:
            ray_executor.require_ray()
        except RunError as e:
            fail(str(e))
        try:
            executor = ray_executor.RayExecutor(
                ray, ray_jobs, on_message=lambda text: err.print(f"[yellow]{escape(text)}[/]", highlight=False)
            )
        except RunError as e:
            fail(str(e), 1)
    with _open(folder) as store:
        if len(store.bots()) < store.settings.table_size:
            fail(
                f"the tournament has {plural(len(store.bots()), 'bot')} but tables of {store.settings.table_size}; "
                f"submit more with 'thirtyone submit {folder} BOT'"
            )
        problem = not_runnable(store.settings, [b.name for b in store.bots()])
        if problem is not None:
            fail(problem.replace("FOLDER", str(folder)))
        try:  # before anything is touched: a tournament never runs its bots unsandboxed by default
            store.settings.sandbox_config(store.folder)
        except SandboxError as e:
            fail(f"{e}; or make the tournament with --sandbox off to run its bots unsandboxed")
        report = _play(folder, store, jobs, executor=executor)
        how = ""
        if ray is not None:
            from referee.tournament.ray_executor import RayExecutor

            assert isinstance(executor, RayExecutor)
            how = f"on Ray ({plural(executor.workers, 'worker')} on {plural(len(executor.nodes), 'node')})"
        _report(report, jobs, how)
        if report.failed:
            fail(
                f"{plural(len(report.failed), 'match', 'matches')} could not be played for reasons of the referee's, not the bots' "
                "(see above); run again to play them",
                1,
            )


@tournament_app.command("rerun")
def rerun_command(
    folder: DirArg,
    key: Annotated[str, typer.Argument(help="The match key (e.g. greedy+random/d000/r1) or its log's file name in logs/.", show_default=False)],
) -> None:
    """Play one match again on purpose, replacing its stored result once it is played."""
    with _open(folder) as store:
        s = store.settings
        keys = [m.key for m in schedule_for(s, [b.name for b in store.bots()])]
        wanted = next((k for k in keys if key in (k, log_name(k), log_name(k).removesuffix(".jsonl"))), None)
        if wanted is None:
            shown = ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")
            fail(f"no match {key!r} in this tournament's schedule (keys look like {shown or 'none: no bots yet'})")
        report = _play(folder, store, 1, only=[wanted])
        if report.failed:
            fail(f"match {wanted} could not be played again; its earlier result (if any) is kept", 1)
    out.print(f"played [bold]{wanted}[/] again", highlight=False)


@app.command("disqualify")
def disqualify_command(
    folder: DirArg,
    name: Annotated[str, typer.Argument(help="The bot's name in the tournament.", show_default=False)],
    reason: Annotated[str, typer.Option("--reason", help="Why (shown with the standings).", show_default=False)],
) -> None:
    """Disqualify a bot: its remaining matches are scored as forfeits without starting it."""
    if not reason.strip():
        fail("--reason must say why the bot is disqualified")
    with _open(folder) as store:
        store.disqualify(name, reason.strip())
    out.print(f"disqualified [bold]{escape(name)}[/]: its remaining matches are forfeits", highlight=False)


@app.command("standings")
def standings_command(
    folder: DirArg,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
    luck: Annotated[
        bool,
        typer.Option(
            "--luck",
            help="Take the luck of the cards out of the ratings (docs/analysis.md); the raw figures are shown "
            "beside. Values each match's chance events once (about half a second a match), kept in luck.jsonl.",
        ),
    ] = False,
) -> None:
    """Print the standings: ratings with 95% intervals, win rates with 95% intervals, faults."""
    if as_json and as_csv:
        fail("choose one of --json and --csv")
    with _open(folder, readonly=True) as store:
        if luck:
            err.print(
                f"measuring the luck of the cards in {plural(len(store.done_keys()), 'match', 'matches')} "
                "(once each: kept in luck.jsonl)",
                highlight=False,
            )
        st = tournament_standings(store, luck=luck)
        settings = store.settings
    if as_json:
        typer.echo(standings_json(st, settings))
    elif as_csv:
        typer.echo(standings_csv(st), nl=False)
    else:
        title = f"Standings of {escape(str(folder))} ({plural(st.matches, 'match', 'matches')})"
        out.print(standings_table(st, settings, title=title))


DEMO_BOTS = ("random", "greedy", "threshold")
#: Deals of the demo's one table, done in seconds. Starting its bots (twice per bot and
#: worker: a process plays one rotation of a deal) takes 15-17% of its match time with -j 2 on
#: two cores (bench_tournament.py), most of it the first start.
DEMO_GAMES = 40


@app.command("demo")
def demo_command(
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Matches played at once (at least 1).")] = min(2, os.cpu_count() or 1),
    games: Annotated[int, typer.Option("--games", "-n", help="Deals per table (1 to 100000).")] = DEMO_GAMES,
    folder: Annotated[
        Path | None,
        typer.Option("--dir", help="Where to keep the tournament (a new folder).", show_default="a new temporary folder"),
    ] = None,
    sandbox: SandboxOpt = "auto",
) -> None:
    """Run a small tournament of the sample bots and print the standings."""
    started = time.monotonic()
    check_numbers({"--jobs": jobs, "--games": games})  # before any folder is made
    # The demo runs where the sandbox cannot (a first try on a fresh machine), with a warning.
    chosen, warning = choose_sandbox(sandbox, SandboxConfig())
    if warning:
        err.print(f"[yellow]{escape(warning)}[/]", highlight=False, soft_wrap=True)
    settings = TournamentSettings(table_size=3, games=games, seed=2026, sandbox="on" if chosen else "off")
    where = folder or Path(tempfile.mkdtemp(prefix="thirtyone-demo-"))
    try:
        store = TournamentStore.create(where, settings)
    except (StoreError, SettingsError) as e:
        if folder is None:  # a folder of our own making, and nothing in it worth keeping
            shutil.rmtree(where, ignore_errors=True)
        fail(str(e))
    with store:
        out.print(f"[bold]demo tournament[/] in {escape(str(where))}: {', '.join(DEMO_BOTS)}", highlight=False)
        out.print(settings.describe(), highlight=False)
        # Checked at once: each check spends most of its time waiting on its bot.
        for name, got in zip(DEMO_BOTS, submit_many(where, DEMO_BOTS), strict=True):
            if isinstance(got, Exception):
                if folder is None:  # no match played yet: the temporary folder holds nothing to see
                    store.close()
                    shutil.rmtree(where, ignore_errors=True)
                fail(f"sample bot {name} was refused: {got}", 1)
        report = _play(where, store, jobs)
        _report(report, jobs)
        st = tournament_standings(store)
        out.print(standings_table(st, settings, title=f"Demo standings ({plural(st.matches, 'match', 'matches')})"))
    out.print(
        f"done in {time.monotonic() - started:.0f} s. Replay a match: "
        f"thirtyone replay {where} {sorted(key_of_log(p) for p in (where / 'logs').glob('*.jsonl'))[0] if report.played else 'MATCH'}\n"
        f"standings again: thirtyone standings {where}\n"
        f"look at it in a browser: thirtyone serve {where}",
        highlight=False,
    )
