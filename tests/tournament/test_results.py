"""The typed match result reads every stored result and writes it back byte for byte."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from referee.tournament.results import MatchResult, ResultError, SeatResult
from referee.tournament.store import DB_NAME
from referee.tournament.tasks import with_absent

from .conftest import Played


def _round_trip(text: str) -> str:
    return json.dumps(MatchResult.from_json(json.loads(text)).to_json())


def test_played_rows_round_trip(reference_run: Played) -> None:
    conn = sqlite3.connect(f"file:{reference_run.folder / DB_NAME}?mode=ro", uri=True)
    try:
        texts = [t for (t,) in conn.execute("SELECT result FROM matches")]
    finally:
        conn.close()
    assert texts
    for text in texts:
        assert _round_trip(text) == text
        r = MatchResult.from_json(json.loads(text))
        assert list(r.placings) == json.loads(text)["placings"]
        assert all(s.bot for s in r.seats)


OLDER: list[dict[str, Any]] = [
    {"placings": [1, 2]},
    {"placings": [2, 1], "winner": 1, "reason": "last_standing", "rounds": 3},
    {"placings": [1, 2], "winner": 0, "reason": "x", "rounds": 2, "seats": []},
    {
        "placings": [1, 2], "winner": 0, "reason": "last_standing", "rounds": 4,
        "seats": [
            {"bot": "a", "placing": 1, "lives_lost": 1, "rounds": 4, "faults": {}, "forfeited": False},
            {"bot": "b", "placing": 2, "lives_lost": 3, "rounds": 4, "faults": {"TIMEOUT": 2}, "forfeited": True},
        ],
    },
    {
        "placings": [1, 2], "winner": 0, "reason": "pot", "rounds": 1,
        "seats": [
            {"bot": "a", "placing": 1, "lives_lost": 0, "rounds": 1, "faults": {}, "forfeited": False, "decisions": 3,
             "total_latency_us": 30, "max_latency_us": 12, "late": 1, "chips": 5},
            {"bot": "b", "placing": 2, "lives_lost": 1, "rounds": 1, "faults": {}, "forfeited": False, "decisions": 2,
             "total_latency_us": 20, "max_latency_us": 11, "chips": -5, "future": [1]},
        ],
        "later": {"k": 1},
    },
    with_absent(["a", "b", "c"], None, [0], {1: "start failed", 2: "disqualified"}),
]


@pytest.mark.parametrize("row", OLDER)
def test_older_rows_round_trip(row: dict[str, Any]) -> None:
    text = json.dumps(row)
    assert _round_trip(text) == text


def test_missing_keys_read_as_the_readers_defaults() -> None:
    r = MatchResult.from_json({"placings": [2, 1]})
    assert (r.placings, r.winner, r.reason, r.rounds, r.has_seats) == ((2, 1), None, "", 0, False)
    assert r.seat(1) == SeatResult()
    s = MatchResult.from_json(OLDER[3]).seat(1)
    assert (s.faults, s.forfeited, s.decisions, s.late, s.chips, s.absent) == ({"TIMEOUT": 2}, True, 0, 0, 0, "")


@pytest.mark.parametrize(
    ("bad", "says"),
    [([1, 2], "not an object"), ({}, "no list of placings"), ({"placings": ["x"]}, "'x'"),
     ({"placings": [1], "seats": [3]}, "seat 0")],
)
def test_bad_rows_say_what_is_wrong(bad: Any, says: str) -> None:
    with pytest.raises(ResultError, match=says):
        MatchResult.from_json(bad)
