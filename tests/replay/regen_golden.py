"""Rewrite the golden renders in tests/replay/golden/ from the fixture logs.

Run after a deliberate change to the replay's output, then read the diff:

    python tests/replay/regen_golden.py

Each golden file is one fixture log (tests/replay/fixtures.py, the variants' included) rendered at a width of 100
columns without colour, from the omniscient view or one seat's. Trailing spaces (rich pads
table cells) are stripped, here and in the test that compares.
"""

from __future__ import annotations

import io
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

if __package__ in (None, ""):  # run as a script: make `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from referee.replay import build_replay, load_log
from referee.replay.render import render
from tests.replay.fixtures import ALL_FIXTURES, write_fixture

GOLDEN = Path(__file__).parent / "golden"
WIDTH = 100


@dataclass(frozen=True)
class Case:
    """One golden render: a fixture, a point of view, and optionally a log cut after a line."""

    fixture: str
    seat: int | None = None
    cut_after_line: int | None = None

    @property
    def name(self) -> str:
        view = "all" if self.seat is None else f"seat{self.seat}"
        cut = "" if self.cut_after_line is None else f"-cut{self.cut_after_line}"
        return f"{self.fixture}-{view}{cut}"


CASES = (
    Case("standard"),
    Case("standard", seat=1),
    Case("specials"),
    Case("specials", seat=3),
    Case("specials", seat=0),
    Case("long"),
    Case("pagat"),
    Case("standard", cut_after_line=30),
    # The variants (docs/rules.md, "Variants"): one small match each, and seat views.
    Case("option"),
    Case("option", seat=0),
    Case("dummy"),
    Case("dummy", seat=0),
    Case("dummy", seat=1),
    Case("bicycle"),
    Case("bicycle", seat=2),
    Case("cadillac"),
)


def render_text(log_path: Path, seat: int | None = None, width: int = WIDTH) -> str:
    """A log rendered as the golden files hold it: plain text, trailing spaces stripped."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    render(build_replay(load_log(log_path), seat), console)
    text = buf.getvalue()
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def case_log(case: Case, folder: Path) -> Path:
    """The log of a case, written into ``folder`` (cut short if the case says so)."""
    path = write_fixture(folder / f"{case.fixture}.jsonl", ALL_FIXTURES[case.fixture])
    if case.cut_after_line is None:
        return path
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = folder / f"{case.name}.jsonl"
    cut.write_text("".join(lines[: case.cut_after_line]), encoding="utf-8")
    return cut


def main() -> None:
    """Rewrite every golden file."""
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            text = render_text(case_log(case, Path(tmp)), case.seat)
            (GOLDEN / f"{case.name}.txt").write_text(text, encoding="utf-8")
            print(f"wrote {GOLDEN / case.name}.txt")


if __name__ == "__main__":
    main()
