"""``thirtyone sprt NEW OLD``: is NEW stronger than OLD? A sequential test, played as a
tournament folder (format ``sprt``) that stops at its verdict; see
:mod:`referee.tournament.sprt` for the statistics and :mod:`referee.tournament.sprt_run` for
how it is played and resumed."""

from __future__ import annotations

import json
import math
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from referee.bots import parse_bot_spec
from referee.bots.sandbox import SandboxError
from referee.cli.app import app
from referee.cli.console import err, fail
from referee.cli.options import SandboxOpt, load_rules
from referee.cli.stopping import exit_code, signals_stop
from referee.faults import RefereeError
from referee.game import Rules, RulesError
from referee.game.errors import shown
from referee.text import plural
from referee.timecontrol import TimeControl
from referee.tournament.runner import RunReport
from referee.tournament.settings import SprtSettings, TournamentSettings, new_seed
from referee.tournament.sprt import CONTROL_AFTER, SprtResult
from referee.tournament.sprt_run import NotAnSprtTest, SprtMonitor, run_test
from referee.tournament.store import DB_NAME, StoreError, TournamentStore
from referee.tournament.submit import submit
from referee.tournament.tasks import RunError, TaskResult, describe_error

#: Defaults of the options that fix a test (None on the command line: "not given").
DEFAULT_ELO0 = 0.0
DEFAULT_ELO1 = 10.0
DEFAULT_ALPHA = 0.05
DEFAULT_BETA = 0.05
DEFAULT_MAX_DEALS = 2000
_TC = TimeControl()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def bot_label(text: str, cwd: Path) -> str:
    """The name a bot gets in the test: its ``NAME=`` label, a sample's name, a file's stem,
    or a command's program name (made a valid tournament name)."""
    spec = parse_bot_spec(text, cwd=cwd)
    if spec.label:
        return spec.label
    if spec.kind == "sample":
        raw = text.strip()
    elif spec.kind == "file":
        raw = Path(spec.argv[-1]).stem
    elif spec.argv:
        raw = Path(spec.argv[0]).name
    else:
        raw = "bot"
    name = _UNSAFE.sub("-", raw).lstrip("-_.")[:40] or "bot"
    return name


def unique_names(new: str, old: str, field: list[str]) -> tuple[str, str, list[str]]:
    """Names for the test's bots, all different: NEW and OLD of the same name become
    ``NAME.new`` and ``NAME.old``; a filler bot named twice gets ``.2``, ``.3``, ..."""
    if new == old:
        new, old = f"{new[:36]}.new", f"{old[:36]}.old"
    taken = {new, old}
    out_field = []
    for name in field:
        candidate, i = name, 2
        while candidate in taken:
            candidate, i = f"{name[:36]}.{i}", i + 1
        taken.add(candidate)
        out_field.append(candidate)
    return new, old, out_field


def fresh_folder(new: str, old: str, where: Path) -> Path:
    """A new folder name for a test, in ``where``."""
    base = where / f"sprt-{new}-vs-{old}"
    if not base.exists():
        return base
    i = 2
    while (where / f"{base.name}-{i}").exists():
        i += 1
    return where / f"{base.name}-{i}"


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def _bar(llr: float, lower: float, upper: float, width: int = 40) -> Text:
    """Where the LLR stands between its bounds."""
    share = (llr - lower) / (upper - lower)
    pos = min(max(round(share * (width - 1)), 0), width - 1)
    zero = round(-lower / (upper - lower) * (width - 1))
    bar = Text()
    for i in range(width):
        if i == pos:
            bar.append("●", style="bold yellow")
        elif i == zero:
            bar.append("┼", style="dim")
        else:
            bar.append("━", style="red" if i < zero else "green")
    return bar


def _elo_text(v: float) -> str:
    if not math.isfinite(v):
        return "+inf" if v > 0 else "-inf"
    # A difference that rounds to nothing is 0.0, not "-0.0" or "+0.0".
    shown = f"{v:+.1f}"
    return "0.0" if shown in ("+0.0", "-0.0") else shown


#: What to do when runs of the same test disagree, said with every verdict.
AGAIN_HINT = (
    "An SPRT accepts one of two hypotheses; when the true difference lies between elo0 and elo1, "
    "runs of the same test may accept either. If runs disagree, either answer is fair: to tell a "
    "smaller difference, set --elo1 nearer to --elo0 (it takes more deals), and allow them with --max-deals."
)


