"""Options shared by several commands: rules (a preset, a TOML file, overrides) and the sandbox."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from referee.bots.sandbox import BotLimits
from referee.game import Rules, RulesError
from referee.game.rules import parse_overrides, rules_from_mapping


def load_rules(preset: str | None, rule: Sequence[str], rules_file: Path | None) -> Rules:
    """``--rules-file`` first (its own ``preset`` unless ``--preset`` is given), then ``--rule``s."""
    table: dict[str, object] = {}
    if rules_file is not None:
        try:
            data = tomllib.loads(rules_file.read_text(encoding="utf-8"))
        except OSError as e:
            raise RulesError(f"cannot read the rules file {rules_file}: {e.strerror or e}") from None
        except tomllib.TOMLDecodeError as e:
            raise RulesError(f"the rules file {rules_file} is not valid TOML: {e}") from None
        section = data.get("rules", data)
        if not isinstance(section, dict):
            raise RulesError(f"{rules_file}: [rules] must be a table of options")
        table = dict(section)
    if preset is not None:
        table["preset"] = preset
    rules = rules_from_mapping(table)
    return rules.with_options(parse_overrides(rule)) if rule else rules


# ---------------------------------------------------------------- the bots' sandbox

SandboxOpt = Annotated[
    str,
    typer.Option(
        "--sandbox",
        help="Run each bot in a bubblewrap sandbox: auto (where the machine can), on (or fail), off.",
    ),
]
MemoryOpt = Annotated[int, typer.Option("--memory-mb", help="Memory a sandboxed bot may use, MiB.")]
ProcessesOpt = Annotated[int, typer.Option("--max-processes", help="Processes and threads a sandboxed bot may run.")]
BotEnvOpt = Annotated[
    list[str] | None,
    typer.Option("--bot-env", help="Pass an environment variable to the bots: NAME (its value here) or NAME=VALUE (repeatable)."),
]


def bot_limits(memory_mb: int, processes: int, base: BotLimits | None = None) -> BotLimits:
    """Limits from the command line's options on top of ``base``; ValueError names a bad one."""
    base = base or BotLimits()
    try:
        return replace(base, memory_mb=memory_mb, processes=processes)
    except ValueError as e:
        # The option as the user typed it, not the field's name.
        raise ValueError(str(e).replace("limit memory_mb", "--memory-mb").replace("limit processes", "--max-processes")) from None
