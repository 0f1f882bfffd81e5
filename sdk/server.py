"""Serve a bot over gRPC: the ``thirtyone.v1.BotService`` and the standard health service.

:func:`run` is all a bot needs::

    if __name__ == "__main__":
        sdk.run(MyBot)

Addresses (``--address``, else the environment variable ``THIRTYONE_BOT_ADDRESS``, else
``default_address``): ``unix:///abs/path/bot.sock`` for a Unix socket (the spelling the
referee uses; gRPC's ``unix:/abs/path/bot.sock`` and ``unix:relative.sock`` are accepted
too); ``host:port`` or ``grpc://host:port`` for TCP
(``[::]:port`` for every interface); a bare ``port`` (or ``:port``) for TCP on 127.0.0.1
only. Port 0 picks a free port; the start line on stderr names it.

Concurrency: every Play stream (one match, one seat) gets its own bot instance, made from
the class or factory given to :func:`run`, and its own worker thread; the calls to one
instance (``on_match_start``, each ``act``, ``on_match_end``) come in order, never at once.
Streams run in parallel. Given an instance instead, the server shares it between all
streams and serialises its calls with a lock.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import logging
import os
import queue
import signal
import stat
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

import grpc
import grpc.aio
from google.protobuf.message import DecodeError
from grpc.aio import EOF  # type: ignore[attr-defined]  # missing from grpc-stubs
from grpc_health.v1 import health as _health
from grpc_health.v1 import health_pb2, health_pb2_grpc
from thirtyone.v1 import bot_pb2, bot_pb2_grpc

from referee import playsocket, wire
from referee.game import Action
from sdk.bot import Bot, BotSource, make_bot
from sdk.view import SeatMemory

#: The environment variable through which the referee gives a bot its address.
ADDRESS_ENV = "THIRTYONE_BOT_ADDRESS"
#: Where a bot listens when it is given no address (handy while developing).
DEFAULT_ADDRESS = "127.0.0.1:50031"
#: The service name the health service reports besides the server-wide "".
SERVICE_NAME = "thirtyone.v1.BotService"

# Unix socket paths longer than this do not fit in sockaddr_un on Linux.
_MAX_UNIX_PATH = 107

log = logging.getLogger("sdk")

# The asyncio health servicer; grpc-stubs does not describe it.
_AioHealthServicer: Any = _health.aio.HealthServicer  # type: ignore[attr-defined]

T = TypeVar("T")


class AddressError(ValueError):
    """An address the server cannot listen on, with the reason."""


# ---------------------------------------------------------------- addresses


@dataclass(frozen=True, slots=True)
class Address:
    """A parsed listening address."""

    #: What gRPC binds (``unix:/abs/path`` or ``host:port``).
    target: str
    #: The socket file, for a Unix socket.
    unix_path: Path | None = None

    def display(self, port: int | None = None) -> str:
        """The address as a client would dial it (with the real port once bound)."""
        if self.unix_path is not None:
            return f"unix://{self.unix_path}"
        if port is not None and self.target.rsplit(":", 1)[-1] == "0":
            return f"{self.target.rsplit(':', 1)[0]}:{port}"
        return self.target


def parse_address(text: str) -> Address:
    """Read an address (see the module docstring); raise :class:`AddressError` if unusable."""
    t = text.strip()
    if not t:
        raise AddressError("empty address")
    if t.startswith("grpc://"):  # the referee's way of naming a running bot
        t = t[len("grpc://") :]
    if t.startswith("unix-abstract:"):
        return Address(t)
    if t.startswith("unix:"):
        rest = t[len("unix:") :]
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):
                raise AddressError(f"{text!r}: a unix:// address needs an absolute path, e.g. unix:///tmp/bot.sock")
        if not rest:
            raise AddressError(f"{text!r}: no socket path after 'unix:'")
        path = Path(rest).absolute()
        if len(os.fsencode(str(path))) > _MAX_UNIX_PATH:
            raise AddressError(f"{text!r}: the socket path is longer than {_MAX_UNIX_PATH} bytes; use a shorter one")
        return Address(f"unix:{path}", path)
    port_text = t[1:] if t.startswith(":") else t
    if port_text.isdigit():
        return Address(f"127.0.0.1:{_port(port_text, text)}")
    host, sep, port_text = t.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise AddressError(
            f"{text!r} is not an address; use unix:///abs/path.sock, unix:relative.sock, host:port or a port"
        )
    return Address(f"{host}:{_port(port_text, text)}")


def _port(digits: str, text: str) -> int:
    port = int(digits)
    if port > 65535:
        raise AddressError(f"{text!r}: port {port} is above 65535")
    return port


def _check_unix_path(path: Path) -> None:
    if not path.parent.is_dir():
        raise AddressError(f"cannot listen on unix://{path}: directory {path.parent} does not exist")
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise AddressError(f"cannot listen on unix://{path}: a file that is not a socket is in the way")


# ---------------------------------------------------------------- running bot code


#: How long the event loop waits, blocked, for a call on the bot's thread before it awaits
#: it instead. Most answers come well within it and are then taken straight from the thread,
#: without waking the loop through its self-pipe and scheduling a task step (together about
#: as much CPU as the rest of the SDK's work on a decision); a slower call costs the loop at
#: most this long, so other streams, health checks and SIGTERM wait no more than that. A bot
#: whose last call was slower than that is awaited at once (the loop never blocked for it)
#: until it answers a call quickly again.
QUICK_WAIT_S = 0.002


class _Call:
    """One call handed to a :class:`CallWorker`: the function, and its outcome once done."""

    __slots__ = ("exc", "fn", "fut", "loop", "ready", "result", "took")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.result: Any = None
        self.exc: BaseException | None = None
        #: Seconds the function ran, on the bot's thread.
        self.took = 0.0
        # Held until the call is done: the loop's quick wait acquires it.
        self.ready = threading.Lock()
        self.ready.acquire()
        # Set when the loop stopped waiting and awaits the call instead.
        self.fut: asyncio.Future[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None


class CallWorker:
    """A daemon thread that runs one bot instance's calls in order.

    Daemon, so that a bot stuck in ``act`` cannot keep the process alive after shutdown.
    """

    def __init__(self, name: str, lock: threading.Lock | None) -> None:
        self._jobs: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = lock
        # Guards the hand-over of a call's outcome between the thread and the loop.
        self._state = threading.Lock()
        # Whether the bot's last call was quick: then the next one is waited for, blocked.
        self._quick = True
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    async def call(self, fn: Callable[[], T], on_wait: Callable[[], None] | None = None) -> T:
        """Run ``fn`` on the worker thread and wait for its result (or exception): blocked
        for up to :data:`QUICK_WAIT_S`, then awaiting it (the loop free meanwhile); ``on_wait``
        runs when it is awaited."""
        call = _Call(fn)
        self._jobs.put(call)
        if not (self._quick and call.ready.acquire(timeout=QUICK_WAIT_S)):
            fut: asyncio.Future[T] | None = None
            with self._state:
                # Done before here (between the timeout and the lock, or at once when not
                # waited for): the thread has not seen a future.
                if not call.ready.acquire(blocking=False):
                    loop = asyncio.get_running_loop()
                    fut = loop.create_future()
                    call.loop, call.fut = loop, fut
            if fut is not None:
                self._quick = False  # until it answers quickly again
                if on_wait is not None:
                    on_wait()
                result = await fut
                self._quick = call.took < QUICK_WAIT_S / 2
                return result
        self._quick = call.took < QUICK_WAIT_S / 2
        if call.exc is not None:
            raise call.exc
        return call.result  # type: ignore[no-any-return]

    def close(self) -> None:
        """Let the thread end once its current call (if any) returns."""
        self._jobs.put(None)

    def _loop(self) -> None:
        while (call := self._jobs.get()) is not None:
            t0 = time.perf_counter()
            try:
                if self._lock is not None:
                    with self._lock:
                        call.result = call.fn()
                else:
                    call.result = call.fn()
            except BaseException as e:  # handed to the stream, which reports it
                call.exc = e
            call.took = time.perf_counter() - t0
            with self._state:
                call.ready.release()
                fut, loop = call.fut, call.loop
            if fut is not None and loop is not None:
                _resolve(loop, fut, call.result, call.exc)


def _resolve(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    def settle() -> None:
        if fut.done():  # the stream was cancelled while the bot thought
            return
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)

    # The loop is closed when the server stopped while the bot was still thinking.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle)


# ---------------------------------------------------------------- the service


class BotService(bot_pb2_grpc.BotServiceServicer):
    """The BotService: identity, and one :class:`_Stream` per Play call."""

    def __init__(self, source: BotSource, identity: wire.BotIdentity) -> None:
        self._source = source
        self._identity = identity
        # A shared instance must not run two calls at once; instances per stream need no lock.
        self._lock = threading.Lock() if isinstance(source, Bot) else None
        self._streams = 0

    async def GetIdentity(
        self, request: bot_pb2.GetIdentityRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.GetIdentityResponse:
        if request.protocol_version not in (0, wire.PROTOCOL_VERSION):
            log.warning(
                "the referee speaks protocol %d; this SDK speaks %d", request.protocol_version, wire.PROTOCOL_VERSION
            )
        return wire.identity_to_pb(self._identity)

    async def Play(
        self,
        request_iterator: AsyncIterator[bot_pb2.PlayRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[bot_pb2.PlayResponse]:
        # Read through the context alone: request_iterator reads the same messages.
        async for answer in self.converse(context):
            yield answer

    async def converse(self, context: _PlayContext) -> AsyncIterator[bot_pb2.PlayResponse]:
        """One Play stream, over gRPC or the play socket: the answers to send, in order."""
        self._streams += 1
        requests = _Requests(context)
        stream = _Stream(self._source, self._identity.name, self._lock, context, self._streams, requests.read_ahead)
        try:
            while (item := await requests.next()) is not None:
                received, req = item
                kind = req.WhichOneof("payload")
                if kind == "match_start":
                    await stream.start(req.match_start)
                elif kind == "decision_request":
                    answer = await stream.decide(req.decision_request, received, requests.decision_ahead)
                    if answer is not None:
                        yield answer
                elif kind == "match_end":
                    await stream.end(req.match_end)
                    return
                else:
                    await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "a PlayRequest with no payload")
            log.info("%s: the referee closed the stream before match_end", stream.where())
        finally:
            requests.close()
            stream.close()


class _PlayContext(Protocol):
    """What a Play stream needs of its transport: gRPC's servicer context has it, and so has
    :class:`_SocketCall` for the play socket."""

    async def read(self) -> Any:
        """The next request, or ``grpc.aio.EOF`` once the referee has half-closed."""
        ...

    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        """End the stream with an error status."""
        ...


class _Aborted(Exception):
    """A Play stream over the play socket ends with an error status (as gRPC's abort)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


#: Largest request accepted on the play socket, as gRPC's default receive limit.
_MAX_REQUEST_BYTES = 4 * 1024 * 1024


class _SocketCall:
    """One Play stream over the play socket (:mod:`referee.playsocket`), read as a gRPC
    servicer context is: one request per :meth:`read`, ``EOF`` at the end."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def read(self) -> Any:
        """The next request, or ``EOF`` once the referee half-closed or hung up."""
        reader = self._reader
        try:
            tag, n = playsocket.HEADER.unpack(await reader.readexactly(playsocket.HEADER_SIZE))
            if tag != playsocket.MESSAGE or n > _MAX_REQUEST_BYTES:
                raise _Aborted(grpc.StatusCode.INVALID_ARGUMENT, f"a frame with tag {tag} and {n} bytes")
            body = await reader.readexactly(n)
        except (asyncio.IncompleteReadError, ConnectionError):
            return EOF
        try:
            return bot_pb2.PlayRequest.FromString(body)
        except DecodeError:
            raise _Aborted(grpc.StatusCode.INVALID_ARGUMENT, "bytes that are not a PlayRequest") from None

    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        """End the stream with ``code`` and ``details`` (sent as a STATUS frame)."""
        raise _Aborted(code, details)


class _Requests:
    """A Play stream's requests, each with the monotonic time it arrived (a decision's clock
    starts then).

    They are read one by one as the stream needs them, with no task or queue in between,
    except while the bot's call is slow (awaited, not taken straight from its thread): then a
    reader task reads ahead, so that what the referee sends meanwhile is stamped when it
    arrives and a decision can see that the referee has already moved on
    (:meth:`decision_ahead`). The reader stops once the stream wants its next request.
    """

    def __init__(self, context: _PlayContext) -> None:
        self._context = context
        # Read ahead and not yet taken; None: the stream ended.
        self._ahead: collections.deque[tuple[float, bot_pb2.PlayRequest | None]] = collections.deque()
        self._decisions_ahead = 0
        self._reader: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        # Whether the bot is in a slow call: the reader goes on reading while it is.
        self._slow = False

    def read_ahead(self) -> None:
        """The bot's call is slow: read what comes meanwhile."""
        self._slow = True
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    def decision_ahead(self) -> bool:
        """Whether a decision request read ahead is waiting behind the current one."""
        return self._decisions_ahead > 0

    async def next(self) -> tuple[float, bot_pb2.PlayRequest] | None:
        """The next request and when it arrived; None once the referee closed the stream."""
        if self._reader is None and not self._ahead:
            req = await self._context.read()
            return None if req is EOF else (time.monotonic(), req)
        self._slow = False  # the reader ends with the read it is in, if any
        ahead = self._ahead
        while not ahead:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        received, msg = ahead.popleft()
        if msg is None:
            return None
        self._decisions_ahead -= msg.HasField("decision_request")
        return received, msg

    def close(self) -> None:
        """Stop reading ahead (the stream is over)."""
        if self._reader is not None:
            self._reader.cancel()

    async def _read_loop(self) -> None:
        msg: bot_pb2.PlayRequest | None = None
        try:
            while True:
                req = await self._context.read()
                msg = None if req is EOF else req
                if msg is not None:
                    self._decisions_ahead += msg.HasField("decision_request")
                self._deliver(msg)
                if msg is None or not self._slow:
                    return
        except Exception:
            # The call broke under the read: to the stream that is its end.
            self._deliver(None)
        finally:
            self._reader = None

    def _deliver(self, msg: bot_pb2.PlayRequest | None) -> None:
        self._ahead.append((time.monotonic(), msg))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Stream:
    """One Play stream: one match and seat, its bot instance, its worker thread, its memory."""

    def __init__(
        self,
        source: BotSource,
        bot_name: str,
        lock: threading.Lock | None,
        context: _PlayContext,
        number: int,
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        self._source = source
        # Runs when a call of the bot's is slow (awaited rather than taken from its thread).
        self._on_wait = on_wait
        self._bot_name = bot_name
        self._lock = lock
        self._context = context
        self._number = number
        self._memory = SeatMemory()
        self._info: wire.MatchInfo | None = None
        self._bot: Bot | None = None
        self._worker: CallWorker | None = None

    def where(self, decision_id: int = 0) -> str:
        """Which match, seat (and decision) this stream is, for messages."""
        info = self._info
        where = f"match {info.match_id}, seat {info.seat}" if info is not None else f"stream {self._number}"
        return where + (f", decision {decision_id}" if decision_id else "")

    async def start(self, msg: bot_pb2.MatchStart) -> None:
        """match_start: make the bot instance and call its on_match_start."""
        if self._info is not None:
            await _abort(self._context, grpc.StatusCode.FAILED_PRECONDITION, "a second match_start on one stream")
        info = self._info = await _read(self._context, wire.match_start_from_pb, msg)
        self._worker = CallWorker(f"bot {info.match_id} seat {info.seat}", self._lock)
        self._bot = await self._run(functools.partial(make_bot, self._source), "creating the bot")
        await self._run(functools.partial(self._bot.on_match_start, info), "on_match_start")

    async def decide(
        self, msg: bot_pb2.DecisionRequest, received: float, stale: Callable[[], bool]
    ) -> bot_pb2.PlayResponse | None:
        """decision_request: the bot's answer, or None if the referee has moved on."""
        info, bot = self._info, self._bot
        if info is None or bot is None:
            await _abort(self._context, grpc.StatusCode.FAILED_PRECONDITION, "decision_request before match_start")
        d = await _read(self._context, wire.decision_from_pb, msg)
        obs = d.observation
        if obs.seat != info.seat:
            await _abort(
                self._context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"decision {d.decision_id} is for seat {obs.seat}; this stream plays seat {info.seat}",
            )
        if not obs.legal_actions:
            await _abort(self._context, grpc.StatusCode.INVALID_ARGUMENT, f"decision {d.decision_id} has no legal actions")
        # Remember even a skipped decision's observation: it may show the round's up-card.
        view = self._memory.view(obs, budget_ms=d.budget_ms, bank_ms=d.bank_ms, received_at=received)
        if stale():
            # The referee asks nothing new while it waits for an answer, so a decision already
            # behind this one means it gave up on this one (a timeout): do not think.
            log.warning("%s: skipped, the referee has moved on", self.where(d.decision_id))
            return None
        action = await self._run(functools.partial(bot.act, view), "act", d.decision_id)
        if not isinstance(action, Action):
            await _abort(
                self._context,
                grpc.StatusCode.INTERNAL,
                f"bot {self._bot_name!r}: act returned {action!r}, not an sdk.Action ({self.where(d.decision_id)})",
            )
        if action not in obs.legal_actions:
            # Sent anyway: judging it is the referee's job, and it records the fault.
            log.warning(
                "%s: %s is not legal (legal: %s)",
                self.where(d.decision_id),
                action,
                ", ".join(map(str, obs.legal_actions)),
            )
        return wire.answer_to_pb(d.decision_id, action)

    async def end(self, msg: bot_pb2.MatchEnd) -> None:
        """match_end: call the bot's on_match_end."""
        bot = self._bot
        if bot is None:
            await _abort(self._context, grpc.StatusCode.FAILED_PRECONDITION, "match_end before match_start")
        result = await _read(self._context, wire.match_end_from_pb, msg)
        await self._run(functools.partial(bot.on_match_end, result), "on_match_end")
        log.info("%s: placing %d of %d", self.where(), result.placing, len(result.placings))

    def close(self) -> None:
        """Let the worker thread go."""
        if self._worker is not None:
            self._worker.close()

    async def _run(self, fn: Callable[[], T], what: str, decision_id: int = 0) -> T:
        """Run bot code on the worker; if it raises, log the traceback and end the stream."""
        assert self._worker is not None
        try:
            return await self._worker.call(fn, self._on_wait)
        except Exception as e:
            where = self.where(decision_id)
            log.error(
                "bot %r raised in %s (%s):\n%s",
                self._bot_name,
                what,
                where,
                "".join(traceback.format_exception(e)).rstrip(),
            )
            await _abort(
                self._context,
                grpc.StatusCode.INTERNAL,
                f"bot {self._bot_name!r} raised {type(e).__name__}: {e} in {what} ({where})",
            )


async def _abort(context: _PlayContext, code: grpc.StatusCode, details: str) -> NoReturn:
    if code is not grpc.StatusCode.INTERNAL:
        log.warning("ending a Play stream: %s", details)
    await context.abort(code, details)


async def _read(context: _PlayContext, convert: Callable[[Any], T], msg: Any) -> T:
    try:
        return convert(msg)
    except wire.WireError as e:
        await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(e))


