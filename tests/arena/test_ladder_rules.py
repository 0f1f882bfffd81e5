"""The ladder's rules with no server and no bot: fair-deal commitments, the
settings file, the store's one-count-per-result, and the upload extractor's own checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.ladder.errors import ArenaError, BadUpload
from referee.ladder.fairness import check_commitment, commitment, deal_seed
from referee.ladder.settings import SETTINGS_NAME, ArenaSettings, load
from referee.ladder.store import ArenaStore, create
from referee.ladder.uploads import check_command
from referee.log import read_log
from tests.replay.fixtures import write_all


def test_seeds_come_from_the_secret_and_the_table() -> None:
    a, b = b"\x01" * 32, b"\x02" * 32
    assert deal_seed(a, 5) == deal_seed(a, 5)
    assert len({deal_seed(a, 5), deal_seed(a, 6), deal_seed(b, 5)}) == 3
    assert 0 <= deal_seed(a, 5) < 2**64
    assert commitment(123) == commitment(123) != commitment(124)


def test_a_log_checks_against_its_commitment_and_its_deals(tmp_path: Path) -> None:
    logs = write_all(tmp_path)
    seeded = logs["standard"]  # every deal from its seed
    seed = read_log(seeded).header.seed
    ok = check_commitment(seeded, commitment(seed))
    assert ok.ok, ok.detail
    assert "matches its commitment" in ok.detail
    wrong = check_commitment(seeded, commitment(seed + 1))
    assert not wrong.ok and "does not match the commitment" in wrong.detail
    # A log whose seed is the committed one but whose deals are not that seed's.
    crafted = logs["specials"]
    bad = check_commitment(crafted, commitment(read_log(crafted).header.seed))
    assert not bad.ok and "is not the one its seed gives" in bad.detail


def test_settings_round_trip_through_arena_toml_and_the_fixed_ones_stay(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    s = ArenaSettings(daily_uploads=7)
    create(folder, s)
    assert load(folder) == s
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert oct((folder / "secret").stat().st_mode & 0o777) == "0o600"
    toml = folder / SETTINGS_NAME
    toml.write_text(toml.read_text().replace("table_size = 2", "table_size = 3"))
    with pytest.raises(ArenaError, match="fixed for an arena's life"):
        ArenaStore.open(folder)
    toml.write_text(toml.read_text().replace("table_size = 3", "table_size = 2").replace("daily_uploads = 7", "daily_uploads = 0"))
    with pytest.raises(ArenaError, match="daily_uploads must be a whole number from 1"):
        load(folder)
    with pytest.raises(ArenaError, match="not an empty folder"):
        create(folder, s)


def test_a_result_is_counted_once(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    create(folder, ArenaSettings())
    with ArenaStore.open(folder) as store:
        user = store.add_user("u")
        ids = []
        for name in ("x", "y"):
            (folder / "uploads" / name).mkdir()
            (folder / "uploads" / name / "bot.py").write_text("")

            def place(vid: int, name: str = name) -> str:
                (folder / "uploads" / name).rename(folder / "versions" / str(vid))
                return f"versions/{vid}"

            v = store.add_version(user.id, name, place=place, command="bot.py", sha256="", n_files=1, size=0, source="bot.py",
                                  mu=25.0, sigma=8.0)
            ids.append(v.id)
        matches = store.schedule_table(ids, lambda tid: commitment(deal_seed(b"k", tid)), placement=True)
        assert [m.commitment for m in matches] == [commitment(deal_seed(b"k", matches[0].table_id))] * 2
        result = {"placings": [1, 2], "winner": 0, "reason": "last_standing", "rounds": 3, "seats": [{}, {}]}
        moved = {ids[0]: (26.0, 7.0), ids[1]: (24.0, 7.0)}
        assert store.record_result(matches[0].key, result, "", 1.0, moved)
        assert not store.record_result(matches[0].key, result, "", 1.0, {ids[0]: (99.0, 1.0), ids[1]: (0.0, 1.0)})
        assert store.version(ids[0]).matches == 1 and store.version(ids[0]).mu == 26.0
        assert not store.match(matches[0].key).deal_done
        assert store.record_result(matches[1].key, result, "", 1.0, moved)
        assert store.match(matches[0].key).deal_done


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("python nothere.py", "not a file in the bot's folder"),
        ("bash -c 'curl evil'", "use one of python, python3, node"),
        ("python ../../etc/passwd", "leads out of the bot's folder"),
        ("python /etc/passwd", "absolute path"),
        ("python", "names no file"),
        ("./data.txt", "is not executable"),
    ],
)
def test_a_manifest_command_must_name_a_runtime_and_a_file_of_the_bot(tmp_path: Path, command: str, message: str) -> None:
    (tmp_path / "bot.py").write_text("")
    (tmp_path / "data.txt").write_text("")
    with pytest.raises(BadUpload, match=message):
        check_command(tmp_path, command)
    check_command(tmp_path, "python bot.py")


def test_the_kept_leaderboard_is_served_only_while_current_and_counts_match_a_scan(tmp_path: Path) -> None:
    import json

    from referee.ladder import board
    from referee.ladder.accounts import add_user
    from referee.ladder.uploads import accept_upload
    from referee.tournament.settings import TournamentSettings

    folder = tmp_path / "arena"
    create(folder, ArenaSettings(play=TournamentSettings(table_size=2, games=1, seed=0, sandbox="off")))
    with ArenaStore.open(folder) as store:
        user, _ = add_user(store, "alice")
        ids = []
        for name in ("one", "two", "three"):
            v = accept_upload(store, user, f"{name}.py", b"print('hi')\n")
            store.set_status(v.id, "active")
            ids.append(v.id)
        assert store.board() is None and board.refresh(store) and not board.refresh(store)
        assert store.board() == board.body(store) == board.build(store)
        assert [r["label"] for r in json.loads(board.body(store))["standings"]] == ["one.v1", "three.v1", "two.v1"]
        for m in store.schedule_table(ids[:2], lambda tid: "c", placement=True)[:1]:
            result = {"placings": [1, 2], "seats": [{"placing": 1}, {"placing": 2}], "winner": 0, "reason": "x", "rounds": 1}
            store.record_result(m.key, result, "", 1.0, {ids[0]: (30.0, 5.0), ids[1]: (20.0, 5.0)})
        # A result moved the board: the kept one is not served until it is built again.
        assert store.board() is None
        rows = json.loads(board.body(store))["standings"]
        assert rows[0]["label"] == "one.v1" and rows[0]["matches"] == 1 and [r["label"] for r in rows[1:]] == ["three.v1", "two.v1"]  # provisional: by live figure
        store.set_status(ids[2], "withdrawn")
        assert board.refresh(store) and "three.v1" not in board.body(store)
        scan = {s: n for s, n in store._all("SELECT status, count(*) FROM matches GROUP BY status")}
        assert store.counts() == {**scan, "tables": 1}
