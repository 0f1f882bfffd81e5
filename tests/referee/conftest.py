"""Shared helpers of the referee tests: hostile bot commands, process checks, short clocks."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from referee.timecontrol import TimeControl

# Re-exported: the referee tests import them from here.
from tests.polling import alive as process_alive
from tests.polling import wait_gone as wait_gone

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


def pids_in(pid_dir: Path) -> list[int]:
    """The pids the hostile bots wrote into ``pid_dir``."""
    return sorted(int(p.name) for p in pid_dir.iterdir() if p.name.isdigit())


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
