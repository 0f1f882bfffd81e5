"""What ``thirtyone sprt`` prints (issue 24, item 9): no "-0.0" Elo, and with every verdict
what to do when runs of the same test disagree."""

from __future__ import annotations

import io

from rich.console import Console

from referee.cli.sprt import render
from referee.tournament.sprt import SprtResult


def shown(**kw: object) -> str:
    fields: dict[str, object] = dict(
        verdict="H0", model="pentanomial", llr=-2.95, lower=-2.94, upper=2.94, elo0=0.0, elo1=10.0,
        alpha=0.05, beta=0.05, elo=-0.01, elo_low=-0.04, elo_high=-0.0001, los=0.4, deals=400,
        score=0.5, finished=True, extra={"max_deals": 2000, "matches": 800},
    )  # fmt: skip
    fields.update(kw)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(render(SprtResult(**fields), "new.py", "old.py", running=False))  # type: ignore[arg-type]
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return " ".join(out.split())


def test_an_elo_that_rounds_to_nothing_is_zero() -> None:
    text = shown()
    assert "-0.0" not in text and "+0.0" not in text
    assert "Elo 0.0 95% [0.0, 0.0]" in text


def test_a_verdict_says_what_to_do_when_runs_disagree() -> None:
    for verdict in ("H0", "H1"):
        text = shown(verdict=verdict, elo=3.0, elo_low=-1.0, elo_high=7.0)
        assert "Elo +3.0 95% [-1.0, +7.0]" in text
        assert "If runs disagree" in text and "--elo1 nearer to --elo0" in text and "--max-deals" in text
    assert "If runs disagree" not in shown(verdict="undecided", finished=False)
