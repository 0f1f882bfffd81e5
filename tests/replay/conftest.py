"""Fixture logs, written once per test session (tests/replay/fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.game import Rules
from tests.replay.fixtures import write_all
from tests.shared import built_once

#: Real variant matches of the `random` sample bot (which plays legally under every variant),
#: played by referee.match over gRPC: name -> (rules, seed).
REAL_VARIANTS: dict[str, tuple[Rules, int]] = {
    "real-bicycle": (Rules.preset("bicycle"), 5),
    "real-mix": (Rules().with_options({"dummy": True, "dealer_option": True, "under_the_gun": True, "scoring": "pot"}), 3),
}


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fixture log, by name: standard, specials, long, pagat, and the variants' option,
    dummy, bicycle and cadillac."""
    return built_once(tmp_path_factory, "logs", lambda folder: write_all(folder, variants=True))


@pytest.fixture(scope="session")
def real_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Logs of real variant matches (:data:`REAL_VARIANTS`), written by the referee itself."""
    from referee.match import MatchConfig, run_match

    def play(folder: Path) -> dict[str, Path]:
        out = {}
        for name, (rules, seed) in REAL_VARIANTS.items():
            path = folder / f"{name}.jsonl"
            run_match(["random", "random", "random"], seed=seed, config=MatchConfig(rules=rules), log_path=path)
            out[name] = path
        return out

    return built_once(tmp_path_factory, "real-variant-logs", play)


def lines_of(path: Path) -> list[str]:
    """A log's lines, without their newlines."""
    return path.read_text(encoding="utf-8").splitlines()


def write_lines(path: Path, lines: list[str]) -> Path:
    """Write lines as a log (each with its newline)."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
