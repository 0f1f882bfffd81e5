"""``thirtyone bot ...``: tools for bot authors (``bot new`` scaffolds a bot and its test)."""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from referee.cli.app import app
from referee.cli.console import err, fail, out

bot_app = typer.Typer(help="Write bots: scaffold a new one.", no_args_is_help=True)
app.add_typer(bot_app, name="bot")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Module names a bot file next to its test must not take: importing them would pick up the
# bot file instead of the real package, and break the bot or pytest in confusing ways.
_TAKEN = frozenset({"sdk", "referee", "sample_bots", "thirtyone", "grpc", "google", "typer", "rich", "pytest", "conftest"})

_BOT_TEMPLATE = '''\
"""{name}: a Thirty-One bot.

Serve it:   python {name}.py            (listens on 127.0.0.1:50031, or --address ADDR)
Test it:    python -m pytest test_{name}.py
Play it:    thirtyone match ./{name}.py greedy
"""

from __future__ import annotations

import sdk


class {cls}(sdk.Bot):
    """Greedy to start with: make it yours."""

    name = "{name}"
    version = "0.1.0"
    author = ""

    def act(self, view: sdk.View) -> sdk.Action:
        # After a draw: discard the card that leaves the best three.
        if view.must_discard:
            card, _value = view.best_discard()
            return sdk.discard(card)
        # Knock with a good hand (when the rules allow it).
        if view.can(sdk.KNOCK) and view.value >= 25:
            return sdk.KNOCK
        # Take the top discard only if it improves the hand.
        top = view.top_discard
        if top is not None and view.can(sdk.DRAW_DISCARD) and view.value_with(top) > view.value:
            return sdk.DRAW_DISCARD
        if view.can(sdk.DRAW_STOCK):
            return sdk.DRAW_STOCK
        # Empty stock under the showdown rule: taking the discard did not help, so pass.
        return sdk.PASS


if __name__ == "__main__":
    sdk.run({cls})
'''

_TEST_TEMPLATE = '''\
"""Plays {name} locally against the sample bots: every preset, several table sizes."""

from __future__ import annotations

import pytest

from sample_bots import load
from sdk.harness import play_match, play_matches

from {name} import {cls}


@pytest.mark.parametrize("preset", ["standard", "pagat", "family"])
@pytest.mark.parametrize("players", [2, 4, 6])
def test_plays_legal_matches(preset: str, players: int) -> None:
    # The harness raises IllegalMoveError, naming the action and the reason, on a bad move.
    opponents = [load("greedy"), load("random"), load("threshold")]
    bots = [{cls}] + [opponents[i % 3] for i in range(players - 1)]
    series = play_matches(bots, n=5, rules=preset)
    assert len(series.outcomes) == 5


def test_one_match() -> None:
    outcome = play_match([{cls}, load("greedy")], seed=7)
    assert sorted(outcome.placings) in ([1, 2], [1, 1])
'''


def _class_name(name: str) -> str:
    camel = "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)
    return camel if camel.lower().endswith("bot") else camel + "Bot"


def check_name(name: str) -> str | None:
    """Why ``name`` cannot be a bot's module name, or None if it can."""
    if not _NAME.match(name):
        return f"{name!r} is not a valid name: use letters, digits and underscores, not starting with a digit (e.g. my_bot)"
    if keyword.iskeyword(name):
        return f"{name!r} is a Python keyword"
    if name in sys.stdlib_module_names or name in _TAKEN:
        return f"{name!r} would shadow the Python module {name!r} when the bot runs; pick another name"
    if name.startswith("test_"):
        return f"{name!r} starts with 'test_', which pytest would collect as a test file"
    return None


def scaffold(name: str, directory: Path) -> tuple[Path, Path]:
    """Write ``NAME.py`` and ``test_NAME.py`` into ``directory``; refuse to overwrite.

    Raises ``ValueError`` for a bad name and ``FileExistsError`` naming a file in the way.
    """
    problem = check_name(name)
    if problem:
        raise ValueError(problem)
    bot_file = directory / f"{name}.py"
    test_file = directory / f"test_{name}.py"
    for f in (bot_file, test_file):
        if f.exists():
            raise FileExistsError(f"{f} already exists; not overwriting it")
    cls = _class_name(name)
    directory.mkdir(parents=True, exist_ok=True)
    bot_file.write_text(_BOT_TEMPLATE.format(name=name, cls=cls), encoding="utf-8")
    test_file.write_text(_TEST_TEMPLATE.format(name=name, cls=cls), encoding="utf-8")
    return bot_file, test_file


@bot_app.command("new")
def new(
    name: Annotated[str, typer.Argument(help="The bot's name, a Python identifier such as my_bot.")],
    directory: Annotated[
        Path,
        typer.Option("--dir", "-d", help="Where to write the files (created if missing).", show_default="the current folder"),
    ] = Path("."),
) -> None:
    """Scaffold NAME.py (a bot that runs as written) and test_NAME.py (a local test of it)."""
    try:
        bot_file, test_file = scaffold(name, directory)
    except (ValueError, FileExistsError) as e:
        fail(str(e))
        return
    for f in (bot_file, test_file):
        out.print(f"created {escape(str(f))}", highlight=False, soft_wrap=True)
    err.print(
        f"next: [bold]python -m pytest {escape(str(test_file))}[/], then "
        f"[bold]python {escape(str(bot_file))}[/] to serve it",
        highlight=False,
        soft_wrap=True,
    )
