"""The whole loop through the command line: new, submit (sample bots and a Python file),
bots, run, standings (table, JSON, CSV), withdraw; and the demo."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from referee.log import read_log
from referee.tournament.store import TournamentStore

from .conftest import SAMPLES, SANDBOX, SDK_BOT, fails, flat, ok, stored_matches

CSV_HEADER = (
    "rank,bot,rating,rating_low95,rating_high95,rating_se,matches,wins,win_rate,win_rate_low95,win_rate_high95,"
    "mean_placing,lives_lost_per_round,rounds,forfeits,faults_timeout,faults_crash,faults_illegal,faults_malformed,faults_start,"
    "faults_late,late_answers,"
    "disqualified,tournament_played,tournament_scheduled"
)


def wilson(wins: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson score interval, written out to check the library's."""
    p = wins / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def check_standings(folder: Path, data: dict[str, Any], names: set[str], per_bot: int, total: int) -> None:
    """The standings JSON against the stored matches, recounted here."""
    assert data["matches"] == total
    rows = {r["bot"]: r for r in data["standings"]}
    assert set(rows) == names
    assert [r["rank"] for r in data["standings"]] == list(range(1, len(names) + 1))
    ratings = [r["rating"] for r in data["standings"]]
    assert ratings == sorted(ratings, reverse=True)
    matches = stored_matches(folder)
    assert len(matches) == total
    for name, r in rows.items():
        mine = [(m, m.seats.index(name)) for m in matches if name in m.seats]
        wins = sum(m.placings[s] == 1 for m, s in mine)
        assert r["matches"] == len(mine) == per_bot
        assert r["wins"] == wins
        assert r["win_rate"] == pytest.approx(wins / per_bot, abs=1e-4)
        assert r["mean_placing"] == pytest.approx(sum(m.placings[s] for m, s in mine) / per_bot, abs=1e-3)
        assert r["rounds"] == sum(m.result["seats"][s]["rounds"] for m, s in mine)
        low, high = wilson(wins, per_bot)
        assert r["win_rate_low95"] == pytest.approx(low, abs=1e-4)
        assert r["win_rate_high95"] == pytest.approx(high, abs=1e-4)
        assert 0 <= r["win_rate_low95"] <= r["win_rate"] <= r["win_rate_high95"] <= 1
        assert r["rating_low95"] <= r["rating"] <= r["rating_high95"] and r["rating_high95"] > r["rating_low95"]
        assert r["rating_se"] > 0
        assert r["faults_timeout"] == r["faults_crash"] == r["faults_illegal"] == r["faults_malformed"] == 0
    # Every match has a winner (placing 1), so the wins add up to at least the matches.
    assert sum(r["wins"] for r in rows.values()) >= total
    h2h = {(h["bot"], h["opponent"]): h for h in data["head_to_head"]}
    for (a, b), h in h2h.items():
        assert h["better"] + h["equal"] + h["worse"] == h["matches"] > 0
        mirror = h2h[(b, a)]
        assert (mirror["better"], mirror["equal"], mirror["worse"]) == (h["worse"], h["equal"], h["better"])
        assert h["matches"] == sum(a in m.seats and b in m.seats for m in matches)
    assert set(h2h) == {(a, b) for a in names for b in names if a != b}


