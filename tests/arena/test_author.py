"""The arena from a bot author's chair (issue 37), against a real ``arena serve`` and the real
``thirtyone remote`` client run as a user runs it (a process, its login in its own
``XDG_CONFIG_HOME``): a Node.js folder after ``npm ci`` and links in general, broken uploads
(deleted, refused again, checked first with ``--check``), the address ``serve`` prints, what
``remote logs`` prints, a folder without ``bot.toml``, flags in a command, a file named like a
standard module, paths in output and reasons, ``withdraw`` and ``logout``, and what
``replay --verify`` says it checked.

One server for the module; its bots validate and play while the other tests run.
"""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.arena.conftest import CLI, SAMPLES, Arena, cli, make_arena
from tests.polling import poll_until
from tests.sample_bots.test_node_bot import NODE_BOT, node_missing

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("test_arena_author")]

#: A clock a busy machine keeps: no test here is about the budget.
ROOMY_CLOCK = ("--budget-ms", "5000", "--bank-ms", "120000", "--grace-ms", "2000")

#: A bot that writes one 300-character line, a terminal escape, and the paths of its own file
#: and of the SDK at the start of each match; then plays like the random bot.
LOUD = '''\
import random
import sys

import sdk


class Loud(sdk.Bot):
    name = "loud"

    def on_match_start(self, info):
        print("L" * 300, flush=True)
        print("\\x1b[31mred\\x1b[0m", flush=True)
        print("mine:", __file__, "sdk:", sdk.__file__, file=sys.stderr, flush=True)

    def act(self, view):
        return random.choice(view.legal_actions)


if __name__ == "__main__":
    sdk.run(Loud)
'''


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    a = make_arena(tmp_path_factory.mktemp("author") / "arena", *ROOMY_CLOCK)
    a.add_users("alice", "bob", "carol", "dora")
    with a:
        a.serve()
        yield a
        a.stop()


def login(arena: Arena, user: str, url: str | None = None) -> dict[str, str]:
    """``remote login`` as ``user`` (the token on stdin); the environment of their commands."""
    env = {"XDG_CONFIG_HOME": str(arena.folder.parent / f"config-{user}")}
    cli("remote", "login", url or arena.url, env=env, input=arena.tokens[user] + "\n")
    return env


def versions(arena: Arena, user: str) -> list[dict[str, Any]]:
    r = arena.api("GET", "/api/v1/versions", user)
    assert r.status_code == 200, r.text
    return list(r.json())


