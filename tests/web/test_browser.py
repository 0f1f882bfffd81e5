"""The viewer in a real headless Chromium: standings, the match list, the replay viewer, a
seat's secrecy, and the static files working from disk with networking off."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from referee.cli.standings_view import standings_json
from referee.game import Card
from referee.log import read_log
from referee.replay.model import (
    ActionStep,
    DealStep,
    FaultStep,
    ForfeitStep,
    RoundEndStep,
    Step,
    ThirtyOneStep,
    build_replay,
)
from referee.tournament.store import DB_NAME
from referee.web.data import Source
from referee.web.server import export_site
from tests.polling import poll_until
from tests.tournament.conftest import cli, copy_tournament
from tests.web.conftest import Played, shot

# The browser is a module fixture: its tests share one test process, to start it once.
pytestmark = pytest.mark.xdist_group("test_browser")
# The replay viewer's test is the quick tier's smoke test of the browser (the page loads,
# draws a table and steps through a match); the others are in the slow tier.

#: Reads what the page shows: every seat's hand area, and every card anywhere on the page.
_READ = """() => {
  const hands = {};
  document.querySelectorAll('[data-seat-hand]').forEach(h => {
    hands[h.dataset.seatHand] = [...h.querySelectorAll('[data-card]')].map(c => c.dataset.card);
  });
  const all = [...document.querySelectorAll('[data-card], [data-cardtext]')].map(c => c.dataset.card || c.dataset.cardtext);
  return {hands, all, info: document.getElementById('step-info').textContent};
}"""


def _texts(cards: tuple[Card, ...]) -> list[str]:
    return [c.text for c in cards]


def _hands_after(steps: tuple[Step, ...], i: int) -> dict[str, list[str]]:
    """Each seat's cards as the replay model's steps 0..i show them (this round), the hands
    shown at the round's end taking the place of the rest."""
    hands: dict[int, list[str]] = {}
    shown: dict[int, list[str]] = {}
    for step in steps[: i + 1]:
        if isinstance(step, DealStep):
            hands = {h.seat: _texts(h.cards) for h in step.hands}
            shown = {}
        elif isinstance(step, ActionStep) and step.hand is not None:
            hands[step.seat] = _texts(step.hand.cards)
        elif isinstance(step, ForfeitStep):
            hands.pop(step.seat, None)
        elif isinstance(step, ThirtyOneStep | RoundEndStep):
            for h in step.hands if isinstance(step, ThirtyOneStep) else step.shown:
                shown[h.seat] = _texts(h.cards)
    return {str(s): cards for s, cards in {**hands, **shown}.items()}


def _cards_of(value: object) -> set[str]:
    """Every card in a step of the replay model (its fields, recursively)."""
    if isinstance(value, Card):
        return {value.text}
    if isinstance(value, tuple | list):
        return set().union(*(_cards_of(v) for v in value)) if value else set()
    if hasattr(value, "__dataclass_fields__"):
        return set().union(*(_cards_of(getattr(value, f)) for f in value.__dataclass_fields__))
    return set()


def _visible(hands: dict[str, list[str]]) -> dict[str, list[str]]:
    return {s: cards for s, cards in hands.items() if cards}


# ---------------------------------------------------------------- standings


