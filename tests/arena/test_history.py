"""A bot's history in the arena's store, with no server and no bot: the rating after each
match, the head-to-head per opponent version, the hold-back of a deal's replays (the
tournament's rule), and an older arena's database brought to this schema with nothing lost."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from referee.ladder import board
from referee.ladder.ratings import live_rating, refit_store
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import DB_NAME, SCHEMA_VERSION, ArenaStore, create
from tests.arena.conftest import fake_version, play_table

#: The tables schema 3 added (and a column of versions); what schema 2 had is everything else.
NEW_TABLES = ("rating_history", "head_to_head")
#: Schema 3's official figures (openskill's averaged passes), which schema 4 replaced.
OFFICIAL_3 = (
    "CREATE TABLE official (version_id INTEGER PRIMARY KEY, mu REAL NOT NULL, sigma REAL NOT NULL, matches INTEGER NOT NULL, "
    "wins INTEGER NOT NULL, win_low REAL NOT NULL, win_high REAL NOT NULL, faults TEXT NOT NULL)"
)


def _as_schema_3(db: Path) -> None:
    """The database as schema 3 stored it: the old official table (one row of old figures),
    no reference column."""
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE official")
    conn.execute(OFFICIAL_3)
    conn.execute("INSERT INTO official VALUES (1, 30.0, 2.0, 4, 3, 0.3, 0.9, '{}')")
    conn.execute("INSERT INTO meta VALUES ('official_at', '2026-01-01T00:00:00+00:00')")
    conn.execute("ALTER TABLE versions DROP COLUMN reference")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def _arena(tmp_path: Path) -> tuple[ArenaStore, list[int]]:
    folder = tmp_path / "a"
    create(folder, ArenaSettings())
    store = ArenaStore.open(folder)
    ada, bo = store.add_user("ada"), store.add_user("bo")
    v1 = fake_version(store, ada.id, "sharp")
    steady = fake_version(store, bo.id, "steady")
    play_table(store, [v1, steady], [[1, 2], [2, 1]])
    play_table(store, [v1, steady], [[1, 2], [1, 2]])
    v2 = fake_version(store, ada.id, "sharp")
    # A shared first place (a pot split at the end) is a draw for both: nobody wins it.
    # (Placings are by seat, and the second rotation seats steady first.)
    play_table(store, [v2, steady], [[1, 1], [2, 1]])
    return store, [v1, v2, steady]


def test_each_match_adds_a_rating_point_to_each_of_its_versions(tmp_path: Path) -> None:
    store, (_, v2, steady) = _arena(tmp_path)
    with store:
        points = store.rating_history(steady, 100)
        assert [p.n for p in points] == [1, 2, 3, 4, 5, 6]  # from its first match: no point at 0
        assert (points[-1].mu, points[-1].sigma) == (store.version(steady).mu, store.version(steady).sigma)
        assert [p.key for p in store.rating_history(v2, 100)] == ["00000003-r0", "00000003-r1"]
        # Thinned to at most 3, evenly, keeping the first and the latest.
        assert [p.n for p in store.rating_history(steady, 3)] == [1, 4, 6]
        assert [p.n for p in store.rating_history(steady, 4)] == [1, 3, 5, 6]
        assert [p.n for p in store.rating_history(steady, 2)] == [1, 6]
        # The leaderboard's sparklines: each row's latest live ratings (rating points), oldest first.
        rows = {r["version"]: r for r in board.standings(store)}
        assert rows[steady]["spark"] == [round(live_rating(p.mu, p.sigma)[0], 1) for p in points]
        assert len(rows[v2]["spark"]) == 2


def test_head_to_head_counts_placings_and_a_shared_first_place_is_a_draw(tmp_path: Path) -> None:
    store, (v1, v2, steady) = _arena(tmp_path)
    with store:
        got = {(v, o): (h.matches, h.better, h.equal, h.worse) for v, o, h in store.head_to_head([v1, v2, steady])}
        assert got == {
            (v1, steady): (4, 3, 0, 1), (steady, v1): (4, 1, 0, 3),
            (v2, steady): (2, 1, 1, 0), (steady, v2): (2, 0, 1, 1),
        }
        # The live win count follows the rules too: the shared first place is nobody's win.
        assert (store.version(v2).wins, store.version(steady).wins) == (1, 1)


def test_a_deals_replays_are_public_once_every_rotation_is_done_or_given_up(tmp_path: Path) -> None:
    store, (v1, _, steady) = _arena(tmp_path)
    with store:
        from referee.ladder.fairness import commitment, deal_seed

        first, second = store.schedule_table([v1, steady], lambda tid: commitment(deal_seed(b"k", tid)), placement=False)
        result = {"placings": [1, 2], "winner": 0, "reason": "last_standing", "rounds": 3, "seats": [{}, {}]}
        store.record_result(first.key, result, "", 0.1, {v1: (25.0, 8.0), steady: (25.0, 8.0)})
        assert not store.match(first.key).deal_done
        assert not any(m.deal_done for m in store.matches(version_ids=[v1], limit=2))
        # The other rotation is given up (the infrastructure failed it): nothing more is dealt
        # from these cards, so the played one's replay is public.
        store.void_match(second.key, "test")
        assert store.match(first.key).deal_done and store.match(second.key).deal_done


def _dump(db: Path) -> dict[str, list[Any]]:
    conn = sqlite3.connect(db)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n: sorted(conn.execute(f"SELECT * FROM {n}").fetchall(), key=repr) for n in names}
    finally:
        conn.close()


def test_an_arena_of_schema_2_upgrades_with_nothing_lost(tmp_path: Path) -> None:
    store, (v1, v2, steady) = _arena(tmp_path)
    folder = store.folder
    with store:
        h2h = sorted((v, o, h.matches, h.better, h.equal, h.worse) for v, o, h in store.head_to_head([v1, v2, steady]))
        live = {v: (store.version(v).mu, store.version(v).sigma, store.version(v).matches) for v in (v1, v2, steady)}
    # The same arena as schema 2 stored it: without the new tables and column, at version 2.
    db = folder / DB_NAME
    _as_schema_3(db)
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM official")
    conn.execute("DELETE FROM meta WHERE key = 'official_at'")
    for t in NEW_TABLES:
        conn.execute(f"DROP TABLE {t}")
    conn.execute("ALTER TABLE versions DROP COLUMN spark")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    old = _dump(db)
    assert set(old).isdisjoint(NEW_TABLES)

    with ArenaStore.open(folder) as store:
        assert store.meta("schema_version") == str(SCHEMA_VERSION) == "4"
        new = _dump(db)
        # Every row of every old table is as it was (the meta's schema version and board
        # generation aside: the kept leaderboard is rebuilt with its sparklines).
        for table, rows in old.items():
            if table == "versions":  # two columns more: the sparkline's latest ratings, the reference mark
                assert [r[:-2] for r in new[table]] == rows
                assert [json.loads(r[-2]) for r in new[table]] == [[round(live_rating(r[16], r[17])[0], 1)] for r in rows]  # mu, sigma
                assert {r[-1] for r in new[table]} == {0}
            elif table != "meta":
                assert new[table] == rows, table
        meta_old, meta_new = dict(old["meta"]), dict(new["meta"])
        assert {k: v for k, v in meta_new.items() if k not in ("schema_version", "board_gen")} == {
            k: v for k, v in meta_old.items() if k not in ("schema_version", "board_gen")
        }
        assert int(meta_new["board_gen"]) == int(meta_old["board_gen"]) + 2
        # The head-to-head is rebuilt from the finished matches exactly; the history starts
        # at each version's rating then, after its matches so far.
        assert sorted((v, o, h.matches, h.better, h.equal, h.worse) for v, o, h in store.head_to_head([v1, v2, steady])) == h2h
        for v, (mu, sigma, n) in live.items():
            (p,) = store.rating_history(v, 100)
            assert (p.mu, p.sigma, p.n, p.key) == (mu, sigma, n, "")
        # And the ladder carries on from there: the next match is the next point.
        play_table(store, [v2, steady], [[2, 1], [1, 2]])
        assert [p.n for p in store.rating_history(v2, 100)] == [2, 3, 4]


def test_an_arena_of_schema_3_drops_the_old_figures_and_refits_them(tmp_path: Path) -> None:
    store, (v1, v2, steady) = _arena(tmp_path)
    folder = store.folder
    store.close()
    db = folder / DB_NAME
    _as_schema_3(db)
    with ArenaStore.open(folder) as store:
        assert store.meta("schema_version") == "4"
        # The old figures (another figure on another scale) are gone, not shown as today's:
        # every row is provisional until the first refit, which rebuilds them from the matches.
        assert store.official() == {} and store.meta("official_at") == ""
        rows = board.standings(store)
        assert all(r["provisional"] and r["rank"] is None for r in rows)
        assert refit_store(store) == 6
        rows = board.standings(store)
        assert not any(r["provisional"] for r in rows)
        # sharp.v1 was retired by sharp.v2: shown last, with its final figure, unranked.
        assert [(r["version"], r["rank"]) for r in rows][2] == (v1, None) and {r["version"] for r in rows[:2]} == {v2, steady}
        assert [r["rank"] for r in rows[:2]] == [1, 2] and rows[2]["section"] == "inactive"
        assert not any(r["reference"] for r in rows)
