"""The issue's first "done when", end to end: an admin inits and serves an arena and makes
users; each logs in from the CLI and uploads a bot; validation runs; the ladder plays; the
leaderboard moves; each reads their own bot's output and gets 404 for another's; a
downloaded log verifies locally, commitment included. A real ``arena serve`` process, real
HTTP, real sandboxed bots; nothing mocked.
"""

from __future__ import annotations

import json
import shutil
import signal
import stat
from pathlib import Path

import pytest

from tests.arena.conftest import SAMPLES, Arena, cli
from tests.polling import poll_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

SECRET_LINE = "alice-bot-says-hello-on-stderr"


def _alice_bot(where: Path) -> Path:
    """The greedy sample as one uploaded file whose every decision also writes a line to stderr
    (a match keeps what its bots write while it is played)."""
    path = where / "greedy.py"
    src = (SAMPLES / "greedy.py").read_text()
    src = src.replace(
        "    def act(self, view: sdk.View) -> sdk.Action:\n",
        "    def act(self, view: sdk.View) -> sdk.Action:\n"
        f"        import sys\n\n        print({SECRET_LINE!r}, file=sys.stderr, flush=True)\n",
        1,
    )
    assert SECRET_LINE in src
    path.write_text(src)
    return path


def _bob_bot(where: Path) -> Path:
    """The random sample as a folder with a manifest (its file renamed: a random.py would hide
    the standard library's module of that name from the bot itself)."""
    folder = where / "bob-bot"
    folder.mkdir()
    shutil.copy(SAMPLES / "random.py", folder / "randbot.py")
    (folder / "bot.toml").write_text('name = "rando"\ncommand = "python randbot.py"\n')
    return folder


def test_two_users_upload_play_read_their_logs_and_verify_a_download(arena_factory, tmp_path: Path) -> None:
    arena: Arena = arena_factory()
    arena.add_user("admin", admin=True)
    alice_token = arena.add_user("alice")
    bob_token = arena.add_user("bob")
    arena.add_user("carol")
    arena.serve("-j", "2")
    # A second service on the same folder is refused.
    second = cli("arena", "serve", str(arena.folder), "--port", "1", check=False)
    assert second.returncode != 0 and "already served" in second.stderr

    envs = {}
    for name, token in (("alice", alice_token), ("bob", bob_token), ("carol", arena.tokens["carol"])):
        env = {"XDG_CONFIG_HOME": str(tmp_path / f"{name}-config")}
        r = cli("remote", "login", arena.url, env=env, input=token + "\n")
        assert f"as {name}" in r.stderr
        kept = tmp_path / f"{name}-config" / "thirtyone" / "remote.json"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        envs[name] = env

    (tmp_path / "alice").mkdir()
    (tmp_path / "bob").mkdir()
    cli("remote", "submit", str(_alice_bot(tmp_path / "alice")), env=envs["alice"])
    cli("remote", "submit", str(_bob_bot(tmp_path / "bob")), env=envs["bob"])

    def active(user: str) -> dict[str, object] | None:
        (v,) = arena.api("GET", "/api/v1/versions", user).json()
        assert v["status"] != "rejected", v["reason"]
        return v if v["status"] == "active" else None

    alice_v = poll_until("alice's version to validate", lambda: active("alice"), timeout_s=600, interval_s=0.2)
    bob_v = poll_until("bob's version to validate", lambda: active("bob"), timeout_s=600, interval_s=0.2)
    assert "rando.v1" in cli("remote", "status", env=envs["bob"]).stdout

    def board_moved() -> list[dict[str, object]] | None:
        rows = arena.api("GET", "/api/v1/standings").json()["standings"]
        played = [r for r in rows if int(r["matches"]) >= 2]
        return rows if len(played) == 2 and any(r["rating"] != 1500.0 for r in rows) else None

    poll_until("the leaderboard to move", board_moved, timeout_s=600, interval_s=1.0)
    rows = json.loads(cli("remote", "standings", "--json", env=envs["carol"]).stdout)["standings"]
    assert {r["label"] for r in rows} == {"greedy.v1", "rando.v1"}
    assert "greedy.v1" in cli("remote", "standings", env=envs["alice"]).stdout

    def finished_deal() -> dict[str, object] | None:
        ms = arena.api("GET", "/api/v1/matches", params={"bot": "greedy", "status": "done"}).json()
        return next((m for m in ms if "log" in m), None)

    match = poll_until("a deal with every rotation finished", finished_deal, timeout_s=600, interval_s=1.0)
    key = str(match["key"])
    assert key in cli("remote", "matches", "--bot", "rando", "--limit", "500", env=envs["bob"]).stdout

    # Each sees their own bot's output only; someone with no bot at the table gets 404.
    mine = cli("remote", "logs", key, env=envs["alice"])
    assert SECRET_LINE in mine.stdout and "greedy.v1" in mine.stderr
    theirs = cli("remote", "logs", key, env=envs["bob"])
    assert SECRET_LINE not in theirs.stdout + theirs.stderr and "rando.v1" in theirs.stderr
    nobody = cli("remote", "logs", key, env=envs["carol"], check=False)
    assert nobody.returncode != 0 and "404" in nobody.stderr
    assert arena.api("GET", f"/api/v1/versions/{alice_v['id']}", "bob").status_code == 404
    assert arena.api("GET", f"/api/v1/versions/{bob_v['id']}/files", "alice").status_code == 404

    # The download verifies, commitment included; a commitment to another seed does not.
    dl = tmp_path / "dl"
    cli("remote", "download", key, "-o", str(dl), env=envs["carol"])
    log = dl / f"{key}.jsonl"
    ok = cli("replay", str(log), "--verify")
    assert "commitment" in ok.stdout and "matches its commitment" in ok.stdout
    side = Path(str(log) + ".arena.json")
    data = json.loads(side.read_text())
    data["commitment"] = "0" * 64
    side.write_text(json.dumps(data))
    bad = cli("replay", str(log), "--verify", check=False)
    assert bad.returncode == 1 and "does not match the commitment" in bad.stdout

    # SIGTERM stops the service, the ladder, its workers and bots (Arena.stop checks).
    assert arena.stop(signal.SIGTERM) in (0, -signal.SIGTERM, 128 + signal.SIGTERM)
