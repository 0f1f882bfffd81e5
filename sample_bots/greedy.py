"""``greedy``: the simplest sensible strategy, and a base class for better ones.

At the start of a turn it knocks once its hand is worth ``knock_at`` or more (when the rules
allow), takes the top discard only if that raises its hand's value, and otherwise draws from
the stock. After drawing it discards the card that leaves the best three.
Serve it with ``python -m sample_bots.greedy``.
"""

from __future__ import annotations

import sdk


class GreedyBot(sdk.Bot):
    """Greedy play with a fixed knock threshold.

    Subclasses change one decision by overriding :meth:`knock_threshold` or
    :meth:`choose_discard` (see ``sample_bots.threshold``).
    """

    name = "greedy"
    version = "1.0"
    author = "thirtyone sample bots"

    #: Knock with a hand worth at least this much.
    knock_at: float = 22

    def act(self, view: sdk.View) -> sdk.Action:
        if view.must_discard:
            return sdk.discard(self.choose_discard(view))
        if view.can(sdk.KNOCK) and view.value >= self.knock_threshold(view):
            return sdk.KNOCK
        top = view.top_discard
        # value_with() keeps the rule that a card taken from the discard pile cannot go
        # straight back, so "better" here means better after the forced discard.
        if top is not None and view.can(sdk.DRAW_DISCARD) and view.value_with(top) > view.value:
            return sdk.DRAW_DISCARD
        if view.can(sdk.DRAW_STOCK):
            return sdk.DRAW_STOCK
        # Only under empty_stock=showdown with an empty stock: take the discard or pass.
        return sdk.PASS if view.can(sdk.PASS) else view.legal_actions[0]

    def knock_threshold(self, view: sdk.View) -> float:
        """The hand value at which to knock."""
        return self.knock_at

    def choose_discard(self, view: sdk.View) -> sdk.Card:
        """The card to discard after a draw: the one that leaves the best hand."""
        card, _value = view.best_discard()
        return card


if __name__ == "__main__":
    sdk.run(GreedyBot)
