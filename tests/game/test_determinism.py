"""Determinism and replay (docs/rules.md, "Seeds and reproducible matches"): same seed and
actions, same match; recorded deals and restocks replay a match without the seed; tampering
is caught."""

from __future__ import annotations

import random

import pytest

from referee.game import (
    DECK,
    ActionRecord,
    ChanceError,
    DealRecord,
    ForfeitRecord,
    Match,
    RecordedChance,
    RestockRecord,
    RoundResult,
    Rules,
    SeededChance,
    replay_actions,
)
from tests.game.helpers import play_match, reluctant_policy

CASES = [
    ("standard", 3, 11),
    ("pagat", 2, 12),
    ("family", 5, 13),
    ("standard", 9, 14),
    ("pagat", 4, 15),
]


def long_match(preset: str, players: int, seed: int) -> tuple[Match, list]:  # type: ignore[type-arg]
    """A recorded match whose rounds run long enough for restocks (and passes)."""
    rules = Rules.build(preset, {"max_turns_per_round": 150})
    rnd = random.Random(seed)
    m, actions = play_match(players, rules, seed, policy=reluctant_policy(rnd, 0.01), record=True)
    return m, actions


def chance_from(records: list) -> RecordedChance:  # type: ignore[type-arg]
    deals = {r.round_no: r.deck for r in records if isinstance(r, DealRecord)}
    restocks = {(r.round_no, r.number): r.stock for r in records if isinstance(r, RestockRecord)}
    return RecordedChance(deals, restocks)


@pytest.mark.parametrize(("preset", "players", "seed"), CASES)
def test_same_seed_same_actions_same_match(preset: str, players: int, seed: int) -> None:
    m1, actions = long_match(preset, players, seed)
    recs1 = m1.take_records()
    m2 = replay_actions(players, m1.rules, actions, seed=seed)
    recs2 = m2.take_records()
    assert recs1 == recs2
    assert m1.rounds == m2.rounds
    assert m1.placings == m2.placings and m1.end == m2.end and m1.winner == m2.winner
    assert m1.tokens == m2.tokens
    # The records hold what they should.
    kinds = {type(r) for r in recs1}
    assert {DealRecord, ActionRecord, RoundResult} <= kinds
    assert sum(isinstance(r, RoundResult) for r in recs1) == len(m1.rounds)
    assert sum(isinstance(r, ActionRecord) for r in recs1) == len(actions)
    assert [r.action for r in recs1 if isinstance(r, ActionRecord)] == actions


def test_long_matches_do_restock() -> None:
    restocks = 0
    for preset, players, seed in CASES:
        if preset != "pagat":
            m, _ = long_match(preset, players, seed)
            restocks += sum(isinstance(r, RestockRecord) for r in m.take_records())
    assert restocks > 0


@pytest.mark.parametrize(("preset", "players", "seed"), CASES)
def test_replay_from_recorded_deals_without_the_seed(preset: str, players: int, seed: int) -> None:
    m1, actions = long_match(preset, players, seed)
    recs1 = m1.take_records()
    m2 = replay_actions(players, m1.rules, actions, chance=chance_from(recs1))
    assert m2.seed is None
    assert m2.take_records() == recs1
    assert m2.rounds == m1.rounds and m2.placings == m1.placings


def test_replay_with_forfeits() -> None:
    rules = Rules.preset("standard")
    m1 = Match(4, rules, seed=99)
    rnd = random.Random(5)
    script: list = []  # type: ignore[type-arg]
    while not m1.over:
        if len(script) in (7, 30):
            seat = rnd.choice(m1.seats_in)
            m1.forfeit(seat, "timeout")
            script.append(("forfeit", seat))
            continue
        acts = list(m1.legal_actions())
        a = acts[int(rnd.random() * len(acts))]
        m1.apply(a)
        script.append(("act", a))
    recs = m1.take_records()
    assert sum(isinstance(r, ForfeitRecord) for r in recs) == 2
    m2 = Match(4, rules, chance=chance_from(recs))
    for kind, x in script:
        if kind == "forfeit":
            m2.forfeit(x, "timeout")
        else:
            m2.apply(x)
    assert m2.take_records() == recs and m2.placings == m1.placings


