"""``thirtyone match``: play one match between bots and print what happened."""

from __future__ import annotations

import asyncio
import errno
import os
import shlex
import signal
import tempfile
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from referee.bots import BotSpec, LocalLauncher, parse_bot_spec
from referee.bots.sandbox import (
    CPUS_MAX,
    CPUS_MIN,
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
    check_numbers,
    load_rules,
)
from referee.faults import BotError
from referee.game import MAX_PLAYERS, MIN_PLAYERS, RoundEnd, RoundResult, RulesError
from referee.match import (
    DEFAULT_MAX_STRIKES,
    MatchConfig,
    MatchOutcome,
    new_seed,
    run_match_async,
    seeded_match_id,
)
from referee.text import plural, printable
from referee.timecontrol import TimeControl

_DEFAULT_TC = TimeControl()
_DEFAULT_LIMITS = BotLimits()


def _fail(message: str, code: int = 2) -> NoReturn:
    fail(message, code)


def _log_path(log: str | None, match_id: str, *, force: bool = False) -> Path:
    """The log file: ``--log`` (an existing folder, or a path ending in ``/``, is a folder,
    made if needed, that gets the default name), else the current directory, else the
    temporary directory if the current one is not writable.

    The default name never overwrites an earlier log: the same seed gives the same match id,
    so playing a match again gets ``thirtyone-match-ID-2.jsonl`` beside the first one. A file
    named explicitly is overwritten only with ``force`` (an empty one holds nothing to lose).
    """
    if log is None:
        here = Path.cwd()
        folder = here if os.access(here, os.W_OK) else Path(tempfile.gettempdir())
    # The text as typed: Path() drops a trailing separator, which is what marks a new folder.
    elif log.endswith(("/", os.sep)) or Path(log).is_dir():
        folder = Path(log)
    else:
        path = Path(log)
        if not force and path.is_file() and path.stat().st_size > 0:
            _fail(
                f"the match log {path} exists; give --force to overwrite it, "
                f"or a folder (--log {shlex.quote(str(path.parent) + os.sep)}) to get a new name"
            )
        return path
    path = folder / f"thirtyone-match-{match_id}.jsonl"
    n = 2
    while path.exists():
        path = folder / f"thirtyone-match-{match_id}-{n}.jsonl"
        n += 1
    return path


def again_command(ctx: typer.Context, seed: int) -> str:
    """The command that plays the ``thirtyone match`` of ``ctx`` again: the same bots and every
    option given, with ``--seed`` (``--log`` and ``--force`` left out, so that the first log
    is kept)."""
    words = ["thirtyone", "match"]
    for param in ctx.command.params:
        name = param.name
        if name is None or name in ("seed", "log", "force"):
            continue
        # Only what was typed: defaults may change between versions, and the line stays short.
        source = ctx.get_parameter_source(name)
        if source is None or source.name not in ("COMMANDLINE", "ENVIRONMENT"):
            continue
        value = ctx.params[name]
        values = list(value) if isinstance(value, list | tuple) else [value]
        if param.param_type_name == "argument":
            words += [str(v) for v in values]
        elif isinstance(value, bool):
            words += [param.opts[0]] if value else []
        else:
            for v in values:
                words += [param.opts[0], str(v)]
    return shlex.join([*words, "--seed", str(seed)])


