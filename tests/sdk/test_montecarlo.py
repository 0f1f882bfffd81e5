"""Rollouts (sdk.simulate) and the ``montecarlo`` sample bot.

- The fast greedy policy makes the greedy bot's choices, decision by decision.
- A rollout of the *true* position reproduces the game model's own continuation exactly.
- The bot answers only legal actions at every table size and preset, stays well inside its
  time budget, replays exactly for a seed, and beats the greedy bot (a loose, seeded check).
"""

from __future__ import annotations

import functools
import random
import time

import pytest

from referee.game import (
    DECK,
    DRAW_STOCK,
    KNOCK,
    PRESETS,
    Action,
    Match,
    Phase,
    RoundResult,
    Rules,
    SeededChance,
    best_discard,
    value_table,
)
from referee.game.position import match_from_position, position_of
from referee.timecontrol import TimeControl
from sample_bots import load
from sample_bots.greedy import CALL_AT, POT_CALL_AT, GreedyBot
from sample_bots.montecarlo import MonteCarloBot, lives_left, win_chance
from sample_bots.threshold import KNOCK_AT, knock_table
from sdk.harness import play_match, play_matches
from sdk.sampler import Sampler
from sdk.simulate import Evaluator, Policy, discard_choice, greedy_policy, play_round, rollout
from sdk.view import SeatMemory, View
from tests.sdk.helpers import play_over_grpc, python_module, start_bot

PLAYERS = (2, 3, 4, 6)

# The presets of the stock game played for lives; the variants have tests of their own below
# (and tests/sample_bots/test_variants.py).
LIVES_STOCK_PRESETS = sorted(
    p for p in PRESETS if Rules.preset(p).draw == "stock" and Rules.preset(p).scoring == "lives"
)
#: Every variant (docs/rules.md, "Variants"), alone and in combination.
VARIANTS: dict[str, Rules] = {
    "cadillac": Rules.preset("cadillac"),
    "bicycle": Rules.preset("bicycle"),
    "dealer_option": Rules(dealer_option=True),
    "under_the_gun": Rules(under_the_gun=True),
    "dummy": Rules(dummy=True),
    "widow": Rules(draw="widow"),
    "pot": Rules(scoring="pot"),
    "all_stock": Rules.build("pagat", {"dummy": True, "dealer_option": True, "under_the_gun": True}),
}


class TableKnockBot(GreedyBot):
    """Greedy play knocking at the threshold bot's table-size thresholds."""

    def knock_threshold(self, view: View) -> float:
        return KNOCK_AT[len(view.seats_in)]


# ---------------------------------------------------------------------- the rollout policy


@pytest.mark.parametrize("preset", LIVES_STOCK_PRESETS)
def test_greedy_policy_matches_the_greedy_bot(preset: str) -> None:
    rules = Rules.preset(preset)
    decisions = 0
    for players in PLAYERS:
        for bot, policy in ((GreedyBot(), greedy_policy(rules)), (TableKnockBot(), greedy_policy(rules, KNOCK_AT))):
            m = Match(players, rules, seed=players, record=False)
            memories = [SeatMemory() for _ in range(players)]
            for _ in range(300):
                if m.over:
                    break
                s = m.current
                expected = bot.act(memories[s].view(m.observation(s)))
                assert policy(m) == expected
                m.apply(expected)
                decisions += 1
    assert decisions > 1000


class TablePotBot(GreedyBot):
    """Greedy play with the threshold bot's knock thresholds for the scoring in force."""

    def knock_threshold(self, view: View) -> float:
        return knock_table(view.rules)[len(view.seats_in)]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_greedy_policy_matches_the_greedy_bot_under_the_variants(name: str) -> None:
    # The dealer's option, calls, the dummy and the widow swaps too, decision by decision.
    rules = VARIANTS[name]
    pot = rules.scoring == "pot"
    calls = POT_CALL_AT if pot else CALL_AT
    decisions = 0
    kinds: set[str] = set()
    for players in PLAYERS:
        pairs = (
            (GreedyBot(), greedy_policy(rules, GreedyBot.pot_knock_at if pot else GreedyBot.knock_at, calls)),
            (TablePotBot(), greedy_policy(rules, knock_table(rules), calls)),
        )
        for bot, policy in pairs:
            m = Match(players, rules, seed=players, record=False)
            memories = [SeatMemory() for _ in range(players)]
            for _ in range(300):
                if m.over:
                    break
                s = m.current
                expected = bot.act(memories[s].view(m.observation(s)))
                assert policy(m) == expected
                kinds.add(expected.kind.name)
                m.apply(expected)
                decisions += 1
    assert decisions > 500
    if rules.dummy:
        assert "SWAP_HAND" in kinds
    if rules.draw == "widow":
        assert "SWAP_WIDOW" in kinds
    if rules.dealer_option:
        assert "SWAP_UPCARD" in kinds and "PASS" in kinds


