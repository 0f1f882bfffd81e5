"""Matches played on Ray (``tournament run --ray``): the same results as local workers, on
one node or two, and nothing lost or played twice when a worker, a node or the runner dies.

The executors are behind one interface, so the first test runs against each of them. The
Ray tests skip, saying so, when Ray (the ``ray`` extra) is not installed. A cluster of two
Ray nodes on this one machine (two raylets, one CPU each) is made once for the module with
Ray's own test helper, and stopped in the fixture's teardown whatever happens.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.log import read_log
from referee.text import plural
from referee.tournament import ray_executor
from referee.tournament.ray_executor import (
    WORKER_DIR_PREFIX,
    MatchWorker,
    pack_bot,
    ray_available,
    receive,
)
from referee.tournament.store import DB_NAME, TournamentStore
from referee.tournament.tasks import log_name
from tests.polling import poll_until

from .conftest import (
    Played,
    copy_tournament,
    done_count,
    fails,
    flat,
    ok,
    outcomes,
    processes_in,
    scheduled_keys,
    stored_matches,
    wait_for_matches,
    wait_no_process_in,
)

# Ray is heavy (a local cluster per run, and a module fixture of two nodes): its tests and the
# arena's Ray tests share one test process (the group "ray"), so that two clusters never run
# at once (on two cores they starve each other) and the cluster is built once.
pytestmark = pytest.mark.xdist_group("ray")

needs_ray = pytest.mark.skipif(not ray_available(), reason="Ray is not installed (pip install -e '.[ray]')")


class TwoNodes:
    """A Ray cluster of two nodes on this machine, one CPU each."""

    def __init__(self) -> None:
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 1, "include_dashboard": False})
        self.worker = self.cluster.add_node(num_cpus=1)
        self.cluster.wait_for_nodes()

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def ensure_two(self) -> None:
        """Add the second node again if a test took it away."""
        if not self.cluster.worker_nodes:
            self.worker = self.cluster.add_node(num_cpus=1)
            self.cluster.wait_for_nodes()

    def kill_worker_node(self) -> None:
        """The second node dies: its raylet and every process of it, at once."""
        self.cluster.remove_node(self.worker, allow_graceful=False)


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[TwoNodes]:
    if not ray_available():
        pytest.skip("Ray is not installed (pip install -e '.[ray]')")
    nodes = TwoNodes()
    try:
        yield nodes
    finally:
        try:
            nodes.cluster.shutdown()
        finally:  # whatever went wrong above, no process of the cluster outlives the tests
            for node in [*nodes.cluster.worker_nodes, nodes.cluster.head_node]:
                if node is not None:
                    node.kill_all_processes(check_alive=False, allow_graceful=False, wait=True)


def match_workers() -> list[int]:
    """The processes of the Ray actors that play matches (``ray::MatchWorker...``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"ray::MatchWorker"):
                found.append(int(entry.name))
    return found


def wait_no_match_worker(timeout_s: float = 120.0) -> list[int]:
    with contextlib.suppress(AssertionError):
        poll_until("every match worker to be gone", lambda: not match_workers(), timeout_s=timeout_s, interval_s=0.1)
    return match_workers()


def infra_count(folder: Path) -> int:
    """Infrastructure failures recorded so far (read-only, safe while a run writes)."""
    conn = sqlite3.connect(f"file:{folder / DB_NAME}?mode=ro", uri=True, timeout=5)
    try:
        (n,) = conn.execute("SELECT count(*) FROM infra_failures").fetchone()
        return int(n)
    finally:
        conn.close()


def start_ray_run(folder: Path, out: Path, address: str) -> subprocess.Popen[bytes]:
    """``thirtyone tournament run FOLDER --ray ADDRESS`` as a process of its own."""
    cmd = [sys.executable, "-c", "from referee.cli import main; main()", "tournament", "run", str(folder), "--ray", address]
    with open(out, "wb") as f:
        return subprocess.Popen(cmd, cwd=folder, stdout=f, stderr=subprocess.STDOUT)


