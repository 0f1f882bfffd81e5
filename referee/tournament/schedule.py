"""The round-robin schedule with duplicate deals.

Every table of K bots (every combination; every pair when K = 2) plays N deal seeds, and
each deal seed is played in every cyclic rotation of the seats, so every bot sits in every
seat with the same cards (as duplicate bridge and ACPC poker do, to cancel the deal's luck).

Two other formats use the same deals, rotations and keys:

- a **gauntlet** plays only the tables that hold at least one challenger (never a table of
  the other bots alone), in the same order as the round robin;
- an **SPRT test** (``thirtyone sprt``, :mod:`referee.tournament.sprt`) plays NEW against OLD:
  at two seats the one table ``NEW+OLD``; at more seats the tables ``NEW+field`` and
  ``OLD+field``, each with NEW or OLD in seat 0 and the filler bots after it in the order
  given (not sorted: NEW and OLD must have the same neighbours), both tables playing the
  same deal seed. Its order is deal first (deal, table, rotation), so the test can stop
  at a deal boundary.
"""

from __future__ import annotations

import hmac
from collections.abc import Container, Iterable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from referee.tournament.settings import TournamentSettings

#: The table name an SPRT test's deal seeds derive from: NEW's and OLD's tables share them.
SPRT_DEALS = ("sprt",)


@dataclass(frozen=True, slots=True)
class ScheduledMatch:
    """One match of the schedule."""

    #: Stable identity, e.g. ``greedy+random+threshold/d003/r1``; the results store's key.
    key: str
    table: tuple[str, ...]
    deal: int
    rotation: int
    #: Bot names in seat order (seat 0 first).
    seats: tuple[str, ...]
    seed: int


def deal_seed(tournament_seed: int, table: tuple[str, ...], deal: int) -> int:
    """The match seed of one deal of one table: the same for all its rotations.

    HMAC-SHA256 of the secret tournament seed, so it is reproducible for the organiser and
    unpredictable to bots.
    """
    msg = ("+".join(table) + f"/d{deal}").encode()
    digest = hmac.digest(tournament_seed.to_bytes(8, "big"), msg, "sha256")
    return int.from_bytes(digest[:8], "big")


def table_key(table: tuple[str, ...]) -> str:
    """A table's name: its bots, sorted, joined by ``+``."""
    return "+".join(table)


def build_schedule(
    bots: list[str], table_size: int, games: int, seed: int, *, challengers: tuple[str, ...] | None = None
) -> list[ScheduledMatch]:
    """All matches of the tournament, in a canonical order (table, deal, rotation).

    With ``challengers`` (a gauntlet), only the tables that hold at least one of them.
    """
    if table_size < 2:
        raise ValueError(f"a table has at least 2 seats, got {table_size}")
    if games < 1:
        raise ValueError(f"each table plays at least 1 deal, got {games}")
    names = sorted(bots)
    out: list[ScheduledMatch] = []
    if len(names) < table_size:
        return out
    for table in combinations(names, table_size):
        if challengers is not None and not any(b in challengers for b in table):
            continue
        tkey = table_key(table)
        for d in range(games):
            s = deal_seed(seed, table, d)
            for r in range(table_size):
                seats = table[r:] + table[:r]
                out.append(ScheduledMatch(f"{tkey}/d{d:03d}/r{r}", table, d, r, seats, s))
    return out


def build_sprt_schedule(new: str, old: str, field: tuple[str, ...], games: int, seed: int) -> list[ScheduledMatch]:
    """An SPRT test's matches in deal order (deal, table, rotation); see the module doc."""
    if games < 1:
        raise ValueError(f"a test plays at least 1 deal, got {games}")
    tables = [(new, old)] if not field else [(new, *field), (old, *field)]
    out: list[ScheduledMatch] = []
    for d in range(games):
        s = deal_seed(seed, SPRT_DEALS, d)
        for table in tables:
            tkey = "+".join(table)
            for r in range(len(table)):
                seats = table[r:] + table[:r]
                out.append(ScheduledMatch(f"{tkey}/d{d:03d}/r{r}", table, d, r, seats, s))
    return out


