"""A fragment the viewer does not know (issue 24, item 12): a one-file replay says so and shows
the match from its start, ``#step=N`` opens step N, and the served viewer names the unknown
page. In a real headless Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.tournament.conftest import cli


def test_a_one_file_replay_with_an_unknown_fragment_shows_its_start(page: Any, logs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "match.html"
    result = cli("replay", logs["standard"], "--html", out)
    assert result.exit_code == 0, result.output
    pg, con = page
    pg.goto(out.as_uri() + "#nonsense")
    pg.wait_for_selector("#table .seat")
    assert "There is no page 'nonsense' in this replay" in pg.inner_text("#unknown-route")
    assert pg.inner_text("#step-info").startswith("step 1 of ")
    pg.goto(out.as_uri() + "#step=12")
    pg.wait_for_function("() => document.getElementById('step-info') && document.getElementById('step-info').textContent.startsWith('step 12 of ')")
    assert pg.query_selector("#unknown-route") is None
    assert con.errors == []


def test_the_served_viewer_names_an_unknown_page(page: Any, serve: Any, logs: dict[str, Path]) -> None:
    url = serve(logs["standard"].parent)
    pg, con = page
    pg.goto(url + "#/nonsense")
    pg.wait_for_selector("#error")
    assert "There is no page 'nonsense' here." in pg.inner_text("#error")
    assert con.errors == []