@pytest.mark.slow
def test_the_standings_page_shows_every_bot_with_the_numbers_of_standings_json(page: Any, serve: Any, played: Played) -> None:
    pg, _ = page
    pg.goto(serve(played.folder))
    pg.wait_for_selector("#standings tbody tr")
    rows = played.standings["standings"]
    assert pg.locator("#standings tbody tr").count() == len(rows) == 3
    for r in rows:
        tr = pg.locator(f"#standings tbody tr[data-bot='{r['bot']}']")
        cell = tr.locator("[data-field=rating]")
        assert float(cell.get_attribute("data-rating") or "nan") == r["rating"]
        assert float(cell.get_attribute("data-low") or "nan") == r["rating_low95"]
        assert float(cell.get_attribute("data-high") or "nan") == r["rating_high95"]
        assert cell.inner_text() == f"{r['rating']:.0f}"
        assert tr.locator("[data-field=rating_ci]").inner_text() == f"{r['rating_low95']:.0f}–{r['rating_high95']:.0f}"  # noqa: RUF001
        win = tr.locator("[data-field=win_rate]")
        assert float(win.get_attribute("data-rate") or "nan") == r["win_rate"]
        assert float(win.get_attribute("data-low") or "nan") == r["win_rate_low95"]
        assert float(win.get_attribute("data-high") or "nan") == r["win_rate_high95"]
        assert tr.locator("[data-field=rank]").inner_text() == str(r["rank"])
        assert tr.locator("[data-field=matches]").inner_text() == str(r["matches"])
        assert tr.locator("[data-field=wins]").inner_text() == str(r["wins"])
        assert tr.locator("[data-field=mean_placing]").inner_text() == f"{r['mean_placing']:.2f}"
        for kind in ("timeout", "crash", "illegal", "malformed", "start"):
            assert tr.locator(f"[data-field=faults_{kind}]").inner_text() == str(r[f"faults_{kind}"])
        # the plots: a rating line and a win-rate point per bot
        assert pg.locator(f"#rating-plot polyline[data-bot='{r['bot']}']").count() == 1
        assert pg.locator(f"#win-plot circle[data-bot='{r['bot']}']").count() == 1
    for h in played.standings["head_to_head"]:
        cell = pg.locator(f"#h2h tr[data-bot='{h['bot']}'] td[data-opponent='{h['opponent']}']")
        assert float(cell.get_attribute("data-score") or "nan") == h["score"]
    assert "Complete" in pg.inner_text("#progress")
    # The whole page fits a 1280-px window: no sideways scrolling.
    assert pg.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    shot(pg, "standings")


@pytest.mark.slow
def test_the_standings_follow_a_run_as_it_commits_matches(page: Any, serve: Any, played: Played, tmp_path: Path) -> None:
    folder = copy_tournament(played.folder, tmp_path / "t")
    db = folder / DB_NAME
    conn = sqlite3.connect(db, isolation_level=None)
    held = conn.execute("SELECT * FROM matches ORDER BY key DESC LIMIT 2").fetchall()
    conn.execute("DELETE FROM matches WHERE key IN (?, ?)", (held[0][0], held[1][0]))
    pg, _ = page
    pg.goto(serve(folder))
    pg.wait_for_selector("#standings tbody tr")
    assert "1 of 3" in pg.inner_text("#progress")
    # the run commits its last two matches (the database is the run's; the viewer only reads)
    conn.executemany("INSERT INTO matches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", held)
    conn.close()
    pg.wait_for_selector("#progress:has-text('Complete')", timeout=15_000)
    want = {r["bot"]: r["rating"] for r in played.standings["standings"]}
    got = {b: float(pg.locator(f"#standings tr[data-bot='{b}'] [data-field=rating]").get_attribute("data-rating") or "nan") for b in want}
    assert got == want


# ---------------------------------------------------------------- the match list


@pytest.mark.slow
def test_the_match_list_filters_sorts_and_links_to_replays(page: Any, serve: Any, played: Played) -> None:
    pg, _ = page
    pg.goto(serve(played.folder) + "#/matches")
    pg.wait_for_selector("#matches tbody tr")
    assert pg.locator("#matches tbody tr").count() == 3
    assert "3 matches" in pg.inner_text("#page-info")
    pg.click("th[data-sort=rounds]")
    pg.wait_for_url(lambda u: "sort=rounds" in u)
    pg.wait_for_selector("#matches th[data-sort=rounds]:has-text('▲')")
    rounds = [int(t) for t in pg.locator("#matches tbody tr td:nth-child(4)").all_inner_texts()]
    assert rounds == sorted(rounds)
    pg.click("th[data-sort=rounds]")
    pg.wait_for_selector("#matches th[data-sort=rounds]:has-text('▼')")
    rounds = [int(t) for t in pg.locator("#matches tbody tr td:nth-child(4)").all_inner_texts()]
    assert rounds == sorted(rounds, reverse=True)
    pg.select_option("#bot-filter", "random")
    pg.wait_for_url(lambda u: "bot=random" in u)
    seats = pg.locator("#matches tbody tr td:nth-child(2)").all_inner_texts()
    assert seats and all("random" in s for s in seats)
    shot(pg, "matches")
    first = pg.locator("#matches tbody tr a").first
    mid = first.get_attribute("data-match")
    first.click()
    pg.wait_for_selector("#table .seat")
    assert f"/replay/{mid}" in pg.evaluate("decodeURIComponent(location.hash)")


