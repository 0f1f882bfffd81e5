"""Parsing the addresses a referee gives a bot."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.server import AddressError, parse_address


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("unix:///tmp/b.sock", "unix:/tmp/b.sock"),
        ("unix:/tmp/b.sock", "unix:/tmp/b.sock"),
        ("50051", "127.0.0.1:50051"),
        (":50051", "127.0.0.1:50051"),
        ("0", "127.0.0.1:0"),
        ("localhost:7000", "localhost:7000"),
        ("grpc://localhost:7000", "localhost:7000"),
        ("[::]:7000", "[::]:7000"),
        ("0.0.0.0:7000", "0.0.0.0:7000"),
        ("unix-abstract:bot", "unix-abstract:bot"),
    ],
)
def test_addresses(text: str, target: str) -> None:
    assert parse_address(text).target == target


def test_relative_unix_path_is_made_absolute() -> None:
    a = parse_address("unix:bot.sock")
    assert a.unix_path == Path.cwd() / "bot.sock"
    assert a.display() == f"unix://{Path.cwd() / 'bot.sock'}"


def test_display_shows_the_bound_port() -> None:
    assert parse_address("0").display(41234) == "127.0.0.1:41234"
    assert parse_address("localhost:7000").display(7000) == "localhost:7000"


@pytest.mark.parametrize("text", ["", "bot.sock", "unix:", "unix://relative", "host:", "host:port", "99999", "unix:/" + "x" * 120])
def test_bad_addresses(text: str) -> None:
    with pytest.raises(AddressError):
        parse_address(text)
