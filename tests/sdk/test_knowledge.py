"""Card knowledge (referee.game.knowledge) checked against the omniscient Match.

Self-play with bots that never knock makes long rounds, with restocks, many discards taken
and, here and there, a forfeit. After every action the test tracks, from the Match's own
state, what each seat has truly seen and which cards each seat took from the discard pile,
and compares with what each seat's observation lets it deduce.
"""

from __future__ import annotations

import random

import pytest

from referee.game import (
    DECK,
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    PASS,
    Action,
    ActionKind,
    Card,
    EventKind,
    Match,
    Phase,
    Rules,
)
from referee.game.knowledge import hidden_cards, knowledge, known_cards, round_upcard, unseen_cards
from sdk.view import SeatMemory

ALL = frozenset(DECK)


class Truth:
    """What each seat has really seen this round, and who holds which public cards."""

    def __init__(self, m: Match) -> None:
        self.round_no = -1
        self.sync(m)

    def sync(self, m: Match) -> None:
        if m.round_no != self.round_no:
            self.round_no = m.round_no
            self.seen = [set(m.hands[s]) | {m.pile[0]} for s in range(m.players)]
            self.public = [set[Card]() for _ in range(m.players)]
            self.dead: set[Card] = set()
            self.restocked = False

    def before(self, m: Match, action_kind: ActionKind, card: Card | None) -> None:
        s = m.current
        if action_kind is ActionKind.DRAW_STOCK:
            self.seen[s].add(m.stock[-1])
        elif action_kind is ActionKind.DRAW_DISCARD:
            self.public[s].add(m.pile[-1])
        elif action_kind is ActionKind.DISCARD:
            assert card is not None
            for seen in self.seen:
                seen.add(card)
            self.public[s].discard(card)

    def forfeit(self, seat: int) -> None:
        self.dead |= self.public[seat]
        self.public[seat] = set()


def check_all_seats(m: Match, truth: Truth, memories: list[SeatMemory]) -> None:
    for t in range(m.players):
        if not m.alive[t]:
            continue
        obs = m.observation(t)
        view = memories[t].view(obs)
        k = view.knowledge
        assert k.unseen == ALL - truth.seen[t], f"seat {t} unseen"
        for u in range(m.players):
            if u == t:
                assert k.known[u] == set(m.hands[t])
            elif m.alive[u]:
                assert k.known[u] == truth.public[u], f"seat {t} on seat {u}"
                assert k.known[u] <= set(m.hands[u])
            else:
                assert k.known[u] == frozenset()
        assert k.dead == truth.dead
        located = set(m.hands[t]) | set(m.pile) | truth.dead
        for u in range(m.players):
            if u != t:
                located |= truth.public[u]
        assert k.hidden == ALL - located
        assert set(m.stock) <= k.hidden
        assert k.unseen <= k.hidden
        if not any(e.kind is EventKind.RESTOCK for e in obs.history):
            # Before a restock nothing seen can hide again, and the stock is all unseen.
            assert k.unseen == k.hidden
            assert round_upcard(obs) == k.upcard
            assert unseen_cards(obs) == k.unseen


def wander(m: Match, rng: random.Random) -> Action:
    """A move that never knocks: long rounds, restocks, discards taken back and forth."""
    legal = m.legal_actions()
    if m.phase is Phase.DISCARD:
        return rng.choice(list(legal))
    if DRAW_DISCARD in legal and rng.random() < 0.4:
        return DRAW_DISCARD
    if DRAW_STOCK in legal:
        return DRAW_STOCK
    return PASS if rng.random() < 0.2 else DRAW_DISCARD  # empty stock under the showdown rule


@pytest.mark.parametrize(
    ("preset", "players", "seed"),
    [("standard", 2, 1), ("standard", 4, 2), ("pagat", 3, 3), ("family", 5, 4), ("standard", 6, 5)],
)
def test_knowledge_against_ground_truth(preset: str, players: int, seed: int) -> None:
    rules = Rules.build(preset, {"max_rounds": 2, "max_turns_per_round": 100})
    m = Match(players, rules, seed=seed)
    rng = random.Random(seed)
    truth = Truth(m)
    memories = [SeatMemory() for _ in range(players)]
    restocked_rounds: set[int] = set()
    taken = steps = forfeits = 0
    while not m.over:
        truth.sync(m)
        check_all_seats(m, truth, memories)
        steps += 1
        if players >= 4 and steps % 120 == 0 and sum(m.alive) > 2:
            # A forfeit mid-round: what was known of that hand stays known, but dead.
            seat = rng.choice(m.seats_in)
            truth.forfeit(seat)
            m.forfeit(seat, "test")
            forfeits += 1
            continue
        action = wander(m, rng)
        truth.before(m, action.kind, action.card)
        taken += action is DRAW_DISCARD
        m.apply(action)
        if any(e.kind is EventKind.RESTOCK for e in m.history):
            restocked_rounds.add(m.round_no)
    # The scenario must exercise what it claims to.
    assert taken > 20
    if rules.empty_stock == "reshuffle":
        assert restocked_rounds
    if players >= 4:
        assert forfeits > 0


def test_turn_only_memory_knows_the_upcard() -> None:
    # Over the wire a seat sees observations only on its own turns. It always has one before
    # the first restock, so the SDK's memory still names the up-card after the restock.
    rules = Rules.build("standard", {"max_rounds": 2, "max_turns_per_round": 60})  # 60 draws: past a restock
    restocked = 0
    for seed in range(3):
        m = Match(4, rules, seed=seed)
        rng = random.Random(seed)
        memories = [SeatMemory() for _ in range(4)]
        upcards: dict[int, Card] = {}
        while not m.over:
            upcards.setdefault(m.round_no, m.pile[0])  # first seen at turn 0: the up-card
            obs = m.observation(m.current)
            view = memories[m.current].view(obs)
            assert view.knowledge.upcard == upcards[m.round_no]
            if any(e.kind is EventKind.RESTOCK for e in obs.history):
                restocked += 1
                assert view.unseen == unseen_cards(obs, upcards[m.round_no])
                assert upcards[m.round_no] not in view.unseen
            legal = m.legal_actions()
            m.apply(rng.choice(list(legal)) if m.phase is Phase.DISCARD else DRAW_STOCK)
    assert restocked > 0


def test_helpers_on_a_fresh_deal() -> None:
    m = Match(3, Rules(), seed=7)
    upcard = m.pile[0]
    obs = m.observation(0)
    assert known_cards(obs)[0] == set(m.hands[0]) and known_cards(obs)[1] == frozenset()
    assert hidden_cards(obs) == ALL - set(m.hands[0]) - {upcard}
    assert unseen_cards(obs) == ALL - set(m.hands[0]) - {upcard}
    assert round_upcard(obs) == upcard
    m.apply(DRAW_DISCARD)
    # While the up-card is in seat 0's hand the pile is empty, and history names it.
    assert round_upcard(m.observation(1)) == upcard
    m.apply(DISCARDS[next(c for c in m.hands[0] if c != upcard)])
    assert known_cards(m.observation(1))[0] == {upcard}
    assert knowledge(m.observation(2)).known[0] == {upcard}
