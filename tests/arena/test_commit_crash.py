"""A ladder killed between moving a match's log into place and storing its result: at the
next start the log of a result the arena does not have is gone, and the match is played
again. Real ladder runs (in this process), real bot processes, real SQLite; the kill is
an exception raised at that exact point, as a real kill -9 cannot be aimed there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from referee.ladder.accounts import add_user
from referee.ladder.loop import Ladder
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, create
from referee.ladder.uploads import accept_upload
from referee.tournament.settings import TournamentSettings
from referee.tournament.tasks import log_name, output_dir_of
from tests.arena.conftest import SAMPLES, run_ladder_until

pytestmark = pytest.mark.timeout(600)


class _Killed(BaseException):
    """Stands for the kill: a BaseException, so that nothing in the ladder catches it."""


class _StartOnly(Ladder):
    """A ladder that does what it does at a start, then stops before playing anything."""

    def _play_forever(self, store: ArenaStore) -> None:
        return


def test_a_log_moved_before_a_kill_is_dropped_and_its_match_played_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "arena"
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off")))
    with ArenaStore.open(folder) as store:
        # Two owners: one owner's versions never share a table (the arena's default).
        users = [add_user(store, "alice")[0], add_user(store, "bob")[0]]
        # (Not "random.py": a bot file of that name would shadow the standard library's.)
        for user, (name, sample) in zip(users, (("greedy.py", "greedy.py"), ("randbot.py", "random.py")), strict=True):
            store.set_status(accept_upload(store, user, name, (SAMPLES / sample).read_bytes()).id, "active")

    killed: list[str] = []
    real = ArenaStore.record_result

    def die_at_the_first_commit(self: ArenaStore, key: str, *args: Any, **kwargs: Any) -> bool:
        killed.append(key)
        raise _Killed

    monkeypatch.setattr(ArenaStore, "record_result", die_at_the_first_commit)
    with pytest.raises(_Killed):
        Ladder(folder, 1).run()
    monkeypatch.setattr(ArenaStore, "record_result", real)
    (key,) = killed
    log = folder / "logs" / log_name(key)
    assert log.exists(), "the kill came after the log was moved into place"
    with ArenaStore.open(folder, readonly=True) as s:
        assert s.match(key).status == "pending"

    _StartOnly(folder, 1).run()
    assert not log.exists(), "a log of a match with no stored result outlived the restart"
    assert not output_dir_of(folder, key).exists()

    def replayed() -> bool:
        with ArenaStore.open(folder, readonly=True) as s:
            return s.match(key).status == "done"

    run_ladder_until(Ladder(folder, 1), "the cut-short match to be played again", replayed)
    with ArenaStore.open(folder, readonly=True) as s:
        done = {m.key for m in s.matches(status="done", limit=1000)}
        assert s.match(key).log_path == f"logs/{log_name(key)}"
    assert log.exists()
    assert {p.name for p in (folder / "logs").glob("*.jsonl")} == {log_name(k) for k in done}
