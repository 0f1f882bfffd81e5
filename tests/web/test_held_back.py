"""The replay of a rotation whose deal is still in play is held back.

The rotations of a deal share one seed and one deck: while ``r1`` is to be played, ``r0``'s
replay (or its seed) would show every card ``r1`` will be dealt. A real tournament of two
sample bots, one deal, two rotations, with only ``r0`` played (by the runner's own
``run_pending``), served by the real server and read over real HTTP, exported, and looked at
in a real browser; then played to its end.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.tournament.schedule import HELD_BACK, DealProgress, build_sprt_schedule, replay_public
from tests.tournament.conftest import cli
from tests.web.conftest import Console

ROOT = Path(__file__).resolve().parents[2]
R0, R1 = "greedy+random/d000/r0", "greedy+random/d000/r1"
R0_ID, R1_ID = "greedy+random_d000_r0", "greedy+random_d000_r1"

#: In a process of its own: the browser tests of this module keep Playwright's event loop in
#: this one, where the referee could not start its own.
_PARTIAL = f"""
import sys
from pathlib import Path
from referee.tournament.runner import run_pending
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from tests.tournament.conftest import SANDBOX, make_tournament
folder = Path(sys.argv[1])
make_tournament(folder, TournamentSettings(table_size=2, games=1, seed=31031, sandbox=SANDBOX), ["greedy", "random"])
with TournamentStore.open(folder) as store:
    report = run_pending(store, 1, only=[{R0!r}])
    assert report.played == 1, report
    print(next(r.seed for r in store.matches() if r.key == {R0!r}))
"""

# One tournament for the module: its tests stay in one worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("test_held_back")


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The tournament with r0 played and r1 not; and the deal's seed."""
    folder = tmp_path_factory.mktemp("held") / "t"
    done = subprocess.run([sys.executable, "-c", _PARTIAL, str(folder)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return folder, int(done.stdout.split()[-1])


def get(url: str) -> tuple[int, Any, str]:
    """Status, JSON body and raw text of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            text = r.read().decode()
            return r.status, json.loads(text), text
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        return e.code, json.loads(text), text


def test_the_rule_covers_every_table_dealt_from_one_seed() -> None:
    # An SPRT test's two tables (NEW+field, OLD+field) are dealt the same cards.
    schedule = build_sprt_schedule("new", "old", ("f",), 2, seed=5)
    deal0 = [m for m in schedule if m.deal == 0]
    assert len({m.seed for m in deal0}) == 1 and len({m.table for m in deal0}) == 2
    new_table = {m.key for m in deal0 if m.table[0] == "new"}
    seed = deal0[0].seed
    progress = DealProgress.of(schedule, new_table)
    assert not progress.deal_complete(seed) and not progress.replay_public(seed)
    assert not replay_public(seed, schedule, new_table, tournament_finished=False)
    every = {m.key for m in deal0}
    assert DealProgress.of(schedule, every).replay_public(seed)
    # ... and deal 1 is not complete, but a finished tournament (a verdict) shows it all.
    assert not DealProgress.of(schedule, every).deal_complete(schedule[-1].seed)
    assert DealProgress.of(schedule, new_table, tournament_finished=True).replay_public(seed)


def test_the_server_holds_back_a_finished_rotation_while_its_deal_is_in_play(
    partial: tuple[Path, int], serve: Callable[[Path], str]
) -> None:
    folder, seed = partial
    url = serve(folder)
    status, body, text = get(url + f"api/replay/{R0_ID}")
    assert status == 403, text[:200]
    assert HELD_BACK in body["error"] and body["held_back"] is True
    status, matches, matches_text = get(url + "api/matches")
    assert status == 200
    (row,) = matches["rows"]
    # That it finished, and its result, are shown.
    assert row["key"] == R0 and row["held_back"] is True and row["winner"] in ("greedy", "random")
    for view in ("0", "1"):
        assert get(url + f"api/replay/{R0_ID}?view={view}")[0] == 403
    assert get(url + f"api/replay/{R1_ID}")[0] == 404  # not played: nothing to show
    status, _, standings_text = get(url + "api/standings")
    assert status == 200
    for shown in (matches_text, text, standings_text):
        assert str(seed) not in shown


def test_the_export_of_an_unfinished_tournament_leaves_the_replay_out(partial: tuple[Path, int], tmp_path: Path) -> None:
    folder, seed = partial
    out = tmp_path / "site"
    result = cli("serve", folder, "--export", out)
    assert result.exit_code == 0, result.output
    assert HELD_BACK in result.stdout
    assert list((out / "data" / "replays").iterdir()) == []
    site = (out / "data" / "site.js").read_text()
    assert '"held_back":true' in site and str(seed) not in site


def test_the_replay_is_served_once_every_rotation_is_played(partial: tuple[Path, int], tmp_path: Path, serve: Callable[[Path], str]) -> None:
    folder = shutil.copytree(partial[0], tmp_path / "t")
    cmd = [sys.executable, "-c", "from referee.cli import main; main()", "tournament", "run", str(folder)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    url = serve(folder)
    rows = get(url + "api/matches")[1]["rows"]
    assert [(r["key"], r.get("held_back", False)) for r in rows] == [(R0, False), (R1, False)]
    for mid in (R0_ID, R1_ID):
        status, body, text = get(url + f"api/replay/{mid}")
        assert status == 200, text
        assert body["header"]["seed"] is not None


def test_the_page_says_the_replay_is_held_back(
    partial: tuple[Path, int], serve: Callable[[Path], str], page: tuple[Any, Console], tmp_path: Path
) -> None:
    pg, con = page
    folder, seed = partial
    url = serve(folder)
    pg.goto(url + "#/matches")
    held = pg.locator(f'[data-match="{R0_ID}"]')
    held.wait_for()
    assert held.get_attribute("data-held-back") == "1"
    assert HELD_BACK in held.inner_text()
    assert pg.locator(f'a[data-match="{R0_ID}"]').count() == 0  # no link to a replay
    pg.goto(url + f"#/replay/{R0_ID}/omni/0")
    note = pg.locator("#held-back")
    note.wait_for()
    assert HELD_BACK in note.inner_text()
    assert str(seed) not in pg.content()
    # Chromium logs every answer that is not 2xx; this one was asked for, and is the only one.
    expected = "console error: Failed to load resource: the server responded with a status of 403 (Forbidden)"
    assert con.errors == [expected]
    con.errors.clear()
    # The same in the static export, from disk.
    out = tmp_path / "site"
    assert cli("serve", folder, "--export", out).exit_code == 0
    pg.goto((out / "index.html").as_uri() + f"#/replay/{R0_ID}/omni/0")
    pg.locator("#held-back").wait_for()
    assert HELD_BACK in pg.locator("#held-back").inner_text()
