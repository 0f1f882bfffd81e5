"""Test helpers: stacked decks and play helpers so that tests read like card-table
scenarios, and random self-play with invariant checks (below).

A round's deck is the full 52 cards in dealing order (docs/rules.md, "The deal", and
``RecordedChance``): one card at a time to each seat still in, starting left of the dealer,
three rounds of that, then the upcard, then the stock with its top first.
:func:`stacked_deck` builds one from the cards a test cares about and fills the rest with a
fixed, harmless filler::

    deck = stacked_deck(3, hands={1: "Ah Kh Qh"}, upcard="2c", stock="9h 3d")
    m = stacked_match(3, deck)

:class:`ScriptedChance` serves such decks per round (and a filler deck for rounds a test does
not script), and restock orders, and remembers which restocks the match asked for.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.game import (
    CALL,
    DECK,
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    SWAP_HAND,
    SWAP_UPCARDS,
    Action,
    ActionKind,
    Card,
    EventKind,
    IllegalActionError,
    Match,
    MatchEnd,
    Phase,
    RoundEnd,
    RoundResult,
    Rules,
    card,
    discard,
    hand_value,
    is_thirty_one,
    swap_widow,
)

CardsLike = str | Sequence[Card] | Sequence[str]

#: Filler order: ranks climb while the suit turns, so consecutive filler cards never share a
#: suit or a rank and a hand filled from it is a low, mixed hand (2c 3d 4h, 5s 6c 7d, ...).
FILLER: tuple[Card, ...] = tuple(Card(r * 4 + (r + k) % 4) for k in range(4) for r in range(13))
assert sorted(FILLER) == list(DECK)


def parse_cards(cs: CardsLike | None) -> list[Card]:
    """Cards from ``"Ah Kh"``, ``["Ah", "Kh"]`` or a sequence of :class:`Card`."""
    if cs is None:
        return []
    if isinstance(cs, str):
        return [card(t) for t in cs.replace(",", " ").split()]
    return [c if isinstance(c, Card) else card(c) for c in cs]


def deal_order(players: int, dealer: int, seats_in: Iterable[int] | None = None) -> list[int]:
    """Seats in the order they are dealt to (and play): clockwise from the dealer's left."""
    live = set(range(players) if seats_in is None else seats_in)
    if dealer not in live:
        raise ValueError(f"the dealer (seat {dealer}) must be a seat still in {sorted(live)}")
    return [s for s in ((dealer + i) % players for i in range(1, players + 1)) if s in live]


def stacked_deck(
    players: int,
    hands: Mapping[int, CardsLike] | None = None,
    upcard: str | Card | None = None,
    stock: CardsLike | None = None,
    dealer: int | None = None,
    seats_in: Iterable[int] | None = None,
    *,
    dummy: CardsLike | bool | None = None,
    widow: CardsLike | bool | None = None,
) -> list[Card]:
    """A full 52-card deck in dealing order that deals ``hands``, ``upcard`` and ``stock``.

    ``hands`` maps seats to up to three cards; ``stock`` lists the top stock cards, top first.
    Whatever is not given is filled from :data:`FILLER` (hands in dealing order, then the
    upcard, then the rest of the stock). ``dealer`` defaults to the last seat (round 1);
    ``seats_in`` (default: all) are the seats still in, who alone are dealt to.

    For the variants (docs/rules.md, "Variants"): ``dummy`` (its three cards, or True for
    filler) is dealt right after the hands, before the up-card; ``widow`` (likewise) right
    after the hands, with no up-card (``stock`` then stacks the unused rest).
    """
    dealer = players - 1 if dealer is None else dealer
    order = deal_order(players, dealer, seats_in)
    given = {s: parse_cards(h) for s, h in (hands or {}).items()}
    for s, h in given.items():
        if s not in order:
            raise ValueError(f"seat {s} is not dealt to (seats in: {sorted(order)})")
        if len(h) > 3:
            raise ValueError(f"seat {s} is given {len(h)} cards; a hand is three")
    if dummy is not None and dummy is not False and widow is not None and widow is not False:
        raise ValueError("a deal has a dummy or a widow, not both")
    middle_spec = dummy if dummy is not None and dummy is not False else widow
    has_middle = middle_spec is not None and middle_spec is not False
    middle = [] if middle_spec is None or isinstance(middle_spec, bool) else parse_cards(middle_spec)
    is_widow = widow is not None and widow is not False
    if is_widow and upcard is not None:
        raise ValueError("the widow game has no up-card")
    up = [] if upcard is None else parse_cards([upcard] if isinstance(upcard, Card) else upcard)
    top = parse_cards(stock)
    used = [c for h in given.values() for c in h] + middle + up + top
    seen: set[Card] = set()
    for c in used:
        if c in seen:
            raise ValueError(f"{c} is stacked twice")
        seen.add(c)
    filler = iter([c for c in FILLER if c not in seen])
    k = len(order)
    deck: list[Card | None] = [None] * 52
    for j, seat in enumerate(order):
        h = list(given.get(seat, []))
        filled = len(h) < 3
        while len(h) < 3:
            h.append(next(filler))
        if filled and is_thirty_one(h):
            raise ValueError(f"the filler made seat {seat} a 31 ({h}); give its hand in full")
        for i, c in enumerate(h):
            deck[j + i * k] = c
    at = 3 * k
    if has_middle:
        while len(middle) < 3:
            middle.append(next(filler))
        deck[at : at + 3] = middle
        at += 3
    if not is_widow:
        deck[at] = up[0] if up else next(filler)
        at += 1
    rest = top + list(filler)
    deck[at:] = rest
    out = [c for c in deck if c is not None]
    assert sorted(out) == list(DECK), "stacked_deck built a bad deck"
    return out