def _check_writable(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as e:
        _fail(f"cannot write the match log {path}: {e.strerror or e}")


@app.command("match")
def match_command(
    ctx: typer.Context,
    bots: Annotated[
        list[str],
        typer.Argument(
            help="2 to 9 bots, one per seat: a sample bot's name (greedy), a Python file (./my_bot.py), "
            'a command ("node bot.js"), or a running bot\'s address (grpc://host:port, unix:///path); '
            "optionally NAME=... to name it.",
            show_default=False,
        ),
    ],
    preset: Annotated[str | None, typer.Option(help="Rules preset: standard, pagat, family, cadillac or bicycle.")] = None,
    rule: Annotated[list[str] | None, typer.Option("--rule", help="A rule option on top, key=value (repeatable).")] = None,
    rules_file: Annotated[
        Path | None,
        typer.Option("--rules-file", help="Rules from a TOML file: its \\[rules] table (or options at the top level)."),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(help="Match seed, 0 to 2**64-1: the same seed and bots play the same match.", show_default="random, printed"),
    ] = None,
    log: Annotated[
        str | None,
        typer.Option(
            help="Where to write the match log: a file, or a folder (an existing one, or a path ending in /, "
            "made if needed) that gets the default name.",
            show_default="./thirtyone-match-ID.jsonl",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the file given to --log if it exists.")
    ] = False,
    budget_ms: BudgetOpt = _DEFAULT_TC.budget_ms,
    bank_ms: Annotated[
        int, typer.Option("--bank-ms", help="Time bank per seat for the match, ms (0 to 3600000).")
    ] = _DEFAULT_TC.bank_ms,
    grace_ms: GraceOpt = _DEFAULT_TC.grace_ms,
    fault_policy: Annotated[str, typer.Option("--fault-policy", help="lenient or strict.")] = "lenient",
    max_strikes: Annotated[
        int, typer.Option("--max-strikes", help="Faults that forfeit a seat under lenient (1 to 1000).")
    ] = DEFAULT_MAX_STRIKES,
    startup_timeout: Annotated[float, typer.Option("--startup-timeout", help="Seconds a bot gets to start.")] = 10.0,
    match_id: Annotated[
        str | None,
        typer.Option("--match-id", help="Identifier of the match, which the bots see.", show_default="derived from the seed"),
    ] = None,
    sandbox: SandboxOpt = "auto",
    memory_mb: MemoryOpt = _DEFAULT_LIMITS.memory_mb,
    max_processes: ProcessesOpt = _DEFAULT_LIMITS.processes,
    cpus: CpusOpt = _DEFAULT_LIMITS.cpus,
    bot_env: BotEnvOpt = None,
) -> None:
    """Play one match between bots and print the rounds, placings, faults and timings."""
    if not MIN_PLAYERS <= len(bots) <= MAX_PLAYERS:
        _fail(f"a match needs {MIN_PLAYERS} to {MAX_PLAYERS} bots, got {len(bots)}")
    check_numbers(
        {
            "--seed": seed,
            "--budget-ms": budget_ms,
            "--bank-ms": bank_ms,
            "--grace-ms": grace_ms,
            "--max-strikes": max_strikes,
            "--memory-mb": memory_mb,
            "--max-processes": max_processes,
        }
    )
    if not CPUS_MIN <= cpus <= CPUS_MAX:  # NaN too
        _fail(f"--cpus must be a number from {CPUS_MIN:g} to {CPUS_MAX}, got {cpus:g}")
    specs: list[BotSpec] = []
    for text in bots:
        specs.append(parse_bot_spec(text))
    try:
        rules = load_rules(preset, rule or [], rules_file)
    except RulesError as e:
        _fail(str(e))
    try:
        tc = TimeControl(budget_ms, bank_ms, grace_ms)
        config = MatchConfig(rules, tc, fault_policy, max_strikes)  # type: ignore[arg-type]  # checked inside
    except ValueError as e:
        _fail(str(e))
    if not startup_timeout > 0:  # NaN too
        _fail(f"--startup-timeout must be positive, got {startup_timeout:g}")
    the_seed = new_seed() if seed is None else seed
    # Derived from the seed, so that the seed alone replays the match: bots that seed their
    # own randomness from the match id (the random sample bot) play the same moves again.
    the_id = match_id or seeded_match_id(the_seed)
    path = _log_path(log, the_id, force=force)
    try:  # before the log is touched: a refused match leaves no file behind
        limits = bot_limits(memory_mb, max_processes, cpus=cpus)
        # The log exists before any bot starts; a bot whose folder holds it sees an empty file.
        # One's own bots: the folders of files their commands name are theirs too.
        wanted = SandboxConfig(
            limits=limits, hidden=(str(path),), env=check_env_entries(bot_env or []), command_files=True
        )
        sandbox_config, warning = choose_sandbox(sandbox, wanted)
    except ValueError as e:
        _fail(str(e))
    if warning:
        err.print(f"[yellow]{escape(warning)}[/]", highlight=False, soft_wrap=True)
    existed = path.exists()
    _check_writable(path)

    def drop_empty_log() -> bool:
        # A match that never started (a bot failed to start, Ctrl-C meanwhile) leaves no
        # empty log behind; a file that was there before is never removed.
        if not existed and path.is_file() and path.stat().st_size == 0:
            path.unlink(missing_ok=True)
            return True
        return False

    err.print(
        f"match [bold]{escape(the_id)}[/]: seed {the_seed}, {rules.describe()}, {tc.describe()}, "
        f"faults {config.fault_policy}"
        + (f" ({plural(config.max_strikes, 'strike')})" if config.fault_policy == "lenient" else ""),
        highlight=False,
    )
    status = err.status("starting bots...")
    log_shown = False

    def show_log() -> None:
        # Only once there is a log: a match whose bots never start writes none.
        nonlocal log_shown
        if not log_shown:
            err.print(f"log: {path}", highlight=False, markup=False)
            log_shown = True

    def on_round(r: RoundResult) -> None:
        show_log()
        status.update(f"round {r.round_no} done; playing...")

    # Ctrl-C cancels the match's task through a handler of our own, not asyncio.Runner's:
    # the Runner installs its handler only where it finds Python's default one, so in a
    # process started with SIGINT ignored (`thirtyone match ... &` from a script or a CI
    # job) Ctrl-C was dropped and the match played out to exit 0. A second Ctrl-C while the
    # first one's cleanup is under way is ignored; one that comes once the match is over
    # leaves it over (its result is shown).
    interrupted = False
    main_task: asyncio.Task[object] | None = None  # the match's, once it runs

    def on_sigint(signum: int, frame: object) -> None:
        nonlocal interrupted
        if interrupted:
            return  # one stop is enough; the first one's cleanup is under way
        interrupted = True
        if main_task is not None and not main_task.done():
            main_task.get_loop().call_soon_threadsafe(main_task.cancel)

    async def play() -> MatchOutcome:
        nonlocal main_task
        main_task = asyncio.current_task()
        if interrupted:  # Ctrl-C while the loop was being made
            raise asyncio.CancelledError
        return await run_match_async(
            specs,
            seed=the_seed,
            config=config,
            log_path=path,
            match_id=the_id,
            on_round=on_round,
            startup_timeout_s=startup_timeout,
            handle_sigterm=True,
            launcher=LocalLauncher(sandbox=sandbox_config),
        )

    previous_sigint = signal.signal(signal.SIGINT, on_sigint)
    with status, asyncio.Runner() as runner:
        try:
            outcome = runner.run(play())
        except BotError as e:
            drop_empty_log()
            _fail(str(e), code=1)
        except OSError as e:
            drop_empty_log()
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                _fail(f"the match stopped: the disk is full (writing {path})", code=1)
            _fail(f"the match stopped: cannot write the log {path}: {e.strerror or e}", code=1)
        except KeyboardInterrupt:
            where = "no log was written" if drop_empty_log() else f"the log up to now is in {path}"
            err.print(f"interrupted; {where}", highlight=False)
            raise typer.Exit(130) from None
        except asyncio.CancelledError:
            where = "no log was written" if drop_empty_log() else f"the log up to now is in {path}"
            err.print(f"{'interrupted' if interrupted else 'terminated'}; {where}", highlight=False)
            raise typer.Exit(130 if interrupted else 143) from None
        finally:
            signal.signal(signal.SIGINT, previous_sigint)
    show_log()
    out.print(render_outcome(outcome))
    # Two lines: the command that plays the same match again, and the one that shows its log.
    err.print(f"play the same match again: {again_command(ctx, the_seed)}", highlight=False, markup=False, soft_wrap=True)
    err.print(f"see it turn by turn: thirtyone replay {shlex.quote(str(path))}", highlight=False, markup=False, soft_wrap=True)


# ---------------------------------------------------------------- the summary


def _fmt_value(v: float) -> str:
    return f"{v:g}"


def _round_story(r: RoundResult) -> tuple[Text, Text]:
    """How a round ended, and who lost lives and why (under the pot: who won it)."""
    ended = Text()
    if r.dummy_taker is not None:
        ended.append(f"#{r.dummy_taker} took the dummy; ", style="dim")
    if r.end is RoundEnd.NATURAL_31 or r.end is RoundEnd.BLITZ:
        how = "dealt 31" if r.end is RoundEnd.NATURAL_31 else "blitzed 31"
        ended.append(", ".join(f"#{s}" for s in r.thirty_one) + f" {how}")
    elif r.end is RoundEnd.ABANDONED:
        ended.append("abandoned: one seat left")
    else:
        if r.end is RoundEnd.CALL and r.knocker is not None:
            ended.append(f"#{r.knocker} called under the gun")
        elif r.knocker is not None:
            ended.append(f"#{r.knocker} knocked")
        elif r.end is RoundEnd.EMPTY_STOCK:
            ended.append("pass on an empty stock")
        if r.end is RoundEnd.MAX_TURNS:
            ended.append((", " if ended else "") + f"turn limit ({r.turns})")
        values = " ".join(f"#{s}:{_fmt_value(v)}" for s, v in sorted(r.values.items()))
        ended.append(f"; {values}", style="dim")
    lost = Text()
    if r.chips_after:
        # Playing for a pot: who took it (docs/rules.md, "Playing for a pot").
        if r.winners:
            share = r.chips_won[r.winners[0]]
            lost.append(", ".join(f"#{s}" for s in r.winners) + f" +{share}")
            if r.high_card_tie_break:
                lost.append(" (high card)", style="dim")
        else:
            lost.append("nobody", style="dim")
        if r.carried:
            lost.append(f"; {r.carried} left in the pot", style="dim")
        return ended, lost
    for s, n in sorted(r.lives_lost.items()):
        if lost:
            lost.append(", ")
        why = ""
        if r.showdown:
            why = f" (knocker, {_fmt_value(r.values[s])})" if s == r.knocker else f" ({_fmt_value(r.values[s])})"
        lost.append(f"#{s} -{n}{why}")
    if r.eliminated:
        lost.append("; out: " + ", ".join(f"#{s}" for s in r.eliminated), style="bold red")
    if r.sudden_death:
        lost.append("; sudden death: all stay in at 0", style="yellow")
    return ended, lost


#: Lines of a faulty bot's output shown with the faults.
LAST_LINES = 10


def _last_words(outcome: MatchOutcome) -> list[RenderableType]:
    """The last lines each faulty bot wrote (its own text, never markup)."""
    shown: list[RenderableType] = []
    for s in outcome.seats:
        tail = outcome.output_tails[s.seat] if s.seat < len(outcome.output_tails) else ""
        lines = [ln for ln in tail.splitlines() if ln.strip()][-LAST_LINES:]
        if s.faults and lines:
            shown.append(Text(f"last output of #{s.seat} {printable(s.label)}:", style="bold"))
            # The bot's bytes, its escapes shown, never sent to the terminal as they are.
            shown.append(Text("\n".join("  " + printable(ln) for ln in lines), style="dim"))
    return shown


def render_outcome(outcome: MatchOutcome) -> RenderableType:
    """The match summary: seats, rounds, placings, faults, decisions and time per bot."""
    parts: list[RenderableType] = []

    seats = Table(title="Seats", title_justify="left", show_edge=False)
    seats.add_column("seat", justify="right")
    for col in ("bot", "version", "author"):
        seats.add_column(col)
    seats.add_column("source", overflow="fold")
    for s in outcome.seats:
        seats.add_row(
            f"#{s.seat}", Text(printable(s.label)), Text(printable(s.identity.version)), Text(printable(s.identity.author)),
            Text(printable(s.source)),
        )
    parts.append(seats)

    rounds = Table(title="Rounds", title_justify="left", show_edge=False)
    rounds.add_column("#", justify="right")
    rounds.add_column("dealer", justify="right")
    rounds.add_column("ended")
    pot = outcome.rules.scoring == "pot"
    rounds.add_column("pot won" if pot else "lives lost")
    rounds.add_column("chips after" if pot else "tokens after")
    for r in outcome.rounds:
        ended, lost = _round_story(r)
        after = r.chips_after if pot else r.tokens_after
        rounds.add_row(str(r.round_no), f"#{r.dealer}", ended, lost, " ".join(map(str, after)))
    parts.append(rounds)

    if outcome.faults:
        faults = Table(title="Faults", title_justify="left", show_edge=False)
        for col in ("round.turn", "seat", "fault", "strike"):
            faults.add_column(col, justify="right" if col != "fault" else "left")
        faults.add_column("what happened", ratio=1)
        faults.add_column("referee played")
        for f in outcome.faults:
            played = str(f.default_action) if f.default_action is not None else ("forfeit" if f.forfeited else "")
            faults.add_row(
                f"{f.round_no}.{f.turn}",
                f"#{f.seat}",
                Text(f.kind.upper(), style="red"),
                str(f.strike),
                Text(printable(f.message, keep="\n")),
                Text(played, style="bold red" if f.forfeited else ""),
            )
        parts.append(faults)
        parts.extend(_last_words(outcome))

    places = Table(title="Placings", title_justify="left", show_edge=False)
    places.add_column("place", justify="right")
    places.add_column("seat", justify="right")
    places.add_column("bot")
    if outcome.chips:
        places.add_column("net chips", justify="right")
    for col in ("decisions", "mean ms", "max ms", "bank left", "faults"):
        places.add_column(col, justify="right")
    # Answers past the budget and the bank, inside the grace: shown when there were any.
    late = any(s.late for s in outcome.seats)
    if late:
        places.add_column("late", justify="right")
    places.add_column("")
    for s in sorted(outcome.seats, key=lambda s: (s.placing, s.seat)):
        st = s.stats
        note = "winner" if outcome.winner == s.seat else ("forfeited" if s.forfeited else "")
        chips = [f"{outcome.chips[s.seat]:+d}"] if outcome.chips else []
        places.add_row(
            str(s.placing),
            f"#{s.seat}",
            Text(s.label),
            *chips,
            str(st.decisions),
            f"{st.mean_latency_us / 1000:.2f}",
            f"{st.max_latency_us / 1000:.2f}",
            f"{s.bank_left_ms / 1000:.1f} s",
            str(st.faults),
            *([str(s.late)] if late else []),
            Text(note, style="bold green" if note == "winner" else "red"),
        )
    parts.append(places)

    if outcome.winner is not None:
        verdict = Text.assemble("Winner: ", (f"#{outcome.winner} {outcome.seats[outcome.winner].label}", "bold green"))
    elif outcome.reason == "pot_rounds":
        verdict = Text("No winner: a tie for first place on net chips")
    elif outcome.reason == "max_rounds":
        verdict = Text(f"No winner: the round limit ({outcome.rules.max_rounds}) was reached")
    else:
        verdict = Text("No winner: the match was aborted")
    verdict.append(
        f" · {plural(len(outcome.rounds), 'round')} · {plural(outcome.decisions, 'decision')} in {outcome.duration_s:.2f} s"
        f" · seed {outcome.seed}"
    )
    if outcome.chips:
        verdict.append(f" · net chips {' '.join(f'{c:+d}' for c in outcome.chips)}")
        if outcome.pot_left:
            verdict.append(f" · {plural(outcome.pot_left, 'chip')} left in the pot")
    parts.append(verdict)
    return Group(*parts)