def render(r: SprtResult, new: str, old: str, running: bool = True, *, raw: bool = False) -> Group:
    """The live view of a test."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    llr = Text(f"{r.llr:+.2f}  [{r.lower:.2f} ")
    llr.append_text(_bar(r.llr, r.lower, r.upper))
    llr.append(f" {r.upper:.2f}]")
    t.add_row("LLR", llr)
    t.add_row(
        "Elo",
        f"{_elo_text(r.elo)}  95% [{_elo_text(r.elo_low)}, {_elo_text(r.elo_high)}]   LOS {100 * r.los:.1f}%",
    )
    counts = f"   pentanomial {' '.join(map(str, r.pentanomial))} (LL LD WL+DD WD WW)" if r.pentanomial is not None else ""
    stored = r.extra.get("matches_stored", 0)
    more = f" ({stored} stored)" if stored != r.extra.get("matches", 0) else ""
    t.add_row("deals", f"{r.deals} of at most {r.extra.get('max_deals')}   matches {r.extra.get('matches', 0)}{more}{counts}")
    luck = r.extra.get("luck")
    if isinstance(luck, dict):
        t.add_row(
            "luck",
            f"taken out: variance x{luck['variance_ratio']:.2f} of the raw scores' (beta {luck['beta']:.3f})"
            if r.deals >= CONTROL_AFTER
            else f"taken out from deal {CONTROL_AFTER} on",
        )
        if raw:
            lo, hi = (v if v is not None else math.nan for v in luck["raw_interval"])
            t.add_row(
                "raw Elo",
                f"{_elo_text(luck['raw_elo'] if luck['raw_elo'] is not None else math.nan)}  95% "
                f"[{_elo_text(lo)}, {_elo_text(hi)}]   (the luck left in)",
            )
    head = Text.assemble(
        ("SPRT ", "bold"), f"{new} vs {old}", f"  ·  {r.model}  ·  H0 elo {r.elo0:g}, H1 elo {r.elo1:g}",
        f"  ·  alpha {r.alpha:g}, beta {r.beta:g}",
    )
    parts: list[Any] = [head, t]
    if not running or r.finished:
        parts.append(Text(verdict_text(r, new, old), style="bold green" if r.verdict == "H1" else "bold"))
        if r.finished:
            parts.append(Text(AGAIN_HINT, style="dim"))
    return Group(*parts)


def verdict_text(r: SprtResult, new: str, old: str) -> str:
    """The verdict in words."""
    if r.verdict == "H1":
        return (
            f"H1 accepted after {r.deals} deals: {new} is stronger than {old} "
            f"(the difference is nearer {r.elo1:g} Elo than {r.elo0:g}; estimate {_elo_text(r.elo)})"
        )
    if r.verdict == "H0":
        return (
            f"H0 accepted after {r.deals} deals: {new} is not {r.elo1:g} Elo stronger than {old} "
            f"(the difference is nearer {r.elo0:g} Elo; estimate {_elo_text(r.elo)})"
        )
    if r.finished:
        return (
            f"undecided after {r.deals} deals, the most allowed: the difference lies between the hypotheses "
            f"or needs more deals to tell (estimate {_elo_text(r.elo)})"
        )
    return f"undecided so far ({r.deals} deals): run the same command with --dir to continue"


def _check_same(what: str, given: object, stored: object) -> None:
    if given is not None and given != stored:
        fail(f"this folder's test has {what} {stored}, not {given}: a test keeps its settings (start a new one without --dir)")


@app.command("sprt")
def sprt_command(
    new: Annotated[
        str | None,
        typer.Argument(help="The new version of the bot: a Python file, a sample bot's name or a command.", show_default=False),
    ] = None,
    old: Annotated[str | None, typer.Argument(help="The old version to test it against.", show_default=False)] = None,
    folder: Annotated[
        Path | None,
        typer.Option("--dir", help="The test's folder: a new one, or one holding a test to continue (default: a new sprt-NEW-vs-OLD folder here)."),
    ] = None,
    table_size: Annotated[
        int | None, typer.Option("--table-size", "-k", help="Seats per table; above 2, NEW and OLD each sit with the --field bots (default: 2).")
    ] = None,
    field: Annotated[
        list[str] | None,
        typer.Option("--field", help="Filler bots for tables of more than 2 seats (repeatable, or comma-separated)."),
    ] = None,
    elo0: Annotated[float | None, typer.Option("--elo0", help=f"H0: the Elo difference is elo0 (default: {DEFAULT_ELO0:g}).")] = None,
    elo1: Annotated[float | None, typer.Option("--elo1", help=f"H1: the Elo difference is elo1 (default: {DEFAULT_ELO1:g}).")] = None,
    alpha: Annotated[float | None, typer.Option("--alpha", help=f"Chance of accepting H1 when H0 holds (default: {DEFAULT_ALPHA:g}).")] = None,
    beta: Annotated[float | None, typer.Option("--beta", help=f"Chance of accepting H0 when H1 holds (default: {DEFAULT_BETA:g}).")] = None,
    max_deals: Annotated[
        int | None, typer.Option("--max-deals", help=f"Stop undecided after this many deals (default: {DEFAULT_MAX_DEALS}).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="The test's seed (default: random).")] = None,
    budget_ms: Annotated[int | None, typer.Option("--budget-ms", help=f"Time per decision, ms (default: {_TC.budget_ms}).")] = None,
    preset: Annotated[str | None, typer.Option(help="Rules preset: standard, pagat, family, cadillac or bicycle.")] = None,
    rule: Annotated[list[str] | None, typer.Option("--rule", help="A rule option on top, key=value (repeatable).")] = None,
    luck: Annotated[
        bool | None,
        typer.Option(
            "--luck/--no-luck",
            help="Take the luck of the cards out of each deal's score (a control variate, docs/analysis.md): fewer "
            "deals to a verdict, at the same error rates (default for a new test: on).",
            show_default=False,
        ),
    ] = None,
    raw: Annotated[bool, typer.Option("--raw", help="Show the raw Elo estimate (the luck left in) beside the adjusted one.")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Matches played at once.")] = 1,
    sandbox: SandboxOpt = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="At the end, print the result as JSON on stdout.")] = False,
) -> None:
    """Is NEW stronger than OLD? Play them on duplicate deals until a sequential test decides."""
    if jobs < 1:
        fail(f"--jobs must be at least 1, got {shown(jobs)}")
    if (new is None) != (old is None):
        fail("name both bots, NEW and OLD (or neither, to continue the test in --dir)")
    cwd = Path.cwd()
    fields = _split(field)
    names: tuple[str, str, list[str]] | None = None
    if new is not None and old is not None:
        names = unique_names(bot_label(new, cwd), bot_label(old, cwd), [bot_label(f, cwd) for f in fields])
    resume = folder is not None and (folder / DB_NAME).exists()
    created = False
    if resume:
        assert folder is not None
        store = _open_test(folder)
        s = store.settings
        t = s.sprt
        assert t is not None
        if names is not None and (names[0], names[1]) != (t.new, t.old):
            store.close()
            fail(f"this folder tests {t.new} against {t.old}, not {names[0]} against {names[1]}")
        for what, given, stored in (
            ("elo0", elo0, t.elo0), ("elo1", elo1, t.elo1), ("alpha", alpha, t.alpha), ("beta", beta, t.beta),
            ("max deals", max_deals, s.games), ("seed", seed, s.seed), ("table size", table_size, s.table_size),
            ("budget (ms)", budget_ms, s.time_control.budget_ms), ("luck", luck, t.luck),
            ("rules", _rules_of(preset, rule).describe() if preset or rule else None, s.rules.describe()),
        ):
            if given is not None and given != stored:
                store.close()
                _check_same(what, given, stored)
        if fields and names is not None and names[2] != list(t.field):
            store.close()
            fail(f"this folder's test has the field {', '.join(t.field) or 'none'}, not {', '.join(names[2])}")
        err.print(f"continuing the test in [bold]{escape(str(folder))}[/]", highlight=False)
    else:
        if names is None or new is None or old is None:
            fail("name the bots to test: thirtyone sprt NEW OLD" + (f" (no test in {folder} to continue)" if folder else ""))
        k = table_size if table_size is not None else (1 + len(fields) if fields else 2)
        if k > 2 and len(fields) != k - 1:
            fail(f"--table-size {k} needs {plural(k - 1, 'filler bot')} to sit with NEW and with OLD: name them with --field (got {len(fields)})")
        try:
            tc = TimeControl(budget_ms=budget_ms) if budget_ms is not None else TimeControl()
            settings = TournamentSettings(
                rules=_rules_of(preset, rule),
                table_size=k,
                games=max_deals if max_deals is not None else DEFAULT_MAX_DEALS,
                seed=seed if seed is not None else new_seed(),
                time_control=tc,
                sandbox=sandbox,
                format="sprt",
                sprt=SprtSettings(
                    new=names[0], old=names[1], field=tuple(names[2]),
                    elo0=elo0 if elo0 is not None else DEFAULT_ELO0,
                    elo1=elo1 if elo1 is not None else DEFAULT_ELO1,
                    alpha=alpha if alpha is not None else DEFAULT_ALPHA,
                    beta=beta if beta is not None else DEFAULT_BETA,
                    luck=luck if luck is not None else True,
                ),
            )
        except (RulesError, ValueError) as e:
            fail(str(e))
        folder = folder if folder is not None else fresh_folder(names[0], names[1], cwd)
        try:
            settings.sandbox_config(folder)  # before anything is made: refuse where the machine cannot sandbox
            store = TournamentStore.create(folder, settings)
        except SandboxError as e:
            fail(f"{e}; or use --sandbox off to run the bots unsandboxed")
        created = True
        err.print(f"testing in [bold]{escape(str(folder))}[/] (continue it with --dir {escape(str(folder))})", highlight=False)
    with store:
        try:
            _submit_missing(store, new, old, fields, names, cwd)
        except BaseException:
            if created:
                store.close()
                shutil.rmtree(folder, ignore_errors=True)
            raise
        result = _play(store, jobs, raw)
    if as_json:
        typer.echo(json.dumps({**result.to_dict(), "folder": str(folder)}, indent=2))
    if not result.finished:
        raise typer.Exit(1)


def _rules_of(preset: str | None, rule: list[str] | None) -> Rules:
    try:
        return load_rules(preset, rule or [], None)
    except RulesError as e:
        fail(str(e))


def _open_test(folder: Path) -> TournamentStore:
    store = TournamentStore.open(folder)
    if store.settings.format != "sprt":
        store.close()
        fail(f"{folder} holds a {store.settings.format} tournament, not an SPRT test; use 'thirtyone tournament run'")
    return store


def _submit_missing(
    store: TournamentStore,
    new: str | None,
    old: str | None,
    fields: list[str],
    names: tuple[str, str, list[str]] | None,
    cwd: Path,
) -> None:
    """Submit (validate and copy in) each of the test's bots not submitted yet."""
    t = store.settings.sprt
    assert t is not None
    have = {b.name for b in store.bots()}
    specs: dict[str, str] = {}
    if names is not None and new is not None and old is not None:
        specs = {names[0]: new, names[1]: old}
        specs.update(zip(names[2], fields, strict=True))
    for name in (t.new, t.old, *t.field):
        if name in have:
            continue
        text = specs.get(name)
        if text is None:
            fail(f"the test's bot {name} is not submitted yet; name the bots (thirtyone sprt NEW OLD --field ...) to submit them")
        if parse_bot_spec(text, cwd=cwd).label is not None:
            text = text.split("=", 1)[1].strip()
        err.print(
            escape(f"checking {name} ({text}) as 'thirtyone check-bot' does, then a short match against the random bot…"),
            highlight=False,
        )
        try:
            submit(store, text, name, cwd=cwd)
        except SandboxError as e:
            fail(f"{e}; or use --sandbox off to run the bots unsandboxed")
        except RefereeError as e:  # the bot refused, or its folder or the store: name the bot
            fail(f"{name}: {e}")
        except OSError as e:
            fail(f"cannot copy {name} into the test's folder: {e}")


