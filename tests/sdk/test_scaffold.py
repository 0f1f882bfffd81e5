"""``thirtyone bot new``: the scaffolded bot runs as written, and its test passes."""

from __future__ import annotations

import subprocess
import sys
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
