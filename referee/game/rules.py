"""Rule options and presets (docs/rules.md, "Rules options", "Presets" and "Variants"),
validated, with overrides from Python, ``key=value`` strings and TOML text."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from referee.game.errors import RulesError, shown, shown_in

ThreeOfAKind = Literal["30.5", "30", "off"]
KnockBan = Literal["first_turn", "none", "first_lap"]
EmptyStock = Literal["reshuffle", "showdown"]
KnockerTied = Literal["double", "safe", "single"]
Blitz = Literal["immediate"]
Draw = Literal["stock", "widow"]
Scoring = Literal["lives", "pot"]

_CHOICES: dict[str, tuple[str, ...]] = {
    "three_of_a_kind": ("30.5", "30", "off"),
    "knock_ban": ("first_turn", "none", "first_lap"),
    "empty_stock": ("reshuffle", "showdown"),
    "knocker_tied": ("double", "safe", "single"),
    "blitz": ("immediate",),
    "draw": ("stock", "widow"),
    "scoring": ("lives", "pot"),
}
# Inclusive ranges of the whole-number options. The upper bounds only keep a typo from
# asking for a match that never ends.
_INT_RANGES: dict[str, tuple[int, int]] = {
    "simultaneous_31_loss": (1, 10),
    "knocker_alone_loss": (1, 10),
    "lives": (1, 99),
    "max_turns_per_round": (1, 100_000),
    "max_rounds": (1, 100_000),
    "pot_rounds": (0, 10_000),
    "ante": (1, 100),
}
_BOOLS = ("flush_may_knock", "bus", "dealer_option", "under_the_gun", "dummy")
# Options that cannot be played together (docs/rules.md, "Variants"): (option, its value, the
# other option, its value). Asking for both is an error naming both.
_CONFLICTS: tuple[tuple[str, Any, str, Any], ...] = (
    ("dealer_option", True, "draw", "widow"),
    ("dummy", True, "draw", "widow"),
)

MIN_PLAYERS = 2
MAX_PLAYERS = 9


@dataclass(frozen=True, slots=True)
class Rules:
    """Every rules option (docs/rules.md, "Rules options"), frozen.

    Build with :meth:`preset` or :meth:`build`.
    """

    three_of_a_kind: ThreeOfAKind = "30.5"
    three_aces: float | None = None
    simultaneous_31_loss: int = 2
    knock_ban: KnockBan = "first_turn"
    min_knock: float = 0
    flush_may_knock: bool = False
    blitz: Blitz = "immediate"
    empty_stock: EmptyStock = "reshuffle"
    max_turns_per_round: int = 200
    knocker_alone_loss: int = 2
    knocker_tied: KnockerTied = "double"
    lives: int = 3
    bus: bool = True
    max_rounds: int = 500
    #: The dealer's option: the dealer may swap a hand card for the up-card before the first
    #: turn (docs/rules.md, "Variants").
    #: Not with ``draw="widow"``.
    dealer_option: bool = False
    #: Knocking under the gun: the round's first player may ``CALL`` (an immediate showdown).
    under_the_gun: bool = False
    #: The dummy hand: a face-down hand that a player may take as a whole turn.
    #: Not with ``draw="widow"``.
    dummy: bool = False
    #: The widow: ``"stock"`` (draw and discard) or ``"widow"`` (swap with three
    #: face-up cards; no stock, up-card or discard pile, and ``empty_stock`` is unused).
    draw: Draw = "stock"
    #: Playing for a pot: ``"lives"`` (docs/rules.md, "Lives and the bus") or ``"pot"``
    #: (antes, a fixed number of rounds,
    #: net chips). Under ``"pot"``, ``lives``, ``bus``, ``knocker_alone_loss``,
    #: ``knocker_tied``, ``simultaneous_31_loss`` and ``max_rounds`` are accepted but unused.
    scoring: Scoring = "lives"
    #: Rounds of a pot match; 0 = three times the seats at the start of the match.
    #: Accepted and unused under ``scoring="lives"``.
    pot_rounds: int = 0
    #: Chips each player still in pays into the pot at every deal. Accepted and unused
    #: under ``scoring="lives"``.
    ante: int = 1
    #: The preset these rules started from (informational; options may differ from it).
    preset_name: str = "standard"

    def __post_init__(self) -> None:
        if self.preset_name not in PRESETS:
            raise RulesError(
                f"unknown preset {self.preset_name!r}{_did_you_mean(self.preset_name, PRESETS)}; "
                f"presets are: {', '.join(PRESETS)}"
            )
        for f in fields(self):
            if f.name != "preset_name":
                _check(f.name, getattr(self, f.name))
        for a, va, b, vb in _CONFLICTS:
            if getattr(self, a) == va and getattr(self, b) == vb:
                raise RulesError(
                    f"rule options {a!r}={_text(va)} and {b!r}={_text(vb)} cannot be played "
                    f"together (docs/rules.md, 'Variants'); drop one of them"
                )

    @staticmethod
    def preset(name: str) -> Rules:
        """The rules of a named preset: ``standard``, ``pagat``, ``family``, ``cadillac`` or
        ``bicycle``."""
        try:
            overrides = PRESETS[name]
        except (KeyError, TypeError):
            raise RulesError(
                f"unknown preset {name!r}{_did_you_mean(name, PRESETS)}; presets are: {', '.join(PRESETS)}"
            ) from None
        return Rules(preset_name=name, **overrides)

    @staticmethod
    def build(preset: str = "standard", overrides: Mapping[str, Any] | None = None) -> Rules:
        """A preset with options set on top; values may be typed or text."""
        base = Rules.preset(preset)
        return base.with_options(overrides or {})

    def with_options(self, overrides: Mapping[str, Any]) -> Rules:
        """A copy with some options changed. Raises :class:`RulesError` naming a bad one."""
        clean: dict[str, Any] = {}
        for key, value in overrides.items():
            if key not in OPTION_NAMES:
                raise RulesError(f"unknown rule option {key!r}{_did_you_mean(key, OPTION_NAMES)}; options are: {', '.join(OPTION_NAMES)}")
            clean[key] = coerce_option(key, value)
        return replace(self, **clean)

    def options(self) -> dict[str, Any]:
        """The options as a plain dict (no preset name), e.g. for logs and TOML."""
        return {name: getattr(self, name) for name in OPTION_NAMES}

    def differences(self) -> dict[str, Any]:
        """Options that differ from this rules' preset."""
        base = Rules.preset(self.preset_name)
        return {k: v for k, v in self.options().items() if getattr(base, k) != v}

    def describe(self) -> str:
        """Short text such as ``standard`` or ``pagat + lives=4``."""
        diff = self.differences()
        if not diff:
            return self.preset_name
        return self.preset_name + " + " + ", ".join(f"{k}={_text(v)}" for k, v in diff.items())


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Rules) if f.name != "preset_name")

