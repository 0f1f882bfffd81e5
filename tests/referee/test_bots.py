"""Starting bots and stopping them: health, identity, clear start-up errors, no orphans."""

from __future__ import annotations

import asyncio
import os
import sys
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
    with pytest.raises(BotStartError, match="did not report SERVING"):
        run(start_bot("unix:///nonexistent/thirtyone-test.sock", startup_timeout_s=0.5))


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