def check_complete(folder: Path, reference: Played) -> list[Any]:
    """Every scheduled match stored once with its verified log, and the reference's results."""
    rows = stored_matches(folder)
    keys = scheduled_keys(folder)
    assert [r.key for r in rows] == sorted(keys)
    assert collections.Counter(r.key for r in rows).most_common(1)[0][1] == 1
    assert sorted(p.name for p in (folder / "logs").iterdir()) == sorted(log_name(k) for k in keys)
    for r in rows:
        log = read_log(folder / r.log_path)
        assert log.complete and log.footer is not None and list(log.footer.placings) == r.placings, r.key
    assert outcomes(folder) == reference.outcomes
    assert ok("standings", folder, "--json").stdout == reference.standings_json
    return rows


EXECUTORS = [
    pytest.param("local", id="local-pool"),
    pytest.param("ray-local", id="ray-local", marks=needs_ray),
    pytest.param("ray-two-nodes", id="ray-two-nodes", marks=needs_ray),
]


#: A whole tournament on a Ray cluster, with the session's reference run and base tournament
#: when this test comes first: minutes on a loaded machine (pytest's default 300 s ran out).
LONG = pytest.mark.timeout(1200)


@pytest.mark.slow
@LONG
@pytest.mark.parametrize("executor", EXECUTORS)
def test_every_executor_gives_the_reference_results(
    executor: str, reference_run: Played, base_tournament: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    if executor == "local":
        args: list[object] = ["-j", 2]
    elif executor == "ray-local":
        args = ["--ray", "local"]
    else:
        nodes: TwoNodes = request.getfixturevalue("two_nodes")
        nodes.ensure_two()
        args = ["--ray", nodes.address]
    # Only the folders this run leaves count: another test's Ray workers may die beside it.
    before = set(Path("/tmp").glob(WORKER_DIR_PREFIX + "*"))
    run = ok("tournament", "run", folder, *args)
    assert "played 36 matches" in flat(run.stderr), run.output
    rows = check_complete(folder, reference_run)
    ok("replay", "--verify", folder)
    with TournamentStore.open(folder) as store:
        assert store.infra_failures() == []
    assert wait_no_process_in(folder, timeout_s=120) == [], processes_in(folder)
    if executor != "local":
        assert "on Ray" in flat(run.stderr)
        nodes_seen = {r.result["node"]["id"] for r in rows}
        assert len(nodes_seen) == (2 if executor == "ray-two-nodes" else 1), nodes_seen
        assert wait_no_match_worker() == []
        # The workers' private folders (the bots' copies) went with them.
        assert not [p for p in set(Path("/tmp").glob(WORKER_DIR_PREFIX + "*")) - before if _owner_gone(p)]


def _owner_gone(p: Path) -> bool:
    pid = p.name[len(WORKER_DIR_PREFIX) :].split("-", 1)[0]
    return pid.isdigit() and not Path(f"/proc/{pid}").exists()


@pytest.mark.slow
@LONG
@needs_ray
def test_a_killed_worker_a_lost_node_and_a_killed_runner_lose_nothing(
    two_nodes: TwoNodes, reference_run: Played, base_tournament: Path, tmp_path: Path
) -> None:
    two_nodes.ensure_two()
    folder = copy_tournament(base_tournament, tmp_path / "t")
    total = len(scheduled_keys(folder))
    out = tmp_path / "run.out"
    proc = start_ray_run(folder, out, two_nodes.address)
    try:
        # 1. A worker (a Ray actor) is killed mid-run, as the out-of-memory killer would.
        wait_for_matches(proc, folder, 2, out)
        # Two workers, one a node; a worker that Ray replaced (one late on a busy machine is
        # killed and started again) takes a moment to be gone, so wait for the count.
        poll_until("two match workers", lambda: len(match_workers()) == 2, timeout_s=120, detail=lambda: f"match workers: {match_workers()}")
        workers = match_workers()
        os.kill(workers[0], signal.SIGKILL)
        # 2. A whole node dies: its raylet and everything on it (once the worker is replaced).
        with contextlib.suppress(AssertionError):  # the next wait fails the test if it matters
            poll_until("the killed worker's replacement", lambda: len(match_workers()) >= 2, timeout_s=120)
        n = wait_for_matches(proc, folder, done_count(folder) + 2, out)
        two_nodes.kill_worker_node()
        # Its match in flight is lost as the infrastructure's, and played on the node left.
        t0 = time.monotonic()
        with contextlib.suppress(AssertionError):  # the counts below say what went wrong
            poll_until("the lost node's match given up", lambda: infra_count(folder) >= 2, timeout_s=120, interval_s=0.1,
                       while_=lambda: proc.poll() is None)  # fmt: skip
        assert proc.poll() is None, out.read_text()
        print(f"the lost node's match was given up after {time.monotonic() - t0:.1f} s")
        # 3. The runner is killed: its workers go with it.
        wait_for_matches(proc, folder, n + 3, out)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_no_match_worker() == []
    assert wait_no_process_in(folder, timeout_s=120) == [], processes_in(folder)
    after_kill = done_count(folder)
    assert after_kill < total
    text = flat(out.read_text())
    assert "Traceback" not in text
    with TournamentStore.open(folder) as store:
        failures = store.infra_failures()
    whys = [why for _, why, _ in failures]
    assert len(whys) >= 2 and all("Ray worker on" in why and "died" in why for why in whys), whys

    # 4. Run again, on the one node left: exactly the missing matches, the reference's results.
    run = ok("tournament", "run", folder, "--ray", two_nodes.address)
    assert f"played {plural(total - after_kill, 'match', 'matches')} in" in flat(run.stderr), run.output
    check_complete(folder, reference_run)
    ok("replay", "--verify", folder)
    results = [json.dumps(r.result["node"]) for r in stored_matches(folder)]
    assert len(set(results)) == 2  # both nodes played before the second one died


def test_without_ray_the_option_says_how_to_install_it(base_tournament: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_executor, "ray_available", lambda: False)
    fails("tournament", "run", copy_tournament(base_tournament, tmp_path / "t"), "--ray", "local",
          message="pip install 'thirtyone-arena[ray]'")  # fmt: skip


# ---------------------------------------------------------------- the worker, without a cluster
#
# A MatchWorker is plain Python until the executor makes it a Ray actor: these play it in this
# process, with the bots' tars as bytes where a cluster would hand it object references.


@pytest.fixture(scope="module")
def folder_bot_tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tournament of an SDK bot submitted as a folder (--dir) and the greedy sample."""
    from referee.tournament.settings import TournamentSettings
    from referee.tournament.submit import submit

    from .conftest import SANDBOX, SDK_BOT

    root = tmp_path_factory.mktemp("folderbot")
    src = root / "src"
    src.mkdir()
    (src / "plain.py").write_text(SDK_BOT)
    folder = root / "t"
    settings = TournamentSettings(table_size=2, games=1, seed=7, sandbox=SANDBOX)
    with TournamentStore.create(folder, settings) as store:
        submit(store, f"{sys.executable} plain.py", name="plain", cwd=root, bot_dir=src)
        submit(store, "greedy", cwd=root)
    return folder


def _first_task(folder: Path) -> Any:
    from referee.tournament.runner import clean_leftovers, pending_tasks

    with TournamentStore.open(folder) as store:
        clean_leftovers(store)
        tasks, _ = pending_tasks(store)
    return tasks[0]


def test_a_bot_folder_travels_as_a_tar_and_runs_from_the_workers_copy(folder_bot_tournament: Path, tmp_path: Path) -> None:
    folder = copy_tournament(folder_bot_tournament, tmp_path / "t")
    task = _first_task(folder)
    plain = next(b for b in task.bots if b.name == "plain")
    bundles = {"plain": pack_bot(plain, folder.resolve())}
    assert bundles["plain"] is not None
    # The tournament's copy is gone: the worker can only run the bot from the tar it was sent.
    os.rename(folder / "bots", tmp_path / "bots.away")
    worker = MatchWorker()
    try:
        played = worker.play(task, str(folder.resolve()), bundles)
    finally:
        worker.close()
    assert not worker.root.exists()
    if ray_available():  # a worker outside Ray neither starts nor joins a cluster
        import ray

        assert not ray.is_initialized()
    r = played.result
    assert r.ok and not r.infra and r.start_failures == {}, r
    assert sorted(r.started) == ["greedy", "plain"]
    # The runner's side writes the log where a local worker would, checks it, and keeps the node.
    got = receive(task, played)
    assert got.ok and got.result["node"]["host"] == played.host
    assert read_log(task.log_path).complete
    assert sorted(p.name for p in Path(task.output_dir).iterdir()) == sorted(played.outputs)
    # A log that does not say what the result says is the infrastructure's failure.
    bad = dataclasses.replace(played, log_text=played.log_text.replace(str(task.match.seed), str(task.match.seed + 1)))
    wrong = receive(task, bad)
    assert wrong.infra and not wrong.ok and "came back wrong" in wrong.error, wrong


def test_a_bot_changed_on_the_way_is_refused_as_a_changed_bot(folder_bot_tournament: Path, tmp_path: Path) -> None:
    import io
    import tarfile

    folder = copy_tournament(folder_bot_tournament, tmp_path / "t")
    task = _first_task(folder)
    plain = next(b for b in task.bots if b.name == "plain")
    # A tar of other content under the bot's path: the hash checked before the launch refuses it.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "plain.py").write_text("print('not the submitted bot')\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(tmp_path / "other", arcname=str(Path(plain.files).resolve().relative_to(folder.resolve())))
    worker = MatchWorker()
    try:
        played = worker.play(task, str(folder.resolve()), {"plain": buf.getvalue()})
    finally:
        worker.close()
    assert played.result.ok and "changed since it was submitted" in played.result.start_failures["plain"]


def test_a_runtime_missing_on_the_node_is_the_infrastructures_failure_naming_node_and_command(
    folder_bot_tournament: Path, tmp_path: Path
) -> None:
    folder = copy_tournament(folder_bot_tournament, tmp_path / "t")
    task = _first_task(folder)
    plain = next(b for b in task.bots if b.name == "plain")
    bundles = {"plain": pack_bot(plain, folder.resolve())}  # its files travel; its program is missing
    bots = tuple(dataclasses.replace(b, spec="plain=nosuch-runtime-31 bot.js") if b is plain else b for b in task.bots)
    worker = MatchWorker()
    try:
        played = worker.play(dataclasses.replace(task, bots=bots), str(folder.resolve()), bundles)
    finally:
        worker.close()
    r = played.result
    assert not r.ok and r.infra and r.start_failures == {}, r  # never charged to the bot
    assert "'nosuch-runtime-31'" in r.error and "nosuch-runtime-31 bot.js" in r.error
    assert f"Ray node {worker.host}" in r.error and "every node needs the bots' runtimes" in r.error


@needs_ray
def test_a_cluster_that_does_not_answer_is_said_at_once(base_tournament: Path, tmp_path: Path) -> None:
    folder = copy_tournament(base_tournament, tmp_path / "t")
    fails("tournament", "run", folder, "--ray", "127.0.0.1:1", code=1,
          message="cannot reach the Ray cluster at 127.0.0.1:1: Connection refused")  # fmt: skip
    assert done_count(folder) == 0


# ---------------------------------------------------------------- the dispatch loop, with a fake Ray
#
# What the executor decides (where a retry goes, when it gives up) without a cluster: a
# stand-in for the few calls of Ray it makes, each answer scripted.


class FakeRayError(Exception):
    pass


class _Ref:
    def __init__(self, answer: Any) -> None:
        self.answer = answer


class _Method:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> _Ref:
        return _Ref(self.fn(*args))


class FakeActor:
    def __init__(self, node: str, *, starts: bool = True, dies_on: str = "") -> None:
        self.node, self.dies_on, self.killed, self.played = node, dies_on, False, []
        info = {"node_id": node, "host": f"host-{node}", "referee": ray_executor.referee_digest()}
        self.info = _Method(lambda: info if starts else FakeRayError("the actor died in its constructor"))
        self.play = _Method(self._play)

    def _play(self, task: Any, folder: str, bundles: dict[str, Any]) -> Any:
        from referee.tournament.tasks import TaskResult

        self.played.append(task.match.key)
        if task.match.key == self.dies_on:
            return FakeRayError("The actor died unexpectedly before finishing this task.")
        r = TaskResult(task.match.key, True, {"placings": [1, 2]}, has_log=False)
        return ray_executor.Played(r, "", {}, self.node, f"host-{self.node}")


class FakeRay:
    class exceptions:  # as Ray names it
        RayError = FakeRayError

    @staticmethod
    def wait(refs: list[_Ref], num_returns: int, timeout: float) -> tuple[list[_Ref], list[_Ref]]:
        return refs[:1], refs[1:]

    @staticmethod
    def get(ref: _Ref) -> Any:
        if isinstance(ref.answer, Exception):
            raise ref.answer
        return ref.answer

    @staticmethod
    def kill(actor: FakeActor, no_restart: bool) -> None:
        actor.killed = True


def _fake_tasks(n: int, tmp_path: Path) -> list[Any]:
    from referee.tournament.schedule import ScheduledMatch
    from referee.tournament.settings import TournamentSettings
    from referee.tournament.tasks import MatchTask

    settings = TournamentSettings().to_dict()
    return [
        MatchTask(ScheduledMatch(f"a+b/d{i:03d}/r0", ("a", "b"), i, 0, ("a", "b"), i), str(tmp_path / f"{i}.jsonl"), (), settings)
        for i in range(n)
    ]


def _run_fake(actors: list[FakeActor], tasks: list[Any]) -> list[Any]:
    from referee.tournament.ray_executor import ActorSlot, RayExecutor

    pool = iter(actors)

    def spawn() -> ActorSlot:
        actor = next(pool)
        return ActorSlot(actor, actor.info.remote(), time.monotonic())

    executor = RayExecutor.__new__(RayExecutor)
    executor.address, executor.match_limit_s, executor.on_message, executor.nodes = "fake", None, None, {}
    workers = [spawn(), spawn()]
    return list(executor._loop(FakeRay(), workers, spawn, tasks, None, "/nowhere", {}))


def test_a_match_lost_with_its_worker_is_played_again_on_another_node(tmp_path: Path) -> None:
    tasks = _fake_tasks(4, tmp_path)
    lost = tasks[0].match.key
    a, b, a2 = FakeActor("A", dies_on=lost), FakeActor("B"), FakeActor("A")
    results = _run_fake([a, b, a2], tasks)
    assert [(r.key, r.ok, r.retrying) for r in results if r.key == lost] == [(lost, False, True), (lost, True, False)]
    assert "the Ray worker on host-A (node A) died (FakeRayError: The actor died unexpectedly" in results[0].error
    assert results[0].infra
    assert a.killed and a.played == [lost]  # the dead worker is replaced (a2) ...
    assert lost in b.played and lost not in a2.played  # ... and the match goes to the other node
    assert sorted(r.key for r in results if r.ok) == sorted(t.match.key for t in tasks)
    assert all(r.result["node"]["id"] in ("A", "B") for r in results if r.ok)


def test_workers_that_cannot_start_anywhere_stop_the_run_saying_why(tmp_path: Path) -> None:
    from referee.tournament.tasks import MAX_ATTEMPTS, RunError

    actors = [FakeActor(str(i), starts=False) for i in range(2 * MAX_ATTEMPTS + 2)]
    with pytest.raises(RunError, match=r"Ray workers cannot start on the cluster at fake .*died in its constructor"):
        _run_fake(actors, _fake_tasks(2, tmp_path))


def test_variables_passed_by_name_take_the_organisers_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.bots.sandbox import SandboxConfig

    monkeypatch.setenv("THIRTYONE_TEST_KEY", "organiser's")
    monkeypatch.delenv("THIRTYONE_TEST_UNSET", raising=False)
    task = dataclasses.replace(
        _fake_tasks(1, tmp_path)[0], sandbox=SandboxConfig(env=("THIRTYONE_TEST_KEY", "A=1", "THIRTYONE_TEST_UNSET"))
    )
    got = ray_executor.with_values(task).sandbox
    assert got is not None and got.env == ("THIRTYONE_TEST_KEY=organiser's", "A=1")


def test_unsandboxed_sample_bots_and_a_missing_folder_on_the_node(tmp_path: Path) -> None:
    from referee.tournament.settings import TournamentSettings

    from .conftest import make_tournament

    folder = make_tournament(tmp_path / "t", TournamentSettings(table_size=2, games=1, seed=3, sandbox="off"), ["random", "greedy"])
    task = _first_task(folder)
    worker = MatchWorker()
    try:
        played = worker.play(task, str(folder.resolve()), {})
    finally:
        worker.close()
    assert played.result.ok and played.result.start_failures == {}, played.result
    # A command submitted without --dir runs where it was submitted: a node without that folder is unfit.
    elsewhere = tuple(dataclasses.replace(b, kind="command", cwd=str(tmp_path / "gone")) if b.name == "random" else b
                      for b in task.bots)  # fmt: skip
    worker = MatchWorker()
    try:
        unfit = worker.play(dataclasses.replace(task, bots=elsewhere), str(folder.resolve()), {}).result
    finally:
        worker.close()
    assert unfit.infra and not unfit.ok and f"runs in {tmp_path / 'gone'}, which does not exist on Ray node" in unfit.error
