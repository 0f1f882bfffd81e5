"""The sample bots under every variant (docs/rules.md, "Variants"), in-process.

- Every sample bot plays every variant (the presets ``cadillac`` and ``bicycle`` and each
  option on its own) with no illegal action: the harness raises on the first one.
- ``greedy`` and ``threshold`` play them sensibly: they beat ``random`` under ``bicycle``
  (the widow for a pot) and under the dummy, and make the documented choice on stacked
  decisions (dealer's option, widow swap, the dummy, calling under the gun).
- ``montecarlo`` plays ``bicycle`` and the dummy legally with a small budget.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

import sdk
from referee.game import Match, MatchEnd, Phase, Rules, cards
from sample_bots import NAMES, load
from sample_bots.greedy import CALL_AT, POT_CALL_AT, GreedyBot
from sample_bots.montecarlo import MonteCarloBot
from sdk.harness import CHECK_VARIANTS, play_match, play_matches

VARIANTS: dict[str, Rules] = {
    "cadillac": Rules.preset("cadillac"),
    "bicycle": Rules.preset("bicycle"),
    **CHECK_VARIANTS,
}
FAST = [n for n in NAMES if n != "montecarlo"]


def test_the_variants_are_all_here() -> None:
    assert set(VARIANTS) == {"cadillac", "bicycle", "dealer_option", "under_the_gun", "dummy", "widow", "pot"}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_fast_sample_bot_plays_every_variant_legally(variant: str) -> None:
    # 50 matches at 2 to 5 seats, each bot in every seat, the mix of bots shifting.
    rules = VARIANTS[variant]
    classes = [load(n) for n in FAST]
    ends = set()
    for i in range(50):
        players = 2 + i % 4
        bots = [classes[(i + j) % len(classes)] for j in range(players)]
        out = play_match(bots, seed=7000 + i, rules=rules)  # raises on an illegal move
        assert 1 in out.placings and out.rounds == len(out.round_results) >= 1
        ends.add(out.end)
    if rules.scoring == "pot":
        assert ends == {MatchEnd.POT_ROUNDS}
    for name in FAST:  # each bot alone at the table too: self-play reaches other states
        play_matches([load(name)] * 3, n=2, seeds=range(8000, 8002), rules=rules)


@pytest.mark.parametrize("variant", ["bicycle", "dummy", "dealer_option", "widow"])
def test_montecarlo_plays_the_variants_legally(variant: str) -> None:
    bot = functools.partial(MonteCarloBot, samples=2)
    out = play_match([bot, load("threshold"), bot], seed=3, rules=VARIANTS[variant])
    assert sum(out.decisions) > 10


def _wins(bot: str, rules: Rules, matches: int) -> float:
    series = play_matches([load(bot), load("random")], n=matches, rules=rules)
    return series.win_rate(0)


@pytest.mark.parametrize("bot", ["greedy", "threshold"])
@pytest.mark.parametrize("variant", ["bicycle", "dummy"])
def test_greedy_and_threshold_beat_random(bot: str, variant: str) -> None:
    # Two seats, seats alternating, fixed seeds: a fair share is 50%.
    rate = _wins(bot, VARIANTS[variant], 60)
    assert rate > 0.7, f"{bot} won only {rate:.0%} against random under {variant}"


# ---------------------------------------------------------------- stacked decisions


def _obs(rules: Rules, **fields: object) -> sdk.View:
    m = Match(3, rules, seed=1)
    obs = m.observation(m.current)
    return sdk.View(dataclasses.replace(obs, **fields))  # type: ignore[arg-type]


def test_greedy_takes_the_dealers_option_only_when_it_helps() -> None:
    rules = Rules(dealer_option=True)
    view = _obs(rules, hand=cards("Ah Kh 5c"), discard_pile=cards("Qh"))
    assert view.is_dealer_option
    assert GreedyBot().act(view) == sdk.swap_upcard("5c")  # 31: a blitz
    keep = _obs(rules, hand=cards("Ah Kh Qh"), discard_pile=cards("2c"))
    assert GreedyBot().act(keep) == sdk.PASS


def test_greedy_swaps_with_the_widow_and_knocks_when_good_or_stuck() -> None:
    rules = Rules.preset("bicycle")  # knock_ban none: a knock is legal on any turn
    view = _obs(rules, hand=cards("Ah 9h 2c"), widow=cards("Kh 7d 3s"))
    assert GreedyBot().act(view) == sdk.swap_widow("2c", "Kh")
    # 30 is over the pot's threshold (24): knock.
    high = _obs(rules, hand=cards("Ah Kh 9h"), widow=cards("2c 7d 3s"))
    assert sdk.KNOCK in high.legal_actions and GreedyBot().act(high) == sdk.KNOCK
    # 21, and no swap raises it: stuck within 4 of 24, so knock.
    stuck = _obs(rules, hand=cards("Ah Th 2s"), widow=cards("2c 7d 3s"))
    assert stuck.best_widow_swap()[2] <= stuck.value == 21
    assert GreedyBot().act(stuck) == sdk.KNOCK
    # 19 stuck: too far below; the best swap, even though it does not help.
    low = _obs(rules, hand=cards("Th 9h 2s"), widow=cards("2c 7d 3s"))
    assert GreedyBot().act(low).kind is sdk.ActionKind.SWAP_WIDOW


def test_greedy_takes_the_dummy_with_a_hand_below_the_mean() -> None:
    rules = Rules(dummy=True)
    m = Match(3, rules, seed=1)
    obs = m.observation(m.current)
    assert obs.phase is Phase.TURN_START and sdk.SWAP_HAND in obs.legal_actions
    junk = sdk.View(dataclasses.replace(obs, hand=cards("2c 3d 5s"), discard_pile=cards("4h")))
    assert junk.can_swap_hand and junk.value == 5 < junk.mean_hand_value
    assert GreedyBot().act(junk) == sdk.SWAP_HAND
    # The top discard lifts the hand to the mean or above (Ts 5s: 15): take it instead.
    helped = sdk.View(dataclasses.replace(obs, hand=cards("2c 3d 5s"), discard_pile=cards("Ts")))
    assert GreedyBot().act(helped) == sdk.DRAW_DISCARD
    good = sdk.View(dataclasses.replace(obs, hand=cards("Kc Qc 5s"), discard_pile=cards("4h")))
    assert GreedyBot().act(good) == sdk.DRAW_STOCK


def test_greedy_calls_under_the_gun_by_the_tables() -> None:
    lives = Rules(under_the_gun=True)
    m = Match(3, lives, seed=1)
    obs = m.observation(m.current)
    assert sdk.CALL in obs.legal_actions and obs.turn == 0
    at = sdk.View(dataclasses.replace(obs, hand=cards("Kc Qc 2s")))  # 20 >= CALL_AT[3] = 19
    below = sdk.View(dataclasses.replace(obs, hand=cards("Kc 7c 2s")))  # 17
    assert CALL_AT[3] == 19 and GreedyBot().act(at) == sdk.CALL
    assert GreedyBot().act(below) != sdk.CALL
    pot = Rules(under_the_gun=True, scoring="pot")
    m = Match(3, pot, seed=1)
    obs = m.observation(m.current)
    assert POT_CALL_AT[3] == 18
    assert GreedyBot().act(sdk.View(dataclasses.replace(obs, hand=cards("Kc 8c 2s")))) == sdk.CALL  # 18
