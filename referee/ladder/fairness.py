"""Fair deals anyone can check: seeds from the arena's secret, commitments published first.

A ladder table plays one deal in every seat rotation, so its matches share one seed:
``HMAC-SHA256(secret, "deal/TABLE")``, the first 8 bytes. When the table is scheduled the
arena publishes the seed's commitment, the SHA-256 of its decimal text; when every rotation
is finished it publishes the seed and the logs (which hold the seed too). Anyone can then
check, with :func:`check_commitment`, that the seed is the one committed to before any card
was dealt, and that every round's deal in the log is the one that seed gives; the ordinary
verification (``thirtyone replay --verify``) checks every action against the game model.

(Restocks reshuffle the discard pile, cards every seat has seen; their order is checked by
the ordinary verification to be an order of the right cards, not re-derived here.)
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from referee.faults import LogError
from referee.game.cards import DECK, Card
from referee.game.chance import SeededChance
from referee.game.state import DealRecord, Match, Record
from referee.log import LogWatcher, Position, read_log, walk_log


def deal_seed(secret: bytes, table_id: int) -> int:
    """The seed of ladder table ``table_id``'s deal (the same for all its rotations)."""
    return int.from_bytes(hmac.digest(secret, f"deal/{table_id}".encode(), "sha256")[:8], "big")


def commitment(seed: int) -> str:
    """The public commitment to a seed: SHA-256 of its decimal text, in hex."""
    return hashlib.sha256(str(seed).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CommitmentCheck:
    """What :func:`check_commitment` found."""

    ok: bool
    detail: str


class _Deals(LogWatcher):
    def __init__(self, seed: int) -> None:
        self.chance = SeededChance(seed)
        self.wrong: list[str] = []
        self.rounds = 0

    def produced(self, at: Position, kind: str, record: Record, match: Match) -> None:
        if kind == "deal" and isinstance(record, DealRecord):
            self.rounds += 1
            expected: list[Card] = self.chance.deal(record.round_no, DECK)
            if list(record.deck) != expected:
                self.wrong.append(f"round {record.round_no}'s deal (line {at.line}) is not the one its seed gives")


def check_commitment(log_path: str | os.PathLike[str], committed: str) -> CommitmentCheck:
    """Whether a log's seed is the one ``committed`` to, and its deals are that seed's."""
    try:
        log = read_log(log_path)
    except LogError as e:
        return CommitmentCheck(False, str(e))
    seed = log.header.seed
    if commitment(seed) != committed.strip().lower():
        return CommitmentCheck(False, f"the log's seed {seed} does not match the commitment {committed.strip()}")
    watcher = _Deals(seed)
    walk_log(log, watcher)
    if watcher.wrong:
        return CommitmentCheck(False, "; ".join(watcher.wrong))
    return CommitmentCheck(True, f"seed {seed} matches its commitment {committed[:12]}…, and so do the deals of all {watcher.rounds} rounds")
