"""``thirtyone bot new``: the scaffolded bot runs as written, and its test passes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from thirtyone.v1 import bot_pb2
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401 - registers the command groups
from referee import wire
from referee.cli import app
from tests.sdk.helpers import start_bot

runner = CliRunner()


def test_scaffolded_bot_passes_its_test_and_serves(tmp_path: Path) -> None:
    result = runner.invoke(app, ["bot", "new", "zed_bot", "--dir", str(tmp_path / "bots")])
    assert result.exit_code == 0, result.output
    bot_file = tmp_path / "bots" / "zed_bot.py"
    test_file = tmp_path / "bots" / "test_zed_bot.py"
    assert bot_file.is_file() and test_file.is_file()
    assert "class ZedBot(sdk.Bot)" in bot_file.read_text()

    # Its generated test, run by pytest as the author would, from the bot's folder.
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file.name],
        cwd=bot_file.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert " passed" in tested.stdout

    # `python zed_bot.py` serves it.
    bot = start_bot([sys.executable, bot_file.name], cwd=bot_file.parent)
    try:
        ident = wire.identity_from_pb(bot.stub.GetIdentity(bot_pb2.GetIdentityRequest(protocol_version=1), timeout=5))
        assert ident.name == "zed_bot"
        assert bot.terminate() == 0
    finally:
        bot.close()


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text("# mine\n")
    result = runner.invoke(app, ["bot", "new", "mine", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "already exists" in result.output
    assert (tmp_path / "test_mine.py").read_text() == "# mine\n"
    assert not (tmp_path / "mine.py").exists()


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("9lives", "not a valid name"),
        ("my-bot", "not a valid name"),
        ("class", "keyword"),
        ("random", "shadow"),
        ("sdk", "shadow"),
        ("test_x", "pytest"),
    ],
)
def test_rejects_bad_names(tmp_path: Path, name: str, why: str) -> None:
    result = runner.invoke(app, ["bot", "new", name, "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert why in result.output.replace("\n", " ")
    assert list(tmp_path.iterdir()) == []


def _without_pytest(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import pytest`` fails, as after the README's plain install."""
    blocker = tmp_path / "no_pytest" / "pytest"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pytest is not installed (a test of the plain install)')\n")
    path = os.pathsep.join(p for p in (str(blocker.parent), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}


def test_scaffolded_bot_is_checked_without_pytest(tmp_path: Path) -> None:
    # Issue #12, item 14: the README tour after `pip install -e .` (no pytest): scaffold a bot,
    # then `thirtyone bot test my_bot.py`, and the test file also runs as `python test_my_bot.py`.
    exe = str(Path(sys.executable).with_name("thirtyone"))
    env = _without_pytest(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    made = subprocess.run([exe, "bot", "new", "tour_bot"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert "thirtyone bot test tour_bot.py" in made.stderr  # the next step it suggests

    checked = subprocess.run(
        [exe, "bot", "test", "tour_bot.py"], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for preset in ("standard", "pagat", "family", "cadillac", "bicycle", "standard + dummy=true"):
        for players in (2, 4, 6):
            assert f"ok  {preset}, {players} players: 5 matches" in checked.stdout
    assert "all 30 checks passed" in checked.stdout

    plain = subprocess.run(
        [sys.executable, "test_tour_bot.py"], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "test_tour_bot: all checks passed" in plain.stdout


def test_bot_test_fails_with_the_reason(tmp_path: Path) -> None:
    # A bot that always knocks: illegal after a draw, and under the first-turn knock ban.
    (tmp_path / "knocker_bot.py").write_text(
        textwrap.dedent(
            """\
            import sdk


            class KnockerBot(sdk.Bot):
                name = "knocker"

                def act(self, view: sdk.View) -> sdk.Action:
                    return sdk.KNOCK
            """
        )
    )
    result = runner.invoke(app, ["bot", "test", str(tmp_path / "knocker_bot.py"), "-n", "1"])
    assert result.exit_code == 1, result.output
    text = " ".join(result.stderr.split())
    assert "KnockerBot failed its checks" in text
    assert "bot 'knocker' (seat" in text and "played knock" in text
    assert "while checking: preset 'standard', 2 players" in text


def test_bot_test_names_a_file_without_a_bot(tmp_path: Path) -> None:
    (tmp_path / "helpers_only.py").write_text("VALUE = 1\n")
    result = runner.invoke(app, ["bot", "test", str(tmp_path / "helpers_only.py")])
    assert result.exit_code == 2
    assert "defines no sdk.Bot subclass" in " ".join(result.stderr.split())
    result = runner.invoke(app, ["bot", "test", str(tmp_path / "missing.py")])
    assert result.exit_code == 2
    assert "no such file" in result.stderr
