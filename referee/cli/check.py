"""``thirtyone check-bot``: does a bot keep the contract? One line per check, pass or fail, and why.

The checking is :mod:`referee.bots.compliance`; this module only names the bot, chooses the
sandbox and the clock (the options of ``thirtyone match``), and prints.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, NoReturn

import typer
from rich.markup import escape
from rich.text import Text

from referee.bots import LocalLauncher, parse_bot_spec
from referee.bots.compliance import (
    DECISION_CASES,
    STATUS_LABELS,
    TITLE_WIDTH,
    CheckResult,
    ComplianceReport,
    cases_for,
    check_bot,
)
from referee.bots.sandbox import (
    BotLimits,
    SandboxConfig,
    check_env_entries,
    choose_sandbox,
)
from referee.cli.app import app
from referee.cli.console import err, fail, out
from referee.cli.options import (
    BotEnvOpt,
    BudgetOpt,
    CpusOpt,
    GraceOpt,
    MemoryOpt,
    ProcessesOpt,
    SandboxOpt,
    bot_limits,
    load_rules,
)
from referee.cli.stopping import ctrl_c_interrupts
from referee.game import PRESETS, Rules, RulesError
from referee.text import plural, printable
from referee.timecontrol import TimeControl
from sdk.harness import CHECK_VARIANTS

_DEFAULT_TC = TimeControl()
_DEFAULT_LIMITS = BotLimits()
#: Lines of the bot's own output shown after a failed check.
LAST_LINES = 10

_STYLES = {"pass": "bold green", "fail": "bold red", "skipped": "yellow", "not run": "dim"}
#: Each status's label (the plain text's, :func:`~referee.bots.compliance.result_text`) and style.
_LABELS = {s: (STATUS_LABELS[s], style) for s, style in _STYLES.items()}


def result_line(result: CheckResult) -> Text:
    """One check as printed: ``PASS  decision: turn start    draw stock in 3 ms``.

    A reason of several lines (a bot's last output) continues indented. The bot's own text is
    never read as markup.
    """
    label, style = _LABELS[result.status]
    first, *more = [printable(ln) for ln in result.reason.splitlines()] or [""]
    line = Text.assemble((label, style), "  ", (f"{result.title:<{TITLE_WIDTH}}", "bold"), "  ", first)
    for extra in more:
        line.append("\n" + " " * (TITLE_WIDTH + 8) + extra, style="dim")
    return line


def summary_line(report: ComplianceReport) -> Text:
    """The verdict: how many checks passed, failed, were skipped or did not run, and how many
    answers were late."""
    counts = {s: sum(1 for r in report.results if r.status == s) for s in _LABELS}
    total = len(report.results)
    parts = [f"{counts['pass']} of {total} checks passed"]
    parts += [f"{counts[s]} {s if s != 'fail' else 'failed'}" for s in ("fail", "skipped", "not run") if counts[s]]
    if report.late:
        # Past the budget (and the bank told), inside the grace: a match counts these.
        parts.append(plural(report.late, "late answer"))
    verdict = ("the bot keeps the contract", "bold green") if report.passed else ("the bot does not keep the contract", "bold red")
    return Text.assemble(verdict, ": " + ", ".join(parts))


#: Each variant option on its own over the standard rules: the same table ``thirtyone bot
#: test`` plays; with the presets, what a check without --preset reports on.
VARIANTS: dict[str, Rules] = CHECK_VARIANTS


def rules_kept(report: ComplianceReport) -> dict[str, list[str]]:
    """For each preset and each variant (by name): the titles of the checks that a match under
    those rules needs and the bot did not pass; an empty list where it keeps the contract."""
    needed_by_all = [r for r in report.results if not r.key.startswith("decision:")]
    by_key = {r.key: r for r in report.results}
    named = {**{p: Rules.preset(p) for p in PRESETS}, **VARIANTS}
    kept: dict[str, list[str]] = {}
    for name, rules in named.items():
        needed = needed_by_all + [by_key[f"decision:{c.key}"] for c in DECISION_CASES if c.used_by(rules) and f"decision:{c.key}" in by_key]
        kept[name] = [r.title for r in needed if r.status not in ("pass", "skipped")]
    return kept


def kept_line(kept: dict[str, list[str]]) -> Text:
    """Which presets and variants the bot keeps the contract of, and which not (and why)."""
    yes = [n for n, failed in kept.items() if not failed]
    no = [f"{n} ({', '.join(failed)})" for n, failed in kept.items() if failed]
    line = Text.assemble(("keeps the contract of: ", "bold"), ", ".join(yes) or "none")
    if no:
        line.append("\n")
        line.append("not of: ", style="bold")
        line.append("; ".join(no))
    return line


def _fail(message: str, code: int = 2) -> NoReturn:
    fail(message, code)


@app.command("check-bot")
def check_bot_command(
    bot: Annotated[
        str,
        typer.Argument(
            help="The bot, named as for 'thirtyone match': a sample bot's name, a Python file (./my_bot.py), "
            'a command ("node bot.js"), or a running bot\'s address (grpc://host:port, unix:///path).',
            show_default=False,
        ),
    ],
    budget_ms: BudgetOpt = _DEFAULT_TC.budget_ms,
    bank_ms: Annotated[int, typer.Option("--bank-ms", help="Time bank per seat, ms: only the first decision may use it (later ones are told 0).")] = _DEFAULT_TC.bank_ms,
    grace_ms: GraceOpt = _DEFAULT_TC.grace_ms,
    startup_timeout: Annotated[float, typer.Option("--startup-timeout", help="Seconds the bot gets to start.")] = 10.0,
    sandbox: SandboxOpt = "auto",
    memory_mb: MemoryOpt = _DEFAULT_LIMITS.memory_mb,
    max_processes: ProcessesOpt = _DEFAULT_LIMITS.processes,
    cpus: CpusOpt = _DEFAULT_LIMITS.cpus,
    bot_env: BotEnvOpt = None,
    preset: Annotated[
        str | None,
        typer.Option(help="Check only the decisions matches under this preset ask (standard, pagat, family, cadillac, bicycle).", show_default="every kind"),
    ] = None,
    rule: Annotated[list[str] | None, typer.Option("--rule", help="A rule option on top, key=value (repeatable); narrows the decisions checked like --preset.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON on stdout.")] = False,
    require_all: Annotated[
        bool,
        typer.Option("--all", help="Without --preset or --rule: exit 1 unless the bot keeps every preset and variant."),
    ] = False,
) -> None:
    """Check that a bot keeps the contract, as the referee will start and call it.

    In order: the health service (SERVING, as the referee judges it); identity and protocol version; match
    start; one decision of each kind (turn start, discard after a stock draw, discard after
    taking the discard, the knock lap, an empty stock under the showdown rule, and the
    variants' decisions: the dealer's option, a call, the dummy, the widow), legal and within
    the budget; two streams at once; match end; exit on SIGTERM. With --preset or --rule only
    the decisions of matches under those rules are asked (as 'submit' does with the
    tournament's rules), and the exit code is 0 when every check passes, 1 otherwise.

    Without them every kind of decision is asked, and the last lines say which presets and
    variants the bot keeps the contract of and which not; the exit code is 0 when it keeps the
    standard game (with --all: every preset and variant), 1 otherwise.
    """
    spec = parse_bot_spec(bot)
    try:
        tc = TimeControl(budget_ms, bank_ms, grace_ms)
    except ValueError as e:
        _fail(str(e))
    rules: Rules | None = None
    if preset is not None or rule:
        try:
            rules = load_rules(preset, rule or [], None)
        except RulesError as e:
            _fail(str(e))
    if startup_timeout <= 0:
        _fail(f"--startup-timeout must be positive, got {startup_timeout:g}")
    try:
        # One's own bot: the folders of files its command names are its too.
        wanted = SandboxConfig(
            limits=bot_limits(memory_mb, max_processes, cpus=cpus), env=check_env_entries(bot_env or []), command_files=True
        )
        sandbox_config, warning = choose_sandbox(sandbox, wanted) if spec.launched else (None, "")
    except ValueError as e:
        _fail(str(e))
    if warning:
        err.print(f"[yellow]{escape(warning)}[/]", highlight=False, soft_wrap=True)
    where = "at its address" if not spec.launched else ("sandboxed" if sandbox_config is not None else "unsandboxed")
    err.print(escape(f"checking {spec.text} ({where}; {tc.describe()})"), highlight=False, soft_wrap=True)

    def on_result(result: CheckResult) -> None:
        if not as_json:
            out.print(result_line(result), highlight=False, soft_wrap=True)

    # Ctrl-C stops the check (asyncio.Runner cancels it) even where SIGINT was inherited ignored.
    with ctrl_c_interrupts(), asyncio.Runner() as runner:
        try:
            report = runner.run(
                check_bot(
                    spec,
                    time_control=tc,
                    startup_timeout_s=startup_timeout,
                    launcher=LocalLauncher(sandbox=sandbox_config),
                    on_result=on_result,
                    cases=cases_for(rules),
                )
            )
        except KeyboardInterrupt:
            err.print("interrupted; the bot is stopped", highlight=False)
            raise typer.Exit(130) from None
    kept = rules_kept(report) if rules is None else None
    ok = report.passed if kept is None or require_all else not kept["standard"]
    if as_json:
        data = report.to_dict()
        if kept is not None:
            data["rules_kept"] = {name: not failed for name, failed in kept.items()}
        data["exit_code"] = 0 if ok else 1
        typer.echo(json.dumps(data, indent=2))
    else:
        lines = [ln for ln in report.output_tail.splitlines() if ln.strip()][-LAST_LINES:]
        # A bot that did not start has its last output in the failed check's reason already.
        shown = any(lines and lines[-1] in r.reason for r in report.failures)
        if not report.passed and lines and not shown:
            out.print(Text("last output of the bot:", style="bold"))
            out.print(Text("\n".join("  " + printable(ln) for ln in lines), style="dim"), soft_wrap=True)
        out.print(summary_line(report), highlight=False)
        if kept is not None and not report.passed:
            out.print(kept_line(kept), highlight=False, soft_wrap=True)
            if ok:
                out.print(
                    "it keeps the standard game, so this exits 0 (--all: require every preset and variant; "
                    "--preset: check one)",
                    highlight=False,
                    soft_wrap=True,
                )
    raise typer.Exit(0 if ok else 1)