def test_discard_choice_is_best_discard() -> None:
    rng = random.Random(3)
    deck = list(range(52))
    for rules in (Rules(), Rules(three_of_a_kind="off"), Rules(three_aces=33)):
        table = value_table(rules)
        for _ in range(2000):
            cards = tuple(DECK[c] for c in rng.sample(deck, 4))
            forbidden = cards[0] if rng.random() < 0.5 else None
            assert discard_choice(table, cards, forbidden) == best_discard(cards, rules, forbidden)


# ---------------------------------------------------------------------- rollouts


@pytest.mark.parametrize("preset", LIVES_STOCK_PRESETS)
@pytest.mark.parametrize("knock_at", [22.0, 99.0], ids=["greedy", "never-knock"])
def test_rollout_of_the_true_position_reproduces_the_model(preset: str, knock_at: float) -> None:
    # From the omniscient position, with the match's own chance (same restock orders) and
    # the same policies, a rollout ends the round exactly as the match itself does. The
    # never-knocking policy makes long rounds with restocks (and max_turns endings).
    rules = Rules.preset(preset)
    policy = greedy_policy(rules, knock_at)
    compared = 0
    for players in (2, 4, 6):
        seed = 7 * players
        m = Match(players, rules, seed=seed, record=False)
        rng = random.Random(seed)
        while not m.over and compared < 60 * players:
            if rng.random() < 0.3:
                pos = position_of(m)
                first = m.legal_actions()[rng.randrange(len(m.legal_actions()))]
                expected_first = _continue(copy_of(m, seed), policy, first)
                assert rollout(pos, policy, first=first, chance=SeededChance(seed)) == expected_first
                expected = _continue(copy_of(m, seed), policy, None)
                assert rollout(pos, [policy] * players, chance=SeededChance(seed)) == expected
                compared += 1
            m.apply_unchecked(policy(m))
    assert compared > 50


def copy_of(m: Match, seed: int) -> Match:
    """An independent copy of ``m``, so that the reference continuation leaves ``m`` alone."""
    return match_from_position(position_of(m), seed=seed)


def _continue(m: Match, policy: Policy, first: Action | None) -> RoundResult:
    """The reference: the match itself plays on (checked actions) to the end of the round."""
    done = len(m.rounds)
    if first is not None:
        m.apply(first)
    while len(m.rounds) == done:
        m.apply(policy(m))
    return m.rounds[done]


def test_play_round_takes_one_policy_per_seat() -> None:
    rules = Rules()
    m = Match(3, rules, seed=1, record=False)
    calls = [0, 0, 0]
    greedy = greedy_policy(rules)

    def counting(seat: int) -> Policy:
        def act(mm: Match) -> Action:
            assert mm.current == seat
            calls[seat] += 1
            return greedy(mm)

        return act

    result = play_round(m, [counting(s) for s in range(3)])
    assert result is m.rounds[0]
    assert all(calls)


def test_evaluator_uses_common_random_numbers() -> None:
    # The same action twice gets the same total: every candidate sees the same guesses and
    # the same restocks. The default (first) wins ties.
    m = Match(4, Rules(), seed=8, record=False)
    policy = greedy_policy(m.rules)
    for _ in range(6):
        m.apply_unchecked(policy(m))
    assert m.phase is Phase.TURN_START and m.turn == 3
    view = SeatMemory().view(m.observation(m.current))
    ev = Evaluator([DRAW_STOCK, DRAW_STOCK, *view.legal_actions], policy, lambda r: -r.lives_lost.get(view.seat, 0))
    sampler = Sampler(view)
    rng = random.Random(1)
    for _ in range(20):
        ev.add(sampler.sample(rng), rng.getrandbits(32))
    assert ev.totals[0] == ev.totals[1]
    assert ev.samples == 20
    assert ev.advantage(1) == (0.0, 0.0)
    best = ev.best()
    assert ev.means()[ev.actions.index(best)] == max(ev.means())
    assert ev.best(margin=1e9) is DRAW_STOCK  # nothing beats the default by a mile


