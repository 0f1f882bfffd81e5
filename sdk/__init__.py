"""The Thirty-One bot SDK: write one method, and the SDK does the rest.

::

    import sdk

    class MyBot(sdk.Bot):
        name = "mybot"

        def act(self, view: sdk.View) -> sdk.Action:
            if view.must_discard:
                card, _ = view.best_discard()
                return sdk.discard(card)
            return sdk.DRAW_STOCK

    if __name__ == "__main__":
        sdk.run(MyBot)

- :class:`Bot`: the base class (``act``, plus optional ``on_match_start``/``on_match_end``).
- :class:`View`: the decision's observation with values, card knowledge and the clock.
- :func:`run`: serves the bot over gRPC where the referee says (see :mod:`sdk.server`).
- :mod:`sdk.harness`: :func:`play_match` and :func:`play_matches` in-process, for developing.
- :mod:`sdk.sampler` and :mod:`sdk.simulate`, for searching bots: :class:`Sampler` guesses
  the hidden cards consistently with the view, :func:`rollout` plays a guess out to the end
  of the round on the game model, :class:`Evaluator` compares actions on the same guesses.
- Actions: :data:`KNOCK`, :data:`DRAW_STOCK`, :data:`DRAW_DISCARD`, :data:`PASS`,
  :func:`discard` (a Card or its text, ``discard("Ah")``); under the variants
  (docs/rules.md, "Variants") :func:`swap_upcard` (the dealer's option,
  ``swap_upcard("5c")``), :data:`CALL` (knock under the gun), :data:`SWAP_HAND` (take the
  dummy) and :func:`swap_widow` (``swap_widow("2c", "Kh")``: hand card, widow card); the
  :class:`View` values each (``best_upcard_swap``, ``best_widow_swap``, ...). Cards: :class:`Card`,
  :func:`card`, :func:`cards` (both read text leniently: ``"ah"``, ``"10h"``); :class:`Rules`.
- :func:`sdk.harness.check_bot`: the checks ``thirtyone bot test my_bot.py`` runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from referee.game import (
    CALL,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    SWAP_HAND,
    Action,
    ActionKind,
    Card,
    DummyState,
    EventKind,
    IllegalActionError,
    Observation,
    Phase,
    Pile,
    PublicEvent,
    Rules,
    card,
    cards,
    discard,
    format_cards,
    hand_value,
    swap_upcard,
    swap_widow,
)
from referee.timecontrol import TimeControl
from referee.wire import PROTOCOL_VERSION, BotIdentity, FaultInfo, MatchInfo, MatchResult
from sdk.bot import Bot, BotSource
from sdk.server import ADDRESS_ENV, AddressError, BotServer, run, start_server
from sdk.view import View, mean_hand_value, share_of_hands_below

if TYPE_CHECKING:
    from sdk.harness import IllegalMoveError, Outcome, Series, play_match, play_matches
    from sdk.sampler import Sampler, SamplerError
    from sdk.simulate import Evaluator, Policy, greedy_policy, play_round, rollout

#: Names imported on first use (PEP 562): a bot that serves only its ``act`` does not pay, at
#: every start, for the harness and the search helpers (a tournament starts bots often).
_LAZY = {
    **dict.fromkeys(("IllegalMoveError", "Outcome", "Series", "play_match", "play_matches"), "sdk.harness"),
    **dict.fromkeys(("Sampler", "SamplerError"), "sdk.sampler"),
    **dict.fromkeys(("Evaluator", "Policy", "greedy_policy", "play_round", "rollout"), "sdk.simulate"),
}


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, imported when first asked for."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every public name, the lazy ones too."""
    return sorted({*globals(), *_LAZY})

__version__ = "0.1.0"

__all__ = [
    "ADDRESS_ENV",
    "CALL",
    "DRAW_DISCARD",
    "DRAW_STOCK",
    "KNOCK",
    "PASS",
    "PROTOCOL_VERSION",
    "SWAP_HAND",
    "Action",
    "ActionKind",
    "AddressError",
    "Bot",
    "BotIdentity",
    "BotServer",
    "BotSource",
    "Card",
    "DummyState",
    "Evaluator",
    "EventKind",
    "FaultInfo",
    "IllegalActionError",
    "IllegalMoveError",
    "MatchInfo",
    "MatchResult",
    "Observation",
    "Outcome",
    "Phase",
    "Pile",
    "Policy",
    "PublicEvent",
    "Rules",
    "Sampler",
    "SamplerError",
    "Series",
    "TimeControl",
    "View",
    "card",
    "cards",
    "discard",
    "format_cards",
    "greedy_policy",
    "hand_value",
    "mean_hand_value",
    "play_match",
    "play_matches",
    "play_round",
    "rollout",
    "run",
    "share_of_hands_below",
    "start_server",
    "swap_upcard",
    "swap_widow",
]
