"""Random self-play under every variant of docs/rules.md, "Variants": 1,000 matches per new preset and per
single-option variant, with every invariant of ``tests.game.helpers.Tracker`` checked after
every step: card conservation (every card exactly once among hands, stock, discard pile,
dead hands, dummy, face-up old hand, widow and unused cards), chip conservation (antes paid =
chips awarded + chips left in the pot), scoring recomputed from the rules, legality (the
checked ``apply`` accepts exactly ``legal_actions()``), termination, and determinism from
the seed.
"""

from __future__ import annotations

import random

import pytest

from referee.game import (
    ActionKind,
    ActionRecord,
    DealRecord,
    Match,
    RecordedChance,
    RestockRecord,
    RoundEnd,
    RoundResult,
    Rules,
    replay_actions,
)
from tests.game.helpers import check_legality, play_match, reluctant_policy

VARIANTS: dict[str, Rules] = {
    "cadillac": Rules.preset("cadillac"),
    "bicycle": Rules.preset("bicycle"),
    "dealer_option": Rules(dealer_option=True),
    "under_the_gun": Rules(under_the_gun=True),
    "dummy": Rules(dummy=True),
    "widow": Rules(draw="widow"),
    "pot": Rules(scoring="pot"),
}
# What each variant's self-play must meet at least once (so the invariants were exercised).
MUST_SEE: dict[str, tuple[set[ActionKind], set[RoundEnd]]] = {
    "cadillac": (set(), {RoundEnd.KNOCK, RoundEnd.BLITZ}),
    "bicycle": ({ActionKind.SWAP_WIDOW}, {RoundEnd.KNOCK, RoundEnd.BLITZ}),
    "dealer_option": ({ActionKind.SWAP_UPCARD, ActionKind.PASS}, {RoundEnd.BLITZ}),
    "under_the_gun": ({ActionKind.CALL}, {RoundEnd.CALL}),
    "dummy": ({ActionKind.SWAP_HAND}, {RoundEnd.BLITZ, RoundEnd.KNOCK}),
    "widow": ({ActionKind.SWAP_WIDOW}, {RoundEnd.MAX_TURNS, RoundEnd.BLITZ}),
    "pot": (set(), {RoundEnd.KNOCK, RoundEnd.NATURAL_31}),
}
#: Matches per variant: the slow tier's many (every action kind and round end it must see),
#: and the quick tier's few (the same invariants, determinism included).
MATCHES = 1000
QUICK_MATCHES = 50


def players_for(seed: int) -> int:
    return 2 + seed % 8


def fingerprint(m: Match) -> tuple[object, ...]:
    return (m.round_no, tuple(m.chips), m.pot, tuple(m.tokens), m.placings, m.winner, m.end, len(m.rounds))


@pytest.mark.parametrize("name", list(VARIANTS))
def test_50_random_matches(name: str) -> None:
    random_matches(name, QUICK_MATCHES)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(VARIANTS))
def test_1000_random_matches(name: str) -> None:
    kinds, ends = random_matches(name, MATCHES)
    want_kinds, want_ends = MUST_SEE[name]
    assert want_kinds <= kinds, want_kinds - kinds
    assert want_ends <= ends, want_ends - ends


def random_matches(name: str, matches: int) -> tuple[set[ActionKind], set[RoundEnd]]:
    """Play ``matches`` random matches of a variant, checking each (and some twice, for
    determinism); the action kinds and round ends seen."""
    rules = VARIANTS[name]
    kinds: set[ActionKind] = set()
    ends: set[RoundEnd] = set()
    for seed in range(matches):
        rnd = random.Random(seed)
        # Mostly uniform play; now and then reluctant knockers (long rounds, restocks, empty
        # stocks, max_turns) and forfeits.
        policy = reluctant_policy(rnd, p_knock=0.02) if seed % 10 == 3 else None
        rules_here = rules.with_options({"max_turns_per_round": 60}) if seed % 10 == 3 else rules
        m, actions = play_match(
            players_for(seed),
            rules_here,
            seed,
            policy=policy,
            legality_checks=1 if seed % 8 == 0 else 0,
            forfeit_rate=0.005 if seed % 7 == 0 else 0.0,
        )
        assert m.over
        kinds.update(a.kind for a in actions)
        ends.update(r.end for r in m.rounds)
        if seed % 25 == 0:
            # Determinism: the same seed and the same policy give the same match, record
            # for record.
            again, actions2 = play_match(
                players_for(seed),
                rules_here,
                seed,
                policy=reluctant_policy(random.Random(seed), p_knock=0.02) if seed % 10 == 3 else None,
                forfeit_rate=0.005 if seed % 7 == 0 else 0.0,
                legality_checks=1 if seed % 8 == 0 else 0,
            )
            assert actions2 == actions and fingerprint(again) == fingerprint(m)
            assert again.rounds == m.rounds
    return kinds, ends


@pytest.mark.parametrize("name", list(VARIANTS))
def test_records_replay_from_the_seed(name: str) -> None:
    """The log records of a match are the same when it is played again from the seed."""
    for seed in range(3):
        a, acts = play_match(3 + seed, VARIANTS[name], seed, record=True)
        b = Match(3 + seed, VARIANTS[name], seed=seed)
        for x in acts:
            b.apply(x)
        assert a.take_records() == b.take_records()
        assert fingerprint(a) == fingerprint(b)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_legality_at_the_start_of_a_match(name: str) -> None:
    for players in (2, 5, 9):
        m = Match(players, VARIANTS[name], seed=players)
        check_legality(m)
        # ... and after the first decision (past the dealer's option, if any).
        m.apply(m.legal_actions()[0])
        if not m.over:
            check_legality(m)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_records_verify_a_match_without_the_seed(name: str) -> None:
    """What a log holds (the deals, restocks and actions recorded) replays every variant
    without the seed, to the same rounds: dummy, widow, antes, pots and chips included."""
    for seed in range(4):
        rules = VARIANTS[name].with_options({"max_turns_per_round": 80})
        played, _ = play_match(
            2 + seed * 2, rules, seed, record=True, policy=reluctant_policy(random.Random(seed), 0.05)
        )
        recs = played.take_records()
        deals = {r.round_no: r.deck for r in recs if isinstance(r, DealRecord)}
        restocks = {(r.round_no, r.number): r.stock for r in recs if isinstance(r, RestockRecord)}
        actions = [r.action for r in recs if isinstance(r, ActionRecord)]
        again = replay_actions(played.players, rules, actions, chance=RecordedChance(deals, restocks))
        assert again.rounds == played.rounds
        assert again.take_records() == recs
        for r in recs:
            if isinstance(r, DealRecord):
                assert len(r.dummy) == (3 if rules.dummy else 0)
                assert len(r.widow) == (3 if rules.draw == "widow" else 0)
                assert (r.upcard is None) == (rules.draw == "widow")
                if rules.scoring == "pot":
                    assert r.pot == r.pot_carried + sum(r.antes)
            elif isinstance(r, RoundResult) and rules.scoring == "pot":
                assert r.pot == sum(r.chips_won) + r.carried
