"""Every ``thirtyone`` command the manual shows exists, with every option it uses.

The commands are taken from README.md and docs/*.md: each line of a fenced code block (a
``$`` prompt in a console block; ``&&``, ``;`` and ``|`` chains; ``\\`` continuations) and each
inline code span that starts with ``thirtyone``. Each is walked down the CLI's own click tree,
in this process (Typer builds it; no subprocess): every word up to the command must be a
subcommand, and every option must be one that the command's ``--help`` lists (its name, or
its ``--no-`` twin, or ``--help``). Placeholders (``DIR``, ``KEY``) and values are not
checked: they are the reader's.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.cli.app import app

ROOT = Path(__file__).resolve().parent.parent


def manual_pages() -> list[Path]:
    """The README and every page of the manual."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Shown:
    """One command as a page shows it: where, and the words after ``thirtyone``."""

    where: str
    words: tuple[str, ...]


_FENCE = re.compile(r"^(```|~~~)([^\n]*)\n(.*?)^\1", re.MULTILINE | re.DOTALL)
# A code span may run over a line break (Markdown joins it with a space).
_SPAN = re.compile(r"`([^`]+)`")
# Shell operators between commands; `a|b` without spaces (`lenient|strict`) is a value.
_CHAIN = re.compile(r"\s(?:&&|\|\||\||;)\s|;$|\s;")
_OPTION_GROUP = re.compile(r"\[([^\]]*)\]")


def _segments(line: str) -> list[str]:
    # A synopsis writes optional parts in brackets and alternatives with ` | ` inside them
    # (`[--json | --csv]`): both alternatives are options of the same command.
    line = _OPTION_GROUP.sub(lambda m: " " + m.group(1).replace("|", " ") + " ", line)
    return _CHAIN.split(line)


def commands_in(text: str, where: str) -> list[Shown]:
    """The ``thirtyone`` commands in Markdown text: in code blocks and in inline code."""
    found: list[str] = []
    for fence in _FENCE.finditer(text):
        lang, body = fence.group(2).strip(), fence.group(3)
        if lang in ("python", "toml", "json", "text", "cpp", "js"):
            continue
        lines = body.replace("\\\n", " ").splitlines()
        if lang == "console":  # a prompt marks the commands; the rest is their output
            lines = [line[2:] for line in lines if line.startswith("$ ")]
        found.extend(lines)
    prose = _FENCE.sub("", text)
    spans = (" ".join(span.split()) for span in _SPAN.findall(prose))
    found.extend(span for span in spans if span.startswith("thirtyone "))
    out: list[Shown] = []
    for line in found:
        for segment in _segments(line):
            try:
                words = shlex.split(segment, comments=True)
            except ValueError as exc:
                raise AssertionError(f"{where}: cannot read {segment!r}: {exc}") from exc
            if "thirtyone" in words:
                out.append(Shown(where, tuple(words[words.index("thirtyone") + 1 :])))
    return out


def shown_commands() -> list[Shown]:
    """Every ``thirtyone`` command in the README and the manual."""
    return [
        shown
        for page in manual_pages()
        for shown in commands_in(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))
    ]


# Typer builds the tree from its own copy of click (typer._click), so the nodes are told
# apart by what they hold, not by click's classes.
Node = Any


def _options(command: Node) -> set[str]:
    """The option names ``command --help`` lists."""
    names = {"--help"}
    for param in command.params:
        if param.param_type_name == "option" and not param.hidden:
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def problems(words: tuple[str, ...], root: Node) -> list[str]:
    """What is wrong with ``thirtyone WORDS`` (nothing: an empty list)."""
    command = root
    path = ["thirtyone"]
    rest = list(words)
    while hasattr(command, "commands") and rest and not rest[0].startswith("-"):
        sub = command.commands.get(rest[0])
        if sub is None or getattr(sub, "hidden", False):
            return [f"'{' '.join(path)}' has no command '{rest[0]}' (it has: {', '.join(sorted(command.commands))})"]
        command = sub
        path.append(rest.pop(0))
    known = _options(command)
    out = []
    for word in rest:
        if not re.match(r"^--?[A-Za-z]", word):
            continue  # an argument or a value (negative numbers included)
        name = word.split("=", 1)[0]
        if name not in known:
            out.append(f"'{' '.join(path)}' has no option '{name}' (it has: {', '.join(sorted(known))})")
    return out


@pytest.fixture(scope="module")
def cli() -> Node:
    """The CLI's click command tree, as ``thirtyone`` runs it."""
    return typer.main.get_command(app)


def test_every_command_the_manual_shows_exists(cli: Node) -> None:
    shown = shown_commands()
    # A floor, so that a reader that stopped finding commands cannot pass this test.
    assert len(shown) > 100, len(shown)
    wrong = [f"{s.where}: thirtyone {shlex.join(s.words)}: {p}" for s in shown for p in problems(s.words, cli)]
    assert not wrong, "commands in the manual that the CLI does not have:\n" + "\n".join(wrong)


def test_every_command_group_is_shown(cli: Node) -> None:
    """Each top-level command appears in the manual at least once."""
    used = {s.words[0] for s in shown_commands() if s.words}
    assert set(cli.commands) <= used, sorted(set(cli.commands) - used)


def test_a_made_up_option_or_command_is_caught(cli: Node) -> None:
    page = "\n".join(
        [
            "Run `thirtyone match greedy random --seed 7` first.",
            "```sh",
            "thirtyone tournament new league --games 3 && thirtyone tournament run league --jobz 2",
            "thirtyone standings league --json   # --csv works too",
            "```",
            "```console",
            "$ thirtyone replay LOG --seat 1 \\",
            "    --colour never",
            "thirtyone output lines are not commands --nope",
            "```",
            "And `thirtyone tournament sprint DIR`, `thirtyone check-bot X --preset=pagat --budget=9`.",
        ]
    )
    shown = commands_in(page, "made-up")
    assert [s.words[:2] for s in shown] == [
        ("tournament", "new"),
        ("tournament", "run"),
        ("standings", "league"),
        ("replay", "LOG"),
        ("match", "greedy"),
        ("tournament", "sprint"),
        ("check-bot", "X"),
    ]
    found = {" ".join(s.words[:2]): problems(s.words, cli) for s in shown}
    assert found["tournament new"] == [] and found["standings league"] == [] and found["match greedy"] == []
    assert found["tournament run"] == [found["tournament run"][0]] and "no option '--jobz'" in found["tournament run"][0]
    assert len(found["replay LOG"]) == 1 and "no option '--colour'" in found["replay LOG"][0]
    assert "'thirtyone tournament' has no command 'sprint'" in found["tournament sprint"][0]
    assert len(found["check-bot X"]) == 1 and "no option '--budget'" in found["check-bot X"][0]