def test_tampered_deal_raises_chance_error() -> None:
    m1, actions = long_match("standard", 3, 11)
    recs = m1.take_records()
    deals = {r.round_no: list(r.deck) for r in recs if isinstance(r, DealRecord)}
    restocks = {(r.round_no, r.number): list(r.stock) for r in recs if isinstance(r, RestockRecord)}
    # Round 1: a card twice, one missing.
    bad = dict(deals)
    bad[1] = [deals[1][1], *deals[1][1:]]
    with pytest.raises(ChanceError) as e:
        Match(3, m1.rules, chance=RecordedChance(bad, restocks))
    assert "round 1" in str(e.value) and str(deals[1][0]) in str(e.value)
    # A later round: caught when that round is dealt.
    assert len(deals) >= 2
    bad = dict(deals)
    bad[2] = deals[2][:-1]
    m2 = Match(3, m1.rules, chance=RecordedChance(bad, restocks))
    with pytest.raises(ChanceError, match="round 2"):
        for a in actions:
            m2.apply(a)
    # A missing round.
    bad = {k: v for k, v in deals.items() if k != 2}
    m3 = Match(3, m1.rules, chance=RecordedChance(bad, restocks))
    with pytest.raises(ChanceError, match="no deal recorded for round 2"):
        for a in actions:
            m3.apply(a)


def test_tampered_restock_raises_chance_error() -> None:
    m1, actions = long_match("standard", 3, 11)
    recs = m1.take_records()
    deals = {r.round_no: list(r.deck) for r in recs if isinstance(r, DealRecord)}
    restocks = {(r.round_no, r.number): list(r.stock) for r in recs if isinstance(r, RestockRecord)}
    assert restocks
    key = min(restocks)  # the first restock the replay reaches
    stranger = next(c for c in DECK if c not in restocks[key])
    for bad_stock in (restocks[key][1:], [*restocks[key][:-1], stranger]):
        bad = dict(restocks)
        bad[key] = bad_stock
        m2 = Match(3, m1.rules, chance=RecordedChance(deals, bad))
        with pytest.raises(ChanceError, match=f"restock {key[1]} of round {key[0]}"):
            for a in actions:
                m2.apply(a)


def test_different_seeds_different_deals() -> None:
    decks = set()
    for seed in range(50):
        m = Match(4, seed=seed)
        (deal,) = [r for r in m.take_records() if isinstance(r, DealRecord) and r.round_no == 1]
        decks.add(deal.deck)
    assert len(decks) == 50
    ch = SeededChance(7)
    rounds = {tuple(ch.deal(r, DECK)) for r in range(1, 30)}
    assert len(rounds) == 29
    assert len({tuple(ch.restock(1, i, DECK[:30])) for i in range(10)}) == 10


def test_seeded_chance_is_reproducible_and_a_permutation() -> None:
    for seed in (0, 1, 2**64 - 1, 123456789):
        a, b = SeededChance(seed), SeededChance(seed)
        for r in range(1, 5):
            d = a.deal(r, DECK)
            assert d == b.deal(r, DECK) and sorted(d) == list(DECK)
        stock = a.restock(3, 1, DECK[:20])
        assert stock == b.restock(3, 1, DECK[:20]) and sorted(stock) == list(DECK[:20])


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "7", True, None])
def test_bad_seed(seed: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        SeededChance(seed)  # type: ignore[arg-type]


def test_seed_or_chance_not_both() -> None:
    with pytest.raises(Exception, match="exactly one"):
        Match(2)
    with pytest.raises(Exception, match="exactly one"):
        Match(2, seed=1, chance=SeededChance(1))


def test_seeded_chance_matches_same_seed_match() -> None:
    m1 = Match(5, seed=31337)
    m2 = Match(5, chance=SeededChance(31337))
    assert m1.take_records() == m2.take_records()
