"""One home for the referee's errors and the bots' faults.

Two families, never mixed up:

- :class:`BotError` and its subclasses: a bot could not be used at all (a bad bot name, a
  process that does not start, a bot that speaks another protocol). The match does not
  start; the caller gets a message naming the bot and, for a process, its exit code and the
  tail of its output.
- :class:`BotFault` and its kinds (:class:`TimeoutFault`, :class:`CrashFault`,
  :class:`IllegalFault`, :class:`MalformedFault`, and under the strict policy
  :class:`LateFault`): a bot misbehaved during a match. The match records it and applies
  the fault policy; it is never an error of the referee.

:class:`LogError` (and :class:`ReplayError`) are about match log files.

:class:`RefereeError` is the one root of every error the referee raises on purpose: the two
bot families above, and each room's own error (``StoreError``, ``SettingsError``,
``SubmissionError``, ``SandboxError``, ``BotFilesError``, ``SprtError``, ``WireError``, the
arena's ``ArenaError``...). The rooms that once derived from ``ValueError`` or
``RuntimeError`` keep that base as well, so code that catches them by it still does; the
CLI and the service each turn the root into a message in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from referee.wire import FaultKindName


class RefereeError(Exception):
    """Base class of every error the referee raises on purpose."""


# ---------------------------------------------------------------- bots that cannot be used


class BotError(RefereeError):
    """A bot could not be used: named wrongly, failed to start, or refused."""


class BotSpecError(BotError, ValueError):
    """A bot name that is not a sample bot, a file, a command or an address."""


class BotStartError(BotError):
    """A bot process did not become ready, or a bot at an address did not answer.

    ``exit_code`` is the process's exit status if it has exited (negative: killed by that
    signal), and ``output`` the tail of what it wrote to stdout and stderr.
    """

    def __init__(self, message: str, *, exit_code: int | None = None, output: str = "") -> None:
        self.exit_code = exit_code
        self.output = output
        if output:
            message = f"{message}\n--- last output of the bot ---\n{output.rstrip()}"
        super().__init__(message)


class BotIdentityError(BotStartError):
    """A bot's GetIdentity answer is unusable (wrong protocol version, empty name)."""


# ---------------------------------------------------------------- faults during a match


class BotFault(RefereeError):
    """A bot's answer that the referee could not use.

    ``fatal`` faults leave the seat's stream unusable (a crash, or a message so large that
    gRPC ended the call), so the seat forfeits at once whatever the fault policy.
    """

    #: The fault's kind as the wire names it: "timeout", "late", "crash", "illegal" or
    #: "malformed".
    kind: ClassVar[FaultKindName]
    fatal_by_default: ClassVar[bool] = False

    def __init__(self, message: str, *, fatal: bool | None = None, waited_ns: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.fatal = self.fatal_by_default if fatal is None else fatal
        #: How long the seat waited for the bot before the fault, in nanoseconds, by the
        #: seat's own clock (the match charges it as it charges an answer's latency).
        self.waited_ns = waited_ns


class TimeoutFault(BotFault):
    """No answer before the decision's deadline."""

    kind = "timeout"


class LateFault(BotFault):
    """An answer that arrived past the budget with no time bank left to cover it, inside the
    grace: a fault only under the strict policy (the lenient one counts it and plays on)."""

    kind = "late"


class CrashFault(BotFault):
    """The bot process died, or its Play stream broke or ended before the match did."""

    kind = "crash"
    fatal_by_default = True


class IllegalFault(BotFault):
    """An action that is well formed but not legal now (the game model's reason)."""

    kind = "illegal"


class MalformedFault(BotFault):
    """An answer that is not an action at all, or answers another decision."""

    kind = "malformed"


#: The fault class of each kind.
FAULT_CLASSES: dict[str, type[BotFault]] = {
    "timeout": TimeoutFault,
    "late": LateFault,
    "crash": CrashFault,
    "illegal": IllegalFault,
    "malformed": MalformedFault,
}


# ---------------------------------------------------------------- match logs


class LogError(RefereeError, ValueError):
    """A match log that cannot be read; the message names the file and line."""


class ReplayError(LogError):
    """A match log that reads but does not replay to what it records."""