PRESETS: dict[str, dict[str, Any]] = {
    "standard": {},
    "pagat": {
        "three_of_a_kind": "off",
        "knocker_alone_loss": 2,
        "knocker_tied": "safe",
        "knock_ban": "none",
        "empty_stock": "showdown",
    },
    "family": {
        "three_of_a_kind": "30.5",
        "knocker_alone_loss": 1,
        "knocker_tied": "single",
        "knock_ban": "none",
        "bus": False,
    },
    # The variant presets: standard with four lives and the Grand Cadillac.
    "cadillac": {"lives": 4, "three_aces": 33},
    # ... and pagat's rules, played with the widow for a pot.
    "bicycle": {
        "three_of_a_kind": "off",
        "knocker_alone_loss": 2,
        "knocker_tied": "safe",
        "knock_ban": "none",
        "empty_stock": "showdown",
        "draw": "widow",
        "scoring": "pot",
    },
}


def _text(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _accepts(name: str) -> str:
    if name in _CHOICES:
        return "one of " + ", ".join(repr(c) for c in _CHOICES[name])
    if name in _INT_RANGES:
        lo, hi = _INT_RANGES[name]
        return f"a whole number from {lo} to {hi}"
    if name in _BOOLS:
        return "true or false"
    if name == "three_aces":
        return "null or a number from 1 to 100 in steps of 0.5 (e.g. 32.5, 33)"
    if name == "min_knock":
        return "a number from 0 to 31 in steps of 0.5 (0 = any hand may knock)"
    return "?"  # pragma: no cover - every option is listed above


def _did_you_mean(word: object, names: Iterable[str]) -> str:
    """`` (did you mean 'pagat'?)`` for the name nearest to a mistyped ``word``, else ""."""
    if not isinstance(word, str):
        return ""
    import difflib  # only for an error's hint: not at every import of the game model

    near = difflib.get_close_matches(word.lower(), list(names), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _bad(name: str, value: Any) -> RulesError:
    hint = _did_you_mean(value, map(str, _CHOICES[name])) if name in _CHOICES else ""
    return RulesError(f"rule option {shown(name)} got {shown(value)}{hint}; it accepts {_accepts(name)}")


def _is_half_step(x: float) -> bool:
    return math.isfinite(x) and float(x * 2).is_integer()


def _check(name: str, value: Any) -> None:
    """Validate an already-typed option value."""
    if name in _CHOICES:
        if value not in _CHOICES[name]:
            raise _bad(name, value)
    elif name in _INT_RANGES:
        lo, hi = _INT_RANGES[name]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise _bad(name, value)
    elif name in _BOOLS:
        if not isinstance(value, bool):
            raise _bad(name, value)
    elif name == "three_aces":
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not _is_half_step(value)
            or not 1 <= value <= 100
        ):
            raise _bad(name, value)
    elif name == "min_knock" and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not _is_half_step(value)
        or not 0 <= value <= 31
    ):
        raise _bad(name, value)


