"""The play socket (referee.playsocket): Play streams of launched bots without gRPC.

Real bot processes, sandboxed and not: the SDK's bots, and a raw test bot written from the
framing's description alone (bots/socket_bot.py) that misbehaves on the socket.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
from pathlib import Path

import pytest

from referee.bots.client import GrpcSeatStream, SocketSeatStream, start_bot, start_bots
from referee.bots.process import LocalLauncher
from referee.bots.sandbox import SandboxConfig, probe
from referee.faults import BotStartError
from referee.game import Rules
from referee.match import MatchConfig, MatchOutcome, play_match
from referee.playsocket import PLAY_SOCKET_ENV, TRANSPORT_ENV
from referee.timecontrol import TimeControl

from .conftest import run

SOCKET_BOT = Path(__file__).resolve().parent / "bots" / "socket_bot.py"
SANDBOX = pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")
#: Wide clocks: a busy machine must not turn a plain answer into a timeout.
WIDE = TimeControl(budget_ms=2000, bank_ms=2000, grace_ms=1000)


def socket_bot(mode: str, *args: str | int) -> str:
    """A bot spec running the raw play-socket test bot in ``mode``."""
    return " ".join([sys.executable, str(SOCKET_BOT), "--mode", mode, *map(str, args)])


def launchers() -> list[LocalLauncher]:
    """Unsandboxed, and sandboxed where this machine can."""
    out = [LocalLauncher()]
    if probe().available:
        out.append(LocalLauncher(sandbox=SandboxConfig()))
    return out


async def _play_with_output(
    specs: list[str], launcher: LocalLauncher, seed: int, log: Path, tc: TimeControl = WIDE
) -> tuple[MatchOutcome, str]:
    """The match, and which way the first seat's answers went (``socket``, ``grpc``: one
    word per answer, as a socket_bot says)."""
    handles = await start_bots(specs, launcher=launcher)
    try:
        config = MatchConfig(rules=Rules().with_options({"max_rounds": 3}), time_control=tc)
        out = await play_match(handles, seed=seed, config=config, log_path=log)
        first = handles[0].process
        assert first is not None
        if first.exit_code() is not None:
            await first.output_closed(1.0)
        went = " ".join(line.split()[-1] for line in first.output_tail(100_000).splitlines() if line.startswith("answered over "))
        return out, went
    finally:
        for h in handles:
            await h.close()


async def _play(specs: list[str], launcher: LocalLauncher, seed: int, log: Path, tc: TimeControl = WIDE) -> MatchOutcome:
    return (await _play_with_output(specs, launcher, seed, log, tc))[0]


def _actions(log: Path) -> list[tuple[int, str]]:
    """Each decision's seat and action, in order, from a match log."""
    out = []
    for line in log.read_text().splitlines():
        event = json.loads(line).get("event", {})
        if "action" in event:
            a = event["action"]
            out.append((a.get("seat", 0), json.dumps(a["action"], sort_keys=True)))
    return out


def test_sdk_bots_play_over_the_socket_and_the_match_is_the_one_grpc_plays(tmp_path: Path) -> None:
    bots = ["random", "greedy", "random"]
    for i, launcher in enumerate(launchers()):

        async def kinds() -> list[str]:
            handles = await start_bots(bots, launcher=launcher)  # noqa: B023  # called at once
            try:
                assert all(h.play_socket for h in handles)
                return [type(h.open_seat()).__name__ for h in handles]
            finally:
                for h in handles:
                    await h.close()

        assert run(kinds()) == ["SocketSeatStream"] * 3
        over_socket = run(_play(bots, launcher, 11, tmp_path / f"socket{i}.jsonl"))
        grpc_only = LocalLauncher(sandbox=launcher.sandbox, play_socket=False)
        over_grpc = run(_play(bots, grpc_only, 11, tmp_path / f"grpc{i}.jsonl"))
        assert over_socket.placings == over_grpc.placings
        assert [s.faults for s in over_socket.seats] == [(), (), ()]
        acts = _actions(tmp_path / f"socket{i}.jsonl")
        assert len(acts) > 20 and acts == _actions(tmp_path / f"grpc{i}.jsonl")


@pytest.mark.parametrize(
    ("mode", "kind", "words"),
    [
        ("not_proto", "malformed", "not a PlayResponse"),
        ("oversized", "malformed", "over 65536 bytes"),
        ("unknown_tag", "malformed", "unknown tag 9"),
        ("status", "crash", "INTERNAL: my model fell over"),
        ("cut", "crash", "inside a frame"),
        ("die", "crash", "exited with code 1"),
    ],
)
def test_what_a_bot_sends_on_the_socket_is_judged_as_over_grpc(tmp_path: Path, mode: str, kind: str, words: str) -> None:
    out, went = run(_play_with_output([socket_bot(mode, "--from", 3), "random"], LocalLauncher(), 5, tmp_path / "m.jsonl"))
    seat = out.seats[0]
    assert seat.forfeited and seat.faults, seat
    assert seat.faults[0].kind == kind and words in seat.faults[0].message, seat.faults[0]
    # Two decisions answered over the socket before the fault, none over gRPC.
    assert went == "socket socket"
    assert out.seats[1].faults == ()


