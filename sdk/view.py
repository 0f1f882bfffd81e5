"""A bot's view of one decision: the observation, what it implies, and the clock."""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable
from functools import cached_property, lru_cache

from referee.game import (
    CALL,
    SWAP_HAND,
    Action,
    ActionKind,
    Card,
    DummyState,
    Observation,
    Phase,
    Pile,
    PublicEvent,
    Rules,
    best_discard,
    format_cards,
    hand_value,
    value_table,
)
from referee.game.knowledge import Knowledge, knowledge, round_upcard

# best_discard's tie-break, used for swaps too: the cheapest card given up first, then the
# lowest index, so that a choice never depends on the order of the hand.
_GIVE_UP_ORDER = tuple(c.value * 64 + c for c in (Card(i) for i in range(52)))


@lru_cache(maxsize=16)
def _sorted_values(toak: str, three_aces: float | None) -> tuple[float, ...]:
    return tuple(sorted(value_table(Rules(three_of_a_kind=toak, three_aces=three_aces)).values()))  # type: ignore[arg-type]


def mean_hand_value(rules: Rules) -> float:
    """The mean value of a three-card hand dealt at random under ``rules``: about 13.1.

    (13.14 under ``standard`` and ``cadillac``, 13.09 with ``three_of_a_kind="off"``.) What an
    unseen hand, such as the face-down dummy, is worth on average.
    """
    vals = _sorted_values(rules.three_of_a_kind, rules.three_aces)
    return sum(vals) / len(vals)


def share_of_hands_below(value: float, rules: Rules) -> float:
    """The share of all 22,100 three-card hands worth less than ``value`` under ``rules``.

    E.g. ``share_of_hands_below(21, Rules())`` is about 0.94: a hand of 21 beats about 94%
    of random hands. Against ``k`` random hands, ``share ** k`` is the chance to beat them all.
    """
    vals = _sorted_values(rules.three_of_a_kind, rules.three_aces)
    return bisect.bisect_left(vals, value) / len(vals)


