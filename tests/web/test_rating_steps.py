"""The standings page (issue 24, item 9): the rating chart draws a rating as held until the
bot's next match (no slope from match 0 to a bot's first match), and the header names the
rules. In a real headless Chromium over a real tournament."""

from __future__ import annotations

import itertools
from typing import Any

from tests.web.conftest import Played


def test_the_rating_chart_holds_each_rating_until_the_next_match(page: Any, serve: Any, played: Played) -> None:
    pg, con = page
    pg.goto(serve(played.folder))
    pg.wait_for_selector("#rating-plot polyline")
    lines = pg.eval_on_selector_all("#rating-plot polyline", "ls => ls.map(l => [l.dataset.bot, l.getAttribute('points')])")
    assert len(lines) == 3
    for bot, points in lines:
        xy = [tuple(map(float, p.split(","))) for p in points.split()]
        # Each segment is flat (the rating held) or upright (a match changed it), never a slope.
        for (x0, y0), (x1, y1) in itertools.pairwise(xy):
            assert x0 == x1 or y0 == y1, (bot, (x0, y0), (x1, y1))
    assert pg.inner_text("#rules").startswith("Rules: " + played.standings["rules"])
    assert "standard" in played.standings["rules"]
    assert con.errors == []
