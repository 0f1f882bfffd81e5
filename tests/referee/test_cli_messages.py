"""What the ``thirtyone`` command says: help texts that keep every word, numbers checked with
errors naming the option, reproducible matches with a command that plays them again, proper
plurals, standings before any match, and whole table headers when the output is piped."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from rich.text import Text
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app
from referee.match import seeded_match_id
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from tests.replay.fixtures import STANDARD, write_fixture
from tests.tournament.faulty import entry

runner = CliRunner()
CLI = [sys.executable, "-c", "from referee.cli import main; main()"]


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # Help panels and tables are checked word for word: no wrapping in the middle of them.
    monkeypatch.setenv("COLUMNS", "250")


def _piped_env(tmp: Path) -> dict[str, str]:
    """The environment of a command whose output goes to a pipe, as in ``thirtyone ... | less``."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "TMPDIR": str(tmp)}


def _run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The console script in a process of its own, every stream a pipe (no terminal anywhere)."""
    return subprocess.run(
        [*CLI, *args], cwd=cwd, env=_piped_env(cwd), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def _flat(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- help texts (issue 12, item 8)


def _commands() -> Iterator[tuple[list[str], Any]]:
    """Every command of the app, with the words that call it."""

    def walk(group: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, [*path, name])
            else:
                yield [*path, name], command

    yield from walk(typer.main.get_command(app), [])


COMMANDS = sorted(" ".join(words) for words, _ in _commands())


def _unescaped(help_text: str) -> str:
    """What a help text should read: as written, with rich's ``\\[`` escapes undone."""
    return help_text.replace("\\[", "[")


def _panel_text(output: str) -> str:
    """Help output without the panels' frames, whitespace collapsed (wrapped lines rejoined)."""
    for ch in "│╭╮╰╯─":
        output = output.replace(ch, " ")
    return _flat(output)


def test_every_command_is_checked() -> None:
    # The walk finds the groups' commands too: a new command cannot slip past the help checks.
    assert {"match", "demo", "replay", "standings", "tournament new", "tournament run", "bot new"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_texts_keep_every_word(command: str) -> None:
    words, cmd = next((w, c) for w, c in _commands() if " ".join(w) == command)
    texts = [p.help for p in cmd.params if getattr(p, "help", None)]
    # Rich markup eats "[rules]" and "[default: 3]": a help text must read the same as markup.
    for text in texts:
        assert Text.from_markup(text).plain == _unescaped(text), f"{command}: markup swallows part of {text!r}"
    result = runner.invoke(app, [*words, "--help"])
    assert result.exit_code == 0, result.output
    shown = _panel_text(result.stdout)
    for text in texts:
        assert _flat(_unescaped(text)) in shown, f"{command} --help lost words of {text!r}"
    if cmd.help:
        assert _flat(cmd.help.splitlines()[0]) in shown
    for artefact in ("( ", " ,", " .", "()"):
        assert artefact not in shown, f"{command} --help shows {artefact!r}: {shown}"


def test_bracketed_words_and_defaults_are_shown() -> None:
    match_help = _panel_text(runner.invoke(app, ["match", "--help"]).stdout)
    assert "its [rules] table" in match_help
    new_help = _panel_text(runner.invoke(app, ["tournament", "new", "--help"]).stdout)
    assert "[tournament], [rules], [time_control] and [limits] tables" in new_help
    for words in ("Seats per table (2 to 9). [default: 2]", "every seat rotation. [default: 10]", "ms (1 to 3600000). [default: 250]"):
        assert words in new_help
    replay_help = _panel_text(runner.invoke(app, ["replay", "--help"]).stdout)
    assert "TABLE/dDEAL/rROTATION" in replay_help and "r1/t2/g1" not in replay_help
    assert "A folder exits with its most serious problem: 1 if any log (or database row) diverges" in replay_help


# ---------------------------------------------------------------- numbers (issue 12, item 7)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "0"], "--games must be a whole number from 1 to 100000, got 0"),
        (["-n", "-1"], "--games must be a whole number from 1 to 100000, got -1"),
        (["-j", "0"], "--jobs must be a whole number of at least 1, got 0"),
    ],
)
def test_demo_with_bad_numbers_names_the_option_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    # The demo's folder goes under the temporary folder: here, so that anything left shows.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = runner.invoke(app, ["demo", *args])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert message in _flat(result.stderr) and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == [], "the demo left a folder behind"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--games", "0"], "--games must be a whole number from 1 to 100000, got 0"),
        (["-k", "1"], "--table-size must be a whole number from 2 to 9, got 1"),
        (["--table-size", "10"], "--table-size must be a whole number from 2 to 9, got 10"),
        (["--seed", "-1"], "--seed must be a whole number from 0 to 2**64-1, got -1"),
        (["--budget-ms", "0"], "--budget-ms must be a whole number from 1 to 3600000, got 0"),
        (["--bank-ms", "-1"], "--bank-ms must be a whole number from 0 to 3600000, got -1"),
        (["--grace-ms", "3600001"], "--grace-ms must be a whole number from 0 to 3600000, got 3600001"),
        (["--max-strikes", "0"], "--max-strikes must be a whole number from 1 to 1000, got 0"),
        (["--memory-mb", "1"], "--memory-mb must be a whole number from 64 to 1048576, got 1"),
        (["--max-processes", "0"], "--max-processes must be a whole number from 8 to 100000, got 0"),
    ],
)
def test_tournament_new_with_bad_numbers(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["tournament", "new", str(tmp_path / "t"), *args])
    assert result.exit_code == 2, result.output
    assert message in _flat(result.stderr) and "Traceback" not in result.output
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tournament", "run", "{t}", "-j", "0"], "--jobs must be a whole number of at least 1, got 0"),
        (["tournament", "run", "{t}", "--jobs", "-3"], "--jobs must be a whole number of at least 1, got -3"),
        (["match", "greedy", "random", "--bank-ms", "-1"], "--bank-ms must be a whole number from 0 to 3600000, got -1"),
        (["match", "greedy", "random", "--max-strikes", "-3"], "--max-strikes must be a whole number from 1 to 1000, got -3"),
        (["match", "greedy", "random", "--memory-mb", "0"], "--memory-mb must be a whole number from 64 to 1048576, got 0"),
        (["replay", "{log}", "--seat", "-1"], "--seat -1: the match has seats 0 to 2"),
        (["replay", "{log}", "--round", "0"], "--round 0: the log has rounds 1 to"),
        (["replay", "{log}", "--bot-output", "-1"], "--bot-output -1: the match has seats 0 to 2"),
    ],
)
def test_other_commands_with_bad_numbers(tmp_path: Path, args: list[str], message: str) -> None:
    log = write_fixture(tmp_path / "m.jsonl", STANDARD)
    with TournamentStore.create(tmp_path / "t", TournamentSettings(games=1, seed=1)):
        pass
    result = runner.invoke(app, [a.format(t=tmp_path / "t", log=log) for a in args])
    assert result.exit_code == 2, result.output
    assert message in _flat(result.stderr) and "Traceback" not in result.output