# ---------------------------------------------------------------- the replay viewer


def test_the_replay_viewer_shows_the_hands_and_steps_by_decision_and_by_round(page: Any, serve: Any, logs: dict[str, Path]) -> None:
    replay = build_replay(read_log(logs["standard"]))
    steps = replay.steps
    pg, _ = page
    base = serve(logs["standard"].parent)
    pg.goto(base + "#/replay/standard/omni/5")
    pg.wait_for_selector("#table .seat")
    seen = pg.evaluate(_READ)
    assert seen["info"].startswith(f"step 6 of {len(steps)}")
    assert _visible(seen["hands"]) == _hands_after(steps, 5)
    # forward by one decision: only the acting seat's hand changes, to the step's hand
    before = seen["hands"]
    pg.keyboard.press("ArrowRight")
    after = pg.evaluate(_READ)
    assert after["info"].startswith("step 7 ")
    nxt = steps[6]
    assert isinstance(nxt, ActionStep) and nxt.hand is not None
    changed = {s for s in after["hands"] if after["hands"][s] != before[s]}
    assert changed <= {str(nxt.seat)}
    assert after["hands"][str(nxt.seat)] == _texts(nxt.hand.cards)
    assert "#/replay/standard/omni/6" in pg.url
    # and back again
    pg.click("#step-back")
    assert pg.evaluate(_READ)["hands"] == before
    # by round: to the next deal, and back to this round's
    pg.click("#round-forward")
    deals = [i for i, s in enumerate(steps) if isinstance(s, DealStep)]
    nxt_deal = next(i for i in deals if i > 5)
    seen = pg.evaluate(_READ)
    assert seen["info"].startswith(f"step {nxt_deal + 1} ")
    assert _visible(seen["hands"]) == _hands_after(steps, nxt_deal)
    pg.keyboard.press("ArrowUp")
    assert pg.evaluate(_READ)["info"].startswith(f"step {max(i for i in deals if i < nxt_deal) + 1} ")
    # the URL fragment names the moment: opening it shows the same table
    pg.keyboard.press("ArrowDown")
    pg.keyboard.press("ArrowRight")
    pg.keyboard.press("ArrowRight")
    url = pg.url
    shown = pg.evaluate(_READ)
    pg.goto(base + "#/standings")
    pg.wait_for_selector("#standings")
    pg.goto(url)
    pg.wait_for_selector("#table .seat")
    assert pg.evaluate(_READ) == shown
    # play runs on by itself; pause stops it
    pg.click("#play")
    poll_until("play to step on by itself", lambda: not pg.inner_text("#step-info").startswith(f"step {nxt_deal + 3} "),
               interval_s=0.1)  # fmt: skip
    pg.click("#play")
    assert not pg.inner_text("#step-info").startswith(f"step {nxt_deal + 3} ")
    # the end: the showdown and the result
    pg.keyboard.press("End")
    assert pg.locator("#result").count() == 1
    last_end = max(i for i, s in enumerate(steps) if isinstance(s, RoundEndStep))
    pg.goto(base + f"#/replay/standard/omni/{last_end}")
    pg.wait_for_selector("#showdown")
    end = steps[last_end]
    assert isinstance(end, RoundEndStep)
    for h in end.shown:
        row = pg.locator(f"#showdown tr[data-seat='{h.seat}']")
        assert [c.get_attribute("data-card") for c in row.locator("[data-card]").all()] == _texts(h.cards)
    shot(pg, "replay-showdown")


