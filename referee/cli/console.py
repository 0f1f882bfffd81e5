"""Shared rich consoles: results on stdout, diagnostics on stderr."""

from __future__ import annotations

from typing import NoReturn

from rich.console import Console

out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that names the problem, then exit with ``code``."""
    import typer

    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)