# ---------------------------------------------------------------- the server


class _PlaySocket:
    """The play socket's listener (:mod:`referee.playsocket`): each connection is one Play
    stream, served by the same :meth:`BotService.converse` as gRPC's."""

    def __init__(self, service: BotService, path: Path) -> None:
        self._service = service
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._streams: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen (a stale socket file at the path is replaced, as gRPC does)."""
        _check_unix_path(self.path)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(self.path.lstat().st_mode):
                self.path.unlink()
        try:
            self._server = await asyncio.start_unix_server(self._serve, str(self.path))
        except OSError as e:
            raise AddressError(f"cannot listen on the play socket {self.path}: {e.strerror or e}") from None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        frame, message = playsocket.frame, playsocket.MESSAGE
        try:
            async for answer in self._service.converse(_SocketCall(reader)):
                writer.write(frame(message, answer.SerializeToString()))
        except _Aborted as e:
            writer.write(frame(playsocket.STATUS, playsocket.status_payload(e.code.name, e.details)))
        except ConnectionError:
            pass  # the referee hung up: nobody to tell
        finally:
            self._streams.discard(task)
            writer.close()

    async def stop(self, grace: float | None) -> None:
        """Stop listening, give open streams ``grace`` seconds (None: no limit), then end them."""
        if self._server is not None:
            self._server.close()
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(self.path.lstat().st_mode):
                self.path.unlink()
        if self._streams:
            _, pending = await asyncio.wait(set(self._streams), timeout=grace)
            for task in pending:
                task.cancel()


class BotServer:
    """A started bot server (see :func:`start_server`)."""

    def __init__(
        self,
        server: grpc.aio.Server,
        health: Any,
        address: Address,
        port: int,
        identity: wire.BotIdentity,
        play_socket: _PlaySocket | None = None,
    ) -> None:
        self._server = server
        self._health = health
        self._address = address
        self._play_socket = play_socket
        #: The TCP port bound (``None`` for a Unix socket).
        self.port: int | None = None if address.unix_path is not None else port
        self.identity = identity

    @property
    def address(self) -> str:
        """Where clients reach this server, e.g. ``unix:///tmp/bot.sock`` or ``127.0.0.1:50031``."""
        return self._address.display(self.port)

    async def stop(self, grace: float | None = 5.0) -> None:
        """Stop: report NOT_SERVING, let open streams finish for ``grace`` seconds, clean up."""
        await self._health.enter_graceful_shutdown()
        if self._play_socket is not None:
            await asyncio.gather(self._server.stop(grace), self._play_socket.stop(grace))
        else:
            await self._server.stop(grace)
        if self._address.unix_path is not None:
            # gRPC removes its socket file; this covers a server that died half-way.
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(self._address.unix_path.lstat().st_mode):
                    self._address.unix_path.unlink()

    async def wait(self) -> None:
        """Wait until the server stops."""
        await self._server.wait_for_termination()


