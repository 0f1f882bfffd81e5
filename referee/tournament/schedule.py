"""The round-robin schedule with duplicate deals.

Every table of K bots (every combination; every pair when K = 2) plays N deal seeds, and
each deal seed is played in every cyclic rotation of the seats, so every bot sits in every
seat with the same cards (as duplicate bridge and ACPC poker do, to cancel the deal's luck).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from itertools import combinations


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


def build_schedule(bots: list[str], table_size: int, games: int, seed: int) -> list[ScheduledMatch]:
    """All matches of the tournament, in a canonical order (table, deal, rotation)."""
    if table_size < 2:
        raise ValueError(f"a table has at least 2 seats, got {table_size}")
    if games < 1:
        raise ValueError(f"each table plays at least 1 deal, got {games}")
    names = sorted(bots)
    out: list[ScheduledMatch] = []
    if len(names) < table_size:
        return out
    for table in combinations(names, table_size):
        tkey = table_key(table)
        for d in range(games):
            s = deal_seed(seed, table, d)
            for r in range(table_size):
                seats = table[r:] + table[:r]
                out.append(ScheduledMatch(f"{tkey}/d{d:03d}/r{r}", table, d, r, seats, s))
    return out