def _play(store: TournamentStore, jobs: int, raw: bool = False) -> SprtResult:
    """Run the test with a live view; Ctrl-C and SIGTERM stop it cleanly (exit 130 / 143)."""
    t = store.settings.sprt
    assert t is not None
    start = SprtMonitor.from_store(store)
    # Live where someone watches; elsewhere (a log, a pipe) only the final view is printed.
    live = Live(render(start.result(), t.new, t.old, raw=raw), console=err, refresh_per_second=4, transient=False)
    watched = err.is_terminal
    failures: list[str] = []

    def on_result(r: TaskResult, monitor: SprtMonitor) -> None:
        if not r.ok:
            if r.retrying:
                live.console.print(f"[yellow]match {r.key} failed for a reason of the referee's, playing it again:[/] {escape(r.error)}", highlight=False)
            else:
                failures.append(r.key)
                live.console.print(f"[red]match {r.key} not played:[/] {escape(r.error)}", highlight=False)
        if watched:
            live.update(render(monitor.result(), t.new, t.old, raw=raw))

    report: RunReport | None = None
    with signals_stop():
        try:
            if watched:
                with live:
                    monitor, report = run_test(store, jobs, on_result=on_result)
                    live.update(render(monitor.result(), t.new, t.old, running=False, raw=raw))
            else:
                monitor, report = run_test(store, jobs, on_result=on_result)
                err.print(render(monitor.result(), t.new, t.old, running=False, raw=raw))
        except KeyboardInterrupt as e:
            err.print("[yellow]stopped[/]: finished matches are saved; run again with --dir to continue the same test", highlight=False)
            raise typer.Exit(exit_code(e)) from None
        except StoreError as e:
            fail(str(e))
        except SandboxError as e:
            fail(f"{e}; or use --sandbox off to run the bots unsandboxed")
        except (RunError, NotAnSprtTest) as e:
            fail(str(e), 1)
        except OSError as e:
            fail(f"the test stopped: {describe_error(e)}; finished matches are saved", 1)
        except sqlite3.Error as e:
            what = "the disk is full" if "full" in str(e) else f"the database cannot be written ({e})"
            fail(f"the test stopped: {what}; finished matches are saved", 1)
    if report is not None and report.played:
        err.print(f"played {plural(report.played, 'match', 'matches')} in {report.seconds:.1f} s with -j {jobs}", highlight=False)
    if failures:
        err.print(f"[red]{plural(len(failures), 'match', 'matches')} could not be played[/]; run again with --dir to continue", highlight=False)
    return monitor.result()
