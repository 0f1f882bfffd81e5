"""``arena serve --ray local`` plays what ``arena serve -j 2`` plays: the same tables, the same
placings, the same logs but for their timings.

One arena is made (two deterministic sample bots, made active directly: validation is not
what this test is about) and copied, secret included, so both copies deal the same seeds.
With exactly as many versions as seats every table seats both, so the scheduler's choices
cannot depend on the order results came back in. Each copy is served in turn, a real
``arena serve`` process over real HTTP, until its first tables are finished. Skipped, saying
so, when Ray (the ``ray`` extra) is not installed.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from referee.ladder.accounts import add_user
from referee.ladder.loop import RAY_BATCH_TABLES
from referee.ladder.store import ArenaStore, LadderMatch, match_key
from referee.ladder.uploads import accept_upload
from referee.tournament.ray_executor import WORKER_DIR_PREFIX, ray_available
from tests.arena.conftest import SAMPLES, Arena, make_arena
from tests.polling import poll_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(not ray_available(), reason="Ray is not installed (pip install -e '.[ray]')"),
    # In the tournament's Ray tests' process (tests/tournament/test_ray.py): never two clusters at once.
    pytest.mark.xdist_group("ray"),
]

#: Tables each copy plays to the end before it is stopped (two seats: two matches each): more
#: than the ladder hands Ray at once, so that Ray plays more than one batch.
TABLES = RAY_BATCH_TABLES + 1
#: Keys of the fields of a log line or a result that say how long a decision took (or whether
#: it was late), not what happened.
TIMING = re.compile(r"[lL]atency|^late")


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not TIMING.search(k)}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _played(folder: Path) -> dict[str, Any]:
    """The first tables' matches: seats, result without timings, and the log without timings."""
    out: dict[str, Any] = {}
    with ArenaStore.open(folder) as store:
        for tid in range(1, TABLES + 1):
            for m in store.matches_of_table(tid):
                out[m.key] = _match(folder, m)
    return out


def _match(folder: Path, m: LadderMatch) -> dict[str, Any]:
    assert m.status == "done" and m.result is not None and m.log_path, m
    # A match played on Ray says on which node; one played locally says nothing of it.
    result = {k: v for k, v in m.result.items() if k != "node"}
    result["on_ray"] = "node" in m.result
    log = [json.loads(line) for line in (folder / m.log_path).read_text().splitlines()]
    return {"seats": m.seats, "commitment": m.commitment, "result": _untimed(result), "log": _untimed(log)}


def _tables_done(arena: Arena) -> bool:
    done = arena.api("GET", "/api/v1/matches", params={"status": "done", "limit": 500}).json()
    keys = {m["key"] for m in done}
    return all(match_key(t, r) in keys for t in range(1, TABLES + 1) for r in range(2))


def test_ray_local_plays_the_same_matches_as_two_local_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the local Ray instance keeps its sessions (short: Ray's sockets live there).
    ray_tmp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    monkeypatch.setenv("RAY_TMPDIR", str(ray_tmp))
    try:
        _compare(tmp_path, ray_tmp)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _compare(tmp_path: Path, ray_tmp: Path) -> None:
    base = make_arena(tmp_path / "base").folder
    with ArenaStore.open(base) as store:
        # Two owners: one owner's versions never share a table (the arena's default).
        users = [add_user(store, "alice")[0], add_user(store, "bob")[0]]
        for user, (src, fname) in zip(users, ((SAMPLES / "greedy.py", "greedy.py"), (SAMPLES / "random.py", "randbot.py")), strict=True):
            v = accept_upload(store, user, fname, src.read_bytes())
            store.set_status(v.id, "active")
    played: dict[str, dict[str, Any]] = {}
    workers_before = set(Path("/tmp").glob(WORKER_DIR_PREFIX + "*"))
    for how, args in (("local", ("-j", "2")), ("ray", ("--ray", "local", "-j", "2"))):
        folder = tmp_path / how
        shutil.copytree(base, folder)
        arena = Arena(folder)
        arena.serve(*args)
        try:
            poll_until(f"the first {TABLES} tables to finish ({how})", lambda a=arena: _tables_done(a), timeout_s=600, interval_s=1.0)
        finally:
            arena.stop()
        played[how] = _played(folder)
        assert "Traceback" not in arena.output(), arena.output()
    # The Ray workers stopped in the middle of a batch took their folders (the bots' copies).
    assert set(Path("/tmp").glob(WORKER_DIR_PREFIX + "*")) <= workers_before
    # One Ray instance served every batch (not one started and stopped per batch).
    sessions = [p.name for p in (ray_tmp / "ray").glob("session_*") if p.name != "session_latest"]
    assert len(sessions) == 1, sessions
    assert set(played["ray"]) == set(played["local"]) and len(played["local"]) == 2 * TABLES
    for key, local in played["local"].items():
        ray = played["ray"][key]
        assert ray["seats"] == local["seats"] and ray["commitment"] == local["commitment"], key
        assert ray["result"] == {**local["result"], "on_ray": True} and not local["result"]["on_ray"], key
        assert ray["log"] == local["log"], key