class ScriptedChance:
    """A :class:`referee.game.Chance` that deals stacked decks.

    ``deals[round_no]`` is a round's deck; a round without one gets :data:`FILLER` (which
    deals no 31 at any table size). ``restocks[(round_no, index)]`` is a new stock, top
    first; without one the pile is used bottom first. ``restock_calls`` records every restock
    asked for, with the cards it was given (the discard pile less its top, bottom first).
    """

    def __init__(
        self,
        deals: Mapping[int, Sequence[Card]] | None = None,
        restocks: Mapping[tuple[int, int], Sequence[Card]] | None = None,
    ) -> None:
        self.deals = {k: list(v) for k, v in (deals or {}).items()}
        self.restocks = {k: list(v) for k, v in (restocks or {}).items()}
        self.restock_calls: list[tuple[int, int, tuple[Card, ...]]] = []

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        """The scripted deck for a round, or the filler deck."""
        order = self.deals.get(round_no, list(FILLER))
        assert sorted(order) == sorted(cards)
        return list(order)

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        """The scripted new stock, or the cards as given."""
        self.restock_calls.append((round_no, index, tuple(cards)))
        order = self.restocks.get((round_no, index), list(cards))
        assert sorted(order) == sorted(cards), "scripted restock is not the pile's cards"
        return list(order)


def stacked_match(
    players: int,
    deals: Sequence[Card] | Mapping[int, Sequence[Card]] | None = None,
    rules: Rules | None = None,
    *,
    restocks: Mapping[tuple[int, int], Sequence[Card]] | None = None,
    record: bool = True,
    **options: Any,
) -> Match:
    """A match on stacked decks: ``deals`` is round 1's deck or ``{round_no: deck}``.

    Keyword ``options`` are rule options set on top of ``rules`` (default: standard).
    The :class:`ScriptedChance` is ``match.chance_script``.
    """
    if deals is None:
        script: Mapping[int, Sequence[Card]] = {}
    elif isinstance(deals, Mapping):
        script = deals
    else:
        script = {1: deals}
    r = (rules or Rules()).with_options(options)
    chance = ScriptedChance(script, restocks)
    m = Match(players, r, chance=chance, record=record)
    m.chance_script = chance  # type: ignore[attr-defined]
    return m


def play(m: Match, *moves: str) -> None:
    """Apply actions given as text, checked: ``"draw stock"``, or ``"2: discard Td"`` to
    also check that seat 2 is the one to move."""
    for mv in moves:
        seat: int | None = None
        text = mv
        head, sep, tail = mv.partition(":")
        if sep and head.strip().isdigit():
            seat, text = int(head), tail
        m.apply(Action.parse(text), seat)


def idle_turn(m: Match) -> None:
    """One turn that leaves the mover's hand as it was: draw from the stock and discard the
    card drawn (with an empty stock under ``empty_stock=showdown``: pass)."""
    assert m.phase is Phase.TURN_START
    acts = m.legal_actions()
    if DRAW_STOCK in acts:
        m.apply(DRAW_STOCK)
        assert m.drawn is not None
        m.apply(discard(m.drawn))
    elif PASS in acts:
        m.apply(PASS)
    else:  # pragma: no cover - every turn start offers one of them
        m.apply(DRAW_DISCARD)
        raise AssertionError("no idle turn available")


