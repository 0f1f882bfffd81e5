"""``thirtyone standings --luck``: the ratings with the luck of the cards taken out, the raw
figures beside, each match's luck measured once and kept in the folder, on a real played
tournament."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Played, copy_tournament, flat, ok


def test_standings_with_the_luck_taken_out(reference_run: Played, tmp_path: Path) -> None:
    folder = copy_tournament(reference_run.folder, tmp_path / "t")
    raw = json.loads(reference_run.standings_json)
    assert raw["luck"] is False and "rating_raw" not in raw["standings"][0]

    shown = ok("standings", folder, "--luck", "--json")
    assert "measuring the luck of the cards" in flat(shown.stderr)
    data = json.loads(shown.stdout)
    assert data["luck"] is True
    before = {r["bot"]: r for r in raw["standings"]}
    for r in data["standings"]:
        # The raw figures beside are the plain standings' own.
        assert (r["rating_raw"], r["rating_raw_low95"], r["rating_raw_high95"]) == (
            before[r["bot"]]["rating"], before[r["bot"]]["rating_low95"], before[r["bot"]]["rating_high95"],
        )
        assert r["rating_low95"] < r["rating"] < r["rating_high95"]
        # Win rates and counts do not change: only the ratings take the luck out.
        assert r["win_rate"] == before[r["bot"]]["win_rate"] and r["matches"] == before[r["bot"]]["matches"]

    # Each match's luck is kept, one line a match, and read back the next time: the same figures.
    kept = (folder / "luck.jsonl").read_text().splitlines()
    assert len(kept) == raw["matches"]
    again = json.loads(ok("standings", folder, "--luck", "--json").stdout)
    assert again["standings"] == data["standings"]
    assert (folder / "luck.jsonl").read_text().splitlines() == kept

    table = flat(ok("standings", folder, "--luck").stdout)
    assert "luck out" in table and "raw (95% CI)" in table

