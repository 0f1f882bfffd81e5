"""``greedy``: the simplest sensible strategy, and a base class for better ones.

At the start of a turn it knocks once its hand is worth ``knock_at`` or more (when the rules
allow), takes the top discard only if that raises its hand's value, and otherwise draws from
the stock. After drawing it discards the card that leaves the best three.

Under the variants (docs/rules.md, "Variants") it values every choice by the hand it leaves:

- **Dealer's option**: swap the hand card whose exchange for the up-card leaves the best
  value, if that beats the hand as it is; else ``PASS`` (keep the hand).
- **Knock under the gun**: ``CALL`` with a hand unlikely to be the lowest (:data:`CALL_AT`),
  or, playing for a pot, likely to be the highest (:data:`POT_CALL_AT`). At a call nobody
  has drawn yet, so every other hand is a random three cards; the tables come from the
  share of random hands below each value (:func:`sdk.share_of_hands_below`).
- **Dummy**: take it (``SWAP_HAND``) when the hand is worth less than a random hand is on
  average (:func:`sdk.mean_hand_value`, about 13.1: an unseen dummy is a random hand as far
  as this seat can tell), unless the top discard already lifts the hand to that.
- **Widow**: knock at the threshold, else make the widow swap that leaves the best value
  (a turn must knock or swap, so sometimes the best swap is a step down). When no swap
  raises the hand it is stuck until someone else changes the widow (at two seats the nine
  cards of the two hands and the widow never change at all), so it also knocks within
  ``stuck_margin`` (4) of the threshold, rather than swapping to the turn limit.
- **Playing for a pot**: only the highest hand wins, so the knock waits for a hand likely
  to be the *highest* after everyone's last turn, ``pot_knock_at`` (24), rather than one that
  is merely not the lowest (22). Not much higher, though: a knock costs nothing extra here
  (no double loss), and it leaves the others one turn to catch up. In duplicate-seat runs
  (120 matches a point, one bot against copies of greedy) knocking at 22-24 won the most
  chips at two seats, 24-26 at four; 28 and more lost chips at every size, and so did 18.

Serve it with ``python -m sample_bots.greedy``.
"""

from __future__ import annotations

import sdk

#: CALL under the gun, playing for lives, with a hand worth at least this much, by seats in.
#: Calling with value v loses (double, as the knocker) when every one of the k other hands,
#: random three cards at the first turn, is worth v or more: p(v)**k, p(v) the share of
#: hands worth v or more. These values keep that chance near or under 2.5% (a twentieth of a
#: life at a double loss); a call also costs the lowest other seat a life.
CALL_AT: dict[int, float] = {2: 24, 3: 19, 4: 16, 5: 15, 6: 14, 7: 14, 8: 14, 9: 14}
#: CALL under the gun playing for a pot: the call wins when the hand beats all k random
#: others, share_below(v)**k; these values make that at least about 60%.
POT_CALL_AT: dict[int, float] = {2: 15, 3: 18, 4: 20, 5: 20, 6: 21, 7: 21, 8: 21, 9: 22}


class GreedyBot(sdk.Bot):
    """Greedy play with a fixed knock threshold.

    Subclasses change one decision by overriding :meth:`knock_threshold`,
    :meth:`call_threshold` or :meth:`choose_discard` (see ``sample_bots.threshold``).
    """

    name = "greedy"
    version = "1.0"
    author = "thirtyone sample bots"

    #: Knock with a hand worth at least this much.
    knock_at: float = 22
    #: Playing for a pot (``scoring="pot"``), knock with a hand worth at least this much.
    pot_knock_at: float = 24
    #: In the widow game, also knock with a hand this close to the threshold that no widow
    #: swap can raise.
    stuck_margin: float = 4

    def act(self, view: sdk.View) -> sdk.Action:
        if view.must_discard:
            return sdk.discard(self.choose_discard(view))
        if view.is_dealer_option:
            # The dealer's option: the swap that leaves the best hand, if it beats keeping it.
            card, best = view.best_upcard_swap()
            return sdk.swap_upcard(card) if best > view.value else sdk.PASS
        value = view.value
        if view.can_call and value >= self.call_threshold(view):
            return sdk.CALL
        knock_at = self.knock_threshold(view)
        if view.widow_game:
            hand_card, widow_card, best = view.best_widow_swap()
            # Stuck (no swap raises the hand) and near the threshold: knock rather than
            # shuffle cards with the widow until the turn limit.
            stuck = best <= value and value >= knock_at - self.stuck_margin
            if view.can(sdk.KNOCK) and (value >= knock_at or stuck):
                return sdk.KNOCK
            return sdk.swap_widow(hand_card, widow_card)
        if view.can(sdk.KNOCK) and value >= knock_at:
            return sdk.KNOCK
        top = view.top_discard
        # value_with() keeps the rule that a card taken from the discard pile cannot go
        # straight back, so "better" here means better after the forced discard.
        with_top = view.value_with(top) if top is not None and view.can(sdk.DRAW_DISCARD) else value
        if view.can_swap_hand and max(value, with_top) < view.mean_hand_value:
            return sdk.SWAP_HAND
        if with_top > value:
            return sdk.DRAW_DISCARD
        if view.can(sdk.DRAW_STOCK):
            return sdk.DRAW_STOCK
        # Only under empty_stock=showdown with an empty stock: take the discard or pass.
        return sdk.PASS if view.can(sdk.PASS) else view.legal_actions[0]

    def knock_threshold(self, view: sdk.View) -> float:
        """The hand value at which to knock."""
        return self.pot_knock_at if view.playing_for_pot else self.knock_at

    def call_threshold(self, view: sdk.View) -> float:
        """The hand value at which to call under the gun (:data:`CALL_AT`, :data:`POT_CALL_AT`)."""
        table = POT_CALL_AT if view.playing_for_pot else CALL_AT
        return table[len(view.seats_in)]

    def choose_discard(self, view: sdk.View) -> sdk.Card:
        """The card to discard after a draw: the one that leaves the best hand."""
        card, _value = view.best_discard()
        return card


if __name__ == "__main__":
    sdk.run(GreedyBot)
