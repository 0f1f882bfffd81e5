"""Talking to bots: start-up, identity, and one Play stream per seat with per-decision deadlines.

A :class:`BotHandle` is a bot that is up, healthy and identified, reached over one gRPC
channel. It outlives matches: a tournament starts each bot once and opens one
:class:`SeatStream` per match and seat on the same handle (the contract requires bots to
serve several Play streams at once): over gRPC (:class:`GrpcSeatStream`), or, for a bot the
referee started that serves one, over its play socket (:class:`SocketSeatStream`,
:mod:`referee.playsocket`), a plain Unix socket that carries the same messages at about a
third of gRPC's CPU per round trip.

All of this runs on one asyncio event loop (grpc.aio): a handle belongs to the loop that
started it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import time
import weakref
from collections.abc import Callable, Sequence
from typing import NamedTuple

import grpc
import grpc.aio
from google.protobuf.message import DecodeError
from grpc.aio import EOF  # type: ignore[attr-defined]  # missing from grpc-stubs
from grpc_health.v1 import health_pb2, health_pb2_grpc
from thirtyone.v1 import bot_pb2, bot_pb2_grpc

from referee import playsocket, wire
from referee.bots.process import STOP_GRACE_S, BotProcess, Launcher, LocalLauncher, describe_exit
from referee.bots.sandbox import ADDRESS_ENV
from referee.bots.spec import BotSpec, parse_bot_spec
from referee.faults import (
    BotFault,
    BotIdentityError,
    BotStartError,
    CrashFault,
    MalformedFault,
    TimeoutFault,
)
from referee.game import Action, Observation

#: Largest message the referee accepts from a bot. A real answer is about 10 bytes; an
#: identity a few hundred. Anything bigger is a MALFORMED fault (gRPC ends the call).
MAX_MESSAGE_BYTES = 64 * 1024
#: Default time a bot gets to report SERVING on the health service, in seconds.
STARTUP_TIMEOUT_S = 10.0
#: Time a bot gets to end its Play stream after match end, in seconds.
FINISH_TIMEOUT_S = 1.0
#: The service names whose health counts (bot.proto: "" and the BotService's full name; a
#: bot is ready when one says SERVING and the other SERVING or NOT_FOUND).
HEALTH_SERVICES = ("", "thirtyone.v1.BotService")
#: Referee work done while a bot thinks that is longer than this (ns) is not charged to the
#: bot. Shorter work is charged as it falls: it is far below a gRPC round trip, so an answer
#: almost never arrives during it, and the grace covers the rest.
UNCHARGED_WORK_NS = 2_000_000
#: Messages a bot may have in flight before the referee stops reading (flow control then
#: holds the bot back): a bot that floods the stream cannot grow the referee's memory.
INBOX_LIMIT = 64

#: How soon, in seconds, a starting bot's socket is looked for again at first ...
SOCKET_POLL_S = 0.002
#: ... and at the latest once it has been looked for a while (see :func:`_before_next_look`).
SOCKET_POLL_MAX_S = 0.025

#: The Play method, as the generated stub names it.
PLAY_METHOD = "/thirtyone.v1.BotService/Play"

#: What a Play stream writes: match start and end as messages, decision requests as the
#: bytes :func:`referee.wire.decision_request_bytes` builds (most of them kept from one
#: decision to the next, rather than a message serialised whole each time).
PlayRequestOut = bot_pb2.PlayRequest | bytes
PlayCall = grpc.aio.StreamStreamCall[PlayRequestOut, bot_pb2.PlayResponse]


def _serialize_request(request: PlayRequestOut) -> bytes:
    return request if isinstance(request, bytes) else request.SerializeToString()


CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Bots are local or named by address; an http_proxy variable must not reroute them.
    ("grpc.enable_http_proxy", 0),
    # While a bot starts, its socket appears only once it serves: retry connecting every
    # few tens of milliseconds rather than after gRPC's default one-second backoff.
    ("grpc.initial_reconnect_backoff_ms", 20),
    ("grpc.min_reconnect_backoff_ms", 20),
    ("grpc.max_reconnect_backoff_ms", 250),
)


class Answer(NamedTuple):
    """A bot's usable answer to one decision."""

    action: Action
    #: From just before the request was written to the answer's arrival, in nanoseconds.
    latency_ns: int


def _tail_line(process: BotProcess | None, limit: int = 300) -> str:
    if process is None:
        return ""
    lines = [ln for ln in process.output_tail(4 * limit).splitlines() if ln.strip()]
    return lines[-1][-limit:] if lines else ""


