"""One seat's observation: its information set, and nothing more.

docs/rules.md, "What a bot sees", says what that is. The type only: :func:`referee.game.state.observe`
builds one from a match (so this module needs nothing of the state machine, and the two do not
import each other).
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.game.actions import Action, DummyState, Phase, Pile, PublicEvent
from referee.game.cards import Card
from referee.game.rules import Rules


@dataclass(frozen=True, slots=True)
class Observation:
    """What one seat knows at one moment.

    Its own hand and the card it just drew; the round's public history (a card another
    seat drew from the stock is hidden); the discard pile; tokens and who is in; dealer,
    knocker and turns left after a knock; stock size; round and turn numbers; the rules;
    and, when the seat is to move, its legal actions. Never another seat's cards, the
    stock's order or the seed.

    Under the variants of docs/rules.md, "Variants" also what is public: the widow's cards, where the
    dummy is (its cards are nobody's while face down; once taken they are the taker's hand,
    which only the taker sees) and the taker's old hand lying face up, the dealer's up-card
    swap (in ``history``), and under the pot every seat's net chips, the pot and the rounds.
    The fields after ``legal_actions`` have defaults so that older callers can build one.
    """

    seat: int
    players: int
    round_no: int
    #: Turns completed in this round.
    turn: int
    phase: Phase
    #: Whether this seat is the one to move (legal_actions is empty otherwise).
    to_move: bool
    hand: tuple[Card, ...]
    drawn_card: Card | None
    drawn_from: Pile | None
    history: tuple[PublicEvent, ...]
    #: Bottom first, top last.
    discard_pile: tuple[Card, ...]
    stock_size: int
    tokens: tuple[int, ...]
    in_game: tuple[bool, ...]
    dealer: int
    knocker: int | None
    turns_left_after_knock: int
    rules: Rules
    legal_actions: tuple[Action, ...]
    #: The widow's three face-up cards (``draw="widow"``), else empty.
    widow: tuple[Card, ...] = ()
    #: Where the dummy is: none in these rules, face down, or taken this round.
    dummy_state: DummyState = DummyState.NONE
    #: The seat that took the dummy this round (``dummy`` is ``TAKEN``), else None.
    dummy_taker: int | None = None
    #: The dummy-taker's old hand, face up and out of play for the rest of the round (the
    #: contract's ``Observation.dead_hand``; not the hands of forfeited seats).
    face_up: tuple[Card, ...] = ()
    #: Per seat: net chips (``scoring="pot"``; all 0 under lives).
    chips: tuple[int, ...] = ()
    #: Chips in the pot now (this round's antes and any carried remainder).
    pot: int = 0
    #: Under the pot, the rounds the match lasts (``pot_rounds``, 0 resolved to three times
    #: the seats): this is round ``round_no`` of ``rounds_in_match``. 0 under lives.
    rounds_in_match: int = 0

    @property
    def top_discard(self) -> Card | None:
        """The card on top of the discard pile."""
        return self.discard_pile[-1] if self.discard_pile else None
