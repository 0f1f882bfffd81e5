"""Naming bots: samples, files, commands, addresses, NAME= prefixes, and clear errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from referee.bots import parse_bot_spec
from referee.faults import BotSpecError


def test_python_file_runs_with_this_interpreter(tmp_path: Path) -> None:
    bot = tmp_path / "my_bot.py"
    bot.write_text("print('hi')\n")
    spec = parse_bot_spec("./my_bot.py", cwd=tmp_path)
    assert spec.kind == "file"
    assert spec.argv == (sys.executable, str(bot))
    assert spec.label is None
    assert spec.short_name == "my_bot"
    assert spec.launched


def test_executable_file_runs_as_is(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    bot.write_text("#!/bin/sh\n")
    bot.chmod(0o755)
    assert parse_bot_spec(str(bot)).argv == (str(bot),)


def test_name_prefix(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("")
    spec = parse_bot_spec("alice=./b.py", cwd=tmp_path)
    assert spec.label == "alice"
    assert spec.short_name == "alice"
    assert spec.text == "alice=./b.py"


def test_command_is_split_like_a_shell(tmp_path: Path) -> None:
    spec = parse_bot_spec(f'{sys.executable} -c "import sys; print(1)" --level=3')
    assert spec.kind == "command"
    assert spec.argv == (sys.executable, "-c", "import sys; print(1)", "--level=3")
    assert spec.label is None  # "--level=3" is no NAME= prefix


def test_command_starting_with_a_py_file_runs_it_with_python(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("")
    spec = parse_bot_spec("./b.py --fast", cwd=tmp_path)
    assert spec.argv == (sys.executable, str(tmp_path / "b.py"), "--fast")


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("grpc://localhost:50051", "localhost:50051"),
        ("grpc://127.0.0.1:9", "127.0.0.1:9"),
        ("grpc://[::1]:50051", "[::1]:50051"),
        ("unix:///tmp/bot.sock", "unix:///tmp/bot.sock"),
        ("unix:/tmp/bot.sock", "unix:///tmp/bot.sock"),
        ("bob=grpc://h:1", "h:1"),
    ],
)
def test_addresses(text: str, address: str) -> None:
    spec = parse_bot_spec(text)
    assert spec.kind == "address"
    assert spec.address == address
    assert not spec.launched
    assert spec.argv == ()


def test_sample_names_resolve_to_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A stand-in sample package, so the test does not depend on which samples exist yet.
    pkg = tmp_path / "sample_bots"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "fancy.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def forget() -> None:
        for mod in [m for m in sys.modules if m == "sample_bots" or m.startswith("sample_bots.")]:
            del sys.modules[mod]

    saved = {m: mod for m, mod in sys.modules.items() if m == "sample_bots" or m.startswith("sample_bots.")}
    forget()
    try:
        spec = parse_bot_spec("fancy")
        assert spec.kind == "sample"
        assert spec.argv == (sys.executable, "-m", "sample_bots.fancy")
        assert spec.short_name == "fancy"
        with pytest.raises(BotSpecError, match=r"unknown bot 'nosuchbot'.*samples: fancy"):
            parse_bot_spec("nosuchbot")
    finally:
        forget()
        sys.modules.update(saved)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty bot name"),
        ("   ", "empty bot name"),
        ("alice=", "nothing after alice="),
        ("./missing.py", "no such file"),
        ("missing.py", "no such file"),
        ("grpc://host", "grpc://HOST:PORT"),
        ("grpc://host:99999", "grpc://HOST:PORT"),
        ("unix://relative.sock", "absolute path"),
        ("http://x:1", "unknown address scheme"),
        ("definitely-not-a-command-xyz --flag", "not found on PATH"),
        ("./nope/bot --x", "no such program"),
        ('python "unbalanced', "cannot split"),
    ],
)
def test_errors_name_the_input(text: str, message: str) -> None:
    with pytest.raises(BotSpecError, match=message):
        parse_bot_spec(text)


def test_directory_is_not_a_bot(tmp_path: Path) -> None:
    with pytest.raises(BotSpecError, match="is a directory"):
        parse_bot_spec(str(tmp_path))


def test_non_executable_non_python_file(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("")
    os.chmod(f, 0o644)
    with pytest.raises(BotSpecError, match=r"neither a \.py file nor executable"):
        parse_bot_spec(str(f))


def test_real_sample_bots_come_from_the_registry() -> None:
    sample_bots = pytest.importorskip("sample_bots")
    from referee.bots import sample_bot_names

    assert sample_bot_names() == sorted(sample_bots.NAMES)
    for name in sample_bots.NAMES:
        spec = parse_bot_spec(name)
        assert spec.kind == "sample" and spec.argv == tuple(sample_bots.command(name))