# ---------------------------------------------------------------- reproducible matches (item 6)

_TIMINGS = ("latencyUs", "totalLatencyUs", "maxLatencyUs")


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _log_of(path: Path) -> list[Any]:
    return [_without_timings(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def _hints(stderr: str) -> tuple[str, str]:
    """The command that plays the match again, and the one that replays its log."""
    again = next(line for line in stderr.splitlines() if line.startswith("play the same match again: "))
    see = next(line for line in stderr.splitlines() if line.startswith("see it turn by turn: "))
    return again.removeprefix("play the same match again: "), see.removeprefix("see it turn by turn: ")


def test_the_same_seed_plays_the_same_match_with_the_random_bot(tmp_path: Path) -> None:
    first = _run(["match", "greedy", "random", "--seed", "11"], tmp_path)
    assert first.returncode == 0, first.stderr
    again, see = _hints(first.stderr)
    # The hint is the command itself, word for word, and says nothing of "replay".
    assert again == "thirtyone match greedy random --seed 11"
    assert "replay" not in again and see.startswith("thirtyone replay ")
    second = _run(shlex.split(again)[1:], tmp_path)
    assert second.returncode == 0, second.stderr
    logs = sorted(tmp_path.glob("thirtyone-match-*.jsonl"))
    # The second run does not overwrite the first one's log.
    assert [p.name for p in logs] == [f"thirtyone-match-{seeded_match_id(11)}-2.jsonl", f"thirtyone-match-{seeded_match_id(11)}.jsonl"]
    assert Path(shlex.split(see)[-1]) == logs[1]
    a, b = (_log_of(p) for p in reversed(logs))
    assert a[0]["header"]["matchId"] == seeded_match_id(11) != "11"
    assert len(a) > 10 and a == b


def test_the_hint_repeats_every_option_given(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    result = runner.invoke(
        app, ["match", "first=greedy", "random", "--rule", "lives=1", "--rule", "bus=false", "--budget-ms", "900", "--log", str(log)]
    )
    assert result.exit_code == 0, result.output
    again, see = _hints(result.stderr)
    seed = read_seed(log)
    assert again == f"thirtyone match first=greedy random --rule lives=1 --rule bus=false --budget-ms 900 --seed {seed}"
    assert see == f"thirtyone replay {log}"


def read_seed(log: Path) -> int:
    """The seed in a log's header."""
    return int(json.loads(log.read_text(encoding="utf-8").splitlines()[0])["header"]["seed"])


def test_seeded_match_ids() -> None:
    assert seeded_match_id(11) == seeded_match_id(11) != seeded_match_id(12)
    assert len(seeded_match_id(2**64 - 1)) == 16 and str(11) not in seeded_match_id(11)
    with pytest.raises(ValueError, match="0 to 2"):
        seeded_match_id(-1)


# ---------------------------------------------------------------- plurals, standings, pipes (item 15)


def test_piped_match_summary_keeps_whole_headers_and_says_1_round(tmp_path: Path) -> None:
    done = _run(
        ["match", "the_first_bot_with_a_long_name=greedy", "the_second_bot_with_a_long_name=random",
         "--rule", "lives=1", "--rule", "bus=false", "--seed", "3"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "…" not in done.stdout
    for header in ("decisions", "mean ms", "max ms", "bank left", "the_second_bot_with_a_long_name", "tokens after"):
        assert header in done.stdout
    assert " · 1 round · " in done.stdout and "(3 strikes)" in done.stderr


def _fresh_tournament(folder: Path, bots: list[str]) -> Path:
    with TournamentStore.create(folder, TournamentSettings(table_size=2, games=1, seed=5)) as store:
        for name in bots:
            store.add_bot(entry(name, "sample", "random"))
    return folder


def test_standings_before_any_match(tmp_path: Path) -> None:
    fresh = _fresh_tournament(tmp_path / "fresh", [])
    shown = runner.invoke(app, ["standings", str(fresh)])
    assert shown.exit_code == 0, shown.output
    text = _flat(shown.stdout)
    assert "(0 matches)" in text and "no matches yet: tables of 2 need at least 2 bots" in text
    assert "not started: no matches scheduled yet" in text and "Head to head" not in text


def test_piped_standings_keep_whole_headers(tmp_path: Path) -> None:
    names = ["a_bot_whose_name_takes_forty_characters", "another_bot_with_a_name_of_forty_chars_"]
    folder = _fresh_tournament(tmp_path / "t", names)
    done = _run(["standings", str(folder)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    for word in ("win (95% CI)", "lives/rd", "T/C/I/M/S", *names, "incomplete: 0 of 2 matches played", "no matches yet"):
        assert word in done.stdout
    # Each caption line is whole too (no wrapping at 80 columns).
    assert "timeouts/crashes/illegal/malformed/failed starts" in done.stdout


@pytest.mark.parametrize(
    ("played", "scheduled", "expected"),
    [
        (0, 1, "incomplete: 0 of 1 match played"),
        (1, 1, "complete: the one scheduled match played"),
        (3, 5, "incomplete: 3 of 5 matches played"),
        (5, 5, "complete: all 5 scheduled matches played"),
        (0, 0, "not started: no matches scheduled yet (too few bots for a table)"),
    ],
)
def test_progress_in_words(played: int, scheduled: int, expected: str) -> None:
    from referee.tournament.standings import Standings

    assert Standings([], {}, played, scheduled, played).progress == expected


def test_plurals_of_settings() -> None:
    one = TournamentSettings(table_size=3, games=1).describe()
    assert "1 deal/table" in one and "10 deals/table" in TournamentSettings().describe()


# ---------------------------------------------------------------- replay --verify's exit code (item 13)


def test_verify_exit_code_of_a_folder_with_several_problems(tmp_path: Path) -> None:
    good = write_fixture(tmp_path / "good.jsonl", STANDARD).read_text(encoding="utf-8").splitlines()
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "incomplete.jsonl").write_text("".join(line + "\n" for line in good[:-1]), encoding="utf-8")
    (folder / "unreadable.jsonl").write_text("this is not a match log\n", encoding="utf-8")
    footer = json.loads(good[-1])
    footer["footer"]["rounds"] += 1
    diverged = [*good[:-1], json.dumps(footer)]
    (folder / "diverged.jsonl").write_text("".join(line + "\n" for line in diverged), encoding="utf-8")

    def verify() -> tuple[int, str]:
        result = runner.invoke(app, ["replay", "--verify", str(folder)])
        return result.exit_code, _flat(result.stdout)

    code, shown = verify()
    assert code == 1 and "3 logs: 0 ok, 1 diverged, 1 unreadable, 1 incomplete" in shown
    (folder / "diverged.jsonl").unlink()
    assert verify()[0] == 2  # unreadable outranks incomplete
    (folder / "unreadable.jsonl").unlink()
    code, shown = verify()
    assert code == 3 and "1 log: 0 ok, 0 diverged, 0 unreadable, 1 incomplete" in shown
