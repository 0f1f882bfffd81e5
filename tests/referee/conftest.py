"""Shared helpers of the referee tests: hostile bot commands, process checks, short clocks."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import time
from collections.abc import Coroutine, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from referee.timecontrol import TimeControl

HOSTILE = Path(__file__).resolve().parent / "bots" / "hostile.py"
T = TypeVar("T")

#: Short clocks for fault tests: a silent bot times out after 50 + 150 + 50 ms, then 100 ms.
FAST_TC = TimeControl(budget_ms=50, bank_ms=150, grace_ms=50)


def hostile(mode: str = "first", *args: str | int | float, name: str | None = None) -> str:
    """A bot spec (a command) running the hostile test bot in ``mode`` with extra arguments."""
    words = [sys.executable, str(HOSTILE), "--mode", mode, *map(str, args)]
    cmd = shlex.join(words)
    return f"{name}={cmd}" if name else cmd


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine in a fresh event loop."""
    return asyncio.run(coro)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone: it runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    # The state follows the command name, which is in parentheses and may hold spaces.
    return stat[stat.rindex(")") + 2] not in "ZX"


def pids_in(pid_dir: Path) -> list[int]:
    """The pids the hostile bots wrote into ``pid_dir``."""
    return sorted(int(p.name) for p in pid_dir.iterdir() if p.name.isdigit())


def wait_gone(pids: Iterable[int], timeout_s: float = 5.0) -> list[int]:
    """Wait until every pid is gone; return those still alive at the timeout."""
    pids = list(pids)
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [p for p in pids if process_alive(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


@pytest.fixture
def pid_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder where hostile bots record their pids; leftovers are killed after the test."""
    d = tmp_path / "pids"
    d.mkdir()
    yield d
    for pid in pids_in(d):
        if process_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