async def start_server(
    bot: BotSource, address: str, *, identity: wire.BotIdentity | None = None, play_socket: str | None = None
) -> BotServer:
    """Start serving ``bot`` at ``address`` and report SERVING; return the running server.

    ``bot`` is a :class:`~sdk.Bot` subclass or factory (an instance per match and seat) or
    an instance (shared). Unless ``identity`` is given, one instance is made at once, to
    fail early and to learn what GetIdentity answers. ``play_socket``: a Unix socket path
    where Play streams are served too, without gRPC (:mod:`referee.playsocket`; the referee
    gives one in ``THIRTYONE_PLAY_SOCKET``); it listens before SERVING is reported.
    """
    addr = parse_address(address)
    if addr.unix_path is not None:
        _check_unix_path(addr.unix_path)
    if identity is None:
        identity = make_bot(bot).identity()
    # No SO_REUSEPORT: two bots on one port would silently share its connections.
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    service = BotService(bot, identity)
    bot_pb2_grpc.add_BotServiceServicer_to_server(service, server)
    health = _AioHealthServicer()
    # Not ready until bound and started.
    await health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    try:
        port = server.add_insecure_port(addr.target)
    except RuntimeError:
        raise AddressError(f"cannot listen on {addr.display()}: address in use or not available") from None
    sock: _PlaySocket | None = None
    if play_socket:
        sock = _PlaySocket(service, Path(play_socket).absolute())
        await sock.start()
    await server.start()
    for name in ("", SERVICE_NAME):
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
    return BotServer(server, health, addr, port, identity, sock)