# ---------------------------------------------------------------------- the bot


def test_win_chance_model() -> None:
    assert win_chance(4, (4,)) == pytest.approx(0.5)
    assert win_chance(3, (3, 3, 3)) == pytest.approx(0.25)
    assert win_chance(0, (1,)) == 0.0
    assert win_chance(1, ()) == 1.0
    assert win_chance(4, (2,)) > win_chance(3, (2,)) > win_chance(2, (2,))
    assert win_chance(2, (1, 3)) > win_chance(2, (2, 3))
    assert lives_left(0, Rules()) == 1 and lives_left(0, Rules(bus=False)) == 1
    assert lives_left(3, Rules()) == 4 and lives_left(3, Rules(bus=False)) == 3


@pytest.mark.parametrize("players", PLAYERS)
@pytest.mark.parametrize("preset", LIVES_STOCK_PRESETS)
def test_only_legal_actions(players: int, preset: str) -> None:
    # The harness raises IllegalMoveError on any illegal answer. A few guesses per decision
    # keep it quick; every seat but one is the bot, so it meets every situation a lot.
    bot = functools.partial(MonteCarloBot, samples=3)
    others = load("threshold")
    out = play_match([bot if s != 1 else others for s in range(players)], seed=players, rules=preset)
    assert out.rounds >= 1
    assert sum(out.decisions) > 20


def test_legal_with_forfeits_and_restocks() -> None:
    # Dead hands and reshuffled stocks are what the harness rarely shows; drive a match by
    # hand through both (9 players share out the stock fast, and min_knock=30 makes knocks
    # rare, so rounds outlast their stock).
    rules = Rules(min_knock=30)
    rng = random.Random(5)
    never = greedy_policy(rules, 99.0)
    bot = MonteCarloBot(samples=4)
    m = Match(9, rules, seed=11, record=False)
    memories = [SeatMemory() for _ in range(9)]
    restocked = forfeited = False
    for _ in range(600):
        if m.over:
            break
        if sum(m.alive) > 3 and rng.random() < 0.01:
            m.forfeit(rng.choice([s for s in m.seats_in if s != 0]), "test")
            forfeited = True
            continue
        s = m.current
        if s == 0:
            view = memories[0].view(m.observation(0))
            action = bot.act(view)
            assert action in view.legal_actions
            restocked |= m._restocks > 0
            m.apply(action)
        else:
            m.apply(never(m))
    assert restocked and forfeited


def test_reproducible_for_a_seed() -> None:
    bot = functools.partial(MonteCarloBot, samples=6, seed=3)
    a = play_match([bot, load("threshold"), load("greedy")], seed=42)
    b = play_match([bot, load("threshold"), load("greedy")], seed=42)
    assert a.round_results == b.round_results
    assert a.placings == b.placings


def test_time_budget_is_respected() -> None:
    # Time-based guesses: a 200 ms budget at the default 20% is about 40 ms of thinking.
    # Loose bounds only: the machine may be busy.
    rules = Rules()
    m = Match(4, rules, seed=3, record=False)
    policy = greedy_policy(rules, KNOCK_AT)
    bot = MonteCarloBot()
    elapsed: list[float] = []
    memory = SeatMemory()
    while not m.over and len(elapsed) < 20:
        if m.current == 0:
            view = memory.view(m.observation(0), budget_ms=200, bank_ms=5000)
            action = bot.act(view)
            elapsed.append(time.monotonic() - view.received_at)
            m.apply(action)
        else:
            m.apply_unchecked(policy(m))
    # Inside the budget (200 ms), with room for a busy machine's scheduling; never the bank (5 s).
    assert max(elapsed) < 0.6
    assert sum(elapsed) / len(elapsed) < 0.1
    assert bot.guesses > 0
    # A tiny budget still answers, and quickly (with the threshold bot's choice if need be).
    while m.over or m.current != 0:
        m = Match(4, rules, seed=4, record=False)
    view = SeatMemory().view(m.observation(0), budget_ms=1, bank_ms=5000)
    t0 = time.monotonic()
    assert bot.act(view) in view.legal_actions
    # A bot that ignored the 1 ms budget would think for seconds (its bank): a busy machine
    # may hold it back for tens of milliseconds, never that long.
    assert time.monotonic() - t0 < 0.5


