"""Options shared by several commands: rules (a preset, a TOML file, overrides) and the sandbox."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from referee.bots.sandbox import BotLimits
from referee.cli.console import fail
from referee.game import MAX_PLAYERS, MIN_PLAYERS, Rules, RulesError
from referee.game.errors import shown, shown_in
from referee.game.rules import parse_overrides, rules_from_mapping


def load_rules(preset: str | None, rule: Sequence[str], rules_file: Path | None) -> Rules:
    """``--rules-file`` first (its own ``preset`` unless ``--preset`` is given), then ``--rule``s."""
    table: dict[str, object] = {}
    if rules_file is not None:
        try:
            data = tomllib.loads(rules_file.read_text(encoding="utf-8"))
        except OSError as e:
            raise RulesError(f"cannot read the rules file {rules_file}: {e.strerror or e}") from None
        except (tomllib.TOMLDecodeError, ValueError) as e:
            # ValueError: a number of more digits than Python reads (4300).
            raise RulesError(f"the rules file {rules_file} is not valid TOML: {shown_in(str(e))}") from None
        section = data.get("rules", data)
        if not isinstance(section, dict):
            raise RulesError(f"{rules_file}: [rules] must be a table of options")
        table = dict(section)
    if preset is not None:
        table["preset"] = preset
    rules = rules_from_mapping(table)
    return rules.with_options(parse_overrides(rule)) if rule else rules


# ---------------------------------------------------------------- numbers on the command line

_SEED_MAX = 2**64 - 1
_MS_MAX = 3_600_000

#: What each numeric option accepts, checked before a command touches anything (no folder
#: made, no bot started), so that a bad number is an error naming the option. The bounds are
#: those of the settings the options feed (TimeControl, BotLimits, TournamentSettings).
RANGES: dict[str, tuple[int, int | None]] = {
    "--seed": (0, _SEED_MAX),
    "--budget-ms": (1, _MS_MAX),
    "--bank-ms": (0, _MS_MAX),
    "--grace-ms": (0, _MS_MAX),
    "--max-strikes": (1, 1000),
    "--memory-mb": (64, 1 << 20),
    "--max-processes": (8, 100_000),
    "--table-size": (MIN_PLAYERS, MAX_PLAYERS),
    "--games": (1, 100_000),
    "--jobs": (1, None),
    "--port": (0, 65535),
}


def check_numbers(values: dict[str, int | None]) -> None:
    """Fail with an error naming the first option whose value is out of its :data:`RANGES`
    (None: not given)."""
    for option, value in values.items():
        low, high = RANGES[option]
        if value is None or (low <= value and (high is None or value <= high)):
            continue
        if high is None:
            fail(f"{option} must be a whole number of at least {low}, got {shown(value)}")
        top = "2**64-1" if high == _SEED_MAX else str(high)
        fail(f"{option} must be a whole number from {low} to {top}, got {shown(value)}")


# ---------------------------------------------------------------- the bots' sandbox

SandboxOpt = Annotated[
    str,
    typer.Option(
        "--sandbox",
        help="Run each bot in a bubblewrap sandbox: auto (where the machine can), on (or fail), off.",
    ),
]
#: The clock of a match (``match``, ``check-bot``); tournaments store theirs in their settings.
BudgetOpt = Annotated[int, typer.Option("--budget-ms", help="Time per decision, ms (1 to 3600000).")]
GraceOpt = Annotated[int, typer.Option("--grace-ms", help="Allowance for transport delays, ms (0 to 3600000).")]
MemoryOpt = Annotated[int, typer.Option("--memory-mb", help="Memory a sandboxed bot may use, MiB (64 to 1048576).")]
CpusOpt = Annotated[
    float, typer.Option("--cpus", help="CPU time a sandboxed bot may use, in CPUs over all its processes (0.01 to 1024).")
]
ProcessesOpt = Annotated[
    int, typer.Option("--max-processes", help="Processes and threads a sandboxed bot may run (8 to 100000).")
]
BotEnvOpt = Annotated[
    list[str] | None,
    typer.Option("--bot-env", help="Pass an environment variable to the bots: NAME (its value here) or NAME=VALUE (repeatable)."),
]


def bot_limits(memory_mb: int, processes: int, base: BotLimits | None = None, cpus: float | None = None) -> BotLimits:
    """Limits from the command line's options on top of ``base``; ValueError names a bad one."""
    base = base or BotLimits()
    try:
        return replace(base, memory_mb=memory_mb, processes=processes, cpus=base.cpus if cpus is None else cpus)
    except ValueError as e:
        # The option as the user typed it, not the field's name.
        text = str(e).replace("limit memory_mb", "--memory-mb").replace("limit processes", "--max-processes")
        raise ValueError(shown_in(text.replace("limit cpus", "--cpus"))) from None
