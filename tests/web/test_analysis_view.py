"""Decision analysis beside each step in the viewers (docs/analysis.md), in a real Chromium:
the local viewer's toggle, ``replay --html --analyse``, and what a seat's view may show."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from referee.analysis.decisions import CACHE_SUFFIX, analyse_log, analysis_to_dict
from referee.log import read_log
from referee.replay.model import ActionStep, build_replay
from referee.web.data import replay_views
from tests.tournament.conftest import cli
from tests.web.conftest import shot

pytestmark = pytest.mark.slow


def test_each_view_carries_only_the_judgements_it_may_show(logs: dict[str, Path]) -> None:
    path = logs["standard"]
    doc = analysis_to_dict(analyse_log(path, samples=4))
    views = replay_views(path, doc)
    omni = [s for s in views["omni"]["steps"] if "analysis" in s]
    assert omni and all(set(s["analysis"]) == {"seat", "deal"} for s in omni)
    assert {s["seat"] for s in omni} == set(range(read_log(path).header.players))
    for seat in range(read_log(path).header.players):
        judged = [s for s in views[str(seat)]["steps"] if "analysis" in s]
        assert judged and all(s["seat"] == seat and set(s["analysis"]) == {"seat"} for s in judged)
        assert [x["seat"] for x in views[str(seat)]["analysis"]["summaries"]["seat"]] == [seat]
        assert set(views[str(seat)]["analysis"]["summaries"]) == {"seat"}


def test_the_viewer_analyses_a_match_on_request_and_keeps_it(page: Any, serve: Any, logs: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = Path(shutil.copy(logs["standard"], folder / "standard.jsonl"))
    steps = build_replay(read_log(log)).steps
    first_action = next(i for i, s in enumerate(steps) if isinstance(s, ActionStep))
    pg, _ = page
    base = serve(folder)
    pg.goto(base + f"#/replay/standard/omni/{first_action}")
    pg.wait_for_selector("#table .seat")
    assert pg.locator("[data-analysis]").count() == 0 and pg.inner_text("#analysis-toggle") == "analysis: off"
    pg.click("#analysis-toggle")
    pg.wait_for_selector("#event [data-analysis]", timeout=120_000)
    assert pg.inner_text("#analysis-toggle") == "analysis: on"
    assert "seat's view" in pg.inner_text("#event") and "deal's view" in pg.inner_text("#event")
    assert pg.locator("#analysis-summary [data-summary]").count() == 2 * read_log(log).header.players
    kept = log.with_name(log.name + CACHE_SUFFIX)
    assert kept.is_file()
    # A seat's view: only its own decisions, in its own view.
    pg.click("#views button[data-view='1']")
    pg.wait_for_selector("#views button.on[data-view='1']")
    pg.wait_for_selector("#analysis-summary")
    for i in range(len(build_replay(read_log(log), 1).steps)):
        pg.goto(base + f"#/replay/standard/1/{i}")
        pg.wait_for_selector("#event")
        text = pg.inner_text("#event")
        assert "deal's view" not in text
        if "seat's view" in text:
            assert text.startswith("#1 ")
    shot(pg, "replay-analysis")


def test_replay_html_with_the_analysis_works_offline(page: Any, logs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "match.html"
    result = cli("replay", logs["specials"], "--html", out, "--analyse", "--samples", "4")
    assert result.exit_code == 0, result.output
    steps = build_replay(read_log(logs["specials"])).steps
    first_action = next(i for i, s in enumerate(steps) if isinstance(s, ActionStep))
    pg, con = page
    pg.context.set_offline(True)
    pg.goto(out.as_uri() + f"#/replay/specials/omni/{first_action}")
    pg.wait_for_selector("#table .seat")
    pg.wait_for_selector("#steps [data-analysis]")
    assert pg.locator("#analysis-toggle").count() == 0  # a file carries what it was made with
    assert "Analysis (reference policy" in pg.inner_text("#analysis-summary")
    assert all(u.startswith(("file://", "data:")) for u in con.requests)
