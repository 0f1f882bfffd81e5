"""Sample bots, each runnable as ``python -m sample_bots.NAME``, and a registry of them.

They are the SDK's best documentation: short, commented, typed.

- ``random``: a uniformly random legal action (reproducible per match and seat).
- ``greedy``: takes the discard only when it helps, keeps the best three, knocks at 22.
- ``threshold``: greedy, with the knock threshold set by table size, and it never feeds the
  next player a suit it is visibly collecting.
- ``montecarlo``: searches: guesses the hidden cards many times, plays each action out on
  the game model, and picks the best (see ``sample_bots/montecarlo.py``).

The referee resolves a bare name such as ``greedy`` with :func:`command`; tests and the
harness use the classes in-process through :func:`load`, and :func:`check_bot` runs the SDK's
checks of a bot against them (the harness itself knows no bots by name). Modules are imported lazily, so
that ``python -m sample_bots.greedy`` runs its module once, as ``__main__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from referee.game import Rules
    from sdk import Bot
    from sdk.bot import BotSource
    from sdk.harness import Series

#: Sample bot name -> its class in ``sample_bots.<name>``.
_CLASSES: dict[str, str] = {
    "random": "RandomBot",
    "greedy": "GreedyBot",
    "threshold": "ThresholdBot",
    "montecarlo": "MonteCarloBot",
}

#: The sample bots' names.
NAMES: tuple[str, ...] = tuple(_CLASSES)

#: The sample bots :func:`check_bot` seats against yours, in turn.
CHECK_OPPONENTS: tuple[str, ...] = ("greedy", "random", "threshold")


def _check(name: str) -> None:
    if name not in _CLASSES:
        raise LookupError(f"no sample bot {name!r}; sample bots are: {', '.join(NAMES)}")


def load(name: str) -> type[Bot]:
    """The class of sample bot ``name`` (e.g. ``load("greedy")``)."""
    _check(name)
    cls: type[Bot] = getattr(importlib.import_module(f"{__name__}.{name}"), _CLASSES[name])
    return cls


def load_all() -> dict[str, type[Bot]]:
    """Every sample bot's class, by name."""
    return {name: load(name) for name in NAMES}


def module(name: str) -> str:
    """The module that serves sample bot ``name`` (``sample_bots.greedy``)."""
    _check(name)
    return f"{__name__}.{name}"


def command(name: str) -> list[str]:
    """The command that starts sample bot ``name`` as a process with this Python."""
    return [sys.executable, "-m", module(name)]


def check_bot(
    bot: BotSource,
    *,
    opponents: Sequence[BotSource] | None = None,
    presets: Sequence[str] | None = None,
    variants: Mapping[str, Rules] | None = None,
    table_sizes: Sequence[int] | None = None,
    matches: int = 5,
    report: Callable[[str], object] | None = None,
) -> list[Series]:
    """:func:`sdk.harness.check_bot` against the sample bots (:data:`CHECK_OPPONENTS`,
    in turn) unless ``opponents`` are given: the checks of a scaffolded bot's test and of
    ``thirtyone bot test``. The other arguments default to the harness's."""
    from sdk import harness  # sample bots are built on the SDK: import it late

    return harness.check_bot(
        bot,
        opponents=[load(name) for name in CHECK_OPPONENTS] if opponents is None else opponents,
        presets=harness.CHECK_PRESETS if presets is None else presets,
        variants=harness.CHECK_VARIANTS if variants is None else variants,
        table_sizes=harness.CHECK_TABLE_SIZES if table_sizes is None else table_sizes,
        matches=matches,
        report=report,
    )
