"""The play socket: a Play stream's messages over a plain Unix socket, for bots the referee starts.

Every bot serves ``thirtyone.v1.BotService`` over gRPC; that is the contract. A bot the
referee launches is also told, in :data:`PLAY_SOCKET_ENV`, a second socket path next to its
gRPC socket. A bot that listens there (the Python SDK does) gets its Play streams over it:
the same ``PlayRequest`` and ``PlayResponse`` messages, one connection per stream, without
HTTP/2 around them. Health and GetIdentity stay on gRPC, and a bot that ignores the variable
is played over gRPC as before.

Why: a round trip on an open gRPC stream costs two and a half to three times the CPU of the
same bytes over a plain Unix socket (``benchmarks/bench_transport.py`` prints both, client
and bot together), and a match is about 130 round trips per seat, so in a tournament of
local bots the round trips were most of the work.

A frame is a 5-byte header, a tag byte and the payload's length (unsigned 32-bit,
big-endian), then the payload:

- :data:`MESSAGE`: a serialised ``PlayRequest`` (referee to bot) or ``PlayResponse`` (bot to
  referee);
- :data:`STATUS` (bot to referee, last): the stream ends with an error, as a gRPC status
  would: the status code's name (``INVALID_ARGUMENT``), a space, and the details, UTF-8.

The referee half-closes its side after ``match_end``; the bot then closes the connection,
which is the stream's OK end. The referee accepts at most
:data:`referee.bots.client.MAX_MESSAGE_BYTES` per payload, as it does over gRPC.

Standard library only: the SDK imports this at start-up.
"""

from __future__ import annotations

import struct

#: The environment variable through which the referee tells a launched bot where to listen.
PLAY_SOCKET_ENV = "THIRTYONE_PLAY_SOCKET"
#: The socket's file name, in the folder of the bot's gRPC socket.
PLAY_SOCKET_NAME = "play.sock"
#: Set to ``grpc`` in the referee's environment to play every bot over gRPC alone.
TRANSPORT_ENV = "THIRTYONE_PLAY_OVER"

#: Tag of a frame that carries one message.
MESSAGE = 1
#: Tag of a bot's last frame when its stream ends with an error.
STATUS = 2

HEADER = struct.Struct(">BI")
#: Bytes in a frame's header.
HEADER_SIZE = HEADER.size


def frame(tag: int, payload: bytes) -> bytes:
    """One frame: ``tag``'s header and ``payload``."""
    return HEADER.pack(tag, len(payload)) + payload


def status_payload(code_name: str, details: str) -> bytes:
    """A :data:`STATUS` frame's payload."""
    return f"{code_name} {details}".encode("utf-8", "replace")


def parse_status(payload: bytes) -> tuple[str, str]:
    """The code name and details of a :data:`STATUS` payload (leniently decoded)."""
    code, _, details = payload.decode("utf-8", "replace").partition(" ")
    return code, details
