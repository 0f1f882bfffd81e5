"""A tournament's settings: rules, table size, deals per table, seed, time control, faults."""

from __future__ import annotations

import os
import re
import secrets
import tomllib
from dataclasses import dataclass, field
from typing import Any

from referee.bots.sandbox import BotLimits, SandboxConfig, check_env_entries, choose_sandbox
from referee.faults import RefereeError
from referee.game import MAX_PLAYERS, Rules, RulesError, rules_from_mapping
from referee.game.errors import shown, shown_in
from referee.text import plural
from referee.timecontrol import TimeControl

FAULT_POLICIES = ("lenient", "strict")
#: ``auto``: sandbox every bot, and refuse to run a tournament where the machine cannot;
#: ``on``: the same, stated; ``off``: run bots unsandboxed (the standings say so).
SANDBOX_MODES = ("auto", "on", "off")
BOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
#: Tournament formats: every table of the bots; only tables with a challenger (a gauntlet);
#: a sequential test of one bot against another (``thirtyone sprt``, see :class:`SprtSettings`).
FORMATS = ("round-robin", "gauntlet", "sprt")


class SettingsError(RefereeError, ValueError):
    """Tournament settings that cannot be used (names the setting and what it accepts)."""


def section(data: dict[str, Any], name: str) -> dict[str, Any]:
    """A copy of table ``name`` of the settings (empty if absent); an error if it is not a table."""
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise SettingsError(f"[{name}] must be a table of settings, got {shown(value)}")
    return dict(value)


def _settings(names: set[str]) -> str:
    return "setting" if len(names) == 1 else "settings"


