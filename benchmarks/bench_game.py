"""Game-model benchmark: how fast the pure state machine plays whole matches.

Run ``python benchmarks/bench_game.py [--seconds S] [--preset NAME ...]`` (S CPU-seconds per
cell, default 1; presets default to ``standard``, ``cadillac`` and ``bicycle``).
For 2, 4 and 6 players and two policies it plays seeded matches under each chosen preset
with ``record=False`` on the fast, unchecked path (``Match.apply_unchecked``; both policies
only pick legal actions) and prints, per CPU-second (``time.process_time``):

- turns: one player's turn, whether a knock, a draw and discard, a pass or a swap (the
  dealer's option is no turn, docs/rules.md, "Variants");
- decisions: calls into the model (a draw and its discard are two);
- matches, and the mean number of turns per round (a natural 31 is a round of 0 turns).

Policies:

- ``random``: uniform over the legal actions (``acts[int(rnd() * len(acts))]``);
- ``greedy``: knock once the hand is worth ``--threshold`` (22); take the discard if it
  raises the hand's value, else draw from the stock; discard the card that keeps the best
  value (``referee.game.values.best_discard``). In the widow game (``bicycle``): knock at the
  threshold, else make the widow swap that leaves the best hand. The dealer keeps the hand
  at the dealer's option and nobody takes the dummy.

The policies are kept cheap so that the figures measure the model, not the bots.
``main(argv)`` is importable; ``bench_cell`` measures one cell.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Run from a checkout without installing too: the repo root holds referee/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from referee.game import (
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    Action,
    Match,
    Phase,
    Pile,
    Rules,
    best_discard,
    swap_widow,
    value_table,
)

#: A policy answers the decision the match waits on.
Policy = Callable[[Match], Action]
#: Makes a fresh policy for one match from a seed and the rules.
PolicyFactory = Callable[[int, Rules], Policy]

PLAYERS = (2, 4, 6)
#: The plain game, and the two presets of the variants (docs/rules.md, "Variants").
PRESETS_BENCHED = ("standard", "cadillac", "bicycle")
DEFAULT_THRESHOLD = 22.0


def random_policy(seed: int, rules: Rules) -> Policy:
    """Uniformly random over the legal actions."""
    rnd = random.Random(seed).random

    def act(m: Match) -> Action:
        acts = m.legal_actions()
        return acts[int(rnd() * len(acts))]

    return act


def greedy_factory(threshold: float = DEFAULT_THRESHOLD) -> PolicyFactory:
    """A greedy policy that knocks at ``threshold`` or better."""

    def make(seed: int, rules: Rules) -> Policy:
        table = value_table(rules)

        widow_game = rules.draw == "widow"

        def act(m: Match) -> Action:
            hand = m.hands[m.current]
            if m.phase is Phase.DISCARD:
                forbidden = m.drawn if m.drawn_from is Pile.DISCARD else None
                return DISCARDS[best_discard(hand, rules, forbidden)[0]]
            if m.phase is Phase.DEALER_OPTION:
                return PASS
            acts = m.legal_actions()
            a, b, c = hand
            full = (1 << a) | (1 << b) | (1 << c)
            value = table[full]
            if value >= threshold and KNOCK in acts:
                return KNOCK
            if widow_game:
                best = max(
                    ((table[full ^ (1 << h) | (1 << w)], h, w) for h in hand for w in m.widow),
                )
                return swap_widow(best[1], best[2])
            if m.pile and DRAW_DISCARD in acts:
                top = m.pile[-1]
                if best_discard([*hand, top], rules, top)[1] > value:
                    return DRAW_DISCARD
            if DRAW_STOCK in acts:
                return DRAW_STOCK
            return PASS if PASS in acts else acts[0]

        return act

    return make


@dataclass(frozen=True, slots=True)
class CellResult:
    """One table cell: totals over the matches played and the CPU time they took."""

    players: int
    policy: str
    matches: int
    rounds: int
    turns: int
    decisions: int
    cpu_seconds: float

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.cpu_seconds

    @property
    def decisions_per_second(self) -> float:
        return self.decisions / self.cpu_seconds

    @property
    def matches_per_second(self) -> float:
        return self.matches / self.cpu_seconds

    @property
    def turns_per_round(self) -> float:
        return self.turns / self.rounds if self.rounds else 0.0


def play_one(players: int, rules: Rules, seed: int, policy: Policy) -> tuple[int, int, int]:
    """Play one match; return (rounds, turns, decisions)."""
    m = Match(players, rules, seed=seed, record=False)
    push = m.apply_unchecked
    decisions = 0
    while not m.over:
        push(policy(m))
        decisions += 1
    return len(m.rounds), sum(r.turns for r in m.rounds), decisions


def bench_cell(
    players: int,
    name: str,
    factory: PolicyFactory,
    rules: Rules,
    seconds: float,
    first_seed: int = 0,
) -> CellResult:
    """Play matches until ``seconds`` of CPU time are spent (at least one match)."""
    matches = rounds = turns = decisions = 0
    seed = first_seed
    start = time.process_time()
    elapsed = 0.0
    while elapsed < seconds or matches == 0:
        r, t, d = play_one(players, rules, seed, factory(seed, rules))
        matches += 1
        rounds += r
        turns += t
        decisions += d
        seed += 1
        elapsed = time.process_time() - start
    return CellResult(players, name, matches, rounds, turns, decisions, elapsed)


def format_table(results: Sequence[CellResult]) -> str:
    """The results as a fixed-width text table."""
    head = (
        "players",
        "policy",
        "turns/CPU-s",
        "decisions/CPU-s",
        "matches/CPU-s",
        "turns/round",
        "matches",
    )
    rows = [
        (
            str(r.players),
            r.policy,
            f"{r.turns_per_second:,.0f}",
            f"{r.decisions_per_second:,.0f}",
            f"{r.matches_per_second:,.1f}",
            f"{r.turns_per_round:.1f}",
            str(r.matches),
        )
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    lines = [
        "  ".join(
            h.ljust(w) if i < 2 else h.rjust(w)
            for i, (h, w) in enumerate(zip(head, widths, strict=True))
        )
    ]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--seconds", type=float, default=1.0, help="CPU seconds per cell (default 1)")
    p.add_argument(
        "--preset",
        nargs="+",
        default=list(PRESETS_BENCHED),
        help=f"rules presets (default {' '.join(PRESETS_BENCHED)})",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"greedy knocks at this hand value or more (default {DEFAULT_THRESHOLD:g})",
    )
    p.add_argument(
        "--players", type=int, nargs="*", default=list(PLAYERS), help="table sizes (default 2 4 6)"
    )
    args = p.parse_args(argv)
    policies: list[tuple[str, PolicyFactory]] = [
        ("random", random_policy),
        (f"greedy@{args.threshold:g}", greedy_factory(args.threshold)),
    ]
    for i, preset in enumerate(args.preset):
        rules = Rules.preset(preset)
        value_table(rules)  # build the value table outside the timings
        results = [
            bench_cell(n, name, factory, rules, args.seconds)
            for n in args.players
            for name, factory in policies
        ]
        if i:
            print()
        print(f"game model, preset {rules.describe()}, {args.seconds:g} CPU-s per cell, record=False")
        print(format_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