class SeatStream:
    """The referee's end of one Play stream: one seat of one match. A subclass provides the
    transport (gRPC, or the play socket); deadlines, faults and late answers are judged here,
    the same way for both.

    It speaks the referee's own types (:class:`~referee.wire.MatchInfo`, an
    :class:`~referee.game.Observation`, :class:`~referee.wire.MatchResult`) and converts them
    to and from the stream's messages through :mod:`referee.wire`, so that the match loop
    never sees a protobuf and an in-memory seat (:mod:`referee.bots.memory`) can stand in.

    A reader task drains the response stream into a small inbox, stamping each message with
    its arrival time. Deciding writes one request and waits on the inbox until the deadline.
    Waiting on the inbox rather than on the call itself matters: cancelling a grpc.aio read
    cancels the whole RPC, and a late answer must not break the stream (the contract says it
    is recognised by its stale decision_id and ignored).
    """

    def __init__(self, bot: BotHandle) -> None:
        self.bot = bot
        # What the reader received and nobody has taken yet, and the decision waiting for it.
        self._inbox: collections.deque[tuple[int, object, int]] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._room: asyncio.Future[None] | None = None
        self._reader: asyncio.Task[None] | None = None
        # Decisions given up on (timed out, or answered with another id): their late answers
        # are ignored rather than taken for a protocol violation.
        self._abandoned: set[int] = set()
        #: Why the stream is unusable, once it is.
        self.broken: BotFault | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._opened = False
        bot._streams.add(self)

    # What a transport provides: open the stream with its first message, write one more, write
    # the last and half-close, tell whether the stream has ended, drop it. A write that fails
    # because the stream ended raises nothing: the reader's report in the inbox says how.

    async def _open(self, first: PlayRequestOut) -> None:
        raise NotImplementedError

    async def _write(self, request: PlayRequestOut) -> None:
        raise NotImplementedError

    async def _write_last(self, request: PlayRequestOut) -> None:
        raise NotImplementedError

    def _ended(self) -> bool:
        raise NotImplementedError

    async def _end_note(self) -> str:
        """What to add to the fault of a stream the bot ended: over gRPC nothing (the bot
        ended the call itself, its process alive)."""
        return ""

    def _cancel(self) -> None:
        raise NotImplementedError

    # Inbox item kinds.
    _MESSAGE, _END, _ERROR = 0, 1, 2

    @property
    def gave_up_on(self) -> bool:
        """Whether a decision was given up on (timed out, or answered with another id) and its
        answer has not come since: the bot may still be busy with it."""
        return bool(self._abandoned)

    async def start(self, info: wire.MatchInfo) -> None:
        """Open the stream and send ``match_start``; a failure surfaces at the first decision."""
        self._opened = True
        await self._open(wire.match_start_request(info))

    def _read_on(self) -> asyncio.Future[None] | None:
        """After a delivery: a future to await before reading on when the inbox is full (a
        flood: flow control then holds the bot back), else None."""
        if len(self._inbox) >= INBOX_LIMIT:
            self._room = asyncio.get_running_loop().create_future()
            return self._room
        return None

    def _deliver(self, item: tuple[int, object, int]) -> None:
        # A plain deque and one future: lighter than asyncio.Queue on the hottest path.
        self._inbox.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _next(self) -> tuple[int, object, int]:
        """The next item from the reader, waiting for one if need be."""
        inbox = self._inbox
        while not inbox:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = inbox.popleft()
        room = self._room
        if room is not None and not room.done():
            room.set_result(None)
        return item

    async def _stream_fault(self, kind: int, payload: object) -> BotFault:
        """The fault that a broken or ended stream means; also marks the stream broken."""
        if self.broken is not None:
            return self.broken
        if kind == self._END:
            fault: BotFault = CrashFault("the bot ended its Play stream before the match ended" + await self._end_note())
        else:
            assert isinstance(payload, tuple)
            code, details = payload
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                fault = MalformedFault(
                    f"the bot sent a message over {MAX_MESSAGE_BYTES} bytes ({details}); the stream is closed",
                    fatal=True,
                )
            elif code == grpc.StatusCode.INTERNAL and "serializ" in details.lower():
                fault = MalformedFault(f"the bot sent bytes that are not a PlayResponse ({details})", fatal=True)
            else:
                fault = CrashFault(f"the Play stream broke ({code.name}: {details})" + await self.bot.exit_note(details))
        self.broken = fault
        return fault

    async def decide(
        self,
        observation: Observation,
        decision_id: int,
        budget_ms: int,
        bank_ms: int,
        timeout_s: float,
        while_waiting: Callable[[], None] | None = None,
    ) -> Answer:
        """Ask decision ``decision_id`` of ``observation`` (telling the bot its budget and bank
        left) and wait up to ``timeout_s`` for its answer.

        ``while_waiting`` runs right after the request is written, while the bot thinks: the
        referee does its bookkeeping (the log) there, off the critical path. Its time is not
        charged to the bot when it is long enough to matter (a stalled disk): see
        :data:`UNCHARGED_WORK_NS`.

        Raises :class:`TimeoutFault`, :class:`CrashFault` or :class:`MalformedFault`, with the
        time waited in its ``waited_ns``; an answer to a decision given up on earlier is skipped.
        """
        if self.broken is not None:
            self.broken.waited_ns = 0  # asked nothing: waited for nothing
            raise self.broken
        assert self._opened, "start() the stream first"
        request = wire.decision_request_bytes(observation, decision_id, budget_ms, bank_ms)
        t0 = time.monotonic_ns()
        credit = 0
        loop = asyncio.get_running_loop()
        ended: tuple[int, object] | None = None
        try:
            async with asyncio.timeout(timeout_s) as timer:
                await self._write(request)
                if while_waiting is not None:
                    w0 = time.monotonic_ns()
                    while_waiting()
                    spent = time.monotonic_ns() - w0
                    if spent > UNCHARGED_WORK_NS:
                        # The referee was slow (a stalled disk): the bot's clock stops meanwhile.
                        credit = spent
                        timer.reschedule(loop.time() + timeout_s - (time.monotonic_ns() - t0 - credit) / 1e9)
                while True:
                    kind, payload, t = await self._next()
                    if kind != self._MESSAGE:
                        # Explained outside the deadline: finding out why takes a moment.
                        ended = (kind, payload)
                        break
                    assert isinstance(payload, bot_pb2.PlayResponse)
                    answered = payload.decision_id
                    if answered == decision_id:
                        reply = payload
                        break
                    if answered in self._abandoned:
                        self._abandoned.discard(answered)
                        continue
                    self._abandoned.add(decision_id)
                    raise MalformedFault(
                        f"answer carries decision_id {answered}, but decision {decision_id} was asked",
                        # It may have come before this decision was asked (a flood): no wait.
                        waited_ns=max(0, t - t0 - credit),
                    )
        except TimeoutError:
            self._abandoned.add(decision_id)
            raise TimeoutFault(
                f"no answer within {timeout_s * 1000:.0f} ms (budget + time bank left + grace)",
                waited_ns=time.monotonic_ns() - t0 - credit,
            ) from None
        latency = max(0, t - t0 - credit)
        if ended is not None:
            fault = await self._stream_fault(*ended)
            fault.waited_ns = latency
            raise fault
        if latency > timeout_s * 1e9:  # arrived in time for the loop, but after the deadline
            raise TimeoutFault(
                f"answered after {latency / 1e6:.0f} ms, past the {timeout_s * 1000:.0f} ms deadline", waited_ns=latency
            )
        try:
            _, action = wire.answer_from_pb(reply)
        except wire.WireError as e:
            raise MalformedFault(f"malformed answer: {e}", waited_ns=latency) from None
        return Answer(action, latency)

    async def finish(self, result: wire.MatchResult, timeout_s: float = FINISH_TIMEOUT_S, wait: bool = True) -> None:
        """Send ``match_end`` with ``result``, half-close, and give the bot ``timeout_s`` to end
        the call.

        With ``wait=False`` this returns once match end is sent; the bot's hanging up is
        awaited in the background (the result is known, so the next match need not wait),
        and the call is dropped if it has not ended after ``timeout_s``.
        """
        if not self._opened:
            return
        try:
            if self.broken is None and not self._ended():
                request = wire.match_end_request(result)
                async with asyncio.timeout(timeout_s):
                    await self._write_last(request)
                    if not wait:
                        self._linger = asyncio.get_running_loop().call_later(timeout_s, self.abort)
                        return
                    if self._reader is not None:
                        await asyncio.shield(self._reader)
        except TimeoutError:
            pass  # a bot that will not hang up is hung up on
        self.abort()

    # The two methods below judge what :meth:`start` and :meth:`finish` take on trust: a match
    # does not need to know, but a compliance check (referee.bots.compliance) does.

    async def settle(self, wait_s: float) -> BotFault | None:
        """Wait ``wait_s`` after :meth:`start`: the bot must send nothing and keep the stream open.

        Returns the fault if it sent a message (which is then dropped) or ended or broke the
        stream, else None.
        """
        if self.broken is not None:
            return self.broken
        try:
            async with asyncio.timeout(wait_s):
                kind, payload, _ = await self._next()
        except TimeoutError:
            return None
        if kind == self._MESSAGE:
            assert isinstance(payload, bot_pb2.PlayResponse)
            return MalformedFault(
                f"the bot sent a PlayResponse (decision_id {payload.decision_id}) when no decision was asked"
            )
        return await self._stream_fault(kind, payload)

    async def end(self, result: wire.MatchResult, timeout_s: float = FINISH_TIMEOUT_S) -> BotFault | None:
        """Send ``match_end`` with ``result``, half-close, and wait up to ``timeout_s`` for the bot to end the
        call with OK; the fault if it did not (None: a clean end). The stream is dropped after.

        Late answers to decisions given up on are not held against the bot; any other message
        is (the bot must send nothing after match end).
        """
        if self.broken is not None:
            return self.broken
        assert self._opened, "start() the stream first"
        request = wire.match_end_request(result)
        fault: BotFault | None = None
        try:
            async with asyncio.timeout(timeout_s):
                await self._write_last(request)
                while True:
                    kind, payload, _ = await self._next()
                    if kind == self._END:
                        break
                    if kind == self._ERROR:
                        fault = await self._stream_fault(kind, payload)
                        break
                    assert isinstance(payload, bot_pb2.PlayResponse)
                    if payload.decision_id in self._abandoned:
                        self._abandoned.discard(payload.decision_id)
                        continue
                    fault = MalformedFault(f"the bot sent a PlayResponse (decision_id {payload.decision_id}) after match end")
                    break
        except TimeoutError:
            fault = TimeoutFault(f"the bot did not end its Play stream within {timeout_s * 1000:.0f} ms of match end")
        self.abort()
        return fault

    def abort(self) -> None:
        """Drop the stream at once (cancels the call)."""
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        if self._opened:
            self._cancel()
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()


