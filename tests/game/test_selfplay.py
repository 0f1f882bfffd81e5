"""Random self-play (docs/rules.md throughout): invariants over thousands of matches."""

from __future__ import annotations

import random

import pytest

from referee.game import OPTION_NAMES, Match, RoundEnd, Rules
from tests.game.helpers import check_legality, play_match, reluctant_policy

PRESETS = ["standard", "pagat", "family"]


def players_for(seed: int) -> int:
    return 2 + seed % 8


@pytest.mark.parametrize("preset", PRESETS)
def test_selfplay_quick(preset: str) -> None:
    rules = Rules.preset(preset)
    for seed in range(60):
        play_match(players_for(seed), rules, seed, legality_checks=2)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_selfplay_1000_matches(preset: str) -> None:
    rules = Rules.preset(preset)
    ends: set[RoundEnd] = set()
    for seed in range(1000, 2000):
        m, _ = play_match(players_for(seed), rules, seed, legality_checks=1 if seed % 4 == 0 else 0)
        ends.update(r.end for r in m.rounds)
    assert len(ends) >= 3


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("seeds", [pytest.param(4, id="4"), pytest.param(40, id="40", marks=pytest.mark.slow)])
def test_selfplay_long_rounds(preset: str, seeds: int) -> None:
    """Policies that rarely knock: stocks run out (reshuffles, passes) and max_turns bites."""
    rules = Rules.build(preset, {"max_turns_per_round": 120})
    for seed in range(seeds):
        rnd = random.Random(seed)
        play_match(
            players_for(seed),
            rules,
            seed,
            policy=reluctant_policy(rnd, p_knock=rnd.choice([0.0, 0.01, 0.05])),
            legality_checks=3,
        )


def random_rules(rnd: random.Random) -> Rules:
    opts = {
        "three_of_a_kind": rnd.choice(["30.5", "30", "off"]),
        "three_aces": rnd.choice([None, 32.5, 33]),
        "simultaneous_31_loss": rnd.choice([1, 2, 3]),
        "knock_ban": rnd.choice(["first_turn", "none", "first_lap"]),
        "min_knock": rnd.choice([0, 0, 17, 21]),
        "flush_may_knock": rnd.random() < 0.5,
        "empty_stock": rnd.choice(["reshuffle", "showdown"]),
        "max_turns_per_round": rnd.choice([1, 5, 60, 200]),
        "knocker_alone_loss": rnd.choice([1, 2, 3]),
        "knocker_tied": rnd.choice(["double", "safe", "single"]),
        "lives": rnd.choice([1, 2, 3, 4]),
        "bus": rnd.random() < 0.5,
        "max_rounds": rnd.choice([1, 3, 20, 500]),
        # docs/rules.md, "Variants": each variant on a third of the time (two cannot meet the widow).
        "dealer_option": rnd.random() < 0.3,
        "under_the_gun": rnd.random() < 0.3,
        "dummy": rnd.random() < 0.3,
        "draw": rnd.choice(["stock", "stock", "widow"]),
        "scoring": rnd.choice(["lives", "lives", "pot"]),
        "pot_rounds": rnd.choice([0, 1, 5]),
        "ante": rnd.choice([1, 3]),
    }
    if opts["draw"] == "widow":
        opts["dealer_option"] = opts["dummy"] = False
    assert set(opts) | {"blitz"} == set(OPTION_NAMES)
    return Rules.build(rnd.choice(PRESETS), opts)


@pytest.mark.parametrize("chunk", range(4))
def test_selfplay_random_rules_and_forfeits(chunk: int) -> None:
    for seed in range(chunk * 100, chunk * 100 + 100):
        rnd = random.Random(seed)
        rules = random_rules(rnd)
        policy = reluctant_policy(rnd, p_knock=0.1) if rnd.random() < 0.3 else None
        play_match(
            players_for(seed),
            rules,
            seed,
            policy=policy,
            legality_checks=1,
            forfeit_rate=rnd.choice([0.0, 0.0, 0.002, 0.02]),
        )


def test_legality_at_the_start_of_a_match() -> None:
    for preset in PRESETS:
        for players in (2, 5, 9):
            m = Match(players, Rules.preset(preset), seed=players)
            check_legality(m)
