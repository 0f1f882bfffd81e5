"""Ranked means playing, on a real arena (``arena serve -j 2``, real bots, real HTTP): one
owner's two bots never share a table, every shown win rate lies inside its interval, an
admin marks a reference bot from the CLI, and a withdrawn version leaves the ranking."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.arena.conftest import SAMPLES, Arena, cli, make_arena
from tests.polling import poll_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

#: A clock a busy machine keeps (nothing here is about the budget).
ROOMY_CLOCK = ("--budget-ms", "5000", "--bank-ms", "120000", "--grace-ms", "2000")


def _inside(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if r["matches"]:
            assert r["win_low"] <= r["win_rate"] <= r["win_high"], r
            assert r["low"] <= r["rating"] <= r["high"], r


def test_owners_win_rates_references_and_a_withdrawn_version(tmp_path: Any) -> None:
    arena: Arena = make_arena(tmp_path / "arena", *ROOMY_CLOCK)
    toml = arena.folder / "arena.toml"
    # A refit after every few results: the test waits for a board that is all official.
    toml.write_text(re.sub(r"^refit_every_results = .*$", "refit_every_results = 10", toml.read_text(), flags=re.M))
    arena.add_user("admin", admin=True)
    arena.add_users("alice", "bob", "carol")
    with arena:
        arena.serve("-j", "2")
        uploads = [("alice", "greedy.py", "greedy"), ("alice", "threshold.py", "threshold"), ("bob", "random.py", "randbot"),
                   ("carol", "greedy.py", "copycat")]
        for user, file, name in uploads:
            r = arena.api("POST", "/api/v1/versions", user, params={"filename": f"{name}.py"}, content=(SAMPLES / file).read_bytes())
            assert r.status_code == 201, r.text

        def ranked() -> list[dict[str, Any]] | None:
            rows = arena.api("GET", "/api/v1/standings").json()["standings"]
            ok = len(rows) == 4 and all(r["rank"] is not None and r["matches"] >= 6 for r in rows)
            return rows if ok else None

        rows = poll_until("every version ranked by a refit", ranked, timeout_s=900, interval_s=1.0)
        assert rows is not None
        _inside(rows)
        # No table of alice's two bots (the arena's settings say owners never share a table).
        alice = {r["version"] for r in rows if r["owner"] == "alice"}
        matches = arena.api("GET", "/api/v1/matches", params={"limit": 500}).json()
        assert matches and all(len(alice & {s["version"] for s in m["seats"]}) < 2 for m in matches)
        # The same figures on the bot page and in My bots.
        page = arena.api("GET", "/api/v1/bots/greedy").json()
        _inside(page["versions"])
        assert page["rank"] == page["versions"][0]["rank"] is not None
        mine = arena.api("GET", "/api/v1/versions", "alice").json()
        _inside(mine)
        assert len(mine) == 2 and all(v["rank"] is not None and not v["provisional"] for v in mine)

        # An admin marks bob's bot a reference, from the CLI, while the arena serves.
        assert "a reference" in cli("arena", "reference", str(arena.folder), "randbot.v1").stderr
        rand = next(r for r in rows if r["bot"] == "randbot")
        poll_until("the reference mark on the board", lambda: next(
            r for r in arena.api("GET", "/api/v1/standings").json()["standings"] if r["version"] == rand["version"])["reference"],
            timeout_s=60, interval_s=0.5)
        off = arena.api("POST", f"/api/v1/admin/versions/{rand['version']}/reference", "admin", json={"reference": False})
        assert off.status_code == 200 and off.json()["reference"] is False

        # The best version is withdrawn: it leaves the ranking at once, shown apart below
        # every active version with its final figures.
        top = rows[0]
        owner = top["owner"]
        assert arena.api("POST", f"/api/v1/versions/{top['version']}/withdraw", owner).status_code == 200
        after = arena.api("GET", "/api/v1/standings").json()["standings"]
        (gone,) = [r for r in after if r["version"] == top["version"]]
        assert gone["rank"] is None and gone["section"] == "inactive" and after[-1]["version"] == top["version"]
        assert [r["rank"] for r in after[:-1]] == [1, 2, 3]
        line = next(x for x in cli_standings(arena).splitlines() if top["label"] in x)
        assert "withdrawn" in line and re.match(r"^\W*-\W", line), line
        _inside(after)


def cli_standings(arena: Arena) -> str:
    """``thirtyone remote standings`` as carol sees it."""
    import tempfile

    with tempfile.TemporaryDirectory() as home:
        env = {"XDG_CONFIG_HOME": home, "COLUMNS": "200"}
        cli("remote", "login", arena.url, env=env, input=arena.tokens["carol"] + "\n")
        return cli("remote", "standings", env=env).stdout