class GrpcSeatStream(SeatStream):
    """A Play stream over the bot's gRPC channel."""

    def __init__(self, bot: BotHandle, play: grpc.aio.StreamStreamMultiCallable[PlayRequestOut, bot_pb2.PlayResponse]) -> None:
        super().__init__(bot)
        self._play = play
        self._call: PlayCall | None = None

    async def _open(self, first: PlayRequestOut) -> None:
        call = self._call = self._play(None)  # requests are written one by one
        self._reader = asyncio.get_running_loop().create_task(self._read_loop(call))
        await self._write(first)

    async def _write(self, request: PlayRequestOut) -> None:
        assert self._call is not None
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            await self._call.write(request)

    async def _write_last(self, request: PlayRequestOut) -> None:
        assert self._call is not None
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            await self._call.write(request)
            await self._call.done_writing()

    def _ended(self) -> bool:
        return self._call is None or self._call.done()

    def _cancel(self) -> None:
        if self._call is not None and not self._call.done():
            self._call.cancel()

    async def _read_loop(self, call: PlayCall) -> None:
        now = time.monotonic_ns
        try:
            while True:
                msg = await call.read()
                if msg is EOF:
                    self._deliver((self._END, None, now()))
                    return
                self._deliver((self._MESSAGE, msg, now()))
                if (room := self._read_on()) is not None:
                    await room
        except grpc.aio.AioRpcError as e:
            self._deliver((self._ERROR, (e.code(), e.details() or ""), now()))


