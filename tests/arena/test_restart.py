"""kill -9 of the whole service mid-ladder, then a restart: no match lost or counted twice,
and the validation queue resumes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.arena.conftest import SAMPLES, Arena, cli, descendants
from tests.polling import alive, poll_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def _db(arena: Arena) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{arena.folder / 'arena.db'}?mode=ro", uri=True)


def _serve_in_own_group(arena: Arena) -> None:
    # Arena.serve gives the service its own process group, as a shell gives a job, so that
    # the test can kill all of it.
    arena.serve("-j", "2", own_group=True)


def test_kill_9_mid_ladder_then_restart_loses_and_repeats_nothing(arena_factory, tmp_path: Path) -> None:
    arena: Arena = arena_factory()
    arena.add_users("alice", "bob")
    _serve_in_own_group(arena)
    assert arena.api("POST", "/api/v1/versions", "alice", params={"filename": "greedy.py"}, content=(SAMPLES / "greedy.py").read_bytes()).status_code == 201
    assert arena.api("POST", "/api/v1/versions", "bob", params={"filename": "randbot.py"}, content=(SAMPLES / "random.py").read_bytes()).status_code == 201

    def done() -> int:
        with _db(arena) as c:
            return int(c.execute("SELECT count(*) FROM matches WHERE status = 'done'").fetchone()[0])

    poll_until("a few finished matches", lambda: done() >= 4, timeout_s=900, interval_s=0.5)
    # A third upload, queued or being validated when the service dies.
    shutil.copy(SAMPLES / "greedy.py", tmp_path / "late.py")
    assert arena.api("POST", "/api/v1/versions", "alice", params={"filename": "late.py"}, content=(tmp_path / "late.py").read_bytes()).status_code == 201
    with _db(arena) as c:
        before = dict(c.execute("SELECT key, result FROM matches WHERE status = 'done'").fetchall())
        scheduled = {k for (k,) in c.execute("SELECT key FROM matches")}
        (late_status,) = c.execute("SELECT v.status FROM versions v JOIN bots b ON b.id = v.bot_id WHERE b.name = 'late'").fetchone()
    assert arena.proc is not None
    below = descendants(arena.proc.pid) | {arena.proc.pid}
    os.killpg(arena.proc.pid, signal.SIGKILL)
    arena.proc.wait(timeout=60)
    # (It takes seconds to validate a bot: the kill comes a few milliseconds after the upload.)
    assert late_status in ("queued", "validating")
    poll_until("every process of the killed service to be gone", lambda: not any(alive(p) for p in below), timeout_s=120, interval_s=0.2)

    _serve_in_own_group(arena)

    def late_validated() -> str | None:
        vs = [v for v in arena.api("GET", "/api/v1/versions", "alice").json() if v["bot"] == "late"]
        return vs[0]["status"] if vs and vs[0]["status"] in ("active", "rejected") else None

    assert poll_until("the late upload's validation to resume", late_validated, timeout_s=900, interval_s=0.2) == "active"
    poll_until("more finished matches after the restart", lambda: done() >= len(before) + 4, timeout_s=900, interval_s=0.5)
    arena.stop(signal.SIGTERM)

    with _db(arena) as c:
        rows = c.execute("SELECT key, status, result, seats FROM matches").fetchall()
        counted = dict(c.execute("SELECT id, matches FROM versions").fetchall())
    after = {k: r for k, s, r, _ in rows if s == "done"}
    # Nothing lost: every match scheduled before the kill is still there; every finished one
    # kept its result; none was counted twice (each version's count is its finished seats).
    assert scheduled <= {k for k, *_ in rows}
    assert all(after[k] == r for k, r in before.items())
    seats_done: dict[int, int] = {}
    for _k, s, _r, seats in rows:
        if s == "done":
            for v in json.loads(seats):
                seats_done[v] = seats_done.get(v, 0) + 1
    assert {v: n for v, n in counted.items() if n} == seats_done
    # And every finished match's log replays through the game model.
    r = cli("replay", str(arena.folder / "logs"), "--verify", check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(list((arena.folder / "logs").glob("*.jsonl"))) == len(after)
