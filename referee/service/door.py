"""The service's door against strangers: what a request must be before the app reads it.

Two layers, both set up by :func:`uvicorn_config` from one :class:`Door`:

- **Connections** (:func:`guarded_protocol`, uvicorn's h11 protocol with limits): at most
  :attr:`Door.max_connections` open at once and :attr:`Door.max_per_address` from one
  address (a trusted proxy's are not counted per address: it speaks for many); a request's
  head (request line and headers, at most :data:`MAX_HEAD_BYTES`) must arrive within
  :attr:`Door.header_timeout_s` of the connection's start or of the previous answer, and
  its body within :attr:`Door.body_timeout_s`. uvicorn bounds none of this by itself: its
  keep-alive timer restarts at every byte, so a client sending a byte every few seconds
  held a connection for ever, and twenty thousand of them used up the descriptors.
  Connections refused or closed so are counted and said in one log line a minute
  (:class:`QuietLog` does the same for uvicorn's own warnings of that kind), never a line
  each: an attack must not fill the disk.
- **Requests** (:class:`DoorMiddleware`): the ``Host`` header must name this arena (the
  address it is bound to, the local names, or a name the organiser lists), which stops DNS
  rebinding; and a body may be at most :data:`BODY_LIMIT` bytes (an upload: the arena's
  ``max_archive_bytes``), refused with 413 from its declared length before any of it is
  read, or, sent in chunks, as soon as it passes the limit.

``X-Forwarded-For`` is believed only from the proxies the organiser names
(``arena serve --proxy ADDR``); by default uvicorn's proxy headers are off, so a client
cannot choose the address its sign-in failures are counted against.

TLS, and limits beyond one process, remain a reverse proxy's job (docs/arena.md).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from starlette.datastructures import Headers
from uvicorn.protocols.http.h11_impl import H11Protocol

from referee.service.errors import error_response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The largest body of any request but an upload: the API's JSON bodies are a few hundred bytes.
BODY_LIMIT = 64 * 1024
#: The largest request head (request line and headers) uvicorn's h11 buffers.
MAX_HEAD_BYTES = 16 * 1024
#: The route whose body is a bot's upload (its limit is the arena's ``max_archive_bytes``).
UPLOAD_ROUTE = ("POST", "/api/v1/versions")
#: Names a browser on the arena's own machine uses for it, whatever address it is bound to.
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: Seconds between two log lines about refused connections or flooded warnings.
LOG_EVERY_S = 60.0
#: Seconds a client has to send a request with its body (an upload of 8 MiB at 1 Mbit/s
#: takes 70 s).
BODY_TIMEOUT_S = 120.0


def default_max_connections() -> int:
    """Half the descriptors this process may open (the rest are the store's, the ladder's
    pipes and the logs'), at most 4,096."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, min(4096, soft // 2)) if soft != resource.RLIM_INFINITY else 4096


@dataclass(frozen=True, slots=True)
class Door:
    """How ``arena serve`` guards its port (``arena serve``'s options; see the module doc)."""

    #: The address the service listens on.
    bind: str = "127.0.0.1"
    #: Host names (or addresses) the service answers to beside :data:`LOCAL_NAMES` and the
    #: bound address; ``*`` answers to any (only behind a proxy that checks the name).
    hosts: tuple[str, ...] = ()
    #: Addresses of reverse proxies whose ``X-Forwarded-For`` is believed; none by default.
    proxies: tuple[str, ...] = ()
    max_connections: int = field(default_factory=default_max_connections)
    max_per_address: int = 64
    header_timeout_s: float = 10.0
    body_timeout_s: float = BODY_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.max_per_address < 1:
            raise ValueError("the connection limits must be at least 1")
        if not 0 < self.header_timeout_s <= self.body_timeout_s:
            raise ValueError("the header timeout must be above 0 and at most the body timeout")

    def allowed_hosts(self) -> frozenset[str]:
        """The ``Host`` names (without port, lower case) the service answers to; ``*`` for any."""
        names = {*LOCAL_NAMES, *(h.lower() for h in self.hosts)}
        bind = self.bind.lower()
        if bind not in ("0.0.0.0", "::", ""):  # a wildcard is no name a client uses
            names.add(f"[{bind}]" if ":" in bind else bind)
        return frozenset(names)


class _Tally:
    """Counts of refused connections, said in one line at most every :data:`LOG_EVERY_S`:
    the first at once, the rest summed up when the minute is over."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.last = -LOG_EVERY_S
        self.flush: asyncio.TimerHandle | None = None

    def note(self, why: str, loop: asyncio.AbstractEventLoop) -> None:
        """Count one connection closed for ``why`` (on the event loop's thread)."""
        self.counts[why] = self.counts.get(why, 0) + 1
        wait = self.last + LOG_EVERY_S - loop.time()
        if wait <= 0:
            self._say(loop)
        elif self.flush is None:
            self.flush = loop.call_later(wait, self._say, loop)

    def _say(self, loop: asyncio.AbstractEventLoop) -> None:
        self.flush = None
        if not self.counts:
            return
        said = ", ".join(f"{n} {w}" for w, n in sorted(self.counts.items()))
        self.counts.clear()
        self.last = loop.time()
        logging.getLogger("uvicorn.error").warning(
            "connections closed by the arena's limits: %s (at most one such line a minute)", said
        )


class _GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with connection limits and request deadlines (the module doc)."""

    door: ClassVar[Door]
    per_address: ClassVar[dict[str, int]]
    tally: ClassVar[_Tally]

    _addr: str | None = None
    _deadline: asyncio.TimerHandle | None = None
    _started = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
        peer = transport.get_extra_info("peername")
        addr = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        door = self.door
        if len(self.connections) >= door.max_connections:
            self.tally.note("over the limit of connections", self.loop)
            transport.abort()  # its descriptor is free now; connection_lost follows
            return
        if addr not in door.proxies and self.per_address.get(addr, 0) >= door.max_per_address:
            self.tally.note("over the limit of one address", self.loop)
            transport.abort()
            return
        self._addr = addr
        self.per_address[addr] = self.per_address.get(addr, 0) + 1
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._addr is None:  # refused at once: never counted, never served
            return
        left = self.per_address.get(self._addr, 1) - 1
        if left:
            self.per_address[self._addr] = left
        else:
            self.per_address.pop(self._addr, None)
        self._addr = None
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's head has its own deadline

    def _arm(self) -> None:
        self._disarm()
        self._started = self.loop.time()
        self._deadline = self.loop.call_later(self.door.header_timeout_s, self._late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:  # no whole request head yet
            self.tally.note("too slow to send a request's head", self.loop)
        elif state is h11.SEND_BODY:
            left = self._started + self.door.body_timeout_s - self.loop.time()
            if left > 0:
                self._deadline = self.loop.call_later(left, self._late)
                return
            self.tally.note("too slow to send a request's body", self.loop)
        else:
            return  # the request is in; the answer may take its time
        self.transport.abort()


def guarded_protocol(door: Door) -> type[H11Protocol]:
    """uvicorn's h11 protocol class bound to ``door``'s limits (one per server: its counts)."""
    return type("ArenaH11Protocol", (_GuardedH11,), {"door": door, "per_address": {}, "tally": _Tally()})


class QuietLog(logging.Filter):
    """Lets each of uvicorn's per-request warnings that an attacker can cause at will (a bad
    request, the concurrency limit) through at most once a :data:`LOG_EVERY_S`, with the
    count of those held back; every other record passes."""

    FLOODS = ("Invalid HTTP request received.", "Exceeded concurrency limit.", "Unsupported upgrade request.")

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is written (see the class doc)."""
        msg = str(record.msg)
        if not msg.startswith(self.FLOODS):
            return True
        with self._lock:
            now = time.monotonic()
            if now - self._last.get(msg, -LOG_EVERY_S) < LOG_EVERY_S:
                self._held[msg] = self._held.get(msg, 0) + 1
                return False
            self._last[msg] = now
            held = self._held.pop(msg, 0)
        if held:
            record.msg = f"{msg} ({held} more like it in the last minute were not logged)"
        record.exc_info = None  # the traceback of a stranger's bad request tells the organiser nothing
        return True


def _host_name(host: str) -> str:
    """``Host``'s name without its port: ``example.org:8031`` -> ``example.org``, ``[::1]:80`` -> ``[::1]``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class DoorMiddleware:
    """Checks each HTTP request's ``Host`` and body size before the app sees it (the module doc)."""

    def __init__(self, app: ASGIApp, *, hosts: frozenset[str], upload_limit: int) -> None:
        self.app = app
        self.hosts = hosts
        self.upload_limit = upload_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        if host is not None and "*" not in self.hosts and _host_name(host) not in self.hosts:
            shown = host[:80]
            await error_response(
                400, "bad_host",
                f"this arena does not answer to the host name {shown!r}; its organiser lists the names it serves "
                "(arena serve --allowed-host)",
            )(scope, receive, send)
            return
        upload = (scope["method"], scope["path"]) == UPLOAD_ROUTE
        limit = self.upload_limit if upload else BODY_LIMIT
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                await error_response(400, "bad_request", "the Content-Length header is not a number")(scope, receive, send)
                return
            if int(declared) > limit:
                # Answered from the header alone: the body is never read, and uvicorn closes
                # the connection after this answer since the request was not read to its end.
                await _too_large(int(declared), limit, upload)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        if "chunked" not in headers.get("transfer-encoding", "").lower():
            await self.app(scope, receive, send)  # no body
            return
        # A body of unknown length: read it here, up to the limit, then hand it on whole.
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > limit:
                await _too_large(None, limit, upload)(scope, receive, send)
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _too_large(size: int | None, limit: int, upload: bool) -> Any:
    from referee.ladder.uploads import human_size

    said = f"is {human_size(size)}" if size is not None else f"is over {human_size(limit)}"
    if upload:  # as the upload route says it
        return error_response(413, "too_large", f"the upload {said}; an upload may be at most {human_size(limit)}")
    return error_response(413, "too_large", f"the request's body {said}; this route takes at most {human_size(limit)}")


def uvicorn_config(app: Any, port: int, door: Door) -> Any:
    """uvicorn's settings for the arena behind ``door``: the guarded protocol, the bounded
    head, the proxies believed, quiet logs."""
    import uvicorn

    config = uvicorn.Config(
        app, host=door.bind, port=port, log_level="warning", timeout_graceful_shutdown=3,
        http=guarded_protocol(door),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        # uvicorn answers 503 past this many requests in progress; connections are capped
        # by the protocol before this could count them.
        limit_concurrency=door.max_connections + 1,
        timeout_keep_alive=5,
        proxy_headers=bool(door.proxies),
        forwarded_allow_ips=list(door.proxies),
        server_header=False,
    )
    # After the Config: making it configures uvicorn's loggers afresh.
    error_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietLog) for f in error_log.filters):
        error_log.addFilter(QuietLog())
    return config
