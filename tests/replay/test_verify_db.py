"""``thirtyone replay --verify DIR`` checks a tournament's database against its logs: every
row's placings, rounds, faults, forfeits, bots and seed as its log's footer and events say,
every row with its log, every finished match's log with its row.

The tournament is real (tests/tournament/faulty.py: hostile bots committing every kind of
fault, and forfeiting); each test tampers with a copy of it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app
from referee.replay.verify import RowDivergence, verify_results
from referee.tournament.store import DB_NAME
from tests.tournament.conftest import left_as_is
from tests.tournament.faulty import faulty_played

runner = CliRunner()


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")


@pytest.fixture
def folder(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A copy of the played faulty tournament."""
    dest = tmp_path / "t"
    shutil.copytree(faulty_played(tmp_path_factory), dest)
    return dest


def verify(folder: Path) -> Result:
    return runner.invoke(app, ["replay", "--verify", str(folder)])


def first_key(folder: Path) -> str:
    conn = sqlite3.connect(folder / DB_NAME)
    try:
        (key,) = conn.execute("SELECT key FROM matches ORDER BY key LIMIT 1").fetchone()
        return str(key)
    finally:
        conn.close()


def edit_result(folder: Path, change: Callable[[dict], None]) -> str:  # type: ignore[type-arg]
    """Change the stored result of the first match; its key."""
    key = first_key(folder)
    conn = sqlite3.connect(folder / DB_NAME)
    (text,) = conn.execute("SELECT result FROM matches WHERE key = ?", (key,)).fetchone()
    result = json.loads(text)
    change(result)
    conn.execute("UPDATE matches SET result = ? WHERE key = ?", (json.dumps(result), key))
    conn.commit()
    conn.close()
    return key


def sql(folder: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(folder / DB_NAME)
    conn.execute(statement, params)
    conn.commit()
    conn.close()


def test_an_honest_tournament_verifies(folder: Path) -> None:
    with left_as_is(folder):
        result = verify(folder)
        assert result.exit_code == 0, result.output
    assert "5 logs: 5 ok" in result.stdout
    assert "database: 5 rows checked against their logs, all agree" in result.stdout
    assert verify_results(folder).divergences == ()


def _swap_placings(r: dict) -> None:  # type: ignore[type-arg]
    a, b = next((i, j) for i in range(5) for j in range(5) if r["placings"][i] < r["placings"][j])
    r["placings"][a], r["placings"][b] = r["placings"][b], r["placings"][a]
    r["seats"][a]["placing"], r["seats"][b]["placing"] = r["seats"][b]["placing"], r["seats"][a]["placing"]


def _seat_of(r: dict, bot: str) -> int:  # type: ignore[type-arg]
    return next(i for i, s in enumerate(r["seats"]) if s["bot"] == bot)


def _more_illegal(r: dict) -> None:  # type: ignore[type-arg]
    faults = r["seats"][_seat_of(r, "illegal")]["faults"]
    faults["illegal"] = faults.get("illegal", 0) + 1


def _hide_timeouts(r: dict) -> None:  # type: ignore[type-arg]
    r["seats"][_seat_of(r, "silent")]["faults"] = {}


def _no_forfeit(r: dict) -> None:  # type: ignore[type-arg]
    r["seats"][_seat_of(r, "garbage")]["forfeited"] = False


def _fewer_rounds(r: dict) -> None:  # type: ignore[type-arg]
    r["rounds"] += 1


def _a_crash_for_random(r: dict) -> None:  # type: ignore[type-arg]
    faults = r["seats"][_seat_of(r, "random")]["faults"]
    faults["crash"] = faults.get("crash", 0) + 1


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        (_swap_placings, ["placings"]),
        (_more_illegal, ["faults.illegal"]),
        (_hide_timeouts, ["faults.timeout"]),
        (_no_forfeit, ["forfeited"]),
        (_fewer_rounds, ["rounds"]),
        (_a_crash_for_random, ["faults.crash"]),
    ],
    ids=["swap-placings", "fault-count", "faults-gone", "forfeit", "rounds", "extra-fault-kind"],
)
def test_a_tampered_result_fails_naming_the_match_and_the_field(
    folder: Path, change: Callable[[dict], None], fields: list[str]  # type: ignore[type-arg]
) -> None:
    key = edit_result(folder, change)
    result = verify(folder)
    assert result.exit_code == 1, result.output
    assert "5 logs: 5 ok" in result.stdout  # the logs are fine: the row is not
    assert "5 rows checked against their logs, 1 match disagrees" in result.stdout
    found = verify_results(folder).divergences
    assert {d.match for d in found} == {key}
    for f in fields:
        assert any(d.field.endswith(f) for d in found), (f, found)
    for d in found:
        assert d.field in result.stdout and key in result.stdout


