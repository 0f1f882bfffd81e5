"""A folder of match logs where some log is bad: that log is left out, with its reason, and
the others are served (real server, real HTTP), exported, and listed on the page."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.tournament.conftest import cli


def get(url: str) -> tuple[int, Any]:
    """Status and JSON body of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def folder(logs: dict[str, Path], tmp_path: Path) -> Path:
    """The fixture logs, one of them with a card that is no card, one cut short."""
    out = tmp_path / "logs"
    out.mkdir()
    for name in ("standard", "specials", "long"):
        shutil.copy(logs[name], out / f"{name}.jsonl")
    lines = (out / "long.jsonl").read_text().splitlines(keepends=True)
    deal = json.loads(lines[1])
    deal["event"]["deal"]["deck"][0] = "Zz"
    lines[1] = json.dumps(deal) + "\n"
    (out / "long.jsonl").write_text("".join(lines))
    (out / "specials.jsonl").write_text("".join((out / "specials.jsonl").read_text().splitlines(keepends=True)[:5]))
    return out


def test_a_bad_log_is_left_out_with_its_reason(folder: Path, serve: Callable[[Path], str], capfd: pytest.CaptureFixture[str]) -> None:
    url = serve(folder)
    status, matches = get(url + "api/matches")
    assert status == 200, matches
    assert [r["id"] for r in matches["rows"]] == ["standard"]
    reasons = {s["file"]: s["reason"] for s in matches["skipped"]}
    assert set(reasons) == {"long.jsonl", "specials.jsonl"}
    assert "long.jsonl:2" in reasons["long.jsonl"] and "'Zz' is not a card" in reasons["long.jsonl"]
    assert "no footer" in reasons["specials.jsonl"]
    status, standings = get(url + "api/standings")
    assert status == 200, standings
    assert standings["matches"] == 1 and standings["skipped"] == matches["skipped"]
    # Its replay asked for by name: the log's fault, said as such.
    status, body = get(url + "api/replay/long")
    assert status == 422 and "'Zz' is not a card" in body["error"]
    assert get(url + "api/replay/standard")[0] == 200
    assert "Traceback" not in capfd.readouterr().err


def test_the_export_and_the_command_say_which_logs_are_left_out(folder: Path, tmp_path: Path) -> None:
    result = cli("serve", folder, "--export", tmp_path / "site")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "not shown: long.jsonl" in result.stderr and "'Zz' is not a card" in result.stderr
    assert [p.name for p in (tmp_path / "site" / "data" / "replays").iterdir()] == ["standard.js"]


def test_the_page_lists_the_logs_left_out(folder: Path, serve: Callable[[Path], str], page: tuple[Any, Any]) -> None:
    pg, _ = page
    pg.goto(serve(folder) + "#/matches")
    item = pg.locator('#skipped li[data-file="long.jsonl"]')
    item.wait_for()
    assert "'Zz' is not a card" in item.inner_text()
    assert pg.locator("#matches tbody tr").count() == 1