def _setup_logging(name: str, verbose: bool) -> None:
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"[{name}] %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.INFO if verbose else logging.WARNING)


async def _serve(bot: BotSource, identity: wire.BotIdentity, address: str, grace: float) -> None:
    # A referee that started this bot names a play socket too (referee.playsocket).
    server = await start_server(bot, address, identity=identity, play_socket=os.environ.get(playsocket.PLAY_SOCKET_ENV))
    ident = server.identity
    by = f" by {ident.author}" if ident.author else ""
    # The one start line: bot, version, protocol and where it listens.
    print(
        f"[{ident.name}] {ident.name} {ident.version}{by} serving thirtyone protocol "
        f"{ident.protocol_version} on {server.address} (pid {os.getpid()})",
        file=sys.stderr,
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            # A second signal while draining: the operator wants out now.
            print(f"[{ident.name}] stopping now", file=sys.stderr, flush=True)
            os._exit(1)
        print(f"[{ident.name}] {signal.Signals(signum).name}: stopping (grace {grace:g} s)", file=sys.stderr, flush=True)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    await stop.wait()
    await server.stop(grace)
    print(f"[{ident.name}] stopped", file=sys.stderr, flush=True)


def run(
    bot: BotSource,
    *,
    default_address: str = DEFAULT_ADDRESS,
    argv: Sequence[str] | None = None,
    grace: float = 5.0,
) -> None:
    """Serve ``bot`` until SIGTERM or SIGINT, then stop cleanly and return.

    ``bot`` is your :class:`~sdk.Bot` subclass (one instance per match and seat; see the
    module docstring) or an instance. The address comes from ``--address``, else
    ``THIRTYONE_BOT_ADDRESS``, else ``default_address``. Command-line options (``argv``,
    default ``sys.argv[1:]``): ``--address ADDR``, ``--grace SECONDS`` (how long open matches
    may go on after a stop signal), ``--verbose`` (a line per match on stderr).
    """
    # One instance now: a broken constructor fails here, before the referee connects.
    identity = make_bot(bot).identity()
    name = identity.name
    parser = argparse.ArgumentParser(description=f"Serve the Thirty-One bot {name!r} over gRPC.")
    parser.add_argument("--address", help=f"where to listen (default: ${ADDRESS_ENV} or {default_address})")
    parser.add_argument("--grace", type=float, default=grace, help="seconds open matches may go on after SIGTERM")
    parser.add_argument("--verbose", action="store_true", help="log a line per match on stderr")
    args = parser.parse_args(argv)
    address = args.address or os.environ.get(ADDRESS_ENV) or default_address
    _setup_logging(name, args.verbose)
    try:
        asyncio.run(_serve(bot, identity, address, args.grace))
    except AddressError as e:
        print(f"[{name}] error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
