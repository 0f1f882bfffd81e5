"""Shared rich consoles: results on stdout, diagnostics on stderr."""

from __future__ import annotations

from typing import NoReturn

from rich.console import Console
from rich.markup import escape

out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that names the problem, then exit with ``code``."""
    import typer

    # Messages carry text from users and bots (names, paths, exception text): never markup.
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)