class SocketSeatStream(SeatStream):
    """A Play stream over the bot's play socket (:mod:`referee.playsocket`): one connection."""

    def __init__(self, bot: BotHandle, path: str) -> None:
        super().__init__(bot)
        self._path = path
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self, first: PlayRequestOut) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(self._path)
        except OSError as e:
            self._deliver((self._ERROR, (grpc.StatusCode.UNAVAILABLE, f"cannot connect to its play socket: {e}"), time.monotonic_ns()))
            return
        self._writer = writer
        self._reader = asyncio.get_running_loop().create_task(self._read_loop(reader))
        await self._write(first)

    async def _write(self, request: PlayRequestOut) -> None:
        writer = self._writer
        if writer is not None and not writer.is_closing():
            writer.write(playsocket.frame(playsocket.MESSAGE, _serialize_request(request)))

    async def _write_last(self, request: PlayRequestOut) -> None:
        writer = self._writer
        if writer is not None and not writer.is_closing():
            writer.write(playsocket.frame(playsocket.MESSAGE, _serialize_request(request)))
            with contextlib.suppress(OSError):
                writer.write_eof()

    def _ended(self) -> bool:
        return self._writer is None or self._writer.is_closing() or (self._reader is not None and self._reader.done())

    def _cancel(self) -> None:
        if self._writer is not None:
            self._writer.close()

    async def _end_note(self) -> str:
        # A process that dies closes its connection: the exit says why.
        return " (it closed its play socket connection)" + await self.bot.exit_note()

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        now = time.monotonic_ns
        header, size = playsocket.HEADER, playsocket.HEADER_SIZE
        parse = bot_pb2.PlayResponse.FromString
        try:
            while True:
                try:
                    head = await reader.readexactly(size)
                except asyncio.IncompleteReadError as e:
                    if e.partial:
                        self._deliver((self._ERROR, (grpc.StatusCode.UNAVAILABLE, "the connection closed inside a frame"), now()))
                    else:
                        self._deliver((self._END, None, now()))
                    return
                tag, n = header.unpack(head)
                if n > MAX_MESSAGE_BYTES:
                    self._deliver((self._ERROR, (grpc.StatusCode.RESOURCE_EXHAUSTED, f"a frame of {n} bytes"), now()))
                    return
                body = await reader.readexactly(n)
                if tag == playsocket.MESSAGE:
                    try:
                        msg = parse(body)
                    except DecodeError:
                        self._deliver((self._ERROR, (grpc.StatusCode.INTERNAL, "deserialization failed"), now()))
                        return
                    self._deliver((self._MESSAGE, msg, now()))
                    if (room := self._read_on()) is not None:
                        await room
                elif tag == playsocket.STATUS:
                    name, details = playsocket.parse_status(body)
                    code = getattr(grpc.StatusCode, name, grpc.StatusCode.UNKNOWN)
                    if not isinstance(code, grpc.StatusCode) or code is grpc.StatusCode.OK:
                        code = grpc.StatusCode.UNKNOWN
                    self._deliver((self._ERROR, (code, details), now()))
                    return
                else:
                    self._deliver((self._ERROR, (grpc.StatusCode.INTERNAL, f"a frame with the unknown tag {tag} (deserialization failed)"), now()))
                    return
        except asyncio.IncompleteReadError:
            self._deliver((self._ERROR, (grpc.StatusCode.UNAVAILABLE, "the connection closed inside a frame"), now()))
        except OSError as e:
            self._deliver((self._ERROR, (grpc.StatusCode.UNAVAILABLE, f"the connection broke: {e}"), now()))