def settled(arena: Arena, user: str, vid: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        v = arena.api("GET", f"/api/v1/versions/{vid}", user).json()
        return v if v["status"] not in ("queued", "validating") else None

    found = poll_until(f"version {vid}'s validation", done, timeout_s=300, interval_s=0.3)
    assert found is not None
    return found


def test_serve_prints_the_pages_address_and_login_takes_the_apis(arena: Arena) -> None:
    first = arena.output().splitlines()[0]
    assert f"open http://127.0.0.1:{arena.port}/ " in first, first
    # The address the service printed before, copied into login: the base is used, and said.
    env = {"XDG_CONFIG_HOME": str(arena.folder.parent / "config-api-url")}
    r = cli("remote", "login", arena.url + "/api/v1/", env=env, input=arena.tokens["carol"] + "\n")
    assert f"using the arena's base address {arena.url}/" in r.stderr
    kept = json.loads((Path(env["XDG_CONFIG_HOME"]) / "thirtyone" / "remote.json").read_text())
    assert kept["url"] == arena.url
    assert cli("remote", "status", env=env).returncode == 0


def _node_folder(dest: Path) -> Path:
    # As a user has it after 'npm ci' in the folder: node_modules and its .bin links.
    shutil.copytree(NODE_BOT, dest, symlinks=True)
    (dest / "bot.toml").write_text('name = "nodey"\ncommand = "node greedy.js"\n')
    return dest


def test_a_node_folder_after_npm_ci_is_taken_with_its_bin_links(arena: Arena, tmp_path: Path) -> None:
    why = node_missing()
    if why is not None:
        pytest.skip(why)
    folder = _node_folder(tmp_path / "nodebot")
    links = [p for p in (folder / "node_modules" / ".bin").iterdir() if p.is_symlink()]
    assert links, "npm ci made no .bin links: nothing to test"
    env = login(arena, "dora")
    r = cli("remote", "submit", str(folder), "--wait", env=env)
    vid = int(r.stdout.strip())
    assert "nodey.v1: active" in r.stderr
    files = {f["path"]: f["size"] for f in arena.api("GET", f"/api/v1/versions/{vid}/files", "dora").json()}
    for link in links:
        assert files[str(link.relative_to(folder))] == link.stat().st_size  # the target's bytes
    cli("remote", "withdraw", str(vid), env=env)


def test_links_inside_the_folder_are_copies_and_links_leaving_it_are_all_named(arena: Arena, tmp_path: Path) -> None:
    folder = tmp_path / "linky"
    (folder / "lib").mkdir(parents=True)
    (folder / "bot.py").write_bytes((SAMPLES / "random.py").read_bytes())
    (folder / "bot.toml").write_text('name = "linky"\ncommand = "python3 -u bot.py"\n')
    (folder / "lib" / "helper.js").write_text("module.exports = 1;\n")
    (folder / "node_modules" / ".bin").mkdir(parents=True)
    (folder / "node_modules" / ".bin" / "helper").symlink_to("../../lib/helper.js")
    (folder / "again.py").symlink_to("bot.py")
    env = login(arena, "carol")
    # --check runs the arena's validation here first (it passes), then uploads.
    r = cli("remote", "submit", str(folder), "--check", env=env)
    assert "PASS  validation match against the random bot" in r.stderr, r.stderr
    vid = int(r.stdout.strip())
    files = {f["path"]: f["size"] for f in arena.api("GET", f"/api/v1/versions/{vid}/files", "carol").json()}
    assert files["node_modules/.bin/helper"] == len("module.exports = 1;\n")
    assert files["again.py"] == (folder / "bot.py").stat().st_size
    assert settled(arena, "carol", vid)["status"] == "active"
    cli("remote", "withdraw", str(vid), env=env)

    # Links that leave the folder, or point at a folder: all named at once, nothing sent.
    (folder / "passwd").symlink_to("/etc/passwd")
    (folder / "lib" / "up").symlink_to("../../../elsewhere.py")
    (folder / "libs").symlink_to("lib")
    before = versions(arena, "carol")
    r = cli("remote", "submit", str(folder), env=env, check=False)
    assert r.returncode == 2
    message = " ".join(r.stderr.split())
    assert "holds 3 links the arena cannot take" in message, r.stderr
    assert "passwd -> /etc/passwd: leads out of the bot's folder" in message
    assert "lib/up -> ../../../elsewhere.py: leads out of the bot's folder" in message
    assert "libs -> lib: points at a folder" in message
    assert "nothing was uploaded" in message
    # The same archive sent as the web form sends it: the arena's extractor says the same.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(folder, arcname="linky")
    r2 = arena.api("POST", "/api/v1/versions", "carol", params={"filename": "linky.tar.gz"}, content=buf.getvalue())
    assert r2.status_code == 422 and "holds 3 links the arena cannot take" in r2.json()["error"]["message"]
    assert versions(arena, "carol") == before


def test_a_rejected_version_is_deleted_and_its_twin_refused(arena: Arena, tmp_path: Path) -> None:
    env = login(arena, "bob")
    broken = tmp_path / "broken.py"
    broken.write_text("import sdk\n\ndef act(:\n")
    # --check: the same validation, here; it fails, so nothing is uploaded.
    r = cli("remote", "submit", str(broken), "--check", env=env, check=False)
    assert r.returncode == 1 and "broken would be rejected" in r.stderr and "nothing was uploaded" in r.stderr, r.stderr
    assert versions(arena, "bob") == []
    r = cli("remote", "submit", str(broken), "--wait", env=env, check=False)
    assert r.returncode == 1 and "broken.v1: rejected" in r.stderr
    vid = next(v["id"] for v in versions(arena, "bob") if v["label"] == "broken.v1")
    v = arena.api("GET", f"/api/v1/versions/{vid}", "bob").json()
    # Its reason names the bot's file as the author knows it, not the server's folders.
    assert 'File "broken.py", line 3' in v["reason"], v["reason"]
    assert str(arena.folder) not in v["reason"] + v["report"] and "<broken.py>" not in v["reason"]

    # The same file again: refused, pointing at the rejected version.
    r = cli("remote", "submit", str(broken), env=env, check=False)
    assert r.returncode == 2
    said = " ".join(r.stderr.split())
    assert f"the same as broken.v1 (version {vid}), which was rejected" in said and f"thirtyone remote delete {vid}" in said

    # Only its owner may delete it, and only a rejected version.
    assert arena.api("DELETE", f"/api/v1/versions/{vid}", "carol").status_code == 404
    good = int(cli("remote", "submit", str(SAMPLES / "greedy.py"), "--name", "bobs", env=env).stdout)
    assert arena.api("DELETE", f"/api/v1/versions/{good}", "bob").status_code == 409
    r = cli("remote", "delete", str(vid), env=env)
    assert "broken.v1" in r.stderr and "deleted" in r.stderr
    assert [v["label"] for v in versions(arena, "bob")] == ["bobs.v1"]
    assert not (arena.folder / "versions" / str(vid)).exists()
    assert arena.api("GET", "/api/v1/bots/broken").status_code == 404  # the name is free again
    # Fixed, it is a new upload again.
    broken.write_text((SAMPLES / "random.py").read_text())
    assert cli("remote", "submit", str(broken), env=env).returncode == 0
    # The deleted upload still counted toward the day's limit.
    from referee.ladder.store import ArenaStore, ago

    with ArenaStore.open(arena.folder, readonly=True) as store:
        assert store.uploads_since(store.user_named("bob").id, ago(86_400)) == 3


def test_a_folder_without_manifest_flags_and_standard_module_names(arena: Arena, tmp_path: Path) -> None:
    env = login(arena, "carol")
    before = versions(arena, "carol")
    folder = tmp_path / "mybot"
    folder.mkdir()
    (folder / "main.py").write_text("print(1)\n")
    r = cli("remote", "submit", str(folder), env=env, check=False)
    said = r.stderr
    assert r.returncode == 2 and "has no bot.toml" in said, said
    assert 'name = "mybot"' in said and 'command = "python main.py"' in said
    # A flag the arena does not take is named, with the command to write instead.
    (folder / "bot.toml").write_text('name = "mybot"\ncommand = "python3 -X dev main.py"\n')
    said = " ".join(cli("remote", "submit", str(folder), env=env, check=False).stderr.split())
    assert "the flag '-X', which the arena does not take" in said and "-u" in said, said
    # random.py would hide the random module, as a file or in a folder: say what to rename.
    sample = tmp_path / "random.py"
    shutil.copy(SAMPLES / "random.py", sample)
    said = " ".join(cli("remote", "submit", str(sample), env=env, check=False).stderr.split())
    assert "random.py is named like Python's standard module (random)" in said and "random_bot.py" in said, said
    answer = arena.api("POST", "/api/v1/versions", "carol", params={"filename": "random.py"}, content=sample.read_bytes())
    assert answer.status_code == 422 and "named like Python's standard module" in answer.json()["error"]["message"]
    assert versions(arena, "carol") == before


def _finished_seat(arena: Arena, bot: str) -> str:
    def found() -> str | None:
        ms = arena.api("GET", "/api/v1/matches", params={"bot": bot, "status": "done"}).json()
        return next((m["key"] for m in ms if "log" in m), None)

    key = poll_until(f"a finished deal of {bot}", found, timeout_s=400, interval_s=0.5)
    assert key is not None
    return key


def test_logs_are_printed_as_written_and_verify_says_what_it_checked(arena: Arena, tmp_path: Path) -> None:
    alice = login(arena, "alice")
    loud = tmp_path / "loud.py"
    loud.write_text(LOUD)
    cli("remote", "submit", str(loud), env=alice)
    # An opponent of another user that writes nothing.
    dora = login(arena, "dora")
    quiet = tmp_path / "quiet.py"
    shutil.copy(SAMPLES / "random.py", quiet)  # any name but random.py: it hides nothing
    cli("remote", "submit", str(quiet), env=dora)
    key = _finished_seat(arena, "loud")

    # Into a pipe: the bytes as written, no line wrapped, the escape left as it is.
    r = cli("remote", "logs", key, env=alice)
    assert "L" * 300 + "\n" in r.stdout
    assert "\x1b[31mred\x1b[0m\n" in r.stdout
    assert "mine: loud.py sdk: <sdk>/__init__.py" in r.stdout, r.stdout
    assert str(arena.folder) not in r.stdout
    assert "--- seat" in r.stderr and "--- seat" not in r.stdout
    # On a terminal: the escape shown, not obeyed.
    primary, secondary = pty.openpty()
    try:
        done = subprocess.run([*CLI, "remote", "logs", key], stdout=secondary, stderr=subprocess.PIPE,
                              env={**os.environ, **alice}, timeout=120)
        os.close(secondary)
        secondary = -1
        assert done.returncode == 0
        seen = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(primary)
        if secondary >= 0:
            os.close(secondary)
    assert b"\\x1b[31mred" in seen and b"\x1b[31mred" not in seen
    # A bot that wrote nothing says so.
    quiet_key = _finished_seat(arena, "quiet")
    r = cli("remote", "logs", quiet_key, env=dora)
    assert "(nothing)" in r.stderr and r.stdout == ""

    # A downloaded log: verified with its commitment; without the side file, said to be skipped.
    out = tmp_path / "dl"
    cli("remote", "download", key, "-o", str(out), env=alice)
    log = out / f"{key}.jsonl"
    r = cli("replay", str(log), "--verify")
    assert "ok replay: every deal, action and score replayed" in r.stdout and "ok commitment: seed" in r.stdout
    alone = tmp_path / "alone.jsonl"
    shutil.copy(log, alone)
    r = cli("replay", str(alone), "--verify")
    assert "ok replay:" in r.stdout and "skipped commitment: no alone.jsonl.arena.json beside the log" in r.stdout, r.stdout


def test_withdraw_and_logout(arena: Arena, tmp_path: Path) -> None:
    env = login(arena, "alice")
    bot = tmp_path / "leaving.py"
    shutil.copy(SAMPLES / "greedy.py", bot)
    vid = int(cli("remote", "submit", str(bot), env=env).stdout)
    settled(arena, "alice", vid)
    r = cli("remote", "withdraw", str(vid), env=env)
    assert "leaving.v1" in r.stderr and "withdrawn" in r.stderr
    assert arena.api("GET", f"/api/v1/versions/{vid}", "alice").json()["status"] == "withdrawn"
    # ... and brought back (issue 37, item 3); an active version cannot be reactivated.
    r = cli("remote", "reactivate", str(vid), env=env)
    assert "leaving.v1" in r.stderr and "active" in r.stderr
    assert arena.api("GET", f"/api/v1/versions/{vid}", "alice").json()["status"] == "active"
    r = cli("remote", "reactivate", str(vid), env=env, check=False)
    assert r.returncode != 0 and "cannot be reactivated: it plays already" in " ".join(r.stderr.split()), r.stderr
    cli("remote", "withdraw", str(vid), env=env)
    # A new token, logged in and out: the file goes and the token stops working.
    token = arena.api("POST", "/api/v1/me/tokens", "alice").json()["token"]
    env2 = {"XDG_CONFIG_HOME": str(tmp_path / "config-logout")}
    cli("remote", "login", arena.url, env=env2, input=token + "\n")
    r = cli("remote", "logout", env=env2)
    assert "the token is revoked" in r.stderr
    assert not (tmp_path / "config-logout" / "thirtyone" / "remote.json").exists()
    assert arena.api("GET", "/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert "not logged in" in cli("remote", "status", env=env2, check=False).stderr
    assert arena.api("GET", "/api/v1/me", "alice").status_code == 200  # her other tokens still work
