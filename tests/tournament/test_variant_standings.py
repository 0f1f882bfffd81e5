"""A small real tournament played for a pot (the bicycle preset): the stored results carry
net chips, and the standings show each bot's mean net chips per match (table, JSON, CSV),
ranked by placings as ever."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from referee.log import read_log

from .conftest import SANDBOX, flat, ok, stored_matches


def test_a_bicycle_tournament_shows_mean_net_chips(tmp_path: Path) -> None:
    folder = tmp_path / "pot"
    created = ok("tournament", "new", folder, "--preset", "bicycle", "--table-size", "3", "--games", "1", "--seed", "31", "--sandbox", SANDBOX)
    assert "rules bicycle" in flat(created.stdout)
    for name in ("random", "greedy", "threshold"):
        ok("submit", folder, name)
    run = ok("tournament", "run", folder, "-j", "1")
    assert "played 3 matches" in flat(run.stderr)

    chips: dict[str, list[int]] = {"random": [], "greedy": [], "threshold": []}
    for row in stored_matches(folder):
        log = read_log(folder / row.log_path)
        assert log.footer is not None and log.footer.reason == "pot_rounds"
        seats = row.result["seats"]
        assert [s["chips"] for s in seats] == list(log.footer.chips)
        for name, s in zip(row.seats, seats, strict=True):
            chips[name].append(s["chips"])

    data = json.loads(ok("standings", folder, "--json").stdout)
    rows = {r["bot"]: r for r in data["standings"]}
    for name, won in chips.items():
        assert rows[name]["matches"] == 3
        assert rows[name]["mean_net_chips"] == pytest.approx(sum(won) / 3, abs=1e-3)
    ratings = [r["rating"] for r in data["standings"]]
    assert ratings == sorted(ratings, reverse=True)  # ranked by placings, as under lives

    table = flat(ok("standings", folder).stdout)
    assert "chips/m" in table and "mean net chips per match" in table and "lives/rd" not in table

    lines = list(csv.DictReader(io.StringIO(ok("standings", folder, "--csv").stdout)))
    assert {r["bot"]: float(r["mean_net_chips"]) for r in lines} == {n: r["mean_net_chips"] for n, r in rows.items()}


def test_standings_under_lives_have_no_chips() -> None:
    from referee.cli.standings_view import standings_rows
    from referee.tournament.standings import compute_standings
    from referee.tournament.store import MatchRow

    row = MatchRow(
        key="t1", table_key="t", deal=1, rotation=0, seed=1, seats=("a", "b"),
        result={"placings": [1, 2], "seats": [{"chips": 2}, {"chips": -2}]},
        log_path="x", finished_at="now", duration_s=1.0,
    )
    assert "mean_net_chips" not in standings_rows(compute_standings([row]))[0]
    pot = standings_rows(compute_standings([row], pot=True))
    assert [r["mean_net_chips"] for r in pot] == [2.0, -2.0]