@pytest.mark.slow
def test_the_whole_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "league"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where the user submits from; removed before the run

    created = ok("tournament", "new", folder, "--table-size", "3", "--games", "1", "--seed", "77", "--sandbox", SANDBOX)
    assert "created tournament" in created.stdout and "3 seats/table · 1 deal/table" in flat(created.stdout)
    assert sorted(p.name for p in folder.iterdir()) == ["bots", "logs", "tournament.db"]

    for name in SAMPLES:
        result = ok("submit", folder, name)
        assert f"submitted {name}: {name} 1.0" in flat(result.stdout)

    # A Python file, by path: copied into the tournament with its hash.
    original = work / "plain.py"
    original.write_text(SDK_BOT)
    result = ok("submit", folder, "./plain.py", "--name", "mine")
    copy = folder / "bots" / "mine" / "plain.py"
    sha = hashlib.sha256(original.read_bytes()).hexdigest()
    assert copy.read_bytes() == original.read_bytes()
    assert "submitted mine: plain 0.3 by a test" in flat(result.stdout) and sha[:12] in result.stdout
    assert sorted(p.name for p in (folder / "bots").iterdir()) == ["mine"]  # no staging left
    with TournamentStore.open(folder) as store:
        entry = store.bot("mine")
        assert entry is not None
        assert (entry.kind, entry.sha256, entry.source, entry.bot_name) == ("file", sha, "./plain.py", "plain")
        assert [b.name for b in store.bots()] == ["greedy", "mine", "random", "threshold"]

    # Editing the original afterwards changes nothing: it would now fail to start at all.
    original.write_text("raise SystemExit('edited after submission')\n")
    # And the folder it was submitted from may go (nothing runs from there).
    monkeypatch.chdir(tmp_path)
    shutil.rmtree(work)

    listing = flat(ok("bots", folder).stdout)
    for row in ("greedy greedy 1.0 thirtyone sample bots sample greedy 0",
                "mine plain 0.3 a test file ./bots/mine/plain.py 0",
                "random random 1.0", "threshold threshold 1.0"):
        assert row in listing, listing

    # 4 bots, tables of 3: 4 tables x 1 deal x 3 rotations; each bot sits at 3 tables.
    run = ok("tournament", "run", folder, "-j", "2")
    assert "played 12 matches" in flat(run.stderr) and "faults: none" in flat(run.stderr)
    assert copy.read_text() == SDK_BOT
    assert "nothing to play: all 12 scheduled matches are done" in flat(ok("tournament", "run", folder).stderr)
    for row in stored_matches(folder):
        log = read_log(folder / row.log_path)
        assert log.complete and log.header.match_id == row.key and log.header.seed == row.seed
        assert log.footer is not None and list(log.footer.placings) == row.placings
    listing = flat(ok("bots", folder).stdout)
    assert "./bots/mine/plain.py 9" in listing and "sample greedy 9" in listing

    table = flat(ok("standings", folder).stdout)
    assert f"Standings of {folder} (12 matches)" in table
    assert "rules standard · 3 seats/table · 1 deal/table \N{MULTIPLICATION SIGN} 3 rotations" in table
    assert "Head to head" in table
    for name in ("greedy", "mine", "random", "threshold"):
        assert f" {name} " in table

    data = json.loads(ok("standings", folder, "--json").stdout)
    assert data["settings"]["table_size"] == 3 and data["settings"]["seed"] == 77
    check_standings(folder, data, {"greedy", "mine", "random", "threshold"}, per_bot=9, total=12)

    rows = list(csv.reader(io.StringIO(ok("standings", folder, "--csv").stdout)))
    assert ",".join(rows[0]) == CSV_HEADER
    by_bot = {r[1]: r for r in rows[1:]}
    assert set(by_bot) == {"greedy", "mine", "random", "threshold"}
    for r in data["standings"]:
        column = rows[0].index("matches")
        assert by_bot[r["bot"]][0] == str(r["rank"]) and by_bot[r["bot"]][column] == str(r["matches"])

    # Withdrawing: refused once a bot has played, allowed before.
    fails("withdraw", folder, "greedy", message="'greedy' has already played 9 matches")
    late = tmp_path / "late.py"
    late.write_text(SDK_BOT)
    ok("submit", folder, late, "--name", "late")
    assert (folder / "bots" / "late" / "late.py").is_file()
    assert "late plain 0.3 a test file ./bots/late/late.py 0" in flat(ok("bots", folder).stdout)
    assert "withdrew late" in ok("withdraw", folder, "late").stdout
    assert not (folder / "bots" / "late").exists()
    with TournamentStore.open(folder) as store:
        assert [b.name for b in store.bots()] == ["greedy", "mine", "random", "threshold"]
    fails("withdraw", folder, "late", message="no bot named 'late' in this tournament (bots: greedy, mine, random, threshold)")
    assert json.loads(ok("standings", folder, "--json").stdout) == data


def test_demo(tmp_path: Path) -> None:
    # The quick tier's whole loop (demo makes, submits, runs and shows a tournament); the
    # user's own loop, step by step, is slow.
    folder = tmp_path / "demo"
    result = ok("demo", "--dir", folder, "-n", "1", "-j", "2")
    out = flat(result.stdout)
    assert f"demo tournament in {folder}: random, greedy, threshold" in out
    assert "Demo standings (3 matches)" in out
    assert f"thirtyone standings {folder}" in out
    assert f"thirtyone serve {folder}" in out
    assert len(list((folder / "logs").glob("*.jsonl"))) == 3
    data = json.loads(ok("standings", folder, "--json").stdout)
    check_standings(folder, data, set(SAMPLES), per_bot=3, total=3)
    fails("demo", "--dir", folder, message="already holds a tournament")
