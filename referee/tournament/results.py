"""The result of one match as a typed record, and its stored JSON (one place converts both ways).

The runner stores each finished match's result as JSON in the tournament's (and the arena's)
database. :class:`MatchResult` and :class:`SeatResult` are that JSON as frozen dataclasses:
:meth:`MatchResult.from_json` reads what the readers have always accepted (rows written by
older versions lack newer keys: they read as the defaults the readers used), and
:meth:`MatchResult.to_json` gives back the very JSON it was read from, key for key and in the
same order, so that a row read and written again stays byte for byte what it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The keys of a seat, in the order the runner writes them.
SEAT_KEYS = (
    "bot", "placing", "lives_lost", "rounds", "faults", "forfeited", "decisions",
    "total_latency_us", "max_latency_us", "late", "chips", "absent",
)
#: The keys of a match, in the order the runner writes them.
MATCH_KEYS = ("placings", "winner", "reason", "rounds", "seats")


class ResultError(ValueError):
    """A stored result is not the JSON of a match result."""


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ResultError(f"{what} is {value!r}, not a whole number")
    try:
        return int(value)
    except ValueError:
        raise ResultError(f"{what} is {value!r}, not a whole number") from None


@dataclass(frozen=True, slots=True)
class SeatResult:
    """What one seat did in a match: its placing, lives and rounds, faults and timing."""

    bot: str = ""
    placing: int = 0
    lives_lost: int = 0
    #: Rounds this seat was dealt into.
    rounds: int = 0
    #: Faults by kind (the wire's names, as the writer spelled them).
    faults: Mapping[str, int] = field(default_factory=dict)
    forfeited: bool = False
    decisions: int = 0
    total_latency_us: int = 0
    max_latency_us: int = 0
    #: Answers that came after the budget but within the grace.
    late: int = 0
    #: Net chips under ``scoring="pot"``.
    chips: int = 0
    #: Why the seat did not play ("" when it did): it never started, or was disqualified.
    absent: str = ""
    #: The keys the JSON holds, in its order (older rows lack newer keys; ``late``, ``chips``
    #: and ``absent`` are written only when they apply).
    stored: tuple[str, ...] = ()
    #: Keys this version does not know, kept as they were.
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def played(self) -> bool:
        """Whether the seat played (its bot started and was not disqualified)."""
        return "absent" not in self.stored

    @classmethod
    def from_json(cls, data: Any, where: str = "seat") -> SeatResult:
        """A seat from its stored JSON (an object; missing keys read as their defaults)."""
        if not isinstance(data, Mapping):
            raise ResultError(f"{where} is {data!r}, not an object")
        values: dict[str, Any] = {}
        for k in ("placing", "lives_lost", "rounds", "decisions", "total_latency_us", "max_latency_us", "late", "chips"):
            if k in data:
                values[k] = _int(data[k], f"{where}'s {k}")
        if "bot" in data:
            values["bot"] = str(data["bot"])
        if "forfeited" in data:
            values["forfeited"] = bool(data["forfeited"])
        if "absent" in data:
            values["absent"] = str(data["absent"])
        if "faults" in data:
            faults = data["faults"] or {}
            if not isinstance(faults, Mapping):
                raise ResultError(f"{where}'s faults are {faults!r}, not an object")
            values["faults"] = {str(kind): _int(n, f"{where}'s {kind} faults") for kind, n in faults.items()}
        extra = tuple((str(k), v) for k, v in data.items() if k not in SEAT_KEYS)
        return cls(**values, stored=tuple(str(k) for k in data), extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The seat's stored JSON: the keys it was read with (or made with), in their order."""
        extra = dict(self.extra)
        out: dict[str, Any] = {}
        for k in self.stored:
            if k == "faults":
                out[k] = dict(self.faults)
            elif k in SEAT_KEYS:
                out[k] = getattr(self, k)
            else:
                out[k] = extra[k]
        return out


@dataclass(frozen=True, slots=True)
class MatchResult:
    """A finished match: every seat's placing, the winner, why it ended, the rounds, and each seat."""

    #: Placing of each seat (1 = best; seats that tie share a place).
    placings: tuple[int, ...]
    #: The winning seat (None: nobody won alone).
    winner: int | None = None
    #: Why the match ended, as the log says.
    reason: str = ""
    #: Rounds played.
    rounds: int = 0
    seats: tuple[SeatResult, ...] = ()
    #: The keys the JSON holds, in its order (older rows may lack some).
    stored: tuple[str, ...] = MATCH_KEYS
    #: Keys this version does not know, kept as they were.
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def has_seats(self) -> bool:
        """Whether the row holds each seat's figures (the oldest rows hold placings alone)."""
        return "seats" in self.stored

    def seat(self, s: int) -> SeatResult:
        """Seat ``s``'s figures (all defaults when the row holds none)."""
        return self.seats[s] if self.has_seats else SeatResult()

    @classmethod
    def from_json(cls, data: Any) -> MatchResult:
        """A match result from its stored JSON (an object with ``placings`` at least)."""
        if not isinstance(data, Mapping):
            raise ResultError(f"a match result is {data!r}, not an object")
        if "placings" not in data or not isinstance(data["placings"], (list, tuple)):
            raise ResultError(f"a match result has no list of placings: {data!r}")
        placings = tuple(_int(p, "a placing") for p in data["placings"])
        values: dict[str, Any] = {}
        if "winner" in data:
            w = data["winner"]
            values["winner"] = None if w is None else _int(w, "the winner")
        if "reason" in data:
            values["reason"] = str(data["reason"])
        if "rounds" in data:
            values["rounds"] = _int(data["rounds"], "the rounds")
        if "seats" in data:
            seats = data["seats"] or []
            if not isinstance(seats, (list, tuple)):
                raise ResultError(f"a match result's seats are {seats!r}, not a list")
            values["seats"] = tuple(SeatResult.from_json(s, f"seat {i}") for i, s in enumerate(seats))
        extra = tuple((str(k), v) for k, v in data.items() if k not in MATCH_KEYS)
        return cls(placings, **values, stored=tuple(str(k) for k in data), extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The match's stored JSON: the keys it was read with (or made with), in their order."""
        extra = dict(self.extra)
        out: dict[str, Any] = {}
        for k in self.stored:
            if k == "placings":
                out[k] = list(self.placings)
            elif k == "seats":
                out[k] = [s.to_json() for s in self.seats]
            elif k in MATCH_KEYS:
                out[k] = getattr(self, k)
            else:
                out[k] = extra[k]
        return out