class View:
    """Everything a bot may know when it must decide, with helpers.

    It wraps the referee's :class:`~referee.game.Observation` (``view.observation``) for one
    seat and one decision. Hand values come from the game model's own scorer, so a value
    here is exactly the value the referee will count at the showdown.

    Card knowledge (:attr:`unseen`, :attr:`hidden`, :meth:`known_cards`) is deduced from the
    public history by :mod:`referee.game.knowledge` on first use.

    Time: :attr:`budget_ms` is this decision's free time and :attr:`bank_ms` the match time
    bank left; :attr:`deadline` is the :func:`time.monotonic` time at which the budget runs
    out (measured from when the request arrived), so ``view.time_left()`` is what you may
    still spend without touching the bank.
    """

    def __init__(
        self,
        observation: Observation,
        *,
        budget_ms: int = 0,
        bank_ms: int = 0,
        received_at: float | None = None,
        upcard: Card | None = None,
    ) -> None:
        self.observation = observation
        #: This decision's free time, in milliseconds.
        self.budget_ms = budget_ms
        #: Time bank left for the rest of the match, in milliseconds.
        self.bank_ms = bank_ms
        #: :func:`time.monotonic` time at which the decision request arrived.
        self.received_at = time.monotonic() if received_at is None else received_at
        self._upcard = upcard

    # ------------------------------------------------------------------ the table

    @property
    def seat(self) -> int:
        """This bot's seat (0 .. players-1)."""
        return self.observation.seat

    @property
    def players(self) -> int:
        """Seats at the table, including seats already out."""
        return self.observation.players

    @property
    def rules(self) -> Rules:
        """The rules in force."""
        return self.observation.rules

    @property
    def round_no(self) -> int:
        """Round number, from 1."""
        return self.observation.round_no

    @property
    def turn(self) -> int:
        """Turns completed in this round (0 on its first turn)."""
        return self.observation.turn

    @property
    def dealer(self) -> int:
        """This round's dealer."""
        return self.observation.dealer

    @property
    def tokens(self) -> tuple[int, ...]:
        """Tokens (lives) left, per seat."""
        return self.observation.tokens

    @property
    def my_tokens(self) -> int:
        """This seat's tokens left."""
        return self.observation.tokens[self.seat]

    @property
    def in_game(self) -> tuple[bool, ...]:
        """Per seat: still in the match."""
        return self.observation.in_game

    @property
    def seats_in(self) -> tuple[int, ...]:
        """Seats still in the match, this one included."""
        return tuple(s for s, alive in enumerate(self.observation.in_game) if alive)

    @property
    def opponents(self) -> tuple[int, ...]:
        """Seats still in the match other than this one."""
        return tuple(s for s in self.seats_in if s != self.seat)

    @property
    def out(self) -> tuple[int, ...]:
        """Seats eliminated (or forfeited)."""
        return tuple(s for s, alive in enumerate(self.observation.in_game) if not alive)

    @property
    def on_the_bus(self) -> tuple[int, ...]:
        """Seats still in with no token left: their next loss eliminates them."""
        obs = self.observation
        return tuple(s for s in self.seats_in if obs.tokens[s] == 0)

    @property
    def knocker(self) -> int | None:
        """The seat that knocked this round, or None."""
        return self.observation.knocker

    @property
    def turns_left_after_knock(self) -> int:
        """After a knock, turns left in the round counting this one; 0 without a knock."""
        return self.observation.turns_left_after_knock

    @property
    def next_seat(self) -> int | None:
        """The seat that plays after this one in this round, or None if this is the last turn.

        The knocker takes no further turn, so it is skipped.
        """
        obs = self.observation
        if obs.knocker is not None and obs.turns_left_after_knock <= 1:
            return None
        n = obs.players
        for step in range(1, n):
            s = (obs.seat + step) % n
            if obs.in_game[s] and s != obs.knocker:
                return s
        return None

    @property
    def stock_size(self) -> int:
        """Cards left in the stock."""
        return self.observation.stock_size

    @property
    def history(self) -> tuple[PublicEvent, ...]:
        """This round's public events, oldest first (others' stock draws hide the card)."""
        return self.observation.history

    @property
    def discard_pile(self) -> tuple[Card, ...]:
        """The discard pile, bottom first, top last."""
        return self.observation.discard_pile

    @property
    def top_discard(self) -> Card | None:
        """The card :data:`~sdk.DRAW_DISCARD` would take."""
        return self.observation.top_discard

    # ------------------------------------------------------------------ this decision

    @property
    def phase(self) -> Phase:
        """``Phase.TURN_START`` (knock / draw / pass; under the variants also call, take the
        dummy, swap with the widow), ``Phase.DISCARD`` (after a draw), or
        ``Phase.DEALER_OPTION`` (the dealer's one decision before the first turn: swap a hand
        card for the up-card, or ``PASS`` to keep the hand)."""
        return self.observation.phase

    @property
    def is_dealer_option(self) -> bool:
        """True at the dealer's option (``dealer_option=true``): answer
        ``sdk.swap_upcard(card)`` or ``sdk.PASS``. See :meth:`best_upcard_swap`."""
        return self.observation.phase is Phase.DEALER_OPTION

    @property
    def must_discard(self) -> bool:
        """True after a draw: the answer must be a discard."""
        return self.observation.phase is Phase.DISCARD

    @property
    def legal_actions(self) -> tuple[Action, ...]:
        """Every action the referee accepts now; answer with one of them."""
        return self.observation.legal_actions

    def can(self, action: Action) -> bool:
        """Whether ``action`` is legal now, e.g. ``view.can(sdk.KNOCK)``."""
        return action in self.observation.legal_actions

    @property
    def legal_discards(self) -> tuple[Card, ...]:
        """The cards that may be discarded now (empty at the start of a turn)."""
        return tuple(
            a.card for a in self.observation.legal_actions if a.kind is ActionKind.DISCARD and a.card is not None
        )

    @property
    def hand(self) -> tuple[Card, ...]:
        """This seat's cards: three, or four after a draw (the drawn card included)."""
        return self.observation.hand

    @property
    def drawn_card(self) -> Card | None:
        """After a draw, the card just drawn; None at the start of a turn."""
        return self.observation.drawn_card

    @property
    def drawn_from(self) -> Pile | None:
        """After a draw, the pile it came from (``Pile.STOCK`` or ``Pile.DISCARD``)."""
        return self.observation.drawn_from

    # ------------------------------------------------------------------ values

    def value_of(self, cards: tuple[Card, ...] | list[Card]) -> float:
        """The value of any three cards under these rules (the referee's scorer)."""
        return hand_value(cards, self.rules)

    @property
    def value(self) -> float:
        """The value of the three cards held at the start of this turn.

        After a draw that is the hand without the drawn card; see :meth:`best_discard` for
        the best value reachable now.
        """
        hand = self.observation.hand
        if len(hand) == 4 and self.drawn_card is not None:
            hand = tuple(c for c in hand if c != self.drawn_card)
        elif len(hand) == 4:  # pragma: no cover - a drawn card always accompanies four cards
            return self.best_discard()[1]
        return hand_value(hand, self.rules)

    def value_if(self, *, discard: Card) -> float:
        """After a draw: the value of the three cards left if ``discard`` is discarded."""
        hand = self.observation.hand
        if len(hand) != 4 or discard not in hand:
            raise ValueError(f"can only discard one of four held cards; hand is {format_cards(hand)}, not {discard}")
        return hand_value([c for c in hand if c != discard], self.rules)

    def value_with(self, card: Card, *, from_discard: bool = True) -> float:
        """At the start of a turn: the best value after drawing ``card`` and discarding well.

        With ``from_discard`` (the default, e.g. for ``view.top_discard``) the drawn card may
        not go straight back, as the rules say; pass ``False`` to value a stock card.
        """
        hand = self.observation.hand
        if len(hand) != 3 or card in hand:
            raise ValueError(f"can only add a new card to three held cards; hand is {format_cards(hand)}, not + {card}")
        return best_discard((*hand, card), self.rules, forbidden=card if from_discard else None)[1]

    def best_discard(self) -> tuple[Card, float]:
        """After a draw: the legal discard that leaves the highest value, and that value."""
        hand = self.observation.hand
        if len(hand) != 4:
            raise ValueError(f"best_discard needs four cards (after a draw); hand is {format_cards(hand)}")
        forbidden = self.drawn_card if self.drawn_from is Pile.DISCARD else None
        return best_discard(hand, self.rules, forbidden=forbidden)

    # ------------------------------------------------------------------ the variants

    @property
    def widow_game(self) -> bool:
        """True under ``draw="widow"`` (e.g. the ``bicycle`` preset): turns are ``KNOCK`` or a
        widow swap; there is no stock, up-card or discard pile."""
        return self.observation.rules.draw == "widow"

    @property
    def widow(self) -> tuple[Card, ...]:
        """The widow's three face-up cards (``draw="widow"``), else empty."""
        return self.observation.widow

    @property
    def upcard(self) -> Card | None:
        """The card the dealer's option would take: the top of the discard pile (None in the
        widow game). The same card as :attr:`top_discard`, named for the dealer's option."""
        return self.observation.top_discard

    @property
    def dummy_state(self) -> DummyState:
        """Where the dummy hand is: ``DummyState.NONE`` (no dummy in these rules),
        ``FACE_DOWN`` (any player may still take it) or ``TAKEN`` (see :attr:`dummy_taker`)."""
        return self.observation.dummy_state

    @property
    def dummy_face_down(self) -> bool:
        """True while the dummy may still be taken this round (``SWAP_HAND``)."""
        return self.observation.dummy_state is DummyState.FACE_DOWN

    @property
    def dummy_taker(self) -> int | None:
        """The seat that took the dummy this round, else None."""
        return self.observation.dummy_taker

    @property
    def face_up(self) -> tuple[Card, ...]:
        """The dummy-taker's old hand, face up and out of play for the rest of the round
        (empty until the dummy is taken)."""
        return self.observation.face_up

    @property
    def playing_for_pot(self) -> bool:
        """True under ``scoring="pot"`` (e.g. ``bicycle``): the round's highest hand takes the
        pot (a 31 at once); nobody loses lives. The aim is being *highest*, not *not lowest*."""
        return self.observation.rules.scoring == "pot"

    @property
    def chips(self) -> tuple[int, ...]:
        """Net chips per seat under the pot (pots won minus antes paid; may be negative)."""
        return self.observation.chips

    @property
    def my_chips(self) -> int:
        """This seat's net chips (0 under lives)."""
        chips = self.observation.chips
        return chips[self.seat] if chips else 0

    @property
    def pot(self) -> int:
        """Chips in the pot now: what this round is played for (0 under lives)."""
        return self.observation.pot

    @property
    def rounds_in_match(self) -> int:
        """Under the pot, the rounds the match lasts (0 under lives, where it has no fixed length)."""
        return self.observation.rounds_in_match

    @property
    def rounds_left(self) -> int | None:
        """Under the pot, rounds still to play after this one (0 in the last); None under lives.

        In round 5 of a 12-round pot match, ``view.rounds_left == 7``.
        """
        total = self.observation.rounds_in_match
        if not total:
            return None
        return max(0, total - self.observation.round_no)

    @property
    def can_call(self) -> bool:
        """Whether ``sdk.CALL`` (knocking under the gun: an immediate showdown, the caller
        scored as the knocker) is legal now: the round's first turn with ``under_the_gun``."""
        return CALL in self.observation.legal_actions

    @property
    def can_swap_hand(self) -> bool:
        """Whether ``sdk.SWAP_HAND`` (take the face-down dummy as the hand, the old hand goes
        face up; the whole turn) is legal now."""
        return SWAP_HAND in self.observation.legal_actions

    def value_if_upcard_swap(self, card: Card | str) -> float:
        """At the dealer's option: the hand's value after giving ``card`` (a hand card, or
        its text) for the up-card.

        Hand ``Ah Kh 5c``, up-card ``Qh``: ``view.value_if_upcard_swap("5c") == 31`` (a
        blitz), ``view.value_if_upcard_swap("Ah") == 20``.
        """
        c = _card(card)
        up = self.upcard
        hand = self._three("an up-card swap")
        if up is None or c not in hand:
            raise ValueError(
                f"an up-card swap gives a hand card for the up-card; hand is {format_cards(hand)}, "
                f"up-card {up}, not {c}"
            )
        return hand_value([up if x == c else x for x in hand], self.rules)

    def best_upcard_swap(self) -> tuple[Card, float]:
        """At the dealer's option: the hand card whose swap for the up-card leaves the highest
        value, and that value (among equal values the cheapest card goes, as in
        :meth:`best_discard`). Swap only if the value beats :attr:`value`::

            card, value = view.best_upcard_swap()
            return sdk.swap_upcard(card) if value > view.value else sdk.PASS

        Hand ``Ah Kh 5c``, up-card ``Qh``: ``(Card('5c'), 31.0)``.
        """
        hand = self._three("an up-card swap")
        if self.upcard is None:
            raise ValueError("there is no up-card to swap for (the widow game)")
        return _best_of((c, self.value_if_upcard_swap(c)) for c in hand)

    def value_if_widow_swap(self, hand_card: Card | str, widow_card: Card | str) -> float:
        """The hand's value after giving ``hand_card`` to the widow for ``widow_card`` (cards
        or their text).

        Hand ``Ah 9h 2c``, widow ``Kh 7d 3s``: ``view.value_if_widow_swap("2c", "Kh") == 30``.
        """
        h, w = _card(hand_card), _card(widow_card)
        hand = self._three("a widow swap")
        if h not in hand or w not in self.widow:
            raise ValueError(
                f"a widow swap gives a hand card for a widow card; hand is {format_cards(hand)}, "
                f"widow {format_cards(self.widow) or '(none)'}, not {h} for {w}"
            )
        return hand_value([w if x == h else x for x in hand], self.rules)

    def widow_swaps(self) -> dict[tuple[Card, Card], float]:
        """Every widow swap ``(hand card, widow card)`` and the value it leaves (nine of them)."""
        hand = self._three("a widow swap")
        if not self.widow:
            raise ValueError("there is no widow in these rules (draw=stock)")
        return {(h, w): self.value_if_widow_swap(h, w) for h in hand for w in self.widow}

    def best_widow_swap(self) -> tuple[Card, Card, float]:
        """The widow swap that leaves the highest value: ``(hand card, widow card, value)``.

        Among equal values the cheapest hand card goes (then the dearest widow card comes),
        so the choice never depends on the order of the cards. A turn in the widow game must
        knock or swap, so the best swap may be worth less than :attr:`value`::

            h, w, value = view.best_widow_swap()
            return sdk.swap_widow(h, w)

        Hand ``Ah 9h 2c``, widow ``Kh 7d 3s``: ``(Card('2c'), Card('Kh'), 30.0)``.
        """
        best: tuple[Card, Card, float] | None = None
        key = _GIVE_UP_ORDER
        for (h, w), v in sorted(self.widow_swaps().items(), key=lambda kv: (key[kv[0][0]], -key[kv[0][1]])):
            if best is None or v > best[2]:
                best = (h, w, v)
        assert best is not None
        return best

    @property
    def mean_hand_value(self) -> float:
        """The mean value of a random three-card hand under these rules (about 13.1): what
        the face-down dummy is worth on average, as far as this seat can tell."""
        return mean_hand_value(self.rules)

    def _three(self, what: str) -> tuple[Card, ...]:
        hand = self.observation.hand
        if len(hand) != 3:
            raise ValueError(f"{what} needs three held cards; hand is {format_cards(hand)}")
        return hand

    # ------------------------------------------------------------------ card knowledge

    @cached_property
    def knowledge(self) -> Knowledge:
        """Everything deduced about the cards (see :class:`referee.game.knowledge.Knowledge`)."""
        return knowledge(self.observation, self._upcard)

    @property
    def unseen(self) -> frozenset[Card]:
        """Cards this seat has not seen this round: not in its hand or the discard pile,
        not drawn, discarded or taken by anyone in its sight. The stock holds only these
        until the first restock."""
        return self.knowledge.unseen

    @property
    def hidden(self) -> frozenset[Card]:
        """Cards whose place this seat does not know (stock, opponents' unknown cards).

        The same as :attr:`unseen` until a restock shuffles seen discards back into the stock.
        """
        return self.knowledge.hidden

    def known_cards(self, seat: int) -> frozenset[Card]:
        """Cards known to be in ``seat``'s hand: for an opponent, those it took from the
        discard pile and has not discarded since; for this seat, its hand."""
        return self.knowledge.known[seat]

    @property
    def opponent_known(self) -> dict[int, frozenset[Card]]:
        """For each opponent still in, the cards known to be in its hand (maybe none)."""
        k = self.knowledge.known
        return {s: k[s] for s in self.opponents}

    # ------------------------------------------------------------------ time

    @property
    def deadline(self) -> float:
        """:func:`time.monotonic` time at which this decision's budget runs out."""
        return self.received_at + self.budget_ms / 1000

    @property
    def hard_deadline(self) -> float:
        """:func:`time.monotonic` time at which budget and the whole bank run out (a timeout)."""
        return self.received_at + (self.budget_ms + self.bank_ms) / 1000

    def time_left(self) -> float:
        """Seconds left of this decision's budget (0 once it is spent)."""
        return max(0.0, self.deadline - time.monotonic())

    def __repr__(self) -> str:
        obs = self.observation
        what = "discard" if self.must_discard else "dealer's option" if self.is_dealer_option else "turn start"
        return (
            f"<View seat {obs.seat}, round {obs.round_no} turn {obs.turn}, {what}, "
            f"hand {format_cards(obs.hand)}, legal: {', '.join(map(str, obs.legal_actions))}>"
        )