def idle_until_round_ends(m: Match, limit: int = 1000) -> None:
    """Idle turns until the current round is over (or the match)."""
    r = m.round_no
    for _ in range(limit):
        if m.over or m.round_no != r:
            return
        idle_turn(m)
    raise AssertionError(f"round {r} did not end in {limit} idle turns")


def hand_of(m: Match, seat: int) -> set[str]:
    """A seat's hand as a set of text cards (order-free comparisons)."""
    return {str(c) for c in m.hand(seat)}


# ---------------------------------------------------------------------------------------
# Random self-play with invariant checks, shared by the self-play, determinism and secrecy
# tests. Every check here is written from docs/rules.md, not from the model's code.

ALL_ACTIONS: tuple[Action, ...] = (
    KNOCK,
    DRAW_STOCK,
    DRAW_DISCARD,
    PASS,
    CALL,
    SWAP_HAND,
    *DISCARDS,
    *SWAP_UPCARDS,
)
FULL_DECK = sorted(DECK)
FULL_SET = frozenset(DECK)


def candidate_actions(m: Match) -> list[Action]:
    """Every action worth trying now: :data:`ALL_ACTIONS`, and the widow swaps between the
    hand (plus two cards that are not in it) and the widow (plus one card that is not)."""
    hand = list(m.hands[m.current])
    widow = list(m.widow)
    others = [c for c in DECK if c not in hand and c not in widow]
    out = list(ALL_ACTIONS)
    out += [swap_widow(h, w) for h in [*hand, *others[:2]] for w in [*widow, others[-1]]]
    return out


def snapshot(m: Match) -> dict[str, Any]:
    """A deep copy of everything a match holds (less its chance and value table)."""
    skip = ("_chance", "_values", "chance_script")  # the last: tests.game.helpers' handle
    return copy.deepcopy({k: v for k, v in vars(m).items() if k not in skip})


def quick_state(m: Match) -> tuple[Any, ...]:
    """A cheap fingerprint of the mutable state."""
    return (
        [tuple(h) for h in m.hands],
        tuple(m.stock),
        tuple(m.pile),
        tuple(m.dead),
        m.current,
        m.phase,
        m.drawn,
        m.drawn_from,
        m.knocker,
        m.turns_left,
        m.turn,
        len(m.history),
        tuple(m.tokens),
        tuple(m.alive),
        len(m.rounds),
        m.over,
        m.round_no,
        m.dealer,
        m.placings,
        tuple(m.dummy),
        tuple(m.face_up),
        m.dummy_taker,
        tuple(m.widow),
        tuple(m.chips),
        m.pot,
    )


def clone(m: Match) -> Match:
    """A deep copy of a match that shares its (stateless) chance and value table."""
    memo: dict[int, Any] = {id(m._chance): m._chance, id(m._values): m._values}
    return copy.deepcopy(m, memo)


def check_legality(m: Match) -> None:
    """Every one of the 52 discards, knock, both draws and pass: the checked ``apply``
    accepts it iff it is in ``legal_actions()``; a rejection changes nothing."""
    legal = list(m.legal_actions())
    assert legal, "a match that is not over must offer an action"
    assert len(set(legal)) == len(legal), f"duplicate legal actions {legal}"
    legal_set = set(legal)
    before = snapshot(m)
    quick = quick_state(m)
    for a in candidate_actions(m):
        if a in legal_set:
            assert m.why_illegal(a) is None
            c = clone(m)
            c.apply(a, m.current)
        else:
            reason = m.why_illegal(a)
            assert reason, a
            try:
                m.apply(a)
            except IllegalActionError as e:
                assert e.action == a and e.seat == m.current and e.reason == reason
            else:  # pragma: no cover - a failing test
                raise AssertionError(f"{a} was accepted but is not in legal_actions {legal}")
            assert quick_state(m) == quick, f"rejected {a} changed the match"
    # The right action from the wrong seat is refused too.
    for other in range(m.players):
        if other != m.current:
            try:
                m.apply(legal[0], other)
            except IllegalActionError as e:
                assert e.seat == other
            else:  # pragma: no cover
                raise AssertionError(f"seat {other} could act on seat {m.current}'s turn")
    assert snapshot(m) == before


