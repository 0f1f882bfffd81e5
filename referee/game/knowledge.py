"""What one seat can deduce about the cards from its observation (pure, standard library).

An :class:`~referee.game.observation.Observation` holds the seat's hand, the discard pile and
the round's public history. Replaying that history tells the seat more than any single field:
which cards each opponent took from the discard pile and still holds, which cards it has seen
at some point this round, and which cards it cannot place at all. The referee, the SDK's
``View`` and future samplers all derive this knowledge here, so there is one implementation.

The one fact an observation can lose is the round's first up-card: it starts the discard pile
but is not a history event, so once a restock has shuffled it into the stock (without anyone
having taken it) a later observation cannot name it. :func:`round_upcard` reads it while it is
still visible; a caller that keeps state between decisions (the SDK does) passes it back in
as ``upcard=`` so that it still counts as seen.

Under the variants (docs/rules.md, "Variants"): the dealer's up-card swap and every widow swap name both
cards, so the dealer keeps the old up-card and a widow swapper the widow card it took as
known cards; the widow and a face-up old hand are public and located; the dummy's cards are
hidden while face down, and stay hidden in the taker's hand (only the taker knows them, as
its own hand); the widow game's undealt cards are hidden too (nobody ever sees them).
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.game.actions import EventKind
from referee.game.cards import DECK, Card
from referee.game.observation import Observation

# Stands for the round's up-card while replaying a pile whose bottom card is not named.
_UPCARD = -1


@dataclass(frozen=True, slots=True)
class Knowledge:
    """Everything :func:`knowledge` deduced from one observation.

    The sets partition the deck as seen from ``seat``: its own hand, the discard pile, the
    widow and a face-up old hand (``public``), ``known`` cards of the other seats, ``dead``
    cards, and ``hidden`` cards (in the stock, in an opponent's unknown slots, in the
    face-down dummy, among the widow game's unused cards, or in an unrevealed dead hand).
    """

    #: The observing seat.
    seat: int
    #: The round's first up-card, when the observation (or the caller) could name it.
    upcard: Card | None
    #: Per seat: cards known to be in that seat's hand. The observing seat's entry is its
    #: whole hand; another seat's entry holds the cards it took from the discard pile and has
    #: not discarded since; a seat that is out has an empty entry.
    known: tuple[frozenset[Card], ...]
    #: Known cards of seats that forfeited this round: out of play for the rest of the round.
    dead: frozenset[Card]
    #: Cards this seat has seen at some point this round (hand, draws, discard pile, events).
    seen: frozenset[Card]
    #: Cards this seat has not seen this round: ``DECK`` minus ``seen``.
    unseen: frozenset[Card]
    #: Cards whose whereabouts this seat does not know. Equal to ``unseen`` until a restock
    #: turns seen discards into stock cards again; a superset of it afterwards.
    hidden: frozenset[Card]
    #: Cards face up outside the discard pile: the widow and a dummy-taker's old hand.
    public: frozenset[Card] = frozenset()


def round_upcard(obs: Observation) -> Card | None:
    """The round's first up-card if this observation still shows it, else None.

    It is visible while it sits in the discard pile, or as the card of the history event that
    took it from the pile. Only after a restock has turned it into a stock card unseen can no
    observation name it.
    """
    return _find_upcard(obs)


def knowledge(obs: Observation, upcard: Card | None = None) -> Knowledge:
    """Deduce what ``obs.seat`` knows about every card (see :class:`Knowledge`).

    ``upcard`` is the round's first up-card as remembered by a caller that saw an earlier
    observation of the same round; without it, an up-card that was restocked before anyone
    took it counts as unseen (the only case where the observation alone cannot tell).
    """
    found = _find_upcard(obs)
    if found is not None:
        upcard = found
    known: list[set[Card]] = [set() for _ in range(obs.players)]
    dead: set[Card] = set()
    seen: set[Card] = set(obs.hand)
    seen.update(obs.discard_pile)
    public = frozenset(obs.widow) | frozenset(obs.face_up)
    seen |= public
    if upcard is not None:
        seen.add(upcard)
    for ev in obs.history:
        c = ev.card
        if c is not None:
            # Every card an event names was shown to this seat (a stock card only to its drawer).
            seen.add(c)
        kind = ev.kind
        if kind is EventKind.DRAW_DISCARD and c is not None:
            known[ev.seat].add(c)
        elif kind is EventKind.DISCARD and c is not None:
            known[ev.seat].discard(c)
        elif kind is EventKind.SWAP_UPCARD or kind is EventKind.SWAP_WIDOW:
            # A public exchange: ``card`` left the hand, ``taken`` joined it.
            if c is not None:
                known[ev.seat].discard(c)
            if ev.taken_card is not None:
                seen.add(ev.taken_card)
                known[ev.seat].add(ev.taken_card)
        elif kind is EventKind.SWAP_HAND:
            # The old hand lies face up (public); the new one is the dummy, unseen by others.
            known[ev.seat] = set()
        elif kind is EventKind.FORFEIT:
            # A forfeited hand leaves play face down; what was known of it stays located.
            dead |= known[ev.seat]
            known[ev.seat] = set()
    me = obs.seat
    hand = frozenset(obs.hand)
    frozen: list[frozenset[Card]] = []
    for s in range(obs.players):
        if s == me:
            frozen.append(hand)
        elif s < len(obs.in_game) and not obs.in_game[s]:
            frozen.append(frozenset())
        else:
            frozen.append(frozenset(known[s]))
    located: set[Card] = set(hand)
    located.update(obs.discard_pile)
    located |= dead
    located |= public
    for s, cs in enumerate(frozen):
        if s != me:
            located |= cs
    all_cards = frozenset(DECK)
    seen_f = frozenset(seen)
    return Knowledge(
        seat=me,
        upcard=upcard,
        known=tuple(frozen),
        dead=frozenset(dead),
        seen=seen_f,
        unseen=all_cards - seen_f,
        hidden=all_cards - located,
        public=public,
    )


def known_cards(obs: Observation) -> tuple[frozenset[Card], ...]:
    """Per seat, the cards ``obs.seat`` knows that seat holds (see :attr:`Knowledge.known`)."""
    return knowledge(obs).known


def unseen_cards(obs: Observation, upcard: Card | None = None) -> frozenset[Card]:
    """Cards ``obs.seat`` has not seen this round (see :attr:`Knowledge.unseen`)."""
    return knowledge(obs, upcard).unseen


def hidden_cards(obs: Observation) -> frozenset[Card]:
    """Cards whose whereabouts ``obs.seat`` does not know (see :attr:`Knowledge.hidden`)."""
    return knowledge(obs).hidden


def _find_upcard(obs: Observation) -> Card | None:
    """Replay the discard pile through the history, with a placeholder for the up-card.

    The up-card is named by the event that took it from the pile, or, if it is still in the
    pile, by the current pile at the placeholder's position: the replayed pile matches the
    current one card for card, as every change to the pile is a history event.
    """
    pile: list[int] = [_UPCARD]
    for ev in obs.history:
        kind = ev.kind
        if kind is EventKind.DISCARD and ev.card is not None:
            pile.append(ev.card)
        elif kind is EventKind.DRAW_DISCARD and pile:
            if pile.pop() == _UPCARD:
                return ev.card
        elif kind is EventKind.SWAP_UPCARD and pile and ev.card is not None:
            # The dealer took the up-card and put ``card`` in its place.
            if pile.pop() == _UPCARD:
                return ev.taken_card
            pile.append(ev.card)
        elif kind is EventKind.RESTOCK and pile:
            pile = [pile[-1]]
    if len(pile) == len(obs.discard_pile):
        for mark, c in zip(pile, obs.discard_pile, strict=True):
            if mark == _UPCARD:
                return c
    return None
