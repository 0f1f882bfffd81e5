"""Naming a bot: one syntax everywhere a bot is named (the command line, tournament files).

A bot is named by one of:

- a sample bot's name: ``greedy`` runs ``python -m sample_bots.greedy`` (the names and
  commands come from the ``sample_bots`` registry);
- a Python file: ``./my_bot.py`` runs ``python ./my_bot.py`` (another existing executable
  file runs as is);
- a command: ``"node bot.js --level 3"``, split like a shell would (no shell is run);
- the address of a bot already running: ``grpc://host:port`` or ``unix:///path/to.sock``.

Any of these may be prefixed by ``NAME=`` to name the bot, e.g. ``alice=./my_bot.py``;
the name is shown in summaries and standings instead of the bot's own.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from referee.faults import BotSpecError

SpecKind = Literal["sample", "file", "command", "address"]

# The NAME= prefix. Deliberately narrow (no spaces, slashes or colons) so that a command's own
# `--flag=value` or a path with '=' deeper in it is never mistaken for a name.
_LABEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.\-]{0,63})=(.*)", re.DOTALL)
_SAMPLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):([0-9]{1,5})")
SAMPLE_PACKAGE = "sample_bots"


@dataclass(frozen=True, slots=True)
class BotSpec:
    """A parsed bot name: how to start the bot, or where to reach it."""

    #: The text as given (with any ``NAME=`` prefix); recorded as the seat's source.
    text: str
    kind: SpecKind
    #: The ``NAME=`` prefix, if any.
    label: str | None
    #: The command that starts the bot (empty for an address).
    argv: tuple[str, ...] = ()
    #: The gRPC target of a running bot, ``host:port`` or ``unix:///path`` (empty otherwise).
    address: str = ""
    #: The directory to start the bot in (None: the referee's own).
    cwd: str | None = None

    @property
    def launched(self) -> bool:
        """Whether the referee starts this bot (False: it is already running at an address)."""
        return self.kind != "address"

    @property
    def short_name(self) -> str:
        """A name for messages before the bot has identified itself."""
        if self.label:
            return self.label
        if self.kind == "sample":
            return self.argv[-1].rpartition(".")[2]
        if self.kind == "file":
            return Path(self.argv[-1]).stem
        if self.kind == "command":
            return Path(self.argv[0]).name
        return self.address

    def __str__(self) -> str:
        return self.text


def _registry() -> object | None:
    try:
        return importlib.import_module(SAMPLE_PACKAGE)
    except ImportError:
        return None


def sample_bot_names() -> list[str]:
    """The sample bots that can be named by their name alone (sorted)."""
    registry = _registry()
    if registry is None:
        return []
    names = getattr(registry, "NAMES", None)
    if names is not None:
        return sorted(str(n) for n in names)
    # A sample package without a registry: its public modules are its bots.
    locations = getattr(registry, "__path__", None) or []
    return sorted(
        m.name for m in pkgutil.iter_modules(locations) if not m.name.startswith("_") and _SAMPLE_NAME.fullmatch(m.name)
    )


def _sample_argv(name: str) -> tuple[str, ...] | None:
    """The command of sample bot ``name``, or None if there is no such sample."""
    if not _SAMPLE_NAME.fullmatch(name) or name not in sample_bot_names():
        return None
    command = getattr(_registry(), "command", None)
    if callable(command):
        return tuple(str(word) for word in command(name))
    return (sys.executable, "-m", f"{SAMPLE_PACKAGE}.{name}")


def _python_or_executable(path: Path, given: str) -> list[str]:
    if path.suffix == ".py":
        return [sys.executable, str(path)]
    if os.access(path, os.X_OK):
        return [str(path)]
    raise BotSpecError(f"bot {given!r}: {path} is neither a .py file nor executable")


def _parse_address(text: str, rest: str, label: str | None) -> BotSpec:
    if rest.startswith("grpc://"):
        hostport = rest[len("grpc://") :].rstrip("/")
        m = _HOST_PORT.fullmatch(hostport)
        if not m or not 1 <= int(m.group(2)) <= 65535:
            raise BotSpecError(f"bot {text!r}: expected grpc://HOST:PORT with a port from 1 to 65535")
        return BotSpec(text, "address", label, address=hostport)
    path = rest[len("unix:") :]
    # unix:///abs/path and unix:/abs/path both name /abs/path.
    if path.startswith("//"):
        path = path[2:]
    if not path.startswith("/"):
        raise BotSpecError(f"bot {text!r}: a Unix socket address needs an absolute path, like unix:///tmp/bot.sock")
    return BotSpec(text, "address", label, address=f"unix://{path}")


def parse_bot_spec(text: str, *, cwd: str | os.PathLike[str] | None = None) -> BotSpec:
    """Read a bot's name (see the module doc); raise :class:`BotSpecError` naming the input.

    Files are resolved against ``cwd`` (default: the current directory) and must exist;
    a command's program must exist or be on PATH; a sample bot must be installed.
    """
    if not isinstance(text, str):
        raise BotSpecError(f"a bot is named by text, got {text!r}")
    label: str | None = None
    rest = text.strip()
    m = _LABEL.fullmatch(rest)
    if m:
        label, rest = m.group(1), m.group(2).strip()
        if not rest:
            raise BotSpecError(f"bot {text!r}: nothing after {label}=")
    if not rest:
        raise BotSpecError("empty bot name")
    base = Path(cwd) if cwd is not None else Path.cwd()
    run_in = str(cwd) if cwd is not None else None

    if rest.startswith(("grpc://", "unix:")):
        return _parse_address(text, rest, label)
    if "://" in rest.split()[0]:
        raise BotSpecError(f"bot {text!r}: unknown address scheme (use grpc://HOST:PORT or unix:///PATH)")

    # A bare sample name wins over a same-named file in the directory: `./greedy` names the file.
    sample = _sample_argv(rest)
    if sample is not None:
        return BotSpec(text, "sample", label, sample, cwd=run_in)
    path = base / os.path.expanduser(rest)
    if path.is_file():
        return BotSpec(text, "file", label, tuple(_python_or_executable(Path(os.path.abspath(path)), text)), cwd=run_in)
    if path.is_dir():
        raise BotSpecError(f"bot {text!r}: {path} is a directory, not a bot file")

    if not any(ch.isspace() for ch in rest):
        if "/" in rest or rest.endswith(".py"):
            raise BotSpecError(f"bot {text!r}: no such file {path}")
        if shutil.which(rest) is not None:
            return BotSpec(text, "command", label, (rest,), cwd=run_in)
        samples = sample_bot_names()
        known = ", ".join(samples) if samples else "none installed"
        raise BotSpecError(
            f"unknown bot {rest!r}: not a sample bot (samples: {known}), not a file, not a command "
            "on PATH, not an address (grpc://HOST:PORT, unix:///PATH)"
        )

    try:
        argv = shlex.split(rest)
    except ValueError as e:
        raise BotSpecError(f"bot {text!r}: cannot split the command ({e})") from None
    program = argv[0]
    program_path = base / os.path.expanduser(program)
    if "/" in program:
        if not program_path.is_file():
            raise BotSpecError(f"bot {text!r}: no such program {program_path}")
        argv[0:1] = _python_or_executable(Path(os.path.abspath(program_path)), text)
    elif program.endswith(".py") and program_path.is_file():
        argv[0:1] = [sys.executable, str(Path(os.path.abspath(program_path)))]
    elif shutil.which(program) is None:
        raise BotSpecError(f"bot {text!r}: command {program!r} not found on PATH")
    return BotSpec(text, "command", label, tuple(argv), cwd=run_in)