def test_placings_swapped_name_each_seat(folder: Path) -> None:
    key = edit_result(folder, _swap_placings)
    fields = {d.field for d in verify_results(folder).divergences}
    assert "placings" in fields
    assert len([f for f in fields if f.startswith("seats[") and f.endswith(".placing")]) == 2, fields
    assert all(isinstance(d, RowDivergence) and d.match == key for d in verify_results(folder).divergences)


def test_swapped_bots_and_a_changed_seed_fail(folder: Path) -> None:
    key = first_key(folder)
    conn = sqlite3.connect(folder / DB_NAME)
    (seats,) = conn.execute("SELECT seats FROM matches WHERE key = ?", (key,)).fetchone()
    names = json.loads(seats)
    names[0], names[1] = names[1], names[0]
    conn.execute("UPDATE matches SET seats = ?, seed = seed || '1' WHERE key = ?", (json.dumps(names), key))
    conn.commit()
    conn.close()
    result = verify(folder)
    assert result.exit_code == 1, result.output
    assert {(d.match, d.field) for d in verify_results(folder).divergences} == {(key, "seats"), (key, "seed")}


def test_a_row_without_its_log_and_a_log_without_its_row(folder: Path) -> None:
    key = first_key(folder)
    log = folder / "logs" / (key.replace("/", "_") + ".jsonl")
    log.unlink()
    found = verify_results(folder).divergences
    assert [(d.match, d.field) for d in found] == [(key, "log")]
    assert "missing" in found[0].detail
    result = verify(folder)
    assert result.exit_code == 1, result.output

    # Put the log back and take the row out instead.
    sql(folder, "DELETE FROM matches WHERE key = ?", key)
    shutil.copy(next(p for p in (folder / "logs").glob("*.jsonl")), log)  # any finished match's log
    found = verify_results(folder).divergences
    assert [(d.match, d.field) for d in found] == [(log.name, "row")]
    assert verify(folder).exit_code == 1


def test_an_unfinished_log_without_a_row_is_a_match_in_flight(folder: Path) -> None:
    # A run killed mid-match leaves a log without a footer and no row: incomplete, not diverged.
    key = first_key(folder)
    log = folder / "logs" / (key.replace("/", "_") + ".jsonl")
    sql(folder, "DELETE FROM matches WHERE key = ?", key)
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines()[:-1]))
    assert verify_results(folder).divergences == ()
    result = verify(folder)
    assert result.exit_code == 3, result.output
    assert "4 rows checked against their logs, all agree" in result.stdout


def test_a_row_pointing_outside_the_logs_folder(folder: Path) -> None:
    key = first_key(folder)
    sql(folder, "UPDATE matches SET log_path = '../../etc/passwd' WHERE key = ?", key)
    found = verify_results(folder).divergences
    # The row points elsewhere, so the match's own log has no row either.
    log = key.replace("/", "_") + ".jsonl"
    assert [(d.match, d.field) for d in found] == [(key, "log_path"), (log, "row")]


def test_a_database_that_cannot_be_read_is_a_clear_error(folder: Path) -> None:
    (folder / DB_NAME).write_bytes(b"not a database at all " * 100)
    result = verify(folder)
    assert result.exit_code == 2
    assert "is not a readable tournament database" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.slow
def test_a_pot_tournaments_chips_are_checked_against_its_logs(tmp_path: Path) -> None:
    """Playing for a pot (the bicycle preset), a row's net chips must be its log's."""
    from tests.tournament.conftest import SANDBOX, ok

    folder = tmp_path / "pot"
    ok("tournament", "new", folder, "--preset", "bicycle", "--table-size", "3", "--games", "1", "--seed", "31", "--sandbox", SANDBOX)
    for name in ("random", "greedy", "threshold"):
        ok("submit", folder, name)
    ok("tournament", "run", folder, "-j", "1")
    assert verify_results(folder).divergences == ()
    result = verify(folder)
    assert result.exit_code == 0, result.output

    def more_chips(r: dict) -> None:  # type: ignore[type-arg]
        r["seats"][1]["chips"] += 1

    key = edit_result(folder, more_chips)
    check = verify_results(folder)
    assert [(d.match, d.field) for d in check.divergences] == [(key, "seats[1].chips")]
    assert verify(folder).exit_code == 1
