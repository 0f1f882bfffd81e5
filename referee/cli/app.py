"""The root Typer app; each command module registers itself here."""

from __future__ import annotations

import inspect
from typing import Any

import typer
import typer.core

from referee import __version__
from referee.cli.console import fail_on
from referee.faults import RefereeError


class _Root(typer.core.TyperGroup):
    """The root command: a referee error that a command lets through becomes its message
    and an exit code in one place (:func:`fail_on`), never a traceback."""

    # Typer carries its own copy of click, whose Context it does not export: hence Any.
    def invoke(self, ctx: Any) -> Any:
        """Run the chosen command; a :class:`RefereeError` from it exits through :func:`fail_on`."""
        try:
            return super().invoke(ctx)
        except RefereeError as e:
            fail_on(e)


app = typer.Typer(
    cls=_Root,
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


def _flag_shows_no_type() -> None:
    # Newer Typer prints a type beside every option, flags too ("--no-open <bool>",
    # "--help <bool>"), which reads as if the flag took a value; a flag takes none.
    option: Any = typer.core.TyperOption
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "_flags_plain", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if self.is_flag and not self.count:
            return None
        return shown(self, ctx)  # type: ignore[no-any-return]

    display_type_rich._flags_plain = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich


_flag_shows_no_type()


def reflow(doc: str | None) -> str | None:
    """``doc`` with each paragraph on one line, so that the terminal wraps it at its own width
    (Typer's rich help keeps the docstring's line breaks, which then break again at 80
    columns). A paragraph starting with ``\\b`` or holding an indented line stays as written."""
    if doc is None:
        return None
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") or any(line.startswith(" ") for line in p.splitlines()) else " ".join(p.split("\n"))
        for p in paragraphs
    )


def reflow_help(group: typer.Typer) -> None:
    """Give every command of ``group`` (and of its sub-groups) that takes its help from its
    docstring the docstring :func:`reflow`-ed."""
    for command in group.registered_commands:
        if command.help is None and command.callback is not None:
            command.help = reflow(command.callback.__doc__)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            reflow_help(sub.typer_instance)


def main() -> None:
    """Entry point of the ``thirtyone`` console script."""
    # Command modules are imported for their side effect of adding commands to `app`.
    from referee.cli import commands  # noqa: F401

    app()
