"""Shared rich consoles: results on stdout, diagnostics on stderr."""

from __future__ import annotations

import os
from typing import NoReturn

from rich.console import Console, ConsoleDimensions
from rich.markup import escape

from referee.faults import RefereeError
from referee.text import printable

#: The width output gets when it goes to a pipe or a file and COLUMNS does not say otherwise.
PIPE_WIDTH = 240


class _Console(Console):
    """A console that, writing to a pipe or a file, is :data:`PIPE_WIDTH` wide.

    Rich would assume 80 columns there (or the width of a terminal the process happens to have
    on another stream), and squeeze table headers into ``decisi…``; a reader of piped output,
    person or program, wants the whole words. COLUMNS, when set, still decides.
    """

    @property
    def size(self) -> ConsoleDimensions:
        """The console's size: as rich decides on a terminal, wide on a pipe or a file."""
        size = super().size
        if self._width is None and not self.is_terminal and "COLUMNS" not in os.environ:
            return ConsoleDimensions(PIPE_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


out = _Console()
err = _Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that names the problem, then exit with ``code``."""
    import typer

    # Messages carry text from users, bots and logs (names, paths, exception text): never
    # markup, and never a terminal escape (printable keeps only the message's own lines).
    err.print(f"[bold red]error:[/] {escape(printable(message, keep=chr(10)))}", highlight=False)
    raise typer.Exit(code)


#: The exit code of a command stopped by a referee error (bad input, an unusable folder or
#: bot): the code :func:`fail` gives by default.
ERROR_EXIT = 2


def fail_on(e: RefereeError) -> NoReturn:
    """The command line's one mapping of the referee's errors: print the error's message,
    exit with :data:`ERROR_EXIT`.

    The root command calls it for any :class:`RefereeError` a command lets through, so a
    command catches an error itself only to say more (a hint, the bot's name) or to exit
    with another code.
    """
    fail(str(e), ERROR_EXIT)
