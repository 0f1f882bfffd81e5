"""Starting bots and stopping them: health, identity, clear start-up errors, no orphans."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from pathlib import Path

import pytest

from referee.bots import ADDRESS_ENV, BotHandle, start_bot, start_bots, watchdog
from referee.faults import BotIdentityError, BotStartError

from .conftest import hostile, pids_in, process_alive, run, wait_gone


def test_start_identify_and_stop(pid_dir: Path) -> None:
    async def go() -> tuple[BotHandle, str]:
        bot = await start_bot(hostile("first", "--pid-dir", pid_dir, name="alice"))
        assert bot.alive
        assert bot.process is not None
        address = bot.process.address
        await bot.close()
        return bot, address

    bot, address = run(go())
    assert bot.identity.name == "hostile-first"
    assert bot.identity.version == "0.1"
    assert bot.identity.author == "tests"
    assert bot.identity.protocol_version == 1
    assert bot.label == "alice"
    assert bot.source.startswith("alice=")
    # The bot served on a Unix socket in a private folder, removed with it.
    assert address.startswith("unix:///")
    sock_dir = Path(address[len("unix://") :]).parent
    assert not sock_dir.exists()
    assert not bot.alive
    assert wait_gone(pids_in(pid_dir)) == []


def test_bot_is_told_its_address(tmp_path: Path) -> None:
    # A "bot" that records the environment variable and exits: a start-up failure whose
    # output shows what it was given.
    script = tmp_path / "env_bot.py"
    script.write_text(f"import os, sys\nprint('addr=' + os.environ['{ADDRESS_ENV}'], file=sys.stderr)\nsys.exit(5)\n")
    with pytest.raises(BotStartError) as info:
        run(start_bot(str(script)))
    assert info.value.exit_code == 5
    assert "addr=unix:///" in info.value.output
    assert "bot.sock" in info.value.output


def test_exit_at_start_gives_exit_code_and_stderr_tail() -> None:
    with pytest.raises(BotStartError) as info:
        run(start_bot(hostile("exit_at_start")))
    e = info.value
    assert e.exit_code == 3
    assert "cannot load my model weights" in e.output
    text = str(e)
    assert "exited with code 3 before it was ready" in text
    assert "cannot load my model weights" in text
    assert "exit_at_start" in text  # names the bot


def test_wrong_protocol_version_is_refused() -> None:
    with pytest.raises(BotIdentityError, match="speaks protocol version 2; this referee speaks version 1"):
        run(start_bot(hostile("bad_protocol")))


def test_bot_without_health_service() -> None:
    with pytest.raises(BotStartError, match="does not serve the gRPC health service"):
        run(start_bot(hostile("no_health")))


def test_startup_timeout(tmp_path: Path) -> None:
    script = tmp_path / "lazy.py"
    script.write_text("import sys, time\nprint('warming up', file=sys.stderr, flush=True)\ntime.sleep(60)\n")

    async def go() -> None:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(BotStartError, match=r"did not report SERVING within 0.8 s") as info:
            await start_bot(str(script), startup_timeout_s=0.8)
        assert loop.time() - t0 < 3
        assert "warming up" in str(info.value)

    run(go())


def test_unreachable_address() -> None:
    # Nothing at a Unix address: said at once, not after the start-up timeout.
    t0 = time.monotonic()
    with pytest.raises(BotStartError, match=r"no socket at unix:///nonexistent/thirtyone-test\.sock"):
        run(start_bot("unix:///nonexistent/thirtyone-test.sock"))
    assert time.monotonic() - t0 < 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_fails_fast() -> None:
    # Issue #12, item 11b: a bot named by its address should be running; a refused connection
    # is reported as such, well before the old 10 s of waiting (a behaviour check, not timing).
    port = _free_port()
    t0 = time.monotonic()
    with pytest.raises(BotStartError) as info:
        run(start_bot(f"grpc://127.0.0.1:{port}"))
    assert time.monotonic() - t0 < 5
    assert f"connection refused at 127.0.0.1:{port}" in str(info.value)
    assert f"bot 'grpc://127.0.0.1:{port}'" in str(info.value)


def test_sdk_bot_on_the_wrong_address_is_told_which_address_it_was_given(tmp_path: Path) -> None:
    # Issue #12, item 11a: an SDK bot that overrides its address. Its start line says where it
    # went, so the referee need not wait for the start-up timeout either.
    script = tmp_path / "elsewhere.py"
    script.write_text(
        "import sdk\nfrom sample_bots import load\n\n"
        "if __name__ == '__main__':\n    sdk.run(load('greedy'), argv=['--address', '127.0.0.1:0'])\n"
    )
    t0 = time.monotonic()
    with pytest.raises(BotStartError) as info:
        run(start_bot(str(script)))
    assert time.monotonic() - t0 < 8  # the start-up timeout is 10 s
    text = str(info.value)
    assert "serves at the wrong address" in text
    assert "the referee gave it the address unix:///" in text and f"in the environment variable {ADDRESS_ENV}" in text
    assert "--address" in text
    assert "it says it serves on 127.0.0.1:" in text


def test_bot_on_the_wrong_address_times_out_naming_the_address() -> None:
    # A bot that serves elsewhere without saying so: the timeout names the address it was given.
    with pytest.raises(BotStartError) as info:
        run(start_bot(hostile("first", "--address", "127.0.0.1:0"), startup_timeout_s=1))
    text = str(info.value)
    assert "did not report SERVING within 1 s" in text
    assert "the referee gave it the address unix:///" in text and f"in the environment variable {ADDRESS_ENV}" in text


def test_python_bot_that_never_serves_gets_a_hint(tmp_path: Path) -> None:
    # Issue #12, item 11c: a bot file that defines its class but never calls sdk.run.
    script = tmp_path / "forgot.py"
    script.write_text("import sdk\n\nclass Forgot(sdk.Bot):\n    def act(self, view):\n        return view.legal_actions[0]\n")
    with pytest.raises(BotStartError) as info:
        run(start_bot(str(script)))
    assert info.value.exit_code == 0
    text = str(info.value)
    assert "exited with code 0 before it was ready" in text
    assert "sdk.run(MyBot)" in text and "if __name__ == '__main__':" in text


def test_other_bot_that_never_serves_gets_a_generic_hint() -> None:
    with pytest.raises(BotStartError) as info:
        run(start_bot("sh -c 'exit 0'"))
    text = str(info.value)
    assert "exited with code 0 before it was ready" in text
    assert f"a bot must serve the Bot service at the address it is given (in {ADDRESS_ENV})" in text
    assert "sdk.run" not in text


def test_running_bot_reached_by_address(tmp_path: Path, pid_dir: Path) -> None:
    async def go() -> None:
        # Start a bot ourselves, then name it by its address: the referee must not own it.
        owner = await start_bot(hostile("first", "--pid-dir", pid_dir))
        try:
            assert owner.process is not None
            guest = await start_bot(f"guest={owner.process.address}")
            assert guest.process is None and guest.pid is None
            assert guest.identity.name == "hostile-first"
            assert guest.label == "guest"
            await guest.close()
            assert owner.alive  # closing the guest left the process alone
        finally:
            await owner.close()

    run(go())


def test_failed_start_of_one_stops_the_others(pid_dir: Path) -> None:
    specs = [hostile("first", "--pid-dir", pid_dir), hostile("exit_at_start"), hostile("first", "--pid-dir", pid_dir)]
    with pytest.raises(BotStartError, match="exit_at_start"):
        run(start_bots(specs))
    pids = pids_in(pid_dir)
    assert len(pids) == 2
    assert wait_gone(pids) == []


def test_stop_reaches_the_whole_process_group(pid_dir: Path) -> None:
    async def go() -> None:
        bot = await start_bot(hostile("spawner", "--pid-dir", pid_dir))
        pids = pids_in(pid_dir)
        assert len(pids) == 2  # the bot and the child it started
        assert all(process_alive(p) for p in pids)
        await bot.close()

    run(go())
    assert wait_gone(pids_in(pid_dir), 2.0) == []


def test_bot_ignoring_sigterm_is_killed(pid_dir: Path) -> None:
    async def go() -> float:
        bot = await start_bot(hostile("sigterm_proof", "--pid-dir", pid_dir))
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await bot.close(grace_s=0.3)
        return loop.time() - t0

    took = run(go())
    assert 0.25 <= took < 3
    assert wait_gone(pids_in(pid_dir), 1.0) == []


def test_watchdog_is_running_and_cleans_up_after_a_killed_referee(tmp_path: Path, pid_dir: Path) -> None:
    # A referee process that starts a bot (which starts a child) and is then SIGKILLed:
    # the watchdog must kill the bot's whole group.
    code = f"""
import asyncio, os, sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from referee.bots import start_bot
from tests.referee.conftest import hostile
async def main():
    await start_bot(hostile("spawner", "--pid-dir", {str(pid_dir)!r}))
    print("ready", flush=True)
    await asyncio.sleep(60)
asyncio.run(main())
"""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        pids = pids_in(pid_dir)
        assert len(pids) == 2 and all(process_alive(p) for p in pids)
        os.kill(proc.pid, 9)
        proc.wait(5)
        assert wait_gone(pids, 5.0) == []
    finally:
        if proc.poll() is None:
            proc.kill()


def test_watchdog_runs_beside_the_referee() -> None:
    async def go() -> None:
        bot = await start_bot(hostile("first"))
        try:
            pid = watchdog.watchdog_pid()
            assert pid is not None and process_alive(pid)
        finally:
            await bot.close()

    run(go())