def _card(c: Card | str) -> Card:
    if isinstance(c, Card):
        return c
    if isinstance(c, str):
        return Card.parse(c)
    raise TypeError(f"expected a Card or card text like 'Ah', got {type(c).__name__} {c!r}")


def _best_of(pairs: Iterable[tuple[Card, float]]) -> tuple[Card, float]:
    """The (card, value) with the highest value; among equals the cheapest card."""
    best: tuple[Card, float] | None = None
    key = _GIVE_UP_ORDER
    for c, v in sorted(pairs, key=lambda p: key[p[0]]):
        if best is None or v > best[1]:
            best = (c, v)
    assert best is not None
    return best


class SeatMemory:
    """What one seat remembers between its decisions, to build each :class:`View`.

    An observation is complete except for one card: the round's up-card, which a restock can
    shuffle away before anyone takes it. The server and the harness keep one of these per
    match and seat and give it every observation of that seat, in order.
    """

    def __init__(self) -> None:
        self._round = 0
        self._upcard: Card | None = None

    def view(
        self, observation: Observation, *, budget_ms: int = 0, bank_ms: int = 0, received_at: float | None = None
    ) -> View:
        """Remember what ``observation`` shows and wrap it in a :class:`View`."""
        if observation.round_no != self._round:
            self._round = observation.round_no
            self._upcard = None
        if self._upcard is None:
            self._upcard = round_upcard(observation)
        return View(observation, budget_ms=budget_ms, bank_ms=bank_ms, received_at=received_at, upcard=self._upcard)
