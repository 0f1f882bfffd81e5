"""One home for the game model's errors."""

from __future__ import annotations

import math
import re


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


#: Characters of an echoed value an error message shows at most (about one line's worth).
SHOWN_MAX = 60


def shown(value: object, limit: int = SHOWN_MAX) -> str:
    """A value as an error message echoes it: ``repr`` (a number as its digits), cut short.

    A value someone typed or a file held may be huge (a 5,000-digit number, a megabyte of
    text); a message shows its start and its size, never all of it. A number too long for
    Python to write out (over 4,300 digits) is described by its length alone.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() <= 3 * limit:  # at most ~limit digits: shown whole
            return str(value)
        digits = int(math.log10(abs(value))) + 1
        return f"a {'negative ' if value < 0 else ''}number of {digits} digits"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    try:
        text = repr(value)
    except ValueError:  # a huge number inside a list or a table
        return f"a {type(value).__name__} too large to show"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def shown_in(message: str, limit: int = SHOWN_MAX) -> str:
    """A library's message (a parser's, say) with each value it echoed cut as :func:`shown`
    cuts one: every run of more than ``limit`` digits, or characters without a space.

    A number too long for Python to read (over 4,300 digits) raises a ValueError whose
    message advises ``sys.set_int_max_str_digits``: that is said in a user's words.
    """
    if "for integer string conversion" in message:
        return "it holds a number of more than 4300 digits"

    message = re.sub(rf"\d{{{limit + 1},}}", lambda m: f"<a number of {len(m.group())} digits>", message)
    return re.sub(rf"\S{{{limit + 1},}}", lambda m: f"{m.group()[:limit]}... ({len(m.group())} characters)", message)
