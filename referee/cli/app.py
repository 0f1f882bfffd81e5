"""The root Typer app; each command module registers itself here."""

from __future__ import annotations

import typer

from referee import __version__

app = typer.Typer(
    name="thirtyone",
    help="A bot arena for the card game 31 (Scat, Blitz, Ride the Bus).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"thirtyone {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
) -> None:
    """A bot arena for the card game 31 (Scat, Blitz, Ride the Bus)."""


def main() -> None:
    """Entry point of the ``thirtyone`` console script."""
    # Command modules are imported for their side effect of adding commands to `app`.
    from referee.cli import commands  # noqa: F401

    app()
