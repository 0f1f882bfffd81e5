"""A bot's own output: kept per match up to a cap (then the bot, not the referee, waits),
shown with its faults by ``thirtyone match``; a match that never started leaves no log."""

from __future__ import annotations

import asyncio
import shlex
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.bots import BotSpec, parse_bot_spec, start_bot
from referee.bots.client import SOCKET_POLL_S
from referee.bots.process import LocalBotProcess, LocalLauncher
from referee.cli.app import app
from tests.polling import poll_until_async

from .conftest import hostile, process_alive, wait_gone

runner = CliRunner()

#: Writes 3 MiB on stderr once the file named by its argument exists (the test creates it when
#: the referee keeps the output), then writes a file beside it and idles.
FLOODER = (
    "import os, sys, time\n"
    "go = sys.argv[1]\n"
    "while not os.path.exists(go): time.sleep(0.01)\n"
    "[sys.stderr.write('x' * 1023 + '\\n') for _ in range(3 * 1024)]; sys.stderr.flush()\n"
    "open(go + '.written', 'w').close(); time.sleep(600)\n"
)
CUT_NOTE = "[thirtyone: output cut here: the bot wrote more than the cap for one match]\n"


def _blocked_in_pipe_write(pid: int) -> bool:
    # The kernel names the function a sleeping process waits in: a write into a full pipe.
    try:
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


def test_a_flood_of_output_is_cut_at_the_cap_and_the_bot_waits(tmp_path: Path) -> None:
    kept = tmp_path / "seat0-flooder.txt"
    limit = 1024 * 1024

    go = tmp_path / "go"

    async def scenario() -> tuple[bool, int | None]:
        script = tmp_path / "flooder.py"
        script.write_text(FLOODER)
        spec = parse_bot_spec(shlex.join([sys.executable, str(script), str(go)]))
        bot = await LocalLauncher(tmp_root=str(tmp_path)).launch(spec)
        try:
            bot.keep_output(str(kept), limit)
            go.touch()
            await poll_until_async(
                "the output to be cut at the cap", lambda: kept.exists() and kept.read_text().endswith(CUT_NOTE),
                detail=lambda: f"{kept.stat().st_size if kept.exists() else 0} bytes kept",
            )  # fmt: skip
            # Past the cap the pipe is no longer read: the bot stays blocked in its write and
            # never gets to the end of its output.
            assert bot.pid is not None
            pid = bot.pid
            await poll_until_async("the bot to block writing into its output pipe", lambda: _blocked_in_pipe_write(pid))
            return not (tmp_path / "go.written").exists() and bot.exit_code() is None, bot.pid
        finally:
            await bot.stop(0.2)

    blocked, pid = asyncio.run(scenario())
    text = kept.read_text()
    assert limit < len(text) < limit + 200
    assert text.endswith(CUT_NOTE)
    assert text.startswith("x" * 1023 + "\n")
    assert blocked
    assert pid is not None and wait_gone([pid]) == []
    assert not process_alive(pid)


@pytest.mark.parametrize("mode", ["exit_at_start", "bad_protocol"])
def test_a_match_whose_bot_cannot_start_leaves_no_log(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "m.jsonl"
    result = runner.invoke(app, ["match", hostile(mode), "random", "--log", str(log)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert not log.exists()
    # A file that was there before is left alone, even empty.
    log.touch()
    result = runner.invoke(app, ["match", hostile(mode), "random", "--log", str(log)])
    assert result.exit_code == 1
    assert log.exists()


def test_match_shows_the_last_output_of_a_bot_that_faulted(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["match", hostile("die", "--from", 2, name="crasher"), "random", "--log", str(tmp_path / "m.jsonl"), "--seed", "3"]
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "last output of #0 crasher:" in out
    assert "hostile bot: dying on decision 2" in out
    # Only faulty bots' output is shown.
    assert "last output of #1" not in out


#: Writes on stderr without pause for a while, then serves as the sample bot ``random``.
CHATTY = (
    "import sys, time\n"
    "end = time.monotonic() + 0.6\n"
    "while time.monotonic() < end: sys.stderr.write('warming up\\n'); sys.stderr.flush()\n"
    "import sample_bots.random, sdk\n"
    "sdk.run(sample_bots.random.RandomBot)\n"
)


def test_a_bot_that_writes_without_pause_while_it_starts_is_looked_for_no_more_often(tmp_path: Path) -> None:
    # Output ends the referee's wait for a starting bot's socket early; a bot that never stops
    # writing must not turn that wait into a busy loop.
    looks: list[float] = []

    class Counting(LocalLauncher):
        async def launch(self, spec: BotSpec) -> LocalBotProcess:
            process = await super().launch(spec)
            real = process.new_output

            async def counted(timeout_s: float) -> None:
                looks.append(time.monotonic())
                await real(timeout_s)

            process.new_output = counted  # type: ignore[method-assign]
            return process

    script = tmp_path / "chatty.py"
    script.write_text(CHATTY)

    async def scenario() -> tuple[str, float]:
        t0 = time.monotonic()
        handle = await start_bot(shlex.join([sys.executable, str(script)]), launcher=Counting(tmp_root=str(tmp_path)))
        try:
            return handle.identity.name, time.monotonic() - t0
        finally:
            await handle.close()

    name, took = asyncio.run(scenario())
    assert name == "random"
    assert len(looks) > 3  # it did wait, and looked again and again
    assert len(looks) <= took / SOCKET_POLL_S + 2, f"{len(looks)} looks in {took:.2f} s"
