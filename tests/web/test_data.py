"""The viewer's data, without a browser: the replay model as JSON, the rating history, the
match list's pages, and what the server refuses."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.cli.standings_view import standings_json
from referee.game import Card
from referee.log import Position, read_log
from referee.ratings import fit
from referee.replay.model import ActionStep, build_replay
from referee.tournament.standings import compute_standings, outcomes, rating_history
from referee.tournament.store import MatchRow, TournamentStore
from referee.web.data import Page, Source
from referee.web.replay_json import replay_to_json, step_to_json
from referee.web.server import ViewerServer
from tests.web.synthetic import synthetic_store


@dataclass(frozen=True, slots=True)
class WidowSwapStep:
    """A step kind the viewer has never heard of (as a game variant might add)."""

    at: Position
    seat: int
    taken: tuple[Card, ...]
    widow: tuple[Card, ...]


def test_an_unknown_step_kind_is_converted_field_by_field_with_its_text() -> None:
    step = WidowSwapStep(Position(9, 2, 3, "seat 1 swap widow"), 1, (Card.parse("Ah"),), (Card.parse("Td"), Card.parse("2c")))
    data = step_to_json(step)
    assert data["kind"] == "widow_swap"
    assert data["seat"] == 1 and data["taken"] == ["Ah"] and data["widow"] == ["Td", "2c"]
    assert data["at"] == {"line": 9, "round_no": 2, "turn": 3, "event": "seat 1 swap widow"}
    assert "widow swap" in data["text"] and "Ah" in data["text"] and "Td 2c" in data["text"]
    json.dumps(data)  # JSON-able


def _cards_in(value: Any) -> set[str]:
    """Every card text anywhere in a JSON value."""
    if isinstance(value, str):
        return {value} if len(value) == 2 and value[1] in "cdhs" and value[0] in "23456789TJQKA" else set()
    if isinstance(value, dict):
        return set().union(*(_cards_in(v) for k, v in value.items() if k != "text")) if value else set()
    if isinstance(value, list):
        return set().union(*(_cards_in(v) for v in value)) if value else set()
    return set()


def test_every_step_of_every_view_is_json_and_a_seats_frames_hold_only_what_its_steps_do(logs: dict[str, Path]) -> None:
    for path in logs.values():
        log = read_log(path)
        omni = replay_to_json(build_replay(log))
        assert len(omni["steps"]) == len(omni["frames"]) > 0
        assert omni["header"]["seed"] == str(log.header.seed)
        for seat in range(log.header.players):
            view = replay_to_json(build_replay(log, seat))
            json.dumps(view)
            assert view["header"]["seed"] is None
            seen: set[str] = set()
            for step, frame in zip(view["steps"], view["frames"], strict=True):
                seen |= _cards_in(step)
                # Nothing in a frame that the seat's own steps so far have not shown it.
                assert _cards_in(frame) <= seen, (path.name, seat, step["at"])
                for other, hand in enumerate(frame["hands"]):
                    if other != seat:
                        assert hand is None, (path.name, seat, step["at"])


def test_action_steps_carry_the_thinking_time_only_where_the_viewer_may_see_it(logs: dict[str, Path]) -> None:
    log = read_log(logs["specials"])
    omni = [s for s in build_replay(log).steps if isinstance(s, ActionStep)]
    assert all((s.latency_us is None) == s.by_referee for s in omni)
    assert all(s.latency_us for s in omni if not s.by_referee)
    seat1 = [s for s in build_replay(log, 1).steps if isinstance(s, ActionStep)]
    assert all(s.latency_us is None for s in seat1 if s.seat != 1)
    assert any(s.latency_us for s in seat1 if s.seat == 1)


def _row(key: str, seats: tuple[str, ...], placings: list[int]) -> MatchRow:
    return MatchRow(key, "", 0, 0, 1, seats, {"placings": placings}, f"logs/{key}.jsonl", "", 0.0)


def test_rating_history_is_the_fit_over_each_prefix_in_the_order_given() -> None:
    rows = [_row("b", ("x", "y"), [1, 2]), _row("a", ("y", "z"), [1, 2]), _row("c", ("x", "z"), [2, 1])]
    history = rating_history(rows, ["x", "y", "z", "idle"], order=["c", "b", "a"])
    ordered = [rows[2], rows[0], rows[1]]
    for end in (1, 2, 3):
        want = fit(outcomes(ordered[:end])).ratings
        for n, r in want.items():
            point = next(p for p in history[n] if p.match == end)
            assert point.rating == pytest.approx(r.rating) and (point.low, point.high) == pytest.approx((r.low, r.high))
    # A bot's points start at its first match; the last is the standings' rating.
    assert [p.match for p in history["x"]] == [1, 2, 3]
    assert [p.match for p in history["y"]] == [2, 3]
    final = compute_standings(rows)
    assert {b.name: b.rating for b in final.bots} == pytest.approx({n: pts[-1].rating for n, pts in history.items() if pts})
    assert history["idle"] == []


def test_the_match_list_pages_filters_and_sorts_a_large_store(tmp_path: Path) -> None:
    folder = synthetic_store(tmp_path / "t", matches=1234, bots=6, table_size=3)
    src = Source(folder, standings_json)
    first = src.matches(Page(per=100))
    assert first["total"] == 1234 and first["pages"] == 13 and len(first["rows"]) == 100
    with TournamentStore.open(folder, readonly=True) as store:
        rows = store.matches()
    keys = [r.key for r in rows]
    got = [m["key"] for p in range(1, 14) for m in src.matches(Page(per=100, page=p))["rows"]]
    assert got == keys
    mine = src.matches(Page(bot="bot02", sort="rounds", desc=True, per=500))
    expected = sorted((r for r in rows if "bot02" in r.seats), key=lambda r: (r.result["rounds"], r.key), reverse=True)
    assert mine["total"] == len(expected)
    assert [m["key"] for m in mine["rows"]] == [r.key for r in expected[:500]]
    assert all("bot02" in m["seats"] for m in mine["rows"])
    assert src.matches(Page(page=99, per=100))["rows"] == []
    assert src.bots() == [f"bot{i:02d}" for i in range(6)]


def _get(url: str, host: str | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read()) if "json" in r.headers["Content-Type"] else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_server_refuses_other_hosts_unknown_pages_and_matches_still_in_play(tmp_path: Path) -> None:
    folder = synthetic_store(tmp_path / "t", matches=30, bots=4, table_size=2)
    (folder / "logs").mkdir(exist_ok=True)
    (folder / "logs" / "in_play.jsonl").write_text("{}\n", encoding="utf-8")
    server = ViewerServer(Source(folder, standings_json), "127.0.0.1", 0)
    server.serve_in_thread()
    try:
        base = server.url
        assert _get(base + "api/matches")[0] == 200
        code, body = _get(base + "api/matches", host=f"attacker.example:{server.port}")
        assert code == 403 and "Host" in body["error"]
        assert _get(base + "api/nothing")[0] == 404
        code, body = _get(base + "api/replay/in_play")
        assert code == 404 and "no finished match" in body["error"]
        code, body = _get(base + "api/standings")
        assert code == 200 and [r["bot"] for r in body["standings"]] and body["history"]["matches"] == 30
    finally:
        server.shutdown()
        server.server_close()


def test_a_folder_of_loose_logs_has_standings_and_a_match_list(logs: dict[str, Path]) -> None:
    folder = next(iter(logs.values())).parent
    src = Source(folder, standings_json)
    st = src.standings()
    assert st["matches"] == len(logs) and st["settings"] is None
    listed = src.matches(Page())
    assert sorted(m["id"] for m in listed["rows"]) == sorted(logs)
    assert src.replay("specials", "2")["viewer"] == 2


def test_variant_frames_hold_the_widow_the_dummy_chips_and_the_pot(logs: dict[str, Path]) -> None:
    """The frames of the variants (docs/rules.md, "Variants"): the widow at every step, the pot
    and chips (public), the dummy face down for a seat and its old hand face up once taken."""
    bicycle = read_log(logs["bicycle"])
    omni = replay_to_json(build_replay(bicycle))
    for seat in (None, 0, 1, 2):
        view = replay_to_json(build_replay(bicycle, seat))
        for step, frame in zip(view["steps"], view["frames"], strict=True):
            assert len(frame["widow"]) == 3 and frame["pot"] is not None and len(frame["chips"]) == 3
            assert frame["stock"] == 0 and frame["pile"] == []
            if step["kind"] == "action" and step["action"]["kind"] == "swap_widow":
                assert frame["widow"] == step["widow"] and step["action"]["widow_card"] in step["taken"]
        assert [f["widow"] for f in view["frames"]] == [f["widow"] for f in omni["frames"]]  # public: the same in every view
    ends = [s for s in omni["steps"] if s["kind"] == "round_end"]
    assert all(sum(e["chips_won"]) + e["carried"] == e["pot"] for e in ends)
    assert omni["steps"][-1]["chips"] == list(read_log(logs["bicycle"]).footer.chips)  # type: ignore[union-attr]

    dummy = read_log(logs["dummy"])
    for seat in (None, 0, 1):
        view = replay_to_json(build_replay(dummy, seat))
        taken = False
        for step, frame in zip(view["steps"], view["frames"], strict=True):
            if step["kind"] == "deal":
                taken = False
                assert step["dummy_size"] == 3 and (len(step["dummy"]) == 3) == (seat is None)
            if step["kind"] == "action" and step["action"]["kind"] == "swap_hand":
                taken = True
                assert frame["face_up"] == step["face_up"] and frame["dummy_taker"] == step["seat"]
                assert (step["taken"] is not None) == (seat in (None, step["seat"]))
            if taken:
                assert frame["dummy_size"] == 0 and frame["dummy_cards"] == [] and len(frame["face_up"]) == 3
            elif step["kind"] != "round_end":
                assert frame["dummy_size"] == 3 and (len(frame["dummy_cards"]) == 3) == (seat is None)