def check_bot_name(name: str) -> str:
    """A bot's name in a tournament: 1-40 letters, digits, ``_ . -``, starting alphanumeric."""
    if not BOT_NAME.fullmatch(name):
        raise SettingsError(
            f"bot name {name!r} is not allowed: use 1-40 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


@dataclass(frozen=True, slots=True)
class SprtSettings:
    """The ``[sprt]`` settings of a tournament of format ``sprt``: who is tested, with which
    filler bots, and the test's hypotheses and error rates (:mod:`referee.tournament.sprt`)."""

    new: str
    old: str
    #: Filler bots that sit with NEW and with OLD at tables of more than two seats.
    field: tuple[str, ...] = ()
    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05
    #: Take the luck of the cards out of each deal's score (a control variate,
    #: :mod:`referee.analysis.luck`). Off when the table has no ``luck`` key (tests made
    #: before it existed continue as they began); ``thirtyone sprt`` turns it on for new tests.
    luck: bool = False

    def __post_init__(self) -> None:
        from referee.tournament.sprt import SprtError, SprtParams

        if not isinstance(self.luck, bool):
            raise SettingsError(f"[sprt] luck must be true or false, got {self.luck!r}")

        for name in (self.new, self.old, *self.field):
            check_bot_name(name)
        names = [self.new, self.old, *self.field]
        if len(set(names)) != len(names):
            raise SettingsError(f"the bots of an SPRT test must have different names, got {', '.join(names)}")
        try:
            SprtParams(self.elo0, self.elo1, self.alpha, self.beta)
        except SprtError as e:
            raise SettingsError(str(e)) from None

    def to_dict(self) -> dict[str, Any]:
        """The ``[sprt]`` table."""
        return {
            "new": self.new, "old": self.old, "field": list(self.field),
            "elo0": self.elo0, "elo1": self.elo1, "alpha": self.alpha, "beta": self.beta,
            **({"luck": True} if self.luck else {}),
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> SprtSettings:
        """Read the ``[sprt]`` table back."""
        known = {"new", "old", "field", "elo0", "elo1", "alpha", "beta", "luck"}
        unknown = set(data) - known
        if unknown:
            raise SettingsError(f"unknown [sprt] setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        if not isinstance(data.get("new"), str) or not isinstance(data.get("old"), str):
            raise SettingsError("[sprt] needs new and old: the names of the two bots tested")
        return SprtSettings(
            new=data["new"],
            old=data["old"],
            field=_name_list("[sprt] field", data.get("field", [])),
            **{k: data[k] for k in ("elo0", "elo1", "alpha", "beta", "luck") if k in data},
        )


@dataclass(frozen=True, slots=True)
class TournamentSettings:
    """Everything that fixes a tournament's schedule and how its matches are played."""

    rules: Rules = field(default_factory=Rules)
    table_size: int = 2
    games: int = 10
    seed: int = 0
    time_control: TimeControl = field(default_factory=TimeControl)
    fault_policy: str = "lenient"
    max_strikes: int = 3
    sandbox: str = "auto"
    #: What each sandboxed bot may use.
    limits: BotLimits = field(default_factory=BotLimits)
    #: Environment variables passed to the bots: ``NAME`` (the runner's value) or ``NAME=VALUE``.
    bot_env: tuple[str, ...] = ()
    #: Start failures in a row after which a bot is disqualified.
    max_start_failures: int = 3
    #: One of :data:`FORMATS`.
    format: str = "round-robin"
    #: A gauntlet's challengers: every table holds at least one of them.
    challengers: tuple[str, ...] = ()
    #: The test of a tournament of format ``sprt``.
    sprt: SprtSettings | None = None

    def __post_init__(self) -> None:
        if isinstance(self.table_size, bool) or not isinstance(self.table_size, int) or not (
            2 <= self.table_size <= MAX_PLAYERS
        ):
            raise SettingsError(f"table_size must be a whole number from 2 to {MAX_PLAYERS}, got {shown(self.table_size)}")
        if isinstance(self.games, bool) or not isinstance(self.games, int) or not 1 <= self.games <= 100_000:
            raise SettingsError(f"games (deals per table) must be a whole number from 1 to 100000, got {shown(self.games)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**64:
            raise SettingsError(f"seed must be a whole number from 0 to 2**64-1, got {shown(self.seed)}")
        if self.fault_policy not in FAULT_POLICIES:
            raise SettingsError(f"fault_policy must be one of {', '.join(FAULT_POLICIES)}, got {shown(self.fault_policy)}")
        if isinstance(self.max_strikes, bool) or not isinstance(self.max_strikes, int) or not 1 <= self.max_strikes <= 1000:
            raise SettingsError(f"max_strikes must be a whole number from 1 to 1000, got {shown(self.max_strikes)}")
        if self.sandbox not in SANDBOX_MODES:
            raise SettingsError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}, got {shown(self.sandbox)}")
        try:
            check_env_entries(self.bot_env)
        except ValueError as e:
            raise SettingsError(str(e)) from None
        if (
            isinstance(self.max_start_failures, bool)
            or not isinstance(self.max_start_failures, int)
            or not 1 <= self.max_start_failures <= 1000
        ):
            raise SettingsError(f"max_start_failures must be a whole number from 1 to 1000, got {shown(self.max_start_failures)}")
        self._check_format()

    def _check_format(self) -> None:
        if self.format not in FORMATS:
            raise SettingsError(f"format must be one of {', '.join(FORMATS)}, got {shown(self.format)}")
        for name in self.challengers:
            check_bot_name(name)
        if self.format == "gauntlet" and not self.challengers:
            raise SettingsError("a gauntlet needs challengers: the bots every table holds at least one of")
        if self.format != "gauntlet" and self.challengers:
            raise SettingsError(f"challengers go with format = \"gauntlet\", not {self.format!r}")
        if self.format == "sprt":
            if self.sprt is None:
                raise SettingsError("format = \"sprt\" needs an [sprt] table (new, old, field, elo0, elo1, alpha, beta)")
            if self.table_size != 1 + len(self.sprt.field) and not (self.table_size == 2 and not self.sprt.field):
                raise SettingsError(
                    f"an SPRT test at tables of {self.table_size} seats needs {plural(self.table_size - 1, 'filler bot')} "
                    f"in [sprt] field, got {len(self.sprt.field)}"
                )
        elif self.sprt is not None:
            raise SettingsError(f"an [sprt] table goes with format = \"sprt\", not {self.format!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, stored in the tournament database."""
        return {
            "rules": {"preset": self.rules.preset_name, **self.rules.options()},
            "table_size": self.table_size,
            "games": self.games,
            "seed": self.seed,
            "time_control": {
                "budget_ms": self.time_control.budget_ms,
                "bank_ms": self.time_control.bank_ms,
                "grace_ms": self.time_control.grace_ms,
            },
            "fault_policy": self.fault_policy,
            "max_strikes": self.max_strikes,
            "sandbox": self.sandbox,
            "limits": self.limits.to_dict(),
            "bot_env": list(self.bot_env),
            "max_start_failures": self.max_start_failures,
            # Only where they are not the defaults: a round robin's settings read as before.
            **({"format": self.format} if self.format != "round-robin" else {}),
            **({"challengers": list(self.challengers)} if self.challengers else {}),
            **({"sprt": self.sprt.to_dict()} if self.sprt is not None else {}),
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> TournamentSettings:
        """Read settings back from :meth:`to_dict`'s form (or a parsed TOML file)."""
        known = {
            "rules", "table_size", "games", "seed", "time_control", "fault_policy", "max_strikes", "sandbox",
            "max_start_failures", "limits", "bot_env", "tournament", "format", "challengers", "sprt",
        }
        unknown = set(data) - known
        if unknown:
            raise SettingsError(f"unknown {_settings(unknown)}: {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        flat = section(data, "tournament")
        flat_keys = (
            "table_size", "games", "seed", "fault_policy", "max_strikes", "sandbox", "max_start_failures", "bot_env",
            "format", "challengers",
        )
        for k in flat_keys:
            if k in data:
                flat[k] = data[k]
        unknown_t = set(flat) - set(flat_keys)
        if unknown_t:
            raise SettingsError(f"unknown [tournament] {_settings(unknown_t)}: {', '.join(sorted(unknown_t))}")
        try:
            rules = rules_from_mapping(section(data, "rules"))
        except RulesError as e:
            raise SettingsError(str(e)) from None
        tc_data = section(data, "time_control")
        unknown_tc = set(tc_data) - {"budget_ms", "bank_ms", "grace_ms"}
        if unknown_tc:
            raise SettingsError(f"unknown [time_control] {_settings(unknown_tc)}: {', '.join(sorted(unknown_tc))}")
        try:
            tc = TimeControl(**tc_data)
        except (TypeError, ValueError) as e:
            raise SettingsError(shown_in(str(e))) from None  # the time control echoes the value whole
        return TournamentSettings(
            rules=rules,
            table_size=flat.get("table_size", 2),
            games=flat.get("games", 10),
            seed=flat.get("seed", new_seed()),
            time_control=tc,
            fault_policy=flat.get("fault_policy", "lenient"),
            max_strikes=flat.get("max_strikes", 3),
            sandbox=flat.get("sandbox", "auto"),
            limits=limits_from_mapping(section(data, "limits")),
            bot_env=_env_list(flat.get("bot_env", [])),
            max_start_failures=flat.get("max_start_failures", 3),
            format=flat.get("format", "round-robin"),
            challengers=_name_list("challengers", flat.get("challengers", [])),
            sprt=SprtSettings.from_dict(section(data, "sprt")) if "sprt" in data else None,
        )

    @staticmethod
    def from_toml(text: str) -> TournamentSettings:
        """Settings from a TOML file's text: ``[tournament]``, ``[rules]``, ``[time_control]``."""
        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, ValueError) as e:
            # ValueError: a number of more digits than Python reads (4300).
            raise SettingsError(f"not valid TOML: {shown_in(str(e))}") from None
        return TournamentSettings.from_dict(data)

    def sandbox_config(self, folder: str | os.PathLike[str]) -> SandboxConfig | None:
        """The sandbox for the bots of the tournament in ``folder`` (None: ``sandbox = "off"``).

        Raises :class:`~referee.bots.sandbox.SandboxError` where the machine cannot sandbox:
        a tournament never falls back to running bots unsandboxed on its own.
        """
        wanted = SandboxConfig(limits=self.limits, hidden=(os.fspath(folder),), env=self.bot_env)
        return choose_sandbox(self.sandbox, wanted, required=True)[0]

    def describe(self) -> str:
        """One line for headers: rules, table size, deals, time control."""
        return (
            f"rules {self.rules.describe()} · {self.table_size} seats/table · {self.games} deal{'' if self.games == 1 else 's'}/table "
            f"× {self.table_size} rotations · {self.time_control.describe()} · faults {self.fault_policy}"  # noqa: RUF001
            f" · sandbox {self.sandbox}" + self._describe_format()
        )

    def _describe_format(self) -> str:
        if self.format == "gauntlet":
            return f" · gauntlet of {', '.join(self.challengers)}"
        if self.sprt is not None:
            s = self.sprt
            field = f" with {', '.join(s.field)}" if s.field else ""
            return (
                f" · SPRT {s.new} vs {s.old}{field}: elo0 {s.elo0:g}, elo1 {s.elo1:g}, "
                f"alpha {s.alpha:g}, beta {s.beta:g}, at most {self.games} deals"
            )
        return ""


def limits_from_mapping(data: dict[str, Any]) -> BotLimits:
    """A bot's limits from a ``[limits]`` table; unknown keys and bad values name themselves."""
    known = set(BotLimits().to_dict())
    unknown = set(data) - known
    if unknown:
        raise SettingsError(f"unknown [limits] {_settings(unknown)}: {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    try:
        return BotLimits(**data)
    except ValueError as e:
        raise SettingsError(shown_in(str(e))) from None  # the limits echo the value whole


def _name_list(what: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{what} must be a list of bot names, got {shown(value)}")
    return tuple(value)


def _env_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"bot_env must be a list of NAME or NAME=VALUE texts, got {shown(value)}")
    return tuple(value)


def new_seed() -> int:
    """A fresh random tournament seed."""
    return secrets.randbits(63)
