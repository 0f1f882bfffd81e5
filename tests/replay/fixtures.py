"""Deterministic match logs for the replay tests.

A :class:`~referee.game.Match` is played by a fixed policy (greedy, with a knock threshold
per seat) and written the way the referee writes a log: the model's records of each step
become lines through :mod:`referee.wire`, in the order ``referee.match`` writes them, faults
are recorded and answered with the referee's default action (or a forfeit), and the footer
holds the placings and each seat's decision statistics. Latencies and ids are fixed, so the
same call always writes the same bytes, and the golden renders stay stable.

Some rounds can be dealt from crafted decks (a natural 31, a blitz); the others come from
the seed, like a real match.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from thirtyone.v1 import log_pb2

from referee import wire
from referee.game import (
    CALL,
    DECK,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    SWAP_HAND,
    Action,
    ActionKind,
    ActionRecord,
    Card,
    DealRecord,
    ForfeitRecord,
    Match,
    MatchEnd,
    Observation,
    Phase,
    Pile,
    Record,
    RestockRecord,
    RoundResult,
    Rules,
    SeededChance,
    best_discard,
    cards,
    discard,
    hand_value,
    swap_upcard,
)
from referee.log import LogWriter, schema_version_for
from referee.match import default_action
from referee.timecontrol import TimeControl


@dataclass(frozen=True)
class FaultPlan:
    """A bot faults instead of answering; ``{card}`` in the message is a card of its hand."""

    kind: wire.FaultKindName
    message: str


@dataclass
class Plan:
    """How a fixture match is played."""

    names: Sequence[str]
    rules: Rules = field(default_factory=Rules)
    seed: int = 7
    #: Per seat: knock with a hand worth at least this much.
    knock_at: Sequence[float] = (22,)
    #: Rounds in which nobody knocks and everyone draws from the stock (to empty it).
    patient_rounds: Iterable[int] = ()
    #: Round -> the whole deck in dealing order (see :func:`crafted_deck`).
    decks: Mapping[int, Sequence[Card]] = field(default_factory=dict)
    #: (seat, k) -> the fault the seat commits at its k-th decision (from 1) instead of answering.
    faults: Mapping[tuple[int, int], FaultPlan] = field(default_factory=dict)
    fault_policy: wire.FaultPolicyName = "lenient"
    max_strikes: int = 3
    match_id: str = "fixture"


class _Chance:
    """Crafted decks for some rounds, the seed for everything else."""

    def __init__(self, seed: int, decks: Mapping[int, Sequence[Card]]) -> None:
        self._seeded = SeededChance(seed)
        self._decks = decks

    def deal(self, round_no: int, cs: Sequence[Card]) -> list[Card]:
        if round_no in self._decks:
            return list(self._decks[round_no])
        return self._seeded.deal(round_no, cs)

    def restock(self, round_no: int, index: int, cs: Sequence[Card]) -> list[Card]:
        return self._seeded.restock(round_no, index, cs)


def crafted_deck(players_in: Sequence[int], dealer: int, hands: Mapping[int, str], upcard: str, seed: int = 1) -> list[Card]:
    """A deck in dealing order that deals ``hands`` (seat -> "Ah Kh 5c") and turns ``upcard``.

    ``players_in`` are the seats dealt in; the deal goes one card at a time from the dealer's
    left. Seats without a crafted hand, and the stock, get the other cards in a seeded order.
    """
    order = [s for s in players_in if s > dealer] + [s for s in players_in if s <= dealer]
    fixed = {s: list(cards(h)) for s, h in hands.items()}
    up = cards(upcard)[0]
    used = {c for h in fixed.values() for c in h} | {up}
    rest = [c for c in SeededChance(seed).deal(99, DECK) if c not in used]
    k = len(order)
    deck: list[Card | None] = [None] * 52
    for j, seat in enumerate(order):
        for i in range(3):
            deck[j + i * k] = fixed[seat][i] if seat in fixed else rest.pop()
    deck[3 * k] = up
    for i in range(3 * k + 1, 52):
        deck[i] = rest.pop()
    assert all(c is not None for c in deck)
    return [c for c in deck if c is not None]


def _variant_choice(obs: Observation, rules: Rules, knock_at: float) -> Action | None:
    """The variants' decisions (docs/rules.md, "Variants"), greedy; None: play the plain game.

    The dealer's option swaps the up-card in when that raises the hand; a call under the gun
    at ``knock_at``; the dummy is taken by a hand worth less than 18; in the widow game the
    best swap, or a knock at ``knock_at``.
    """
    if obs.phase is Phase.DISCARD:
        return None
    legal = obs.legal_actions
    hand = obs.hand
    value = hand_value(hand, rules)

    def swapped(give: Card, take: Card) -> float:
        return hand_value(tuple(take if c == give else c for c in hand), rules)

    if obs.phase is Phase.DEALER_OPTION:
        up = obs.top_discard
        assert up is not None
        give = max(hand, key=lambda c: (swapped(c, up), -c))
        return swap_upcard(give) if swapped(give, up) > value else PASS
    if CALL in legal and value >= knock_at:
        return CALL
    if obs.widow:
        if KNOCK in legal and value >= knock_at:
            return KNOCK
        swaps = [a for a in legal if a.kind is ActionKind.SWAP_WIDOW]
        best = max(swaps, key=lambda a: (swapped(a.card, a.widow_card), -a.card, -a.widow_card))  # type: ignore[arg-type]
        if KNOCK in legal and swapped(best.card, best.widow_card) <= value:  # type: ignore[arg-type]
            return KNOCK
        return best
    if SWAP_HAND in legal and value < 18:
        return SWAP_HAND
    return None


def policy(obs: Observation, rules: Rules, knock_at: float, patient: bool) -> Action:
    """Greedy play: the best discard; knock at ``knock_at``; take the discard if it helps."""
    legal = obs.legal_actions
    chosen = _variant_choice(obs, rules, knock_at) if not patient or obs.phase is Phase.DEALER_OPTION else None
    if chosen is not None:
        return chosen
    if obs.phase is Phase.DISCARD:
        if patient and obs.drawn_from is Pile.STOCK:
            # Keep the hand as dealt: no 31 can end a patient round early.
            assert obs.drawn_card is not None
            return discard(obs.drawn_card)
        forbidden = obs.drawn_card if obs.drawn_from is Pile.DISCARD else None
        card, _ = best_discard(obs.hand, rules, forbidden)
        return discard(card)
    value = hand_value(obs.hand, rules)
    if patient:
        return DRAW_STOCK if DRAW_STOCK in legal else PASS if PASS in legal else legal[0]
    if KNOCK in legal and value >= knock_at:
        return KNOCK
    top = obs.top_discard
    if top is not None and DRAW_DISCARD in legal and best_discard((*obs.hand, top), rules, top)[1] > value:
        return DRAW_DISCARD
    if DRAW_STOCK in legal:
        return DRAW_STOCK
    return PASS if PASS in legal else legal[0]


def _lines(
    records: Sequence[Record],
    decision_id: int,
    latency_us: int,
    by_referee: bool,
    turn: int,
    phase: Phase | None = None,
    dummy: tuple[Card, ...] = (),
) -> Iterator[log_pb2.LogRecord]:
    # The order and conversions of referee.match._LazyLines; ``phase`` and ``dummy`` are the
    # model's before an action (the cards a swap hand takes).
    for rec in records:
        if isinstance(rec, ActionRecord):
            taken = wire.taken_cards(rec, dummy) if rec.action.kind >= ActionKind.SWAP_UPCARD else ()
            yield wire.action_event_to_pb(rec, decision_id, latency_us, by_referee, phase, taken)
        elif isinstance(rec, DealRecord):
            yield wire.deal_event_to_pb(rec)
            ante = wire.ante_event_to_pb(rec)
            if ante is not None:
                yield ante
        elif isinstance(rec, RestockRecord):
            yield wire.restock_event_to_pb(rec, turn)
        elif isinstance(rec, ForfeitRecord):
            yield wire.forfeit_event_to_pb(rec)
        elif isinstance(rec, RoundResult):
            if rec.thirty_one:
                yield wire.thirty_one_event_to_pb(rec)
            award = wire.pot_award_event_to_pb(rec)
            if award is not None:
                yield award
            yield wire.round_end_event_to_pb(rec)


def write_fixture(path: Path, plan: Plan) -> Path:
    """Play ``plan`` and write its log to ``path`` (same plan, same bytes)."""
    n = len(plan.names)
    rules = plan.rules
    knock_at = [plan.knock_at[s % len(plan.knock_at)] for s in range(n)]
    patient = set(plan.patient_rounds)
    m = Match(n, rules, chance=_Chance(plan.seed, plan.decks))
    max_strikes = 1 if plan.fault_policy == "strict" else plan.max_strikes
    header = wire.LogHeaderInfo(
        schema_version=schema_version_for(rules),
        software_version="fixture",
        protocol_version=wire.PROTOCOL_VERSION,
        match_id=plan.match_id,
        seed=plan.seed,
        players=n,
        rules=rules,
        time_control=TimeControl(),
        seats=tuple(
            wire.SeatInfo(s, wire.BotIdentity(name, "1.0", "replay fixtures"), f"fixture:{name}", name)
            for s, name in enumerate(plan.names)
        ),
        fault_policy=plan.fault_policy,
        max_strikes=max_strikes,
    )
    decisions = [0] * n
    total = [0] * n
    longest = [0] * n
    faults = [0] * n
    kinds: list[list[str]] = [[] for _ in range(n)]
    did = 0
    with LogWriter(path) as w:
        w.write(wire.log_header_to_pb(header))
        w.write_many(_lines(m.take_records(), 0, 0, False, m.turn))
        while not m.is_over:
            seat = m.current
            did += 1
            decisions[seat] += 1
            fault = plan.faults.get((seat, decisions[seat]))
            if fault is not None:
                faults[seat] += 1
                kinds[seat].append(fault.kind)
                forfeit = faults[seat] >= max_strikes
                action = None if forfeit else default_action(m)
                message = fault.message.format(card=m.hand(seat)[0])
                info = wire.FaultInfo(fault.kind, seat, m.round_no, m.turn, did, message, faults[seat], forfeit, action)
                w.write(wire.fault_event_to_pb(info))
                if action is not None:
                    phase, dummy = m.phase, tuple(m.dummy)
                    m.apply(action)
                    w.write_many(_lines(m.take_records(), did, 0, True, m.turn, phase, dummy))
                else:
                    m.forfeit(seat, f"{faults[seat]} strikes: " + ", ".join(kinds[seat]))
                    w.write_many(_lines(m.take_records(), 0, 0, False, m.turn))
                continue
            latency = 400 + (did * 37) % 900
            total[seat] += latency
            longest[seat] = max(longest[seat], latency)
            obs = m.observation(seat)
            phase, dummy = m.phase, tuple(m.dummy)
            m.apply(policy(obs, rules, knock_at[seat], m.round_no in patient))
            w.write_many(_lines(m.take_records(), did, latency, False, m.turn, phase, dummy))
        reason: wire.MatchEndReasonName = {MatchEnd.LAST_PLAYER: "last_player", MatchEnd.POT_ROUNDS: "pot_rounds"}.get(m.end, "max_rounds")  # type: ignore[arg-type]
        pot = rules.scoring == "pot"
        footer = wire.LogFooterInfo(
            placings=tuple(m.placings),
            winner=m.winner,
            reason=reason,
            rounds=m.round_no,
            stats=tuple(wire.SeatStats(s, decisions[s], total[s], longest[s], faults[s]) for s in range(n)),
            chips=tuple(m.chips) if pot else (),
            pot_left=m.pot if pot else 0,
        )
        w.write(wire.log_footer_to_pb(footer))
    return path


# ---------------------------------------------------------------- the fixture matches

#: Three seats under the standard rules, all from the seed: knocks, showdowns, eliminations.
STANDARD = Plan(names=("alice", "bob", "carol"), seed=7, knock_at=(22, 25, 20), match_id="fixture-standard")

#: Four seats, two lives: round 1 deals seat 1 a natural 31, round 2 lets seat 1 blitz by
#: taking the up-card; later seat 3 faults three times (an illegal action naming a card of
#: its hand, then two timeouts) and forfeits.
SPECIALS = Plan(
    names=("alice", "bob", "carol", "dave"),
    seed=11,
    knock_at=(21, 23, 24, 22),
    decks={
        1: crafted_deck([0, 1, 2, 3], 3, {1: "As Ks Qs"}, "2c", seed=1),
        2: crafted_deck([0, 1, 2, 3], 0, {1: "Ah Kh 5c", 2: "9d 9c 3s"}, "Qh", seed=2),
    },
    faults={
        (3, 2): FaultPlan("illegal", "illegal action discard {card}: the player must knock or draw before discarding"),
        (3, 5): FaultPlan("timeout", "no answer within 360 ms"),
        (3, 9): FaultPlan("timeout", "no answer within 360 ms"),
    },
    match_id="fixture-specials",
)

#: Two seats; round 1 is played without knocking until the stock runs out (a restock) and the
#: turn limit ends it.
LONG = Plan(
    names=("alice", "bob"),
    rules=Rules().with_options({"max_turns_per_round": 60, "lives": 1}),
    seed=3,
    knock_at=(23, 21),
    patient_rounds=(1,),
    match_id="fixture-long",
)

#: Two seats under the pagat preset: round 1 is played without knocking until the stock is
#: empty and a seat passes (a showdown on an empty stock).
PAGAT = Plan(
    names=("alice", "bob"),
    rules=Rules.preset("pagat").with_options({"lives": 1}),
    seed=5,
    knock_at=(22, 24),
    patient_rounds=(1,),
    match_id="fixture-pagat",
)

FIXTURES: dict[str, Plan] = {"standard": STANDARD, "specials": SPECIALS, "long": LONG, "pagat": PAGAT}

# ---------------------------------------------------------------- the variants (docs/rules.md, "Variants")

#: Three seats, two lives, the dealer's option and knocking under the gun: the dealer swaps
#: the up-card in or keeps the hand, and a first player with a good hand calls.
OPTION = Plan(
    names=("alice", "bob", "carol"),
    rules=Rules().with_options({"dealer_option": True, "under_the_gun": True, "lives": 2}),
    seed=7,
    knock_at=(21, 23, 22),
    match_id="fixture-option",
)

#: Three seats with the dummy hand, playing for a pot over three rounds: a poor hand takes
#: the dummy and its old hand lies face up; antes, pots, chips, a blitz and a tie broken by
#: card rank.
DUMMY = Plan(
    names=("alice", "bob", "carol"),
    rules=Rules().with_options({"dummy": True, "scoring": "pot", "pot_rounds": 3}),
    seed=7,
    knock_at=(22, 24, 21),
    match_id="fixture-dummy",
)

#: Three seats under the bicycle preset (the widow game for a pot), three rounds: a pot
#: shared after a tie broken by card rank, its odd chip carried to the next round.
BICYCLE = Plan(
    names=("alice", "bob", "carol"),
    rules=Rules.preset("bicycle").with_options({"pot_rounds": 3}),
    seed=9,
    knock_at=(25, 27, 26),
    match_id="fixture-bicycle",
)

#: Two seats under the cadillac preset (three aces count 33), two lives.
CADILLAC = Plan(
    names=("alice", "bob"),
    rules=Rules.preset("cadillac").with_options({"lives": 2}),
    seed=12,
    knock_at=(23, 22),
    match_id="fixture-cadillac",
)

VARIANT_FIXTURES: dict[str, Plan] = {"option": OPTION, "dummy": DUMMY, "bicycle": BICYCLE, "cadillac": CADILLAC}
ALL_FIXTURES: dict[str, Plan] = {**FIXTURES, **VARIANT_FIXTURES}


def write_all(folder: Path, *, variants: bool = False) -> dict[str, Path]:
    """Write every fixture log into ``folder`` as ``NAME.jsonl`` (the variants' too, if asked)."""
    folder.mkdir(parents=True, exist_ok=True)
    plans = ALL_FIXTURES if variants else FIXTURES
    return {name: write_fixture(folder / f"{name}.jsonl", plan) for name, plan in plans.items()}
