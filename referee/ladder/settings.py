"""An arena's settings: one typed object, read from ``arena.toml`` in its folder.

How matches are played (rules, table size, clock, fault policy, sandbox, limits) is a
:class:`~referee.tournament.settings.TournamentSettings`, the tournament's own object, so a
ladder match is played exactly as a tournament match is. The rest is the arena's: how many
versions of a user's bot play, uploads' limits, placement. The rules and the table size are
fixed for the arena's life: the store keeps them and :func:`load` refuses a file that
changed them.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from referee.ladder.errors import ArenaError
from referee.ladder.scheduler import Rules
from referee.tournament.settings import SettingsError, TournamentSettings

SETTINGS_NAME = "arena.toml"
_PLAY_TABLES = ("rules", "time_control", "limits")


@dataclass(frozen=True, slots=True)
class ArenaSettings:
    """Everything an arena is run by (see the module doc)."""

    #: How each match is played: the tournament's settings object (its ``games`` and
    #: ``seed`` are unused: a ladder table plays one deal, seeded from the arena's secret).
    play: TournamentSettings = field(default_factory=TournamentSettings)
    #: How many of a user's latest active versions of a bot play on the ladder.
    live_versions: int = 1
    #: Versions one user may upload in 24 hours.
    daily_uploads: int = 20
    #: Tables a new version plays, against opponents from across the board, before the
    #: scheduler matches it by rating.
    placement_tables: int = 3
    #: Tables in a row the scheduler gives one choice of versions (a placement table is one
    #: alone): each a deal of its own. A version's process plays one rotation of a deal at
    #: most, and may play the same rotation of several deals; so a series lets a worker's
    #: bots play that many deals before they must be started again.
    series_tables: int = 4
    #: Upload limits: the archive as sent, its unpacked content, its number of entries, and
    #: the unpacked size over the archive size (a zip bomb's is in the thousands).
    max_archive_bytes: int = 8 * 1024 * 1024
    max_unpacked_bytes: int = 64 * 1024 * 1024
    max_files: int = 2000
    max_ratio: int = 200
    #: The official refit runs after this many new results, or this many seconds after the
    #: last one when a result came in meanwhile, whichever comes first; and at once when a
    #: version that finished its placement is not in the fit yet.
    refit_every_results: int = 500
    refit_every_s: int = 30
    #: Fair exposure (:mod:`referee.ladder.scheduler`): over any ``share_window`` consecutive
    #: tables no version sits at more than ``max_share_pct`` percent of its fair share
    #: (``share_window * table_size / active versions`` tables), a reference bot at no more
    #: than ``reference_share_pct`` percent.
    share_window: int = 100
    max_share_pct: int = 150
    reference_share_pct: int = 50
    #: 1: versions of one owner may share a table; 0 (the default): never (in a game of three
    #: or more, one seat could feed another).
    same_owner_tables: int = 0
    #: Failed sign-ins (a wrong token or password) one address may make in a minute.
    failed_logins_per_minute: int = 30
    #: 1: anyone may sign up on the web pages; 0: only with an admin's invite code.
    open_signup: int = 0
    #: Sign-ups one address may try in an hour (each that gets as far as hashing a password).
    signups_per_hour: int = 10
    #: Uploads of one user the arena may refuse in an hour (a refused upload leaves no
    #: version, so the daily limit does not count it) before it refuses every upload of theirs
    #: until the hour has passed.
    refused_uploads_per_hour: int = 20

    def __post_init__(self) -> None:
        bounds = {
            "live_versions": (1, 100), "daily_uploads": (1, 100_000), "placement_tables": (0, 1000),
            "series_tables": (1, 100),
            "max_archive_bytes": (1024, 1 << 34), "max_unpacked_bytes": (1024, 1 << 36),
            "max_files": (1, 1_000_000), "max_ratio": (1, 1_000_000), "refit_every_s": (1, 86_400),
            "refit_every_results": (1, 10_000_000), "share_window": (2, 100_000), "max_share_pct": (100, 10_000),
            "reference_share_pct": (0, 10_000), "same_owner_tables": (0, 1),
            "failed_logins_per_minute": (1, 1_000_000), "open_signup": (0, 1),
            "signups_per_hour": (1, 1_000_000), "refused_uploads_per_hour": (1, 1_000_000),
        }
        for name, (low, high) in bounds.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
                raise ArenaError(f"arena setting {name} must be a whole number from {low} to {high}, got {v!r}")

    def rules(self) -> Rules:
        """The scheduler's rules from these settings."""
        return Rules(
            self.play.table_size, self.placement_tables, self.share_window, self.max_share_pct / 100,
            self.reference_share_pct / 100, bool(self.same_owner_tables),
        )

    def arena_dict(self) -> dict[str, Any]:
        """The arena's own settings (without :attr:`play`)."""
        d = asdict(self)
        d.pop("play")
        return d

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: ``[arena]`` plus the play settings' tables."""
        return {"arena": self.arena_dict(), **_play_dict(self.play)}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> ArenaSettings:
        """Read :meth:`to_dict`'s form (or a parsed ``arena.toml``)."""
        data = dict(data)
        arena = data.pop("arena", {})
        if not isinstance(arena, dict):
            raise ArenaError(f"[arena] must be a table of settings, got {arena!r}")
        known = {f.name for f in fields(ArenaSettings)} - {"play"}
        unknown = set(arena) - known
        if unknown:
            raise ArenaError(f"unknown [arena] setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        data.setdefault("tournament", {}).setdefault("seed", 0)
        try:
            play = TournamentSettings.from_dict(data)
        except SettingsError as e:
            raise ArenaError(f"{SETTINGS_NAME}: {e}") from None
        if play.format != "round-robin":
            raise ArenaError(f"{SETTINGS_NAME}: an arena plays ladder tables; format {play.format!r} is a tournament's")
        return ArenaSettings(play=play, **arena)

    def fixed(self) -> dict[str, Any]:
        """What may never change in an arena's life: its rules and table size."""
        return {"rules": _play_dict(self.play)["rules"], "table_size": self.play.table_size}

    def describe(self) -> list[tuple[str, str]]:
        """Setting and value pairs for people (the CLI and the admin page show them)."""
        p = self.play
        rows = [
            ("rules", p.rules.describe()),
            ("table size", str(p.table_size)),
            ("time control", p.time_control.describe()),
            ("faults", f"{p.fault_policy}, {p.max_strikes} strikes"),
            ("sandbox", p.sandbox),
            ("bot limits", p.limits.describe()),
        ]
        rows += [(k.replace("_", " "), str(v)) for k, v in self.arena_dict().items()]
        return rows


def _play_dict(play: TournamentSettings) -> dict[str, Any]:
    d = play.to_dict()
    d.pop("games")
    d.pop("seed")
    flat = {k: d.pop(k) for k in list(d) if k not in _PLAY_TABLES}
    return {"tournament": flat, **d}


def to_toml(settings: ArenaSettings) -> str:
    """``arena.toml``'s text (tables of scalars and lists of text: all our settings need)."""
    lines = ["# An arena's settings. The rules and the table size are fixed for its life.", ""]
    for table, values in settings.to_dict().items():
        lines.append(f"[{table}]")
        for k, v in values.items():
            if v is None:
                continue  # TOML has no null: an option left out reads back as its default
            lines.append(f"{k} = {_toml_value(v)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")


def load(folder: Path) -> ArenaSettings:
    """The settings of the arena in ``folder``; a clear error if the file is missing or bad."""
    path = folder / SETTINGS_NAME
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ArenaError(f"{folder} is not an arena folder (no {SETTINGS_NAME}); make one with 'thirtyone arena init {folder}'") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ArenaError(f"{path}: not valid TOML: {e}") from None
    try:
        return ArenaSettings.from_dict(data)
    except (TypeError, ValueError) as e:
        raise ArenaError(f"{path}: {e}") from None
