"""Broken bots cannot block a tournament: one run plays every match, whatever the bots do.

Real bot processes (the hostile test bot), real workers, gRPC and SQLite.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from referee.game import Rules
from referee.log import read_log
from referee.timecontrol import TimeControl
from referee.tournament.settings import TournamentSettings
from referee.tournament.standings import FAULT_KINDS
from referee.tournament.store import BotEntry, TournamentStore, now
from referee.tournament.submit import submit

from ..referee.conftest import hostile
from .conftest import cli, fails, ok, scheduled_keys, stored_matches

#: Short matches and short clocks: a silent bot times out after 30 + 60 + 30 ms.
FAST = TournamentSettings(
    table_size=2,
    games=1,
    seed=7,
    rules=Rules(max_rounds=1, max_turns_per_round=12),
    time_control=TimeControl(budget_ms=30, bank_ms=60, grace_ms=30),
    sandbox="off",
)

#: FAST's short matches on the default clock, for the tests whose bots all answer: a busy
#: machine must not make an honest bot late, which would change a result the test compares.
ROOMY = dataclasses.replace(FAST, time_control=TimeControl())


def add_command_bot(store: TournamentStore, name: str, command: str) -> None:
    """Enter a bot as submitted without its validation match (a broken bot would fail it)."""
    store.add_bot(BotEntry(name, "command", command, str(store.folder), command, None, name, "0.1", "tests", now()))


def broken_tournament(folder: Path, settings: TournamentSettings = FAST) -> Path:
    """The random bot against one bot that cannot start, one that crashes mid-match, one
    that never answers and one that plays illegal moves."""
    with TournamentStore.create(folder, settings) as store:
        submit(store, "random", cwd=folder)
        add_command_bot(store, "nostart", hostile("exit_at_start"))
        add_command_bot(store, "crasher", hostile("die", "--from", 2))
        add_command_bot(store, "silent", hostile("silent"))
        add_command_bot(store, "cheat", hostile("illegal"))
    return folder


def faults_of(folder: Path, bot: str) -> dict[str, int]:
    """Every fault a bot committed in the stored matches, by kind."""
    total: dict[str, int] = {}
    for row in stored_matches(folder):
        for name, seat in zip(row.seats, row.result["seats"], strict=True):
            if name == bot:
                for kind, n in seat["faults"].items():
                    total[kind] = total.get(kind, 0) + n
    return total


@pytest.mark.slow
def test_a_tournament_of_broken_bots_runs_to_the_end_in_one_run(tmp_path: Path) -> None:
    folder = broken_tournament(tmp_path / "t")
    result = cli("tournament", "run", folder, "-j", "2")
    assert result.exit_code == 0, result.output
    rows = stored_matches(folder)
    assert sorted(r.key for r in rows) == sorted(scheduled_keys(folder))
    assert len(rows) == 20
    # The bot that cannot start forfeited every match, and was disqualified after 3 tries.
    with TournamentStore.open(folder) as store:
        assert "nostart" in store.disqualified()
        assert "3 times in a row" in store.disqualified()["nostart"]
        assert store.infra_failures() == []
    for row in rows:
        if "nostart" in row.seats:
            s = row.seats.index("nostart")
            seat = row.result["seats"][s]
            assert seat["forfeited"]
            assert seat["faults"] == ({} if seat["absent"] == "disqualified" else {"start": 1})
            assert row.placings[s] == 2 and row.placings[1 - s] == 1
            assert row.log_path == ""  # nobody played: no log
    absent = [r.result["seats"][r.seats.index("nostart")]["absent"] for r in rows if "nostart" in r.seats]
    # 3 failures disqualify it; with -j 2 a fourth start may already be under way by then.
    assert sum(a.startswith("could not start") for a in absent) in (3, 4)
    assert absent.count("disqualified") == len(absent) - sum(a.startswith("could not start") for a in absent) >= 4
    assert faults_of(folder, "crasher").get("crash", 0) >= 2
    assert faults_of(folder, "silent").get("timeout", 0) >= 2
    assert faults_of(folder, "cheat").get("illegal", 0) >= 2
    # Nothing the broken bots did is charged to the honest one. On FAST's 30 ms budget a busy
    # machine may make it late now and then: a timeout is its own, not a misattribution.
    assert set(faults_of(folder, "random")) <= {"timeout"}, faults_of(folder, "random")
    assert "nostart is disqualified" in result.stderr
    # Every played match's log is in logs/ (moved out of the private running/ folder).
    for row in rows:
        if row.log_path:
            assert (folder / row.log_path).is_file()
    assert not any((folder / "running").iterdir())
    assert (folder / "running").stat().st_mode & 0o777 == 0o700
    # The crasher's last words are kept, per match and seat.
    said = [p.read_text() for p in (folder / "output").glob("*/seat*-crasher.txt")]
    assert sum("dying on decision 2" in text for text in said) == faults_of(folder, "crasher")["crash"]
    # ... and shown by replay, by the seat of the match's log.
    crashed = next(r for r in rows if "crasher" in r.seats and r.log_path and r.result["seats"][r.seats.index("crasher")]["faults"])
    seat = crashed.seats.index("crasher")
    shown = ok("replay", folder, crashed.key, "--bot-output", seat)
    assert "hostile bot: dying on decision 2" in shown.stdout
    fails("replay", folder, crashed.key, "--bot-output", 5, message="--bot-output 5: the match has seats 0 to 1")
    # The standings show every fault exactly, kind by kind, and the disqualified bot.
    data = json.loads(ok("standings", folder, "--json").stdout)
    by_bot = {r["bot"]: r for r in data["standings"]}
    for bot in ("random", "nostart", "crasher", "silent", "cheat"):
        for kind in FAULT_KINDS:
            assert by_bot[bot][f"faults_{kind}"] == faults_of(folder, bot).get(kind, 0), (bot, kind)
    assert by_bot["nostart"]["faults_start"] >= 3
    assert set(data["disqualified"]) == {"nostart"}
    assert "DQ" in ok("standings", folder).stdout
    # The logs verify, and the database agrees with them; one tampered row does not.
    assert "divergence" not in ok("replay", "--verify", folder).stdout.lower()
    row = next(r for r in rows if "crasher" in r.seats and r.log_path)
    with sqlite3.connect(folder / "tournament.db") as db:
        db.execute("UPDATE matches SET result = ? WHERE key = ?", (json.dumps({**row.result, "placings": row.placings[::-1]}), row.key))
    tampered = cli("replay", "--verify", folder)
    assert tampered.exit_code == 1 and row.key in tampered.stdout and "placings" in tampered.stdout


def test_disqualify_by_hand_forfeits_the_rest_without_starting_the_bot(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    with TournamentStore.create(folder, FAST) as store:
        submit(store, "random", cwd=folder)
        # A bot that would write its pid if it were ever started.
        pid_dir = tmp_path / "pids"
        pid_dir.mkdir()
        add_command_bot(store, "cheat", hostile("first", "--pid-dir", pid_dir))
    fails("disqualify", folder, "nobody", "--reason", "x", message="no bot named 'nobody'")
    fails("disqualify", folder, "cheat", "--reason", " ", message="--reason must say why")
    ok("disqualify", folder, "cheat", "--reason", "copied another bot")
    with TournamentStore.open(folder) as store:
        assert store.disqualified() == {"cheat": "copied another bot"}
    ok("tournament", "run", folder)
    rows = stored_matches(folder)
    assert len(rows) == 2
    for row in rows:
        s = row.seats.index("cheat")
        assert row.result["seats"][s]["absent"] == "disqualified"
        assert row.placings[s] == 2
    assert list(pid_dir.iterdir()) == []


def test_rerun_plays_one_match_again_and_replaces_it(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    with TournamentStore.create(folder, ROOMY) as store:
        submit(store, "random", cwd=folder)
        submit(store, "greedy", cwd=folder)
    ok("tournament", "run", folder)
    before = {r.key: r for r in stored_matches(folder)}
    key = sorted(before)[0]
    fails("tournament", "rerun", folder, "no/such/key", message="no match 'no/such/key'")
    ok("tournament", "rerun", folder, key)
    after = {r.key: r for r in stored_matches(folder)}
    assert set(after) == set(before)
    # The same seed replays to the same result; the row is new (not the one stored before).
    assert after[key].placings == before[key].placings
    assert after[key].duration_s != before[key].duration_s
    assert (folder / after[key].log_path).is_file()
    ok("replay", folder, key)


def test_a_table_plays_on_among_the_bots_that_started(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    with TournamentStore.create(folder, dataclasses.replace(ROOMY, table_size=3)) as store:
        submit(store, "random", cwd=folder)
        submit(store, "greedy", cwd=folder)
        add_command_bot(store, "nostart", hostile("exit_at_start"))
    ok("tournament", "run", folder)
    rows = stored_matches(folder)
    assert len(rows) == 3  # one table, one deal, three rotations
    for row in rows:
        s = row.seats.index("nostart")
        assert row.placings[s] == 3
        assert sorted(p for i, p in enumerate(row.placings) if i != s) == [1, 2]
        assert row.result["seats"][s]["faults"] == {"start": 1}
        # The log is of the match played: two seats, in table order without the absent one.
        header = read_log(folder / row.log_path).header
        assert [seat.label for seat in header.seats] == [n for n in row.seats if n != "nostart"]
        assert header.seed == row.seed
    assert ok("replay", folder, "--verify").exit_code == 0
