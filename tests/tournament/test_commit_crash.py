"""A tournament run killed between moving a match's log into place and storing its result:
the next run removes that log before anything else, and plays the match again. Real runs
(in this process), real bot processes, real SQLite; the kill is an exception raised at that
exact point, as a real kill -9 cannot be aimed there."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from referee.tournament.runner import run_pending
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.tasks import MatchTask, TaskResult, log_name, output_dir_of
from tests.tournament.conftest import make_tournament

pytestmark = pytest.mark.timeout(600)


class _Killed(BaseException):
    """Stands for the kill: a BaseException, so that nothing in the runner catches it."""


class _NothingPlayed:
    """An executor that plays nothing: the run does what it does at a start, then ends."""

    def run(self, tasks: Sequence[MatchTask], prepare: Callable[[MatchTask], MatchTask] | None = None) -> Iterator[TaskResult]:
        return iter(())


def test_a_log_moved_before_a_kill_is_dropped_and_its_match_played_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_tournament(tmp_path / "t", TournamentSettings(table_size=2, games=2, seed=5, sandbox="off"), ("greedy", "random"), validate=False)
    killed: list[str] = []
    real = TournamentStore.record_match

    def die_at_the_first_commit(self: TournamentStore, row: Any) -> None:
        killed.append(row.key)
        raise _Killed

    monkeypatch.setattr(TournamentStore, "record_match", die_at_the_first_commit)
    with TournamentStore.open(folder) as store, pytest.raises(_Killed):
        run_pending(store, 1)
    monkeypatch.setattr(TournamentStore, "record_match", real)
    (key,) = killed
    log = folder / "logs" / log_name(key)
    assert log.exists(), "the kill came after the log was moved into place"

    with TournamentStore.open(folder) as store:
        assert key not in store.done_keys()
        run_pending(store, 1, executor=_NothingPlayed())
    assert not log.exists(), "a log of a match with no stored result outlived the next run's start"
    assert not output_dir_of(folder, key).exists()

    with TournamentStore.open(folder) as store:
        report = run_pending(store, 1)
        done = store.done_keys()
    assert report.played == report.total == len(done) and key in done
    assert {p.name for p in (folder / "logs").glob("*.jsonl")} == {log_name(k) for k in done}
