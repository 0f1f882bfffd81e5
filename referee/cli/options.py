"""Options shared by several commands: rules from a preset, a TOML file and overrides."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path

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