def coerce_option(name: str, value: Any) -> Any:
    """Turn a typed or text value into the option's type, validating it."""
    if name not in OPTION_NAMES:
        raise RulesError(f"unknown rule option {name!r}{_did_you_mean(name, OPTION_NAMES)}; options are: {', '.join(OPTION_NAMES)}")
    v: Any = value
    if isinstance(value, str):
        s = value.strip()
        low = s.lower()
        if name in _CHOICES:
            v = s
        elif name in _BOOLS:
            if low in ("true", "yes", "on", "1"):
                v = True
            elif low in ("false", "no", "off", "0"):
                v = False
            else:
                raise _bad(name, value)
        elif name in _INT_RANGES:
            try:
                v = int(s)
            except ValueError:
                raise _bad(name, value) from None
        elif name == "three_aces" and low in ("null", "none", ""):
            v = None
        else:
            try:
                v = float(s)
            except ValueError:
                raise _bad(name, value) from None
    elif name == "three_of_a_kind" and isinstance(value, int | float) and not isinstance(value, bool):
        # TOML authors write 30.5 or 30 without quotes.
        v = {30.5: "30.5", 30: "30"}.get(float(value), value)
    if (name in ("three_aces", "min_knock") or name in _INT_RANGES) and isinstance(v, float) and v.is_integer():
        # TOML and JSON writers may give 3.0 for 3.
        v = int(v)
    _check(name, v)
    return v


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """Read ``key=value`` strings (as given to ``--rule``) into typed options."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise RulesError(f"a rule must be written key=value, got {shown(item)}")
        out[key] = coerce_option(key, value)
    return out


def rules_from_mapping(data: Mapping[str, Any], default_preset: str = "standard") -> Rules:
    """Rules from a mapping such as a parsed TOML ``[rules]`` table; ``preset`` picks the base."""
    opts = dict(data)
    preset = opts.pop("preset", default_preset)
    if not isinstance(preset, str):
        raise RulesError(f"'preset' must be a name, got {shown(preset)}; presets are: {', '.join(PRESETS)}")
    return Rules.build(preset, opts)


def rules_from_toml(text: str) -> Rules:
    """Rules from TOML text: options at the top level or in a ``[rules]`` table."""
    import tomllib  # here, not at the top: a bot imports the game model at every start

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as e:
        # ValueError: a number of more digits than Python reads (4300).
        raise RulesError(f"the rules are not valid TOML: {shown_in(str(e))}") from None
    table = data.get("rules", data)
    if not isinstance(table, dict):
        raise RulesError("[rules] must be a table of options")
    return rules_from_mapping(table)


def rules_to_toml(rules: Rules) -> str:
    """TOML text that :func:`rules_from_toml` reads back to the same rules."""
    lines = ["[rules]", f'preset = "{rules.preset_name}"']
    for k, v in rules.options().items():
        if v is None:
            continue  # TOML has no null; an absent three_aces means null
        if isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, str):
            lines.append(f'{k} = "{v}"')
        else:
            lines.append(f"{k} = {v}")
    return "\n".join(lines) + "\n"