class BotHandle:
    """A bot that is up, healthy and identified; reusable across matches (see module doc)."""

    def __init__(
        self,
        spec: BotSpec,
        channel: grpc.aio.Channel,
        identity: wire.BotIdentity,
        process: BotProcess | None,
        play_socket: str | None = None,
    ) -> None:
        self.spec = spec
        self.identity = identity
        self.process = process
        #: Where the bot serves Play streams without gRPC (:mod:`referee.playsocket`), if it does.
        self.play_socket = play_socket
        self._channel = channel
        self._play: grpc.aio.StreamStreamMultiCallable[PlayRequestOut, bot_pb2.PlayResponse] = channel.stream_stream(
            PLAY_METHOD, request_serializer=_serialize_request, response_deserializer=bot_pb2.PlayResponse.FromString
        )
        #: The deal seeds of the matches this process has been seated in: what it may remember.
        #: A tournament never seats it at another match of those deals (one deal is played in
        #: every rotation of the seats, and the same cards dealt again would be known cards).
        self.deals: set[int] = set()
        self._closed = False
        # Open streams, so that closing the bot drops those still lingering after match end.
        self._streams: weakref.WeakSet[SeatStream] = weakref.WeakSet()

    @property
    def label(self) -> str:
        """The name shown to people: the ``NAME=`` prefix if given, else the bot's own name."""
        return self.spec.label or self.identity.name

    @property
    def source(self) -> str:
        """How the bot was named, as given."""
        return self.spec.text

    @property
    def pid(self) -> int | None:
        """The process id of a bot the referee started."""
        return self.process.pid if self.process is not None else None

    def exit_code(self) -> int | None:
        """The process's exit status if it has exited (None while running, or not ours)."""
        return self.process.exit_code() if self.process is not None else None

    @property
    def alive(self) -> bool:
        """False once the referee's bot process has exited or the handle is closed."""
        return not self._closed and self.exit_code() is None

    async def exit_note(self, hint: str = "") -> str:
        """``"; the bot process exited with code 1 (last output: ...)"`` once it has exited."""
        if self.process is None:
            return ""
        # The stream often breaks a moment before the exit can be reaped.
        for _ in range(10):
            code = self.process.exit_code()
            if code is not None:
                await self.process.output_closed(0.2)
                tail = _tail_line(self.process)
                note = self.process.limit_note(hint)
                return f"; the bot process {describe_exit(code)}{note}" + (f" (last output: {tail})" if tail else "")
            await asyncio.sleep(0.02)
        return self.process.limit_note(hint)

    def open_seat(self) -> SeatStream:
        """A new Play stream for one seat of one match (call :meth:`SeatStream.start`): over the
        play socket if the bot serves one, else over gRPC."""
        if self.play_socket is not None:
            return SocketSeatStream(self, self.play_socket)
        return GrpcSeatStream(self, self._play)

    async def close(self, grace_s: float = STOP_GRACE_S) -> None:
        """Close the channel and stop the process (and its group); idempotent."""
        if self._closed:
            return
        self._closed = True
        # Streams whose match just ended may still be hanging up: let them, briefly, so that
        # the bot gets its match end, then drop whatever is left.
        hanging_up = [
            s._reader for s in list(self._streams) if s._linger is not None and s._reader is not None and not s._reader.done()
        ]
        if hanging_up:
            await asyncio.wait(hanging_up, timeout=FINISH_TIMEOUT_S)
        for stream in list(self._streams):
            stream.abort()
        try:
            await self._channel.close(grace=None)
        finally:
            if self.process is not None:
                await self.process.stop(grace_s)

    async def __aenter__(self) -> BotHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _start_error(spec: BotSpec, process: BotProcess | None, what: str) -> BotStartError:
    code = process.exit_code() if process is not None else None
    tail = process.output_tail() if process is not None else ""
    # bubblewrap reports a sandbox it could not build (a missing folder, a refused mount) as
    # its only output, prefixed "bwrap:".
    sandbox = [line for line in tail.splitlines() if line.startswith("bwrap: ")]
    if sandbox:
        what = f"could not be started in its sandbox ({sandbox[-1][len('bwrap: '):]})"
    elif process is not None:
        what += process.limit_note()
    return BotStartError(f"bot {spec.text!r} {what}", exit_code=code, output=tail)