def expected_losses(r: RoundResult, rules: Rules) -> dict[int, int]:
    """Lives lost in a round, per docs/rules.md (natural 31, blitz, showdown), from the values
    shown (none when playing for a pot)."""
    if rules.scoring == "pot":
        return {}
    seats = sorted(r.hands)
    if r.end in (RoundEnd.NATURAL_31, RoundEnd.BLITZ):
        n = rules.simultaneous_31_loss if len(r.thirty_one) > 1 else 1
        return {s: n for s in seats if s not in r.thirty_one}
    if r.end is RoundEnd.ABANDONED:
        return {}
    low = min(r.values.values())
    at_low = [s for s in seats if r.values[s] == low]
    out = {s: 1 for s in at_low if s != r.knocker}
    if r.knocker in at_low:
        assert r.knocker is not None
        if len(at_low) == 1 or rules.knocker_tied == "double":
            out[r.knocker] = rules.knocker_alone_loss
        elif rules.knocker_tied == "single":
            out[r.knocker] = 1
    return out


def expected_tokens(
    tokens: list[int], seats: list[int], losses: dict[int, int], rules: Rules
) -> tuple[list[int], list[int], bool]:
    """Tokens after the losses, who is out, and whether it was sudden death.

    docs/rules.md, "Lives and the bus" and "Sudden death".
    """
    new = list(tokens)
    out: list[int] = []
    for s, n in losses.items():
        for _ in range(n):
            if new[s] == 0:
                out.append(s)
                break
            new[s] -= 1
            if new[s] == 0 and not rules.bus:
                out.append(s)
                break
    if out and set(out) == set(seats):
        return [0 if s in seats else new[s] for s in range(len(new))], [], True
    return new, sorted(out), False


def sports_style(placings: tuple[int, ...]) -> bool:
    return all(p == 1 + sum(q < p for q in placings) for p in placings)


SHOWDOWN_ENDS = (RoundEnd.KNOCK, RoundEnd.EMPTY_STOCK, RoundEnd.MAX_TURNS, RoundEnd.CALL)


def pot_key(hand: Sequence[Card], rules: Rules) -> tuple[float, tuple[int, ...]]:
    """Playing for a pot: the hand's value, then its ranks from the highest (all three count)."""
    return hand_value(hand, rules), tuple(sorted((c.rank for c in hand), reverse=True))


def expected_pot_winners(r: RoundResult, rules: Rules) -> tuple[int, ...]:
    """Who takes the pot (playing for a pot), from the hands shown."""
    if r.end in (RoundEnd.NATURAL_31, RoundEnd.BLITZ):
        return r.thirty_one
    if r.end is RoundEnd.ABANDONED:
        return ()
    keys = {s: pot_key(h, rules) for s, h in r.hands.items()}
    best = max(keys.values())
    return tuple(sorted(s for s, k in keys.items() if k == best))