def schedule_for(settings: TournamentSettings, bots: list[str]) -> list[ScheduledMatch]:
    """The schedule of a tournament of these settings with these bots, whatever its format.

    An SPRT test whose bots are not all submitted yet has nothing to play.
    """
    if settings.format == "sprt":
        s = settings.sprt
        assert s is not None  # the settings check it
        if not {s.new, s.old, *s.field} <= set(bots):
            return []
        return build_sprt_schedule(s.new, s.old, s.field, settings.games, settings.seed)
    challengers = settings.challengers if settings.format == "gauntlet" else None
    return build_schedule(bots, settings.table_size, settings.games, settings.seed, challengers=challengers)


#: What a viewer (or the arena's API) says of a finished match whose deal is still in play.
HELD_BACK = "held back until the deal is complete"


class Dealt(Protocol):
    """A scheduled match as the hold-back rule sees it: its key and its deal's seed (a
    :class:`ScheduledMatch`; the arena's rotations of a ladder table, whose deal is named by
    the table)."""

    @property
    def key(self) -> str:
        """The match's key."""
        ...

    @property
    def seed(self) -> int:
        """What names its deal: every match dealt the same cards has the same one."""
        ...


@dataclass(frozen=True, slots=True)
class DealProgress:
    """Which deals of a schedule are complete, for deciding whose replays may be shown.

    The rotations of a deal share one seed and so one deck (an SPRT test's two tables share
    it too): the replay of a finished rotation, or its seed, shows every card of the
    rotations still to be played, which anyone watching could relay to a bot. So a match's
    replay, its log and its seed are public only when its deal is complete (every scheduled
    match dealt from its seed finished) or the whole tournament is finished (an SPRT test
    that stopped at its verdict leaves deals unplayed for good). Whether a match finished,
    and its result, may be shown at once.
    """

    #: The seeds of the deals that have at least one scheduled match not finished.
    in_play: frozenset[int]
    #: Whether the tournament is over: then every replay is public.
    tournament_finished: bool = False

    @staticmethod
    def of(schedule: Iterable[Dealt], done: Container[str], *, tournament_finished: bool = False) -> DealProgress:
        """The progress of ``schedule`` when the matches of the keys in ``done`` are finished."""
        return DealProgress(frozenset(m.seed for m in schedule if m.key not in done), tournament_finished)

    def deal_complete(self, seed: int) -> bool:
        """Whether every scheduled match dealt from ``seed`` (every rotation of the deal) is finished."""
        return seed not in self.in_play

    def replay_public(self, seed: int) -> bool:
        """Whether a finished match dealt from ``seed`` may be replayed (its log and seed shown)."""
        return self.tournament_finished or self.deal_complete(seed)


def deal_complete(seed: int, schedule: Iterable[Dealt], done: Container[str]) -> bool:
    """Whether the deal of ``seed`` is complete: every match of ``schedule`` dealt from it has
    its key in ``done`` (see :class:`DealProgress`, which answers many at once)."""
    return DealProgress.of(schedule, done).deal_complete(seed)


def replay_public(seed: int, schedule: Iterable[ScheduledMatch], done: Container[str], *, tournament_finished: bool) -> bool:
    """Whether a finished match dealt from ``seed`` may be replayed: its deal is complete or the
    tournament is finished (see :class:`DealProgress`)."""
    return DealProgress.of(schedule, done, tournament_finished=tournament_finished).replay_public(seed)


def not_runnable(settings: TournamentSettings, bots: list[str]) -> str | None:
    """Why ``tournament run`` does not play this tournament as it stands (None: it does)."""
    if settings.format == "sprt":
        return "this folder holds an SPRT test; continue it with 'thirtyone sprt --dir FOLDER'"
    missing = [c for c in settings.challengers if c not in bots]
    if settings.format == "gauntlet" and missing:
        if len(missing) == 1:
            return f"the gauntlet's challenger {missing[0]} is not submitted: submit it first"
        return f"the gauntlet's challengers {', '.join(missing)} are not submitted: submit them first"
    return None


def key_of_log(path: Path) -> str:
    """The match key of a tournament log named by :func:`log_name` (``a+b/d000/r1`` from
    ``a+b_d000_r1.jsonl``): the key is the spelling the CLI and the docs use, and bot names
    may hold underscores, so only the last two become slashes."""
    stem = path.name.removesuffix(".jsonl")
    parts = stem.rsplit("_", 2)
    if len(parts) == 3 and parts[1].startswith("d") and parts[2].startswith("r"):
        return "/".join(parts)
    return stem