def test_more_budget_more_guesses() -> None:
    m = Match(4, Rules(), seed=6, record=False)
    policy = greedy_policy(m.rules, KNOCK_AT)
    while m.current != 0 or m.phase is not Phase.TURN_START or m.turn == 0:
        m.apply_unchecked(policy(m))

    def guesses(budget_ms: int) -> int:
        bot = MonteCarloBot()
        bot.act(SeatMemory().view(m.observation(0), budget_ms=budget_ms))
        return bot.guesses

    # A busy machine only ever takes guesses away (a pause mid-guess also makes the bot
    # predict that the next would not fit): each count is the first of a few tries to reach
    # what it must, as a quiet machine reaches it at once.
    small = next((g for g in (guesses(50) for _ in range(5)) if g > 0), 0)
    large = next((g for g in (guesses(400) for _ in range(5)) if g > small), 0)
    assert 0 < small < large <= MonteCarloBot().max_samples, (small, large)


def test_never_knocks_on_junk() -> None:
    # After the first lap, a knock with 12 or less all but surely loses two lives. (With a
    # strong hand the bot may knock or may wait, letting others knock into it; both can
    # be right, so only the junk side is a rule.)
    rules = Rules()
    never = greedy_policy(rules, 99.0)
    seen = 0
    for seed in range(200):
        m = Match(4, rules, seed=seed, record=False)
        while not m.rounds and not (m.current == 0 and m.phase is Phase.TURN_START and m.turn >= 4):
            m.apply_unchecked(never(m))
        if m.rounds or KNOCK not in m.legal_actions() or m.value(0) > 12:
            continue
        view = SeatMemory().view(m.observation(0))
        assert MonteCarloBot(samples=16).act(view) is not KNOCK, view
        seen += 1
        if seen == 5:
            break
    assert seen == 5


# ---------------------------------------------------------------------- strength


@pytest.mark.slow
def test_beats_greedy_in_duplicate_matches() -> None:
    # Deterministic given the seeds: 10 deals x 4 seat rotations at a 4-player table
    # against three greedy bots. A fair share would be a mean placing of 2.5; a loose check
    # (benchmarks/bench_montecarlo.py measures strength properly).
    bot = functools.partial(MonteCarloBot, samples=16)
    greedy = load("greedy")
    series = play_matches([bot, greedy, greedy, greedy], seeds=[d for d in range(10) for _ in range(4)])
    assert len(series.outcomes) == 40
    assert series.mean_placing(0) < 2.5
    assert series.mean_placing(0) < sum(series.mean_placing(b) for b in (1, 2, 3)) / 3


@pytest.mark.slow
def test_beats_threshold_heads_up_under_standard() -> None:
    # The variants' changes leave the standard game's play alone: against the threshold bot
    # heads-up, 12 deals x 2 seats, it wins more than its fair half (loosely; see
    # benchmarks/bench_montecarlo.py for the measured strength).
    bot = functools.partial(MonteCarloBot, samples=16)
    series = play_matches([bot, load("threshold")], seeds=[d for d in range(20_000, 20_012) for _ in range(2)])
    assert series.win_rate(0) > 0.5  # 15 of 24 when written


def test_serves_as_a_process() -> None:
    # As the referee runs it: python -m sample_bots.montecarlo, over gRPC, time-based (on a
    # short clock: it thinks for a part of its budget at every decision).
    bot = start_bot(python_module("sample_bots.montecarlo"))
    try:
        tc = TimeControl(budget_ms=100, bank_ms=1000)
        m, decisions = play_over_grpc(bot.stub, 2, Rules(max_rounds=3), seed=5, match_id="mc", tc=tc)
        assert m.over and decisions > 5
    finally:
        bot.close()


def test_tournament_time_control_is_kept() -> None:
    # Through the harness with the default time control (250 ms), the bot spends about a
    # fifth of it; loosely: well under the budget on average.
    tc = TimeControl()
    out = play_match([MonteCarloBot, load("threshold")], seed=2, time_control=tc, rules=Rules(max_rounds=2))
    per_decision = out.think_time[0] / out.decisions[0]
    assert per_decision < tc.budget_ms / 1000 / 2