#: How long a bot named by its address may refuse connections before the referee gives up,
#: in seconds: such a bot should be running already, so waiting the whole start-up timeout
#: only hides a wrong address; the grace covers a bot started a moment before the referee.
REFUSED_GRACE_S = 1.0
# The SDK's start line ("... serving thirtyone protocol 1 on ADDRESS (pid N)"): a bot that
# announces another address than the one it was given listens in the wrong place.
_ANNOUNCED = re.compile(r"serving thirtyone protocol \d+ on (\S+) \(pid \d+\)")


def _same_address(a: str, b: str) -> bool:
    """Whether two gRPC targets name the same place (``unix:///p`` and ``unix:/p`` do)."""

    def norm(t: str) -> str:
        if t.startswith("unix:"):
            rest = t[len("unix:") :]
            return "unix:" + ("/" + rest.lstrip("/") if rest.startswith("/") else rest)
        return t.removeprefix("grpc://")

    return norm(a) == norm(b)


def _announced_address(process: BotProcess) -> str | None:
    """The address an SDK bot's start line says it serves on, if it printed one."""
    found = _ANNOUNCED.findall(process.output_tail(4000))
    return found[-1] if found else None


def _address_note(process: BotProcess) -> str:
    """Where the referee told a launched bot to serve, how, and where the bot says it went."""
    note = (
        f"; the referee gave it the address {process.address} in the environment variable {ADDRESS_ENV} "
        "and it must serve there (an SDK bot does, unless started with --address or given a fixed address)"
    )
    announced = _announced_address(process)
    if announced is not None and not _same_address(announced, process.address):
        note += f"; it says it serves on {announced} instead"
    return note


def _is_python(spec: BotSpec) -> bool:
    """Whether the bot's command runs Python (a .py file, python -m ..., a sample bot)."""
    words = spec.argv
    return bool(words) and (
        spec.kind == "sample"
        or os.path.basename(words[0]).startswith("python")
        or any(w.endswith(".py") for w in words)
    )


def _exit_hint(spec: BotSpec, code: int) -> str:
    """Why a bot may have exited cleanly before serving: it never started its server."""
    if code != 0:
        return ""  # a failure's own output (a traceback) says more than a guess
    if _is_python(spec):
        return (
            "; a Python bot must serve until it is stopped: call sdk.run(MyBot) under "
            "`if __name__ == '__main__':` at the end of its file"
        )
    return f"; a bot must serve the Bot service at the address it is given (in {ADDRESS_ENV}) until it is stopped"


def _unreachable(address: str, details: str) -> str:
    """Why nothing answered at a bot's address, from gRPC's connection error details."""
    low = details.lower()
    if "connection refused" in low:
        why = f"connection refused at {address}"
    elif "no such file" in low:
        why = f"no socket at {address}"
    else:
        why = f"cannot connect to {address} ({details})"
    return f"is not reachable: {why}; is the bot running and listening there?"


async def _exited_early(spec: BotSpec, process: BotProcess, code: int) -> BotStartError:
    await process.output_closed(0.5)
    return _start_error(spec, process, f"{describe_exit(code)} before it was ready{_exit_hint(spec, code)}")


async def _before_next_look(process: BotProcess, looks: int) -> None:
    """Wait before looking for a starting bot's socket again, ``looks`` looks in.

    Soon at first (a compiled bot serves within milliseconds), then less and less often, up
    to :data:`SOCKET_POLL_MAX_S`: each look costs the referee a wake-up, and several bots
    starting at once on a busy machine made hundreds of them. Output of the bot ends the
    wait early (an SDK bot writes its start line once it serves), but never before
    :data:`SOCKET_POLL_S`: a bot that writes without pause does not make the referee look
    any more often than that.
    """
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    # The exponent is capped: a start may take thousands of looks (a long --startup-timeout).
    await process.new_output(min(SOCKET_POLL_MAX_S, SOCKET_POLL_S * 1.5 ** min(looks, 16)))
    if (rest := SOCKET_POLL_S - (loop.time() - t0)) > 0:
        await asyncio.sleep(rest)


