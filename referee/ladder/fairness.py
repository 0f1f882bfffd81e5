"""Fair deals anyone can check: seeds from the arena's secret, commitments published first.

A ladder table plays one deal in every seat rotation, so its matches share one seed:
``HMAC-SHA256(secret, "deal/TABLE")``, the first 8 bytes. When the table is scheduled the
arena publishes the seed's commitment, the SHA-256 of its decimal text; when every rotation
is finished it publishes the seed and the logs (which hold the seed too). Anyone can then
check, with :func:`check_commitment`, that the seed is the one committed to before any card
was dealt, and that every shuffle in the log is the one that seed gives: every round's deal,
and every restock (the discard pile under its top card, in the order the game model holds
it, shuffled as the seed's ``restock/ROUND/N`` stream says). The ordinary verification
(``thirtyone replay --verify``) checks every action against the game model; this check is
what shows that no card order was chosen after the seed was committed to, including those
of cards no one drew (a restocked stock the round ended before reaching).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from referee.faults import LogError
from referee.game.cards import Card
from referee.game.chance import SeededChance
from referee.log import LogWatcher, Position, read_log, walk_log
from referee.text import plural


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


class _Shuffles(LogWatcher):
    """Re-derives each deal and restock of a walked log from ``seed`` and notes the ones that
    differ, each with its line, round and turn."""

    def __init__(self, seed: int) -> None:
        self.chance = SeededChance(seed)
        self.wrong: list[str] = []
        self.rounds = 0
        self.restocks = 0

    def shuffled(
        self, at: Position, round_no: int, restock: int | None, cards: tuple[Card, ...], order: tuple[Card, ...]
    ) -> None:
        if restock is None:
            self.rounds += 1
            if list(order) != self.chance.deal(round_no, cards):
                self.wrong.append(f"round {round_no}'s deal (line {at.line}) is not the one its seed gives")
            return
        self.restocks += 1
        if list(order) != self.chance.restock(round_no, restock, cards):
            self.wrong.append(
                f"restock {restock} of round {round_no} (line {at.line}, turn {at.turn}) is not the order its "
                "seed gives the discard pile"
            )


def check_commitment(log_path: str | os.PathLike[str], committed: str) -> CommitmentCheck:
    """Whether a log's seed is the one ``committed`` to, and its deals and restocks are that
    seed's."""
    try:
        log = read_log(log_path)
    except LogError as e:
        return CommitmentCheck(False, str(e))
    seed = log.header.seed
    if commitment(seed) != committed.strip().lower():
        return CommitmentCheck(False, f"the log's seed {seed} does not match the commitment {committed.strip()}")
    watcher = _Shuffles(seed)
    walk_log(log, watcher)
    if watcher.wrong:
        return CommitmentCheck(False, "; ".join(watcher.wrong))
    restocks = f" and its {plural(watcher.restocks, 'restock')}" if watcher.restocks else ""
    return CommitmentCheck(
        True,
        f"seed {seed} matches its commitment {committed[:12]}…, and so do the deals of {plural(watcher.rounds, 'round')}"
        f"{restocks}",
    )