def test_a_bot_that_floods_its_socket_cannot_grow_the_referee(tmp_path: Path) -> None:
    # 40 MB of answers to one decision: the referee takes the first, faults the stale ones it
    # reads, stops reading at its inbox limit (the kernel then holds the bot back) and ends
    # the match; its memory does not take the flood in.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = run(_play([socket_bot("flood", "--from", 2), "random"], LocalLauncher(), 5, tmp_path / "m.jsonl"))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    seat = out.seats[0]
    assert seat.forfeited and {f.kind for f in seat.faults} == {"malformed"}, seat.faults
    assert "decision_id" in seat.faults[0].message
    assert out.seats[1].faults == () and len(out.rounds) >= 1
    assert grown_mb < 20, f"the referee's peak memory grew by {grown_mb:.0f} MB"


def test_a_late_answer_on_the_socket_times_out_and_is_then_skipped(tmp_path: Path) -> None:
    # The bot answers its second decision only once the referee has given up on it and asked
    # the third: that answer is stale and skipped (not a protocol violation), and the third is
    # answered at once.
    # 1.2 s a decision: the bot's others, answered at once, are on time even on a busy machine.
    tc = TimeControl(budget_ms=1000, bank_ms=0, grace_ms=200)
    spec = socket_bot("late_once", "--from", 2)
    out, went = run(_play_with_output([spec, "random"], LocalLauncher(), 5, tmp_path / "m.jsonl", tc))
    faults = out.seats[0].faults
    assert [(f.kind, f.decision_id) for f in faults] == [("timeout", faults[0].decision_id)], faults
    assert out.seats[0].stats.decisions > 5 and not out.seats[0].forfeited
    assert set(went.split()) == {"socket"}


def _assert_played_over_grpc(spec: str, launcher: LocalLauncher, log: Path) -> None:
    """The bot ``spec`` gets no play socket, and its match goes over gRPC, without a fault."""

    async def check() -> None:
        h = await start_bot(spec, launcher=launcher)
        try:
            assert h.play_socket is None and isinstance(h.open_seat(), GrpcSeatStream)
        finally:
            await h.close()

    run(check())
    out, went = run(_play_with_output([spec, "random"], launcher, 5, log))
    assert out.seats[0].faults == () and went and set(went.split()) == {"grpc"}


def test_a_bot_that_serves_no_play_socket_is_played_over_grpc(tmp_path: Path) -> None:
    for i, launcher in enumerate(launchers()):
        _assert_played_over_grpc(socket_bot("none"), launcher, tmp_path / f"m{i}.jsonl")


@SANDBOX
def test_a_link_in_place_of_the_play_socket_is_not_followed(tmp_path: Path) -> None:
    # Sandboxed, the bot made play.sock a link (to its own gRPC socket, here; it could name
    # any socket on the machine): the referee looks it up inside the sandbox without
    # following links, finds no socket, and plays the bot over gRPC.
    _assert_played_over_grpc(socket_bot("link"), LocalLauncher(sandbox=SandboxConfig()), tmp_path / "m.jsonl")


def test_the_referee_can_be_told_to_use_grpc_alone_and_refuses_a_bad_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "grpc")
    # Nor does an unsandboxed bot inherit a path from the referee's own environment.
    monkeypatch.setenv(PLAY_SOCKET_ENV, "/tmp/somewhere-else.sock")

    async def grpc_alone() -> None:
        h = await start_bot("random", launcher=LocalLauncher())
        try:
            assert h.play_socket is None and isinstance(h.open_seat(), GrpcSeatStream)
            assert h.process is not None and PLAY_SOCKET_ENV not in Path(f"/proc/{h.pid}/environ").read_text()
        finally:
            await h.close()

    run(grpc_alone())
    monkeypatch.setenv(TRANSPORT_ENV, "carrier-pigeon")
    with pytest.raises(BotStartError, match=f"{TRANSPORT_ENV}='carrier-pigeon' is neither 'socket'"):
        run(start_bot("random", launcher=LocalLauncher()))
    monkeypatch.setenv(TRANSPORT_ENV, "socket")

    async def socket() -> None:
        h = await start_bot("random", launcher=LocalLauncher())
        try:
            assert isinstance(h.open_seat(), SocketSeatStream)
        finally:
            await h.close()

    run(socket())


def test_an_sdk_bot_that_raises_ends_its_socket_stream_with_the_reason(tmp_path: Path) -> None:
    bot = tmp_path / "raiser.py"
    bot.write_text(
        "import sdk\n\n"
        "class Raiser(sdk.Bot):\n"
        "    def act(self, view):\n"
        "        raise RuntimeError('out of ideas')\n\n"
        "if __name__ == '__main__':\n"
        "    sdk.run(Raiser)\n"
    )
    out = run(_play([f"{sys.executable} {bot}", "random"], LocalLauncher(), 5, tmp_path / "m.jsonl"))
    fault = out.seats[0].faults[0]
    assert fault.kind == "crash" and "raised RuntimeError: out of ideas in act" in fault.message, fault
    assert "INTERNAL" in fault.message


def test_the_sdk_serves_the_socket_and_removes_it_when_stopped(tmp_path: Path) -> None:
    import sdk
    from sample_bots.random import RandomBot

    async def go() -> None:
        path = tmp_path / "play.sock"
        server = await sdk.start_server(RandomBot, f"unix://{tmp_path / 'bot.sock'}", play_socket=str(path))
        try:
            assert path.is_socket()
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(b"\x01\x00\x00\x00\x04\xff\xff\xff\xff")  # bytes that are no PlayRequest
            head = await reader.readexactly(5)
            body = await reader.readexactly(int.from_bytes(head[1:], "big"))
            assert head[0] == 2 and body.startswith(b"INVALID_ARGUMENT "), (head, body)
            assert await reader.read() == b""  # and it hangs up
            writer.close()
        finally:
            await server.stop(0.5)
        assert not path.exists()

    run(go())
