"""Positions and knowledge under the variants (docs/rules.md, "Variants"): what the SDK's Monte Carlo
sampler rebuilds a match from.

A position taken from a match rebuilds the very same match (every field, ``Match.resume``);
each seat's knowledge partitions the deck and agrees with the truth (the dummy's face-down
cards and the widow game's unused cards are hidden, the widow and a face-up old hand public);
and a guess dealt from one seat's knowledge alone, in the way a sampler deals one, is a
position the game model accepts and in which that seat sees exactly what it saw.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace

import pytest

from referee.game import DECK, DummyState, EventKind, Match, Observation, Phase, Rules
from referee.game.errors import GameError
from referee.game.knowledge import knowledge
from referee.game.position import (
    Position,
    had_turn_from_history,
    match_from_position,
    owes_from_history,
    position_of,
)

VARIANTS: dict[str, Rules] = {
    "cadillac": Rules.preset("cadillac"),
    "bicycle": Rules.preset("bicycle"),
    "dealer_option": Rules(dealer_option=True),
    "under_the_gun": Rules(under_the_gun=True, knock_ban="none"),
    "dummy": Rules(dummy=True),
    "dummy_showdown": Rules.build("pagat", {"dummy": True, "max_turns_per_round": 80}),
    "widow": Rules(draw="widow", max_turns_per_round=30),
    "pot": Rules(scoring="pot", dummy=True, dealer_option=True),
}


def decisions(rules: Rules, seed: int, steps: int = 250, players: int = 4) -> Iterator[Match]:
    """A self-play match at each of its decisions (random play that rarely knocks)."""
    rnd = random.Random(seed)
    m = Match(players, rules, seed=seed, record=False)
    for _ in range(steps):
        if m.over:
            return
        yield m
        acts = list(m.legal_actions())
        if len(acts) > 1 and rnd.random() < 0.9:
            acts = [a for a in acts if a.kind.name not in ("KNOCK", "CALL")] or acts
        m.apply_unchecked(acts[int(rnd.random() * len(acts))])


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_position_rebuilds_the_same_match(name: str) -> None:
    for seed in range(3):
        for m in decisions(VARIANTS[name], seed):
            pos = position_of(m)
            pos.check()
            rebuilt = match_from_position(pos, chance=m._chance)
            mine, theirs = dict(vars(m)), dict(vars(rebuilt))
            for skip in ("rounds", "_records", "seed", "over", "end"):
                mine.pop(skip)
                theirs.pop(skip)
            assert mine == theirs
            assert rebuilt.legal_actions() == m.legal_actions()
            assert rebuilt.observation(m.current) == m.observation(m.current)
            assert had_turn_from_history(m.players, m.history) == tuple(m._had_turn)
            assert owes_from_history(m.players, m.alive, m.knocker, m.history) == tuple(m._owes)


def check_knowledge(m: Match, seat: int) -> None:
    obs = m.observation(seat)
    k = knowledge(obs)
    parts = [set(obs.hand), set(obs.discard_pile), set(k.public), set(k.dead), set(k.hidden)]
    parts += [set(k.known[s]) for s in range(m.players) if s != seat]
    # A partition of the deck...
    assert sum(len(p) for p in parts) == 52 and set().union(*parts) == set(DECK)
    # ... that agrees with the truth.
    assert k.public == set(m.widow) | set(m.face_up)
    for s in range(m.players):
        if s != seat:
            assert k.known[s] <= set(m.hands[s])
    truly_hidden = set(m.stock) | set(m.dummy) | set(m.unused)
    for s in range(m.players):
        if s != seat:
            truly_hidden |= set(m.hands[s]) - k.known[s]
    assert truly_hidden <= k.hidden
    if obs.dummy_state is DummyState.FACE_DOWN:
        assert set(m.dummy) <= k.hidden


@pytest.mark.parametrize("name", list(VARIANTS))
def test_knowledge_partitions_the_deck_and_agrees_with_the_truth(name: str) -> None:
    for seed in range(3):
        for i, m in enumerate(decisions(VARIANTS[name], 10 + seed)):
            if i % 3 == 0:
                for seat in range(m.players):
                    check_knowledge(m, seat)


def guess(obs: Observation, rnd: random.Random) -> Position:
    """One determinization, dealt the way a sampler deals one (no forfeits here)."""
    k = knowledge(obs)
    n = obs.players
    pool = sorted(k.hidden)
    rnd.shuffle(pool)
    hands: list[tuple[object, ...]] = []
    for s in range(n):
        if s == obs.seat:
            hands.append(obs.hand)
        elif not obs.in_game[s]:
            hands.append(())
        else:
            u = 3 - len(k.known[s])
            hands.append((*sorted(k.known[s]), *pool[:u]))
            del pool[:u]
    dummy = ()
    if obs.dummy_state is DummyState.FACE_DOWN:
        dummy, pool = tuple(pool[:3]), pool[3:]
    stock = tuple(pool[: obs.stock_size])
    unused = tuple(pool[obs.stock_size :])
    return Position(
        rules=obs.rules,
        players=n,
        round_no=obs.round_no,
        dealer=obs.dealer,
        tokens=obs.tokens,
        alive=obs.in_game,
        hands=tuple(hands),  # type: ignore[arg-type]
        stock=stock,
        pile=obs.discard_pile,
        dead=(),
        current=obs.seat,
        phase=obs.phase,
        drawn=obs.drawn_card,
        drawn_from=obs.drawn_from,
        knocker=obs.knocker,
        owes=owes_from_history(n, obs.in_game, obs.knocker, obs.history),
        had_turn=had_turn_from_history(n, obs.history),
        turn=obs.turn,
        restocks=sum(1 for e in obs.history if e.kind is EventKind.RESTOCK),
        history=obs.history,
        dummy=dummy,
        face_up=obs.face_up,
        dummy_taker=obs.dummy_taker,
        widow=obs.widow,
        unused=unused,
        chips=obs.chips,
        pot=obs.pot,
    )


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_guess_from_one_seats_knowledge_plays_on(name: str) -> None:
    rnd = random.Random(name)
    phases: set[Phase] = set()
    for seed in range(3):
        for i, m in enumerate(decisions(VARIANTS[name], 20 + seed)):
            if i % 4:
                continue
            obs = m.observation(m.current)
            pos = guess(obs, rnd)
            pos.check()
            g = match_from_position(pos, seed=seed)
            assert g.observation(m.current) == obs
            assert g.legal_actions() == m.legal_actions()
            phases.add(obs.phase)
            # The model plays the guessed round to its end.
            while not g.rounds:
                acts = g.legal_actions()
                g.apply(acts[int(rnd.random() * len(acts))])
    assert Phase.TURN_START in phases
    if VARIANTS[name].dealer_option:
        assert Phase.DEALER_OPTION in phases


def test_position_check_names_variant_problems() -> None:
    m = Match(3, Rules(dummy=True), seed=4, record=False)
    pos = position_of(m)
    with pytest.raises(GameError, match="dummy"):
        replace(pos, dummy=pos.dummy[:2], stock=(*pos.stock, pos.dummy[2])).check()
    with pytest.raises(GameError, match="widow"):
        replace(pos, rules=Rules(draw="widow")).check()
    w = position_of(Match(3, Rules(draw="widow"), seed=4, record=False))
    with pytest.raises(GameError, match="twice"):
        replace(w, unused=(*w.unused[:-1], w.widow[0])).check()
    d = position_of(Match(3, Rules(dealer_option=True), seed=4, record=False))
    assert d.phase is Phase.DEALER_OPTION
    with pytest.raises(GameError, match="dealer's option"):
        replace(d, current=0).check()
