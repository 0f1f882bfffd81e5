"""Bad input gets a clear error (non-zero exit, a message naming the problem, no traceback)
and changes nothing: not the database, not a file of the folder."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from pathlib import Path

import pytest

from referee.tournament.store import StoreError, TournamentStore

from .conftest import SDK_BOT, copy_tournament, fails, flat, left_as_is, ok

#: File bots that start but break the rules or the protocol, which the compliance check finds.
FAULTY_BOTS = {
    # Passing is legal only under empty_stock=showdown, never at the start of a standard match.
    "passer": (SDK_BOT.replace('name = "plain"', 'name = "passer"').replace(
        "        if view.must_discard:", "        return sdk.PASS\n        if view.must_discard:"), "illegal action pass"),
    # Not an action at all: the SDK ends the stream, which the referee records as a crash.
    "garbler": (SDK_BOT.replace('name = "plain"', 'name = "garbler"').replace(
        "        if view.must_discard:", "        return 'garbage'  # type: ignore[return-value]\n        if view.must_discard:"),
        "act returned 'garbage', not an sdk.Action"),
}


@pytest.fixture
def one(one_bot_tournament: Path, tmp_path: Path) -> Path:
    """A fresh copy of a tournament holding the random bot."""
    return copy_tournament(one_bot_tournament, tmp_path / "t")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["submit", "{t}", "nosuchbot"], "unknown bot 'nosuchbot': not a sample bot (samples: greedy, montecarlo, random, threshold)"),
        (["submit", "{t}", "random"], "a bot named 'random' is already submitted; choose another --name"),
        (["submit", "{t}", "greedy", "--name", "random"], "a bot named 'random' is already submitted"),
        (["submit", "{t}", "random", "--name", "bad name"], "bot name 'bad name' is not allowed"),
        (["submit", "{t}", "random", "--name", "ok\n"], "bot name 'ok\\n' is not allowed"),
        (["submit", "{t}", "x=random", "--name", "y"], "two names given: 'x' (in 'x=random') and --name 'y'"),
        (["submit", "{t}", "./missing.py"], "no such file"),
        (["withdraw", "{t}", "nobody"], "no bot named 'nobody' in this tournament (bots: random)"),
        (["tournament", "run", "{t}"], "the tournament has 1 bot but tables of 2"),
        (["tournament", "run", "{t}", "-j", "0"], "--jobs must be a whole number of at least 1, got 0"),
        (["standings", "{t}", "--json", "--csv"], "choose one of --json and --csv"),
        (["tournament", "new", "{t}"], "already holds a tournament (tournament.db)"),
    ],
)
def test_refused_and_nothing_changes(one: Path, args: list[str], message: str) -> None:
    with left_as_is(one):
        fails(*(a.replace("{t}", str(one)) for a in args), message=message)


def test_a_bot_that_cannot_start_is_refused(one: Path, tmp_path: Path) -> None:
    quitter = tmp_path / "quitter.py"
    quitter.write_text("import sys\nprint('no model weights here', file=sys.stderr)\nsys.exit(4)\n")
    with left_as_is(one):
        result = fails("submit", one, quitter, message="quitter.py' exited with code 4 before it was ready")
        assert "the bot could not be used" in flat(result.stderr)
        result = fails("submit", one, "python3 -c 'import sys; sys.exit(3)'", message="exited with code 3 before it was ready")
        assert "the bot could not be used" in flat(result.stderr)


@pytest.mark.parametrize("bot", sorted(FAULTY_BOTS))
def test_a_bot_that_fails_its_compliance_check_is_refused(one: Path, tmp_path: Path, bot: str) -> None:
    source, message = FAULTY_BOTS[bot]
    path = tmp_path / f"{bot}.py"
    path.write_text(source)
    with left_as_is(one):
        fails("submit", one, path, message="the bot failed its compliance check")
        fails("submit", one, path, "--name", "other", message=message)


def test_a_bot_whose_identity_looks_like_markup_is_shown_as_text(one: Path, tmp_path: Path) -> None:
    path = tmp_path / "odd.py"
    path.write_text(SDK_BOT.replace('author = "a test"', 'author = "[/] [bold]x[/bold]"'))
    result = ok("submit", one, path, "--name", "odd")
    assert "by [/] [bold]x[/bold]" in result.stdout
    assert "[/] [bold]x[/bold]" in ok("bots", one).stdout


@pytest.mark.parametrize(
    "db_bytes",
    [b"this is not a database, only junk bytes " * 200, b"", b"SQLite format 3\x00" + b"\xff" * 300],
    ids=["junk", "empty", "bad-header"],
)
def test_a_corrupt_database_is_refused_and_left_as_is(one: Path, db_bytes: bytes) -> None:
    (one / "tournament.db").write_bytes(db_bytes)
    with left_as_is(one):
        for args in (["standings"], ["standings", "--json"], ["bots"], ["tournament", "run"], ["submit", str(one), "greedy"],
                     ["withdraw", str(one), "random"]):
            command, rest = args[0], args[1:]
            if command == "tournament":
                argv = ["tournament", "run", str(one)]
            elif rest and rest[0] == str(one):
                argv = [command, *rest]
            else:
                argv = [command, str(one), *rest]
            fails(*argv, message=f"{one / 'tournament.db'} is not a readable tournament database")
    assert (one / "tournament.db").read_bytes() == db_bytes


def test_a_folder_without_its_database_is_not_a_tournament(one: Path) -> None:
    (one / "tournament.db").unlink()
    with left_as_is(one):
        for argv in (["bots", one], ["standings", one], ["tournament", "run", one], ["submit", one, "greedy"],
                     ["withdraw", one, "random"]):
            fails(*argv, message=f"{one} is not a tournament folder (no tournament.db)")
    assert not (one / "tournament.db").exists()


def test_a_missing_folder_a_file_and_a_stranger_folder(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello")
    stranger = tmp_path / "photos"
    stranger.mkdir()
    (stranger / "cat.jpg").write_bytes(b"\xff\xd8")
    with left_as_is(tmp_path):
        for command in (["bots"], ["standings"], ["tournament", "run"], ["submit"], ["withdraw"]):
            extra = ["random"] if command[0] in ("submit", "withdraw") else []
            fails(*command, missing, *extra, message=f"no such folder: {missing}")
            fails(*command, a_file, *extra, message=f"{a_file} is not a folder")
            fails(*command, stranger, *extra, message=f"{stranger} is not a tournament folder")
        fails("tournament", "new", stranger, message=f"{stranger} is not empty")
        fails("tournament", "new", a_file, message=f"{a_file} exists and is not a folder")
    assert not missing.exists()


BAD_SETTINGS = [
    (["--table-size", "1"], "--table-size must be a whole number from 2 to 9, got 1"),
    (["--table-size", "10"], "--table-size must be a whole number from 2 to 9, got 10"),
    (["--games", "0"], "--games must be a whole number from 1 to 100000"),
    (["--seed", "-1"], "seed must be a whole number from 0 to 2**64-1"),
    (["--rule", "lives=0"], "rule option 'lives' got 0"),
    (["--rule", "colour=red"], "unknown rule option 'colour'"),
    (["--rule", "lives"], "a rule must be written key=value"),
    (["--preset", "nope"], "unknown preset 'nope'"),
    (["--fault-policy", "harsh"], "fault_policy must be one of lenient, strict"),
    (["--max-strikes", "0"], "--max-strikes must be a whole number from 1 to 1000"),
    (["--budget-ms", "0"], "--budget-ms must be a whole number from 1 to 3600000, got 0"),
]

BAD_TOML = [
    ("[tournament\ngames = 2\n", "is not valid TOML"),
    ("tournament = 5\n", "[tournament] must be a table of settings, got 5"),
    ("rules = [1, 2]\n", "[rules] must be a table of settings, got [1, 2]"),
    ("time_control = 3\n", "[time_control] must be a table of settings, got 3"),
    ("[tournament]\ncolour = 1\n", "unknown [tournament] setting: colour"),
    ("[timecontrol]\nbudget_ms = 1\n", "unknown setting: timecontrol"),
    ("[time_control]\nbudget = 1\n", "unknown [time_control] setting: budget"),
    ("[tournament]\ngames = \"ten\"\n", "games (deals per table) must be a whole number"),
    ("[tournament]\ntable_size = 3.0\n", "table_size must be a whole number from 2 to 9, got 3.0"),
    ("[rules]\nlives = \"x\"\n", "rule option 'lives' got 'x'"),
    ("[time_control]\nbudget_ms = \"x\"\n", "budget_ms must be 0..3600000 ms, got 'x'"),
]


@pytest.mark.parametrize(("args", "message"), BAD_SETTINGS, ids=[" ".join(a) for a, _ in BAD_SETTINGS])
def test_bad_settings_create_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    with left_as_is(tmp_path):
        fails("tournament", "new", tmp_path / "t", *args, message=message)


@pytest.mark.parametrize(("text", "message"), BAD_TOML, ids=[m for _, m in BAD_TOML])
def test_a_bad_config_file_creates_nothing(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "settings.toml"
    config.write_text(text)
    with left_as_is(tmp_path):
        fails("tournament", "new", tmp_path / "t", "--config", config, message=message)


def test_a_missing_config_file(tmp_path: Path) -> None:
    with left_as_is(tmp_path):
        fails("tournament", "new", tmp_path / "t", "--config", tmp_path / "nope.toml", message="cannot read")


def _open_files(path: Path) -> int:
    """How many of this process's file descriptors point at ``path``."""
    n = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile (the fd iterdir itself opened)
            n += os.readlink(fd) == str(path)
    return n


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("UPDATE meta SET value = '9' WHERE key = 'schema_version'", "has schema version '9'; this thirtyone reads version 2"),
        ("UPDATE meta SET value = '{\"games\": 0}' WHERE key = 'settings'", "the stored settings are unreadable"),
        ("DELETE FROM meta WHERE key = 'settings'", "has no settings"),
        ("DROP TABLE matches", "no such table: matches"),
    ],
    ids=["schema", "settings", "no-settings", "no-table"],
)
def test_a_database_of_another_kind_is_refused_and_not_kept_open(one: Path, sql: str, message: str) -> None:
    conn = sqlite3.connect(one / "tournament.db")
    conn.execute(sql)
    conn.commit()
    conn.close()
    db = (one / "tournament.db").resolve()
    with left_as_is(one):
        for argv in (["bots", one], ["standings", one], ["tournament", "run", one], ["submit", one, "greedy"]):
            fails(*argv, message=message)
        for _ in range(3):
            with pytest.raises(StoreError, match=re.escape(message)):
                TournamentStore.open(one)
        assert _open_files(db) == 0
