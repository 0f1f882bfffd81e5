"""Bots as the referee sees them: named, started, connected, asked, and stopped.

- :func:`parse_bot_spec` reads a bot's name (sample, file, command or address);
- :func:`start_bot` / :func:`start_bots` start or reach bots and return :class:`BotHandle`\\ s,
  healthy and identified, reusable across matches;
- :meth:`BotHandle.open_seat` opens one Play stream (:class:`SeatStream`) per match and seat,
  whose :meth:`SeatStream.decide` enforces a deadline and raises typed faults;
- :class:`referee.bots.memory.MemoryPlayer` plays seats from a Python function on a manual
  clock instead (no process, no gRPC): the match loop's time control and fault policy, exactly;
- :meth:`BotHandle.close` / :func:`close_bots` end the processes and their whole groups.
"""

from referee.bots.client import (
    CHANNEL_OPTIONS,
    FINISH_TIMEOUT_S,
    MAX_MESSAGE_BYTES,
    STARTUP_TIMEOUT_S,
    Answer,
    BotHandle,
    SeatStream,
    close_bots,
    start_bot,
    start_bots,
)
from referee.bots.process import (
    STOP_GRACE_S,
    BotProcess,
    Launcher,
    LocalBotProcess,
    LocalLauncher,
    describe_exit,
)
from referee.bots.sandbox import ADDRESS_ENV
from referee.bots.spec import BotSpec, SpecKind, parse_bot_spec, sample_bot_names

__all__ = [
    "ADDRESS_ENV",
    "CHANNEL_OPTIONS",
    "FINISH_TIMEOUT_S",
    "MAX_MESSAGE_BYTES",
    "STARTUP_TIMEOUT_S",
    "STOP_GRACE_S",
    "Answer",
    "BotHandle",
    "BotProcess",
    "BotSpec",
    "Launcher",
    "LocalBotProcess",
    "LocalLauncher",
    "SeatStream",
    "SpecKind",
    "close_bots",
    "describe_exit",
    "parse_bot_spec",
    "sample_bot_names",
    "start_bot",
    "start_bots",
]
