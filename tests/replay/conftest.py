"""Fixture logs, written once per test session (tests/replay/fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.fixtures import write_all


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fixture log, by name: standard, specials, long, pagat, and the variants' option,
    dummy, bicycle and cadillac."""
    return write_all(tmp_path_factory.mktemp("replay-logs"), variants=True)


def lines_of(path: Path) -> list[str]:
    """A log's lines, without their newlines."""
    return path.read_text(encoding="utf-8").splitlines()


def write_lines(path: Path, lines: list[str]) -> Path:
    """Write lines as a log (each with its newline)."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