@pytest.mark.slow
def test_a_seats_view_never_shows_another_seats_hand_before_a_showdown(page: Any, serve: Any, logs: dict[str, Path]) -> None:
    pg, _ = page
    base = serve(logs["specials"].parent)
    cases = [("specials", s) for s in range(4)] + [("standard", 1)]
    walked = 0
    for name, seat in cases:
        steps = build_replay(read_log(logs[name]), seat).steps
        pg.goto(base + f"#/replay/{name}/{seat}/0")
        pg.wait_for_selector(f"#views button.on[data-view='{seat}']")
        pg.wait_for_selector("#table .seat")
        known: set[str] = set()
        for i, step in enumerate(steps):
            if i:
                pg.keyboard.press("ArrowRight")
            known |= _cards_of(step)
            seen = pg.evaluate(_READ)
            assert seen["info"].startswith(f"step {i + 1} of {len(steps)}"), (name, seat, i)
            # exactly the hands the seat's own steps show, and no card it has not been shown
            assert _visible(seen["hands"]) == _hands_after(steps, i), (name, seat, i, step)
            assert set(seen["all"]) <= known, (name, seat, i, set(seen["all"]) - known)
            walked += 1
        if name == "specials" and seat == 3:
            shot(pg, "replay-seat-view")
    assert walked > 200


@pytest.mark.slow
def test_faults_and_thinking_times_are_shown_where_they_happened(page: Any, serve: Any, logs: dict[str, Path]) -> None:
    steps = build_replay(read_log(logs["specials"])).steps
    pg, _ = page
    base = serve(logs["specials"].parent)
    faults = [i for i, s in enumerate(steps) if isinstance(s, FaultStep)]
    assert len(faults) == 3
    for i in faults:
        fault = steps[i]
        assert isinstance(fault, FaultStep)
        pg.goto(base + f"#/replay/specials/omni/{i}")
        pg.wait_for_selector("#event.fault")
        text = pg.inner_text("#event")
        assert f"FAULT {fault.fault.kind}" in text and fault.fault.message in text
        assert pg.locator(f"[data-seat='{fault.fault.seat}'] .tags .fault").count() == 1
    acted = next(i for i, s in enumerate(steps) if isinstance(s, ActionStep) and s.latency_us)
    step = steps[acted]
    assert isinstance(step, ActionStep)
    pg.goto(base + f"#/replay/specials/omni/{acted}")
    pg.wait_for_selector("#event [data-latency]")
    assert pg.get_attribute("#event [data-latency]", "data-latency") == str(step.latency_us)
    assert f"thought {step.latency_us / 1000:.2f} ms" in pg.inner_text("#event")
    shot(pg, "replay-fault")


# ---------------------------------------------------------------- offline files


def _offline(pg: Any) -> list[str]:
    """Networking off, and every request that is not a file refused; returns the requests."""
    pg.context.set_offline(True)
    refused: list[str] = []

    def guard(route: Any) -> None:
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    pg.route("**/*", guard)
    return refused


@pytest.mark.slow
def test_the_exported_site_works_from_disk_with_networking_off(page: Any, played: Played, tmp_path: Path) -> None:
    out = tmp_path / "site"
    n = export_site(Source(played.folder, standings_json), out)
    assert n == 3
    pg, con = page
    refused = _offline(pg)
    pg.goto((out / "index.html").as_uri())
    pg.wait_for_selector("#standings tbody tr")
    assert pg.locator("#standings tbody tr").count() == 3
    pg.click("#nav-matches")
    pg.wait_for_selector("#matches tbody tr")
    pg.select_option("#bot-filter", "greedy")
    pg.wait_for_url(lambda u: "bot=greedy" in u)
    pg.locator("#matches tbody tr a").first.click()
    pg.wait_for_selector("#table .seat")
    pg.keyboard.press("ArrowRight")
    assert pg.inner_text("#step-info").startswith("step 2 ")
    pg.click("#views button[data-view='1']")
    pg.wait_for_selector("#views button.on[data-view='1']")
    shot(pg, "export-replay")
    assert refused == []
    assert con.requests and all(u.startswith(("file://", "data:")) for u in con.requests), con.requests


