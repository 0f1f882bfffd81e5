"""Imports every command module so that each registers its commands on the app."""

from __future__ import annotations

from referee.cli import (
    analyse,  # noqa: F401  (thirtyone analyse: each decision's cost, the luck of the cards)
    arena,  # noqa: F401  (thirtyone arena ...: the arena service)
    bot,  # noqa: F401  (thirtyone bot ...)
    check,  # noqa: F401  (thirtyone check-bot)
    doctor,  # noqa: F401  (thirtyone doctor)
    match,  # noqa: F401  (thirtyone match)
    remote,  # noqa: F401  (thirtyone remote ...: a client of an arena service)
    replay,  # noqa: F401  (thirtyone replay)
    serve,  # noqa: F401  (thirtyone serve: the web viewer)
    sprt,  # noqa: F401  (thirtyone sprt)
    tournament,  # noqa: F401  (thirtyone tournament, submit, bots, withdraw, standings, demo)
)
from referee.cli.app import app, reflow_help

# Once every command is registered: their docstrings become help the terminal can wrap.
reflow_help(app)