async def open_channel(spec: BotSpec, process: BotProcess | None, timeout_s: float) -> grpc.aio.Channel:
    """A channel to the bot: to its address, or to the target its process gives
    (:meth:`~referee.bots.process.BotProcess.connect_target`), once it gives one.

    A sandboxed bot's socket is reached through the one socket found inside its sandbox, so
    the bot must have made it first; this waits up to ``timeout_s`` for that, and raises
    :class:`BotStartError` as :func:`wait_serving` does if the process exits first or the
    time runs out, or if the path holds something other than a socket.
    """
    if process is None:
        return grpc.aio.insecure_channel(spec.address, options=list(CHANNEL_OPTIONS))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    looks = 0
    while (target := process.connect_target()) is None:
        if (code := process.exit_code()) is not None:
            raise await _exited_early(spec, process, code)
        if loop.time() > deadline:
            raise _start_error(
                spec, process, f"did not report SERVING within {timeout_s:g} s (no socket at its address){_address_note(process)}"
            )
        # As often as an unsandboxed bot's socket is looked for (wait_serving), so that
        # SERVING is noticed as soon.
        await _before_next_look(process, looks)
        looks += 1
    return grpc.aio.insecure_channel(target, options=list(CHANNEL_OPTIONS))


async def wait_serving(
    spec: BotSpec, channel: grpc.aio.Channel, process: BotProcess | None, timeout_s: float, *, spent_s: float = 0.0
) -> None:
    """Wait until the bot's health service is ready by :func:`health_ready`: SERVING for one
    name of :data:`HEALTH_SERVICES`, and SERVING or NOT_FOUND for the other.

    Raises :class:`BotStartError` (naming the bot, with its exit code and last output) if the
    process exits first, the health service is missing, or ``timeout_s`` passes, of which
    ``spent_s`` already went (in :func:`open_channel`).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s - spent_s
    stub = health_pb2_grpc.HealthStub(channel)
    last = "no answer"
    # A launched bot's socket appears only once it serves, so its checks wait for the
    # connection; a bot named by its address should answer now, so a refusal is final (after
    # a short grace) instead of costing the whole start-up timeout.
    launched = process is not None
    # A launched bot's Unix socket: no health check is sent before it exists. A check that
    # finds nothing sets gRPC's reconnect backoff going (up to CHANNEL_OPTIONS' maximum), and
    # the bot's start then waits out the backoff's rest: a stat of the path costs microseconds.
    # A sandboxed bot's socket was already found inside its sandbox (open_channel): its path
    # on this machine is not the one to look at, so only an unsandboxed bot's is watched.
    socket_path = (
        process.address.removeprefix("unix://")
        if process is not None and process.address.startswith("unix://") and process.connect_target() == process.address
        else None
    )
    refused_since: float | None = None
    wrong_address_seen = False
    looks = 0
    # What the health service last answered, if it ever did.
    answered = ""
    while True:
        if process is not None and (code := process.exit_code()) is not None:
            raise await _exited_early(spec, process, code)
        left = deadline - loop.time()
        if left <= 0:
            note = _address_note(process) if process is not None else f"; is it listening at {spec.address}?"
            raise _start_error(spec, process, f"did not report SERVING within {timeout_s:g} s ({last}){note}")
        if process is not None:
            # An SDK bot prints its address once it serves: if that is not the address it was
            # given, waiting longer cannot help. The line is only the bot's word, so one more
            # failed check at the given address must confirm it before the referee gives up.
            announced = _announced_address(process)
            if announced is not None and not _same_address(announced, process.address):
                if wrong_address_seen:
                    raise _start_error(spec, process, f"serves at the wrong address{_address_note(process)}")
                wrong_address_seen = True
        if socket_path is not None:
            if not os.path.exists(socket_path):
                last = "no socket at its address yet"
                assert process is not None  # socket_path is only set for a launched bot
                await _before_next_look(process, looks)
                looks += 1
                continue
            socket_path = None  # there: from now on gRPC's own retries apply
        # Ask both names every time: a bot may say NOT_SERVING for its BotService while it
        # loads (C++'s default health service says SERVING for "" as soon as it starts).
        statuses: dict[str, str] = {}
        failed: grpc.aio.AioRpcError | None = None
        for name in HEALTH_SERVICES:
            try:
                # Short attempts, so that a process that exits meanwhile is noticed quickly.
                reply = await stub.Check(
                    health_pb2.HealthCheckRequest(service=name),
                    timeout=min(max(deadline - loop.time(), 0.01), 0.25),
                    wait_for_ready=launched,
                )
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                    raise _start_error(spec, process, "does not serve the gRPC health service (grpc.health.v1.Health)") from None
                if e.code() != grpc.StatusCode.NOT_FOUND:
                    failed = e
                    break
                statuses[name] = "NOT_FOUND"
            else:
                statuses[name] = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        if failed is not None:
            code_ = failed.code()
            # A check that timed out says less than the answer before it (a bot that said
            # NOT_SERVING, then was slow to answer the last check, which had a moment left).
            last = f"last health check: {code_.name}" + (f"; the one before: {answered}" if answered else "")
            if code_ == grpc.StatusCode.UNAVAILABLE and not launched:
                now = loop.time()
                refused_since = now if refused_since is None else refused_since
                if now - refused_since >= REFUSED_GRACE_S:
                    raise _start_error(spec, process, _unreachable(spec.address, failed.details() or "")) from None
                # Failing fast, the check returns at once: do not spin.
                await asyncio.sleep(0.05)
            continue
        refused_since = None
        if health_ready(statuses):
            return
        answered = describe_health(statuses)
        last = "last health check: " + answered
        await asyncio.sleep(0.02)


def health_ready(statuses: dict[str, str]) -> bool:
    """Whether a bot whose health service answers ``statuses`` (a status or gRPC code name per
    name of :data:`HEALTH_SERVICES`) is ready: one name SERVING, and the other SERVING too or
    not known to the service (NOT_FOUND). ``match``, ``check-bot`` and ``submit`` all judge so."""
    return "SERVING" in statuses.values() and all(s in ("SERVING", "NOT_FOUND") for s in statuses.values())


def describe_health(statuses: dict[str, str]) -> str:
    """``statuses`` (as for :func:`health_ready`) in words, the names not SERVING first."""
    return "; ".join(f"service {n!r}: {s}" for n, s in sorted(statuses.items(), key=lambda kv: kv[1] == "SERVING"))


async def identify(
    spec: BotSpec, stub: bot_pb2_grpc.BotServiceAsyncStub, process: BotProcess | None, timeout_s: float
) -> wire.BotIdentity:
    """Ask GetIdentity and check the answer as the referee does before any match.

    Raises :class:`BotStartError` if the call fails and :class:`BotIdentityError` for an
    unusable identity (no name, control characters, another protocol version).
    """
    try:
        reply = await stub.GetIdentity(wire.identity_request(), timeout=timeout_s)
    except grpc.aio.AioRpcError as e:
        raise _start_error(spec, process, f"failed GetIdentity ({e.code().name}: {e.details()})") from None
    try:
        identity = wire.identity_from_pb(reply)
    except wire.WireError as e:
        raise BotIdentityError(f"bot {spec.text!r} gave an unusable identity: {e}") from None
    for field in ("name", "version", "author"):
        value: str = getattr(identity, field)
        if len(value) > 200 or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise BotIdentityError(
                f"bot {spec.text!r} gave an unusable identity: {field} {value[:60]!r} is over 200 "
                "characters or holds control characters"
            )
    if identity.protocol_version != wire.PROTOCOL_VERSION:
        raise BotIdentityError(
            f"bot {spec.text!r} ({identity.name}) speaks protocol version {identity.protocol_version}; "
            f"this referee speaks version {wire.PROTOCOL_VERSION}"
        )
    return identity


async def start_bot(
    spec: BotSpec | str,
    *,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    launcher: Launcher | None = None,
) -> BotHandle:
    """Start (or reach) a bot, wait until its health service says SERVING, and identify it.

    Raises :class:`BotSpecError` for a bad name and :class:`BotStartError` (with the process's
    exit code and output tail) or :class:`BotIdentityError` if the bot cannot be used; in
    every failure the process is stopped again. A bot named by its address must be running:
    a refused connection (or a missing socket) fails after :data:`REFUSED_GRACE_S`, not the
    start-up timeout. A launched bot that serves elsewhere than the address it was given
    fails with that address and how it was given (``THIRTYONE_BOT_ADDRESS``).
    """
    if isinstance(spec, str):
        spec = parse_bot_spec(spec)
    process: BotProcess | None = None
    if spec.launched:
        process = await (launcher or LocalLauncher()).launch(spec)
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + startup_timeout_s
    channel: grpc.aio.Channel | None = None
    try:
        channel = await open_channel(spec, process, startup_timeout_s)
        await wait_serving(spec, channel, process, startup_timeout_s, spent_s=loop.time() - started)
        identity = await identify(
            spec, bot_pb2_grpc.BotServiceStub(channel), process, max(1.0, deadline - loop.time())
        )
        # A bot that listens on the play socket made it before it reported SERVING.
        play_socket = process.play_socket() if process is not None else None
    except BaseException:
        if channel is not None:
            with contextlib.suppress(Exception):
                await channel.close(grace=None)
        if process is not None:
            await process.stop(0.2)
        raise
    return BotHandle(spec, channel, identity, process, play_socket)


async def start_bots(
    specs: Sequence[BotSpec | str],
    *,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    launcher: Launcher | None = None,
) -> list[BotHandle]:
    """Start several bots at once; if any fails, stop the others and raise the first failure
    (in the order given)."""
    parsed = [parse_bot_spec(s) if isinstance(s, str) else s for s in specs]
    results = await asyncio.gather(
        *(start_bot(s, startup_timeout_s=startup_timeout_s, launcher=launcher) for s in parsed),
        return_exceptions=True,
    )
    handles = [r for r in results if isinstance(r, BotHandle)]
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        await close_bots(handles)
        raise errors[0]
    return handles


async def close_bots(handles: Sequence[BotHandle], grace_s: float = STOP_GRACE_S) -> None:
    """Close several bots at once (errors of one do not keep the others running)."""
    await asyncio.gather(*(h.close(grace_s) for h in handles), return_exceptions=True)
