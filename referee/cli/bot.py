"""``thirtyone bot ...``: tools for bot authors.

``bot new`` scaffolds a bot and its test; ``bot test`` runs that test's checks on a bot file
with nothing but the plain install (no pytest): the harness plays it in-process against the
sample bots under every preset and several table sizes, and any illegal move or exception
fails the check with the reason.
"""

from __future__ import annotations

import importlib.util
import inspect
import keyword
import re
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from referee.cli.app import app
from referee.cli.console import err, fail, out

if TYPE_CHECKING:
    from sdk import Bot

bot_app = typer.Typer(help="Write bots: scaffold a new one, check one locally.", no_args_is_help=True)
app.add_typer(bot_app, name="bot")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Module names a bot file next to its test must not take: importing them would pick up the
# bot file instead of the real package, and break the bot or pytest in confusing ways.
_TAKEN = frozenset({"sdk", "referee", "sample_bots", "thirtyone", "grpc", "google", "typer", "rich", "pytest", "conftest"})

_BOT_TEMPLATE = '''\
"""{name}: a Thirty-One bot.

Serve it:   python {name}.py            (listens on 127.0.0.1:50031, or --address ADDR)
Test it:    thirtyone bot test {name}.py    (or: python test_{name}.py)
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
        # The dealer's option (dealer_option=true): swap for the up-card if that helps.
        if view.is_dealer_option:
            card, value = view.best_upcard_swap()
            return sdk.swap_upcard(card) if value > view.value else sdk.PASS
        # Knock with a good hand (when the rules allow it).
        if view.can(sdk.KNOCK) and view.value >= 25:
            return sdk.KNOCK
        # The widow game (draw="widow"): no stock; swap with the widow, as well as can be.
        if view.widow_game:
            hand_card, widow_card, _value = view.best_widow_swap()
            return sdk.swap_widow(hand_card, widow_card)
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
"""Plays {name} locally against the sample bots: every preset, several table sizes.

Run it with plain Python, ``python test_{name}.py`` (``thirtyone bot test {name}.py`` runs
the same checks), or with pytest if you have it: ``python -m pytest test_{name}.py``.
"""

from __future__ import annotations

from sample_bots import check_bot, load
from sdk.harness import play_match

from {name} import {cls}


def test_plays_legal_matches() -> None:
    # Every preset and variant at 2, 4 and 6 seats, 5 matches each. The harness
    # raises IllegalMoveError, naming the action and the reason, on a bad move.
    check_bot({cls}, matches=5)


def test_one_match() -> None:
    outcome = play_match([{cls}, load("greedy")], seed=7)
    assert sorted(outcome.placings) in ([1, 2], [1, 1])


if __name__ == "__main__":
    check_bot({cls}, matches=5, report=print)
    test_one_match()
    print("test_{name}: all checks passed")
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
        f"next: [bold]thirtyone bot test {escape(str(bot_file))}[/], then "
        f"[bold]python {escape(str(bot_file))}[/] to serve it",
        highlight=False,
        soft_wrap=True,
    )


def load_bot_class(path: Path, class_name: str | None = None) -> type[Bot]:
    """The :class:`sdk.Bot` subclass defined in the Python file ``path``.

    The file is imported as a module named after it (not as ``__main__``, so its
    ``sdk.run`` does not start a server), with its folder first on ``sys.path`` so that it
    can import its neighbours. Without ``class_name`` the file must define exactly one bot
    class. Raises ``ValueError`` naming the problem; the file's own errors propagate.
    """
    from sdk import Bot

    if path.suffix != ".py":
        raise ValueError(f"{path} is not a Python file (.py)")
    if not path.is_file():
        raise ValueError(f"no such file {path}")
    taken = sys.modules.get(path.stem)
    if taken is not None and getattr(taken, "__file__", None) != str(path.resolve()):
        # Importing it under that name would replace (or be) another module: sdk, random...
        raise ValueError(f"{path.name} has the name of the Python module {path.stem!r}; rename the file")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # as `from my_bot import MyBot` in its test would see it
    spec.loader.exec_module(module)
    found = {
        name: value
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, Bot)
        and value.__module__ == module.__name__
        and not inspect.isabstract(value)
    }
    if class_name is not None:
        if class_name not in found:
            known = ", ".join(sorted(found)) or "none"
            raise ValueError(f"{path} defines no bot class {class_name!r} (bot classes: {known})")
        return found[class_name]
    if not found:
        raise ValueError(f"{path} defines no sdk.Bot subclass (a class MyBot(sdk.Bot) with an act method)")
    if len(found) > 1:
        raise ValueError(f"{path} defines several bot classes ({', '.join(sorted(found))}); choose one with --class")
    return next(iter(found.values()))


@bot_app.command("test")
def check(
    file: Annotated[Path, typer.Argument(help="The bot's Python file, e.g. my_bot.py.")],
    class_name: Annotated[
        str | None, typer.Option("--class", help="The bot class to check, if the file defines several.")
    ] = None,
    matches: Annotated[int, typer.Option("--matches", "-n", min=1, help="Matches per rules and table size.")] = 5,
) -> None:
    """Check a bot locally, no pytest needed: the checks of the test `bot new` writes.

    Plays FILE's bot in-process against the sample bots under the presets standard, pagat,
    family, cadillac and bicycle and each variant option on its own (dealer_option,
    under_the_gun, dummy, widow, pot) at 2, 4 and 6 seats; an illegal move or an exception
    fails with the reason.
    """
    from sample_bots import check_bot  # the SDK's checks, against the sample bots by name
    from sdk.harness import (
        CHECK_PRESETS,
        CHECK_TABLE_SIZES,
        CHECK_VARIANTS,
        IllegalMoveError,
    )

    try:
        cls = load_bot_class(file, class_name)
    except ValueError as e:
        fail(str(e))
    except SyntaxError as e:
        # The message and the offending line with its caret; importlib's frames say nothing.
        err.print("".join(traceback.format_exception_only(e)).rstrip(), markup=False, highlight=False, soft_wrap=True)
        where = f", line {e.lineno}" if e.lineno else ""
        fail(f"{file}{where}: {type(e).__name__}: {e.msg}", code=1)
    except Exception as e:  # the file's own import-time error: show it as Python would
        _print_traceback(e, skip_ours=True)
        fail(f"{file}: importing it raised {type(e).__name__}: {e}", code=1)
    cases = (len(CHECK_PRESETS) + len(CHECK_VARIANTS)) * len(CHECK_TABLE_SIZES)
    out.print(
        f"checking {cls.__name__} from {file}: presets {', '.join(CHECK_PRESETS)} and variants "
        f"{', '.join(CHECK_VARIANTS)} at "
        f"{', '.join(map(str, CHECK_TABLE_SIZES))} players against the sample bots, {matches} matches each",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    try:
        check_bot(
            cls,
            matches=matches,
            report=lambda line: out.print(f"  ok  {line}", markup=False, highlight=False, soft_wrap=True),
        )
    except IllegalMoveError as e:
        # The message says what was played, why it is illegal and the hand; the harness's
        # own frames would only hide that.
        notes = "".join(f"\n{n}" for n in getattr(e, "__notes__", ()))
        fail(f"{cls.__name__} failed its checks: {e}{notes}", code=1)
    except Exception as e:
        # The traceback shows the bot's line; the notes say which match, round and turn.
        _print_traceback(e)
        fail(f"{cls.__name__} failed its checks: {type(e).__name__}: {e}", code=1)
    out.print(f"all {cases} checks passed", markup=False, highlight=False)


def _print_traceback(e: BaseException, *, skip_ours: bool = False) -> None:
    if skip_ours:
        # Only the bot's own frames: the referee's and importlib's come before them.
        tb = e.__traceback__
        while tb is not None and (
            tb.tb_frame.f_code.co_filename.startswith("<frozen") or tb.tb_frame.f_code.co_filename == __file__
        ):
            tb = tb.tb_next
        e = e.with_traceback(tb)
    err.print("".join(traceback.format_exception(e)).rstrip(), markup=False, highlight=False, soft_wrap=True)
