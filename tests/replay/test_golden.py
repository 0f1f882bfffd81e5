"""Golden renders: fixed logs rendered at a fixed width compare as exact text (the way rich
tests its own output). After a deliberate change, `python tests/replay/regen_golden.py`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from referee.replay import build_replay, load_log
from referee.replay.render import render, sections, supports_symbols
from tests.replay.regen_golden import CASES, GOLDEN, Case, case_log, render_text


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_render(case: Case, tmp_path: Path) -> None:
    got = render_text(case_log(case, tmp_path), case.seat)
    want = (GOLDEN / f"{case.name}.txt").read_text(encoding="utf-8")
    assert got == want, f"render of {case.name} changed; if on purpose, run tests/replay/regen_golden.py"


def test_every_golden_file_has_a_case() -> None:
    assert {p.stem for p in GOLDEN.glob("*.txt")} == {c.name for c in CASES}


def test_plain_ascii_when_the_console_cannot_print_symbols(logs: dict[str, Path]) -> None:
    raw = io.BytesIO()
    ascii_file = io.TextIOWrapper(raw, encoding="ascii")
    console = Console(file=ascii_file, width=100, color_system=None, force_terminal=False)
    assert not supports_symbols(console)
    render(build_replay(load_log(logs["specials"])), console)  # would raise on a non-ASCII character
    ascii_file.flush()
    text = raw.getvalue().decode("ascii")
    assert "As Ks Qs  31  dealt 31" in text and "->" in text and "\x1b" not in text


def test_colour_on_a_terminal(logs: dict[str, Path]) -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=100, color_system="standard", force_terminal=True)
    render(build_replay(load_log(logs["standard"])), console)
    text = buf.getvalue()
    assert "\x1b[31mJ♥" in text  # red hearts
    assert "\x1b[31mK♠" not in text  # black spades


def test_sections_cut_the_match_by_turn(logs: dict[str, Path]) -> None:
    replay = build_replay(load_log(logs["standard"]))
    kinds = [s.kind for s in sections(replay)]
    assert kinds[0] == "header" and kinds[1] == "deal" and kinds[-1] == "result"
    turns = [(s.round_no, s.turn) for s in sections(replay) if s.kind == "turn"]
    assert turns[:3] == [(1, 0), (1, 1), (1, 2)]
    assert len(turns) == len(set(turns))  # one section per turn
    later = list(sections(replay, from_round=3))
    assert {s.round_no for s in later if s.kind in ("deal", "turn")} == {3, 4}


def test_a_blitz_by_a_widow_swap_says_so(tmp_path: Path) -> None:
    from dataclasses import replace

    from tests.replay.fixtures import BICYCLE, write_fixture

    path = write_fixture(tmp_path / "blitz.jsonl", replace(BICYCLE, seed=3))
    text = render_text(path)
    assert "swaps with the widow to 31: blitz" in text and "discards to 31" not in text


@pytest.mark.parametrize("name", ["option", "dummy", "bicycle"])
def test_the_variants_in_plain_ascii(logs: dict[str, Path], name: str) -> None:
    raw = io.BytesIO()
    ascii_file = io.TextIOWrapper(raw, encoding="ascii")
    console = Console(file=ascii_file, width=100, color_system=None, force_terminal=False)
    for seat in (None, 0):
        render(build_replay(load_log(logs[name]), seat), console)  # would raise on a non-ASCII character
    ascii_file.flush()
    text = raw.getvalue().decode("ascii")
    assert "->" in text and " | " in text
