"""The ``thirtyone`` command line: a Typer app, one module per command group.

Rich and Typer live only in this package.
"""

from __future__ import annotations

from referee.cli.app import app, main

__all__ = ["app", "main"]
