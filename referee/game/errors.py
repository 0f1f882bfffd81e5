"""One home for the game model's errors."""

from __future__ import annotations


class GameError(Exception):
    """Base class of every error the game model raises."""


class CardParseError(GameError, ValueError):
    """A card's text form could not be read."""


class RulesError(GameError, ValueError):
    """An unknown rule option, a bad value, or an unknown preset."""


class IllegalActionError(GameError, ValueError):
    """An action the rules forbid in the current state.

    Carries the action, the seat that tried it and the reason, so the referee can record
    the fault and a developer can see what went wrong without re-running the match.
    """

    def __init__(self, action: object, seat: int | None, reason: str) -> None:
        self.action = action
        self.seat = seat
        self.reason = reason
        who = "no seat" if seat is None else f"seat {seat}"
        super().__init__(f"illegal action {action!s} by {who}: {reason}")


class ChanceError(GameError, ValueError):
    """A recorded deal or restock is not a valid order of the cards it must hold."""