@pytest.mark.slow
def test_replay_html_is_one_file_that_works_offline(page: Any, logs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "match.html"
    result = cli("replay", logs["specials"], "--html", out)
    assert result.exit_code == 0, result.output
    pg, con = page
    refused = _offline(pg)
    started = time.monotonic()
    pg.goto(out.as_uri() + "#/replay/specials/2/10")
    pg.wait_for_selector("#table .seat")
    steps = build_replay(read_log(logs["specials"]), 2).steps
    seen = pg.evaluate(_READ)
    assert seen["info"].startswith(f"step 11 of {len(steps)}")
    assert _visible(seen["hands"]) == _hands_after(steps, 10)
    pg.click("#views button[data-view='omni']")
    pg.wait_for_selector("#views button.on[data-view='omni']")
    assert time.monotonic() - started < 10
    assert refused == []
    assert [u for u in con.requests if not u.startswith("data:")] == [out.as_uri() + "#/replay/specials/2/10"] or all(
        u.startswith(("file://", "data:")) for u in con.requests
    )
    assert all(u.startswith(("file://", "data:")) for u in con.requests)
    shot(pg, "replay-html")


@pytest.mark.slow
def test_a_step_kind_the_page_does_not_know_is_shown_as_its_text(page: Any, logs: dict[str, Path], tmp_path: Path) -> None:
    from referee.log import Position
    from referee.web.data import replay_views
    from referee.web.replay_json import step_to_json
    from referee.web.server import js_json, page_html
    from tests.web.test_data import WidowSwapStep

    views = replay_views(logs["standard"])
    omni = views["omni"]
    new = step_to_json(WidowSwapStep(Position(3, 1, 0, "seat 1 swap widow"), 1, (Card.parse("Ah"),), (Card.parse("Td"),)))
    omni["steps"].insert(2, new)
    omni["frames"].insert(2, omni["frames"][1])
    for v in views.values():
        v["id"] = "standard"
    data = {"mode": "single", "match": "standard", "replays": {"standard": views}}
    out = tmp_path / "variant.html"
    out.write_text(page_html(f"<script>window.THIRTYONE_DATA = {js_json(data)};</script>\n", inline=True), encoding="utf-8")
    pg, _ = page
    pg.goto(out.as_uri() + "#/replay/standard/omni/2")
    pg.wait_for_selector("#event [data-kind=widow_swap]")
    assert pg.inner_text("#event") == new["text"]
    pg.keyboard.press("ArrowRight")
    assert pg.inner_text("#step-info").startswith("step 4 ")


# ---------------------------------------------------------------- the variants (docs/rules.md, "Variants")

#: The variant parts of the table: the widow, the dummy (backs or cards), the face-up old hand,
#: the pot and each seat's chips.
_READ_VARIANT = """() => {
  const cards = sel => [...document.querySelectorAll(sel + ' [data-card]')].map(c => c.dataset.card);
  const pot = document.getElementById('pot');
  const chips = {};
  document.querySelectorAll('[data-seat] .chips').forEach(c => { chips[c.closest('[data-seat]').dataset.seat] = Number(c.dataset.chips); });
  return {widow: cards('#widow'), dummy: cards('#dummy'), dummyBacks: document.querySelectorAll('#dummy [data-back]').length,
          faceUp: cards('#face-up'), pot: pot ? Number(pot.dataset.pot) : null, chips, event: document.getElementById('event').textContent};
}"""


@pytest.mark.slow
def test_a_bicycle_match_draws_the_widow_chips_and_pot_and_a_seat_sees_only_its_own(page: Any, serve: Any, logs: dict[str, Path]) -> None:
    pg, _ = page
    base = serve(logs["bicycle"].parent)
    walked = 0
    for view in ("omni", "0", "1", "2"):
        seat = None if view == "omni" else int(view)
        steps = build_replay(read_log(logs["bicycle"]), seat).steps
        pg.goto(base + f"#/replay/bicycle/{view}/0")
        pg.wait_for_selector(f"#views button.on[data-view='{view}']")
        pg.wait_for_selector("#table #widow")
        known: set[str] = set()
        widow: list[str] = []
        pot: int | None = None
        chips: tuple[int, ...] = ()
        for i, step in enumerate(steps):
            if i:
                pg.keyboard.press("ArrowRight")
            known |= _cards_of(step)
            if isinstance(step, DealStep):
                widow, pot, chips = _texts(step.widow), step.pot, step.chips
            elif isinstance(step, ActionStep) and step.widow:
                widow = _texts(step.widow)
            elif isinstance(step, RoundEndStep):
                widow, pot, chips = _texts(step.widow), step.carried, step.chips_after
            seen = pg.evaluate(_READ)
            var = pg.evaluate(_READ_VARIANT)
            assert seen["info"].startswith(f"step {i + 1} of {len(steps)}"), (view, i)
            # the widow's three cards at every step, face up in every view; no stock, no pile
            assert var["widow"] == widow and len(widow) == 3, (view, i, step)
            assert pg.locator("#stock, #pile").count() == 0
            assert var["pot"] == pot and var["chips"] == {str(s): c for s, c in enumerate(chips)}, (view, i)
            # a seat: exactly the hands its own steps show, and no card it has not been shown
            assert _visible(seen["hands"]) == _hands_after(steps, i), (view, i, step)
            assert set(seen["all"]) <= known, (view, i, set(seen["all"]) - known)
            if isinstance(step, ActionStep) and step.action.kind.name == "SWAP_WIDOW":
                assert "to the widow, takes" in var["event"]
            walked += 1
        if view == "2":
            shot(pg, "replay-bicycle-seat")
    assert walked > 60
    # the end: the pot's award and the placings by chips
    steps = build_replay(read_log(logs["bicycle"])).steps
    shared = next(i for i, s in enumerate(steps) if isinstance(s, RoundEndStep) and s.high_card_tie_break)
    pg.goto(base + f"#/replay/bicycle/omni/{shared}")
    pg.wait_for_selector("#pot-award")
    award = pg.inner_text("#pot-award")
    assert "share it" in award and "broken by card rank" in award and "carried" in award
    pg.keyboard.press("End")
    pg.wait_for_selector("#result [data-chips]")
    shot(pg, "replay-bicycle-result")


@pytest.mark.slow
def test_a_seat_never_sees_the_face_down_dummy(page: Any, serve: Any, logs: dict[str, Path]) -> None:
    pg, _ = page
    base = serve(logs["dummy"].parent)
    for view in ("omni", "0", "1"):
        seat = None if view == "omni" else int(view)
        steps = build_replay(read_log(logs["dummy"]), seat).steps
        pg.goto(base + f"#/replay/dummy/{view}/0")
        pg.wait_for_selector(f"#views button.on[data-view='{view}']")
        pg.wait_for_selector("#table .seat")
        known: set[str] = set()
        dummy: list[str] = []
        face_up: list[str] = []
        for i, step in enumerate(steps):
            if i:
                pg.keyboard.press("ArrowRight")
            known |= _cards_of(step)
            if isinstance(step, DealStep):
                dummy, face_up = _texts(step.dummy), []
            elif isinstance(step, ActionStep) and step.face_up:
                dummy, face_up = [], _texts(step.face_up)
            seen = pg.evaluate(_READ)
            var = pg.evaluate(_READ_VARIANT)
            if face_up:
                assert var["faceUp"] == face_up and var["dummy"] == [] and var["dummyBacks"] == 0, (view, i)
            elif seat is None:
                assert var["dummy"] == dummy and len(dummy) == 3, (view, i)  # the omniscient view sees it
            else:
                assert var["dummy"] == [] and var["dummyBacks"] == 3, (view, i)  # face down
            assert _visible(seen["hands"]) == _hands_after(steps, i), (view, i, step)
            assert set(seen["all"]) <= known, (view, i, set(seen["all"]) - known)
        if view == "0":
            shot(pg, "replay-dummy-seat")
