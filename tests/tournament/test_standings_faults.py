"""Standings of a real tournament of faulty bots: fault counts kind by kind (as the logs
count them), completeness, the seed kept back until the end, disqualified bots, and the
unsandboxed caption.

Bug 1 of issue 11: the database stores fault kinds in lower case, the standings looked them
up in upper case, and every table showed 0/0/0/0; the tests only ever expected zeros.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from referee.tournament.settings import TournamentSettings
from referee.tournament.standings import FAULT_KINDS
from referee.tournament.store import DB_NAME, TournamentStore

from .conftest import flat, ok
from .faulty import FAULTY, SETTINGS, copy_of, entry, faults_in_logs, faulty_played, make_faulty

KINDS = FAULT_KINDS
#: The bot committing each kind of fault.
KIND_OF = {"silent": "timeout", "dies": "crash", "illegal": "illegal", "garbage": "malformed"}



@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return faulty_played(tmp_path_factory)


def test_the_standings_show_each_bots_faults_kind_by_kind_as_the_logs_count_them(played: Path) -> None:
    faults, forfeits = faults_in_logs(played)
    # The logs themselves: every faulty bot committed its own kind of fault (on a busy
    # machine a bot may also time out: the comparison below is exact whatever the logs hold).
    for bot, kind in KIND_OF.items():
        assert faults[bot][kind] > 0, faults

    data = json.loads(ok("standings", played, "--json").stdout)
    rows = {r["bot"]: r for r in data["standings"]}
    assert set(rows) == {"random", *FAULTY}
    for bot, row in rows.items():
        for kind in KINDS:
            assert row[f"faults_{kind}"] == faults.get(bot, {}).get(kind, 0), (bot, kind, row)
        assert row["forfeits"] == forfeits[bot], (bot, row)
    assert sum(r["faults_crash"] for r in rows.values()) > 0

    # Each bot's row, read as the table prints it: name second, T/C/I/M last.
    lines = {line.split("│")[2].strip(): line for line in ok("standings", played).stdout.splitlines() if line.count("│") >= 8}
    for bot in rows:
        f = faults.get(bot, {})
        expected = "/".join(str(f.get(k, 0)) for k in KINDS)
        shown = lines[bot].split("│")[8].strip()
        assert shown.split()[0] == expected, (bot, shown)
        assert shown.endswith(f"{forfeits[bot]} out") if forfeits[bot] else shown == expected

    got = {r["bot"]: r for r in csv.DictReader(io.StringIO(ok("standings", played, "--csv").stdout))}
    for bot in rows:
        for kind in KINDS:
            assert int(got[bot][f"faults_{kind}"]) == faults.get(bot, {}).get(kind, 0)


def test_a_complete_tournament_says_so_and_shows_its_seed(played: Path) -> None:
    data = json.loads(ok("standings", played, "--json").stdout)
    assert data["progress"] == {"played": 5, "scheduled": 5, "complete": True}
    assert data["settings"]["seed"] == SETTINGS.seed
    assert data["seed_hidden"] is False
    assert data["unsandboxed"] is True
    table = flat(ok("standings", played).stdout)
    assert "complete: all 5 scheduled matches played" in table
    assert f"seed {SETTINGS.seed}" in table
    assert "bots ran unsandboxed" in table
    rows = list(csv.DictReader(io.StringIO(ok("standings", played, "--csv").stdout)))
    assert {(r["tournament_played"], r["tournament_scheduled"]) for r in rows} == {("5", "5")}


def _drop_matches(folder: Path, keep: int) -> None:
    conn = sqlite3.connect(folder / DB_NAME)
    keys = [k for (k,) in conn.execute("SELECT key FROM matches ORDER BY key")]
    conn.executemany("DELETE FROM matches WHERE key = ?", [(k,) for k in keys[keep:]])
    conn.commit()
    conn.close()


def test_an_incomplete_tournament_says_how_far_it_is_and_keeps_its_seed_back(played: Path, tmp_path: Path) -> None:
    folder = copy_of(played, tmp_path / "t")
    _drop_matches(folder, keep=3)
    out = ok("standings", folder, "--json").stdout
    data = json.loads(out)
    assert data["progress"] == {"played": 3, "scheduled": 5, "complete": False}
    assert data["settings"]["seed"] is None
    assert data["seed_hidden"] is True
    table = ok("standings", folder).stdout
    csv_text = ok("standings", folder, "--csv").stdout
    for text in (out, table, csv_text):
        assert str(SETTINGS.seed) not in text
    assert "incomplete: 3 of 5 matches played" in flat(table)
    assert "seed hidden until every scheduled match is played" in flat(table)
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert {(r["tournament_played"], r["tournament_scheduled"]) for r in rows} == {("3", "5")}


def test_a_tournament_short_of_bots_is_not_complete_and_hides_its_seed(tmp_path: Path) -> None:
    # Nothing scheduled yet (one bot, tables of two): not "all 0 matches played".
    settings = TournamentSettings(table_size=2, games=1, seed=987654321)  # nothing runs
    with TournamentStore.create(tmp_path / "t", settings) as store:
        store.add_bot(entry("random", "sample", "random"))
    data = json.loads(ok("standings", tmp_path / "t", "--json").stdout)
    assert data["progress"] == {"played": 0, "scheduled": 0, "complete": False}
    assert "987654321" not in ok("standings", tmp_path / "t", "--json").stdout
    assert "987654321" not in ok("standings", tmp_path / "t").stdout
    assert data["unsandboxed"] is False
    assert "unsandboxed" not in ok("standings", tmp_path / "t").stdout


def test_disqualified_bots_are_marked_with_the_reason(played: Path, tmp_path: Path) -> None:
    folder = copy_of(played, tmp_path / "t")
    reason = "read [bold]another bot's[/bold] files"
    with TournamentStore.open(folder) as store:
        store.disqualify("garbage", reason)
    data = json.loads(ok("standings", folder, "--json").stdout)
    rows: dict[str, Any] = {r["bot"]: r for r in data["standings"]}
    assert rows["garbage"]["disqualified"] == reason
    assert [b for b, r in rows.items() if r["disqualified"] is not None] == ["garbage"]
    assert data["disqualified"] == {"garbage": reason}
    table = ok("standings", folder).stdout
    garbage_line = next(line for line in table.splitlines() if " garbage " in line and "│" in line)
    assert "DQ" in garbage_line
    assert not any("DQ" in line for line in table.splitlines() if " random " in line and "│" in line)
    assert f"disqualified: {reason}" in flat(table)  # shown as text, not as markup
    got = {r["bot"]: r for r in csv.DictReader(io.StringIO(ok("standings", folder, "--csv").stdout))}
    assert got["garbage"]["disqualified"] == reason
    assert got["random"]["disqualified"] == ""


def test_a_sandboxed_tournament_has_no_unsandboxed_caption(tmp_path: Path) -> None:
    folder = make_faulty(tmp_path / "t", TournamentSettings(table_size=5, games=1, seed=1, sandbox="auto"))
    data = json.loads(ok("standings", folder, "--json").stdout)
    assert data["unsandboxed"] is False
    assert "unsandboxed" not in ok("standings", folder).stdout