@dataclass
class Tracker:
    """Follows a match from the outside and checks it after every step."""

    m: Match
    tokens: list[int] = field(default_factory=list)
    alive: list[bool] = field(default_factory=list)
    rounds_seen: int = 0
    groups: list[set[int]] = field(default_factory=list)  # who left, in order
    steps: int = 0
    # Playing for a pot: the chips as the rules make them, and the totals for conservation.
    chips: list[int] = field(default_factory=list)
    pot: int = 0
    dealt: int = 0
    antes_paid: int = 0
    awarded: int = 0
    #: Per round end seen: how many (to check that a test met the cases it means to).
    ends: dict[RoundEnd, int] = field(default_factory=dict)
    kinds: dict[ActionKind, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tokens = [self.m.rules.lives] * self.m.players
        self.alive = [True] * self.m.players
        self.chips = [0] * self.m.players
        self.check()

    def forfeit(self, seat: int) -> None:
        self.m.forfeit(seat, "test")
        self.alive[seat] = False
        self.groups.append({seat})
        self.check()
        assert self.m.alive == self.alive

    def apply(self, a: Action) -> None:
        self.kinds[a.kind] = self.kinds.get(a.kind, 0) + 1
        self.m.apply_unchecked(a)
        self.steps += 1
        self.check()

    def _antes_until(self, round_no: int) -> None:
        """Every seat still in pays the ante at each deal (playing for a pot)."""
        m = self.m
        if m.rules.scoring != "pot":
            return
        while self.dealt < round_no:
            self.dealt += 1
            for s in range(m.players):
                if self.alive[s]:
                    self.chips[s] -= m.rules.ante
                    self.pot += m.rules.ante
                    self.antes_paid += m.rules.ante

    def check(self) -> None:
        m = self.m
        r = m.rules
        pot_game = r.scoring == "pot"
        # New rounds: losses, tokens, eliminations, all recomputed from the rules.
        for res in m.rounds[self.rounds_seen :]:
            self.ends[res.end] = self.ends.get(res.end, 0) + 1
            seats = [s for s in range(m.players) if self.alive[s]]
            assert sorted(res.hands) == seats
            for s in seats:
                if res.end is not RoundEnd.ABANDONED or len(res.hands[s]) == 3:
                    assert len(res.hands[s]) == 3
                    assert res.values[s] == hand_value(res.hands[s], r)
            assert res.showdown == (res.end in SHOWDOWN_ENDS)
            assert res.turns <= r.max_turns_per_round
            if res.end is RoundEnd.NATURAL_31:
                assert res.turns == 0
            if res.end is RoundEnd.CALL:
                assert res.turns == 1 and r.under_the_gun and res.knocker is not None
            if pot_game:
                self._antes_until(res.round_no)
                assert res.lives_lost == {} and res.eliminated == () and not res.sudden_death
                assert list(res.tokens_after) == self.tokens
                assert res.pot == self.pot, (res, self.pot)
                winners = expected_pot_winners(res, r)
                assert res.winners == winners, (res, winners)
                top = max(res.values.values(), default=0)
                tied = sum(v == top for v in res.values.values())
                assert res.high_card_tie_break == (res.showdown and tied > 1)
                won = [0] * m.players
                if winners:
                    share = self.pot // len(winners)
                    for s in winners:
                        won[s] = share
                        self.chips[s] += share
                        self.awarded += share
                    self.pot -= share * len(winners)
                assert list(res.chips_won) == won
                assert res.carried == self.pot and self.pot >= 0
                assert list(res.chips_after) == self.chips
                # Chips are conserved: antes paid = chips awarded + chips left in the pot.
                assert self.antes_paid == self.awarded + self.pot
                assert sum(self.chips) == -self.pot
                continue
            assert res.lives_lost == expected_losses(res, r), res
            new, out, sudden = expected_tokens(self.tokens, seats, res.lives_lost, r)
            assert list(res.tokens_after) == new, res
            assert list(res.eliminated) == out and res.sudden_death == sudden, res
            # Tokens never rise.
            assert all(a <= b for a, b in zip(new, self.tokens, strict=True))
            self.tokens = new
            for s in out:
                self.alive[s] = False
            if out:
                self.groups.append(set(out))
        if len(m.rounds) != self.rounds_seen or m.over:
            self.rounds_seen = len(m.rounds)
            assert m.tokens == self.tokens
            assert m.alive == self.alive
            assert all(t >= 0 for t in m.tokens)
            assert sports_style(m.placings)
        if pot_game:
            if not m.over:
                self._antes_until(m.round_no)
            assert m.chips == self.chips and m.pot == self.pot, (m.chips, self.chips, m.pot, self.pot)
            assert self.antes_paid == self.awarded + m.pot
        else:
            assert m.pot == 0 and m.chips == [0] * m.players
        self.check_cards()
        if not m.over:
            cur = m.current
            assert m.alive[cur] and cur != m.knocker
            for s, h in enumerate(m.hands):
                if len(h) != 3:
                    assert (s == cur and m.phase is Phase.DISCARD and len(h) == 4) or (
                        not m.alive[s] and not h
                    ), (s, h, m.phase)
                else:
                    assert m.alive[s]
            if m.phase is Phase.DEALER_OPTION:
                assert r.dealer_option and cur == m.dealer and m.turn == 0
                assert all(e.kind is EventKind.FORFEIT for e in m.history)
            if m.phase is Phase.TURN_START and r.draw == "stock":
                # ... but for a forfeit mid-turn that took the card just drawn from the pile.
                assert m.pile or any(e.kind is EventKind.FORFEIT for e in m.history), (
                    "the discard pile is never empty at a turn start"
                )
        else:
            self.check_end()

    def check_cards(self) -> None:
        """Every card exactly once among hands, stock, discard pile, dead hands, the dummy,
        the face-up old hand, the widow and the unused cards (docs/rules.md, "Variants")."""
        m = self.m
        r = m.rules
        places = [c for h in m.hands for c in h]
        places += m.stock + m.pile + m.dead + m.dummy + m.face_up + m.widow + m.unused
        assert len(places) == 52 and set(places) == FULL_SET
        if m.phase is not Phase.DISCARD:  # the model's own count, once a turn is enough
            assert len(m.cards_in_play()) == 52
        if r.draw == "widow":
            assert len(m.widow) == 3 and not m.stock and not m.pile and not m.dummy
            assert len(m.unused) == 52 - 3 - 3 * sum(1 for h in m.hands if h) - len(m.dead)
        else:
            assert not m.widow and not m.unused
        if r.dummy and r.draw == "stock":
            # Face down until taken; then the taker's old hand lies face up (and nowhere else).
            assert (len(m.dummy), len(m.face_up)) == ((3, 0) if m.dummy_taker is None else (0, 3))
        else:
            assert not m.dummy and not m.face_up and m.dummy_taker is None

    def check_end(self) -> None:
        m = self.m
        alive = [s for s in range(m.players) if m.alive[s]]
        pot_game = m.rules.scoring == "pot"
        if m.end is MatchEnd.LAST_PLAYER:
            assert alive == [m.winner]
        elif pot_game:
            limit = m.rules.pot_rounds or 3 * m.players
            assert m.end is MatchEnd.POT_ROUNDS and m.round_no == limit and len(alive) >= 2
        else:
            assert m.end is MatchEnd.MAX_ROUNDS and m.winner is None
            assert m.round_no == m.rules.max_rounds and len(alive) >= 2
        keys = []
        for s in range(m.players):
            if m.alive[s]:
                if pot_game:
                    tie = self.chips[s]
                else:
                    tie = m.tokens[s] if m.end is MatchEnd.MAX_ROUNDS else 0
                keys.append((len(self.groups) + 1, tie))
            else:
                keys.append((next(i for i, g in enumerate(self.groups) if s in g), 0))
        expected = tuple(1 + sum(o > k for o in keys) for k in keys)
        assert m.placings == expected, (m.placings, expected, self.groups)
        if pot_game and m.end is MatchEnd.POT_ROUNDS:
            firsts = [s for s in range(m.players) if expected[s] == 1]
            assert m.winner == (firsts[0] if len(firsts) == 1 else None)
        assert m.legal_actions() == ()


Policy = Callable[[Match, list[Action]], Action]


def uniform_policy(rnd: random.Random) -> Policy:
    def pick(m: Match, acts: list[Action]) -> Action:
        return acts[int(rnd.random() * len(acts))]

    return pick


def reluctant_policy(rnd: random.Random, p_knock: float) -> Policy:
    """Random, but knocks only with probability ``p_knock`` (so stocks run out)."""

    def pick(m: Match, acts: list[Action]) -> Action:
        if KNOCK in acts:
            if rnd.random() < p_knock:
                return KNOCK
            acts = [a for a in acts if a is not KNOCK]
        if PASS in acts and rnd.random() < 0.7:
            acts = [a for a in acts if a is not PASS]
        return acts[int(rnd.random() * len(acts))]

    return pick


def play_match(
    players: int,
    rules: Rules,
    seed: int,
    *,
    policy: Policy | None = None,
    legality_checks: int = 0,
    forfeit_rate: float = 0.0,
    forfeit_mid_turn: bool = True,
    record: bool = False,
    on_decision: Callable[[Match], None] | None = None,
    max_steps: int = 300_000,
) -> tuple[Match, list[Action]]:
    """One random match with every invariant checked; returns it and its actions."""
    rnd = random.Random(seed * 7919 + players)
    policy = policy or uniform_policy(rnd)
    m = Match(players, rules, seed=seed, record=record)
    t = Tracker(m)
    actions: list[Action] = []
    check_at = {int(rnd.random() * 60) for _ in range(legality_checks)}
    while not m.over:
        assert t.steps < max_steps, "the match did not end"
        if on_decision is not None:
            on_decision(m)
        if (
            forfeit_rate
            and rnd.random() < forfeit_rate
            and (forfeit_mid_turn or m.phase is Phase.TURN_START)
        ):
            t.forfeit(rnd.choice(m.seats_in))
            continue
        if t.steps in check_at:
            check_legality(m)
        acts = list(m.legal_actions())
        a = policy(m, acts)
        actions.append(a)
        t.apply(a)
    return m, actions
