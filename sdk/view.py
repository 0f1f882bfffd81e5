"""A bot's view of one decision: the observation, what it implies, and the clock."""

from __future__ import annotations

import time
from functools import cached_property

from referee.game import (
    Action,
    ActionKind,
    Card,
    Observation,
    Phase,
    Pile,
    PublicEvent,
    Rules,
    best_discard,
    format_cards,
    hand_value,
)
from referee.game.knowledge import Knowledge, knowledge, round_upcard


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
        """``Phase.TURN_START`` (knock / draw / pass) or ``Phase.DISCARD`` (after a draw)."""
        return self.observation.phase

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
        what = "discard" if self.must_discard else "turn start"
        return (
            f"<View seat {obs.seat}, round {obs.round_no} turn {obs.turn}, {what}, "
            f"hand {format_cards(obs.hand)}, legal: {', '.join(map(str, obs.legal_actions))}>"
        )


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
