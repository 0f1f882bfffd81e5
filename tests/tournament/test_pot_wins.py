"""Wins under the pot (issue 24, item 4): a shared first place is nobody's win
(docs/rules.md, "Playing for a pot"), in the standings, their JSON and CSV (which the web
viewer serves as they are)."""

from __future__ import annotations

import csv
import io
import json

from referee.cli.standings_view import standings_csv, standings_json, standings_rows
from referee.tournament.settings import TournamentSettings
from referee.tournament.standings import compute_standings
from referee.tournament.store import MatchRow


def row(n: int, seats: tuple[str, ...], placings: list[int], chips: list[int]) -> MatchRow:
    result = {"placings": placings, "seats": [{"chips": c, "rounds": 9} for c in chips]}
    return MatchRow(f"m{n}", "t", n, 0, n, seats, result, "", "", 1.0)


def test_a_shared_first_place_is_no_win() -> None:
    seats = ("a", "b", "c")
    rows = [
        row(0, seats, [1, 1, 3], [2, 2, -4]),  # a and b share first: nobody wins
        row(1, seats, [1, 2, 3], [5, 0, -5]),  # a wins
        row(2, seats, [3, 1, 1], [-6, 3, 3]),  # b and c share first
        row(3, seats, [2, 2, 1], [-1, -1, 2]),  # c wins
    ]
    st = compute_standings(rows, pot=True)
    wins = {b.name: b.wins for b in st.bots}
    assert wins == {"a": 1, "b": 0, "c": 1}
    assert sum(wins.values()) <= len(rows)
    assert {r["bot"]: r["wins"] for r in standings_rows(st)} == wins
    settings = TournamentSettings(table_size=3, games=1, seed=1)
    shown = json.loads(standings_json(st, settings))
    assert {r["bot"]: r["wins"] for r in shown["standings"]} == wins
    table = list(csv.DictReader(io.StringIO(standings_csv(st))))
    assert {r["bot"]: int(r["wins"]) for r in table} == wins
    # The win rate and its interval follow the wins.
    a = next(b for b in st.bots if b.name == "a")
    assert a.win_rate == 0.25 and a.win_low < 0.25 < a.win_high
