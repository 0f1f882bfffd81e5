"""Ranked means playing, and one figure everywhere, in the arena's store with no server and no
bot: the refit's figures and the win rates beside them, the board's sections, a bot's rank."""

from __future__ import annotations

import json
from pathlib import Path

from referee.ladder import board
from referee.ladder.ratings import refit, refit_store, shown, wilson
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, create
from referee.ratings import Outcome, fit
from tests.arena.conftest import fake_version, play_table


def _arena(tmp_path: Path) -> tuple[ArenaStore, dict[str, int]]:
    folder = tmp_path / "a"
    create(folder, ArenaSettings(live_versions=2))
    store = ArenaStore.open(folder)
    ada, bo, cy = store.add_user("ada"), store.add_user("bo"), store.add_user("cy")
    ids = {"top": fake_version(store, ada.id, "top"), "mid": fake_version(store, bo.id, "mid"),
           "low": fake_version(store, cy.id, "low"), "mid2": fake_version(store, bo.id, "mid")}
    # top beats everyone, mid2 beats mid, low loses to everyone (each table both rotations).
    order = ["top", "mid2", "mid", "low"]
    for _ in range(3):
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                play_table(store, [ids[a], ids[b]], [[1, 2], [2, 1]])  # the rotation seats b first
        play_table(store, [ids["mid"], ids["low"]], [[2, 1], [2, 1]])  # an upset: low wins a deal's one rotation
    return store, ids


def test_the_refit_is_the_fit_and_win_rates_come_from_the_same_matches(tmp_path: Path) -> None:
    store, _ = _arena(tmp_path)
    with store:
        rows = store.finished_rows()
        official = refit(rows)
        direct = fit(Outcome(tuple(s), tuple(r["placings"]), int(k.split("-")[0])) for k, s, r in rows).ratings
        for v, o in official.items():
            assert (o.rating, o.low, o.high, o.matches) == (direct[v].rating, direct[v].low, direct[v].high, direct[v].matches)
            wins = sum(1 for _, s, r in rows for i, x in enumerate(s) if x == v and r["placings"][i] == 1 and r["placings"].count(1) == 1)
            assert o.wins == wins and (o.win_low, o.win_high) == wilson(wins, o.matches)
            assert o.win_low <= wins / o.matches <= o.win_high


def test_figures_are_provisional_until_a_refit_includes_the_version(tmp_path: Path) -> None:
    store, ids = _arena(tmp_path)
    with store:
        rows = board.standings(store)
        assert all(r["provisional"] and r["rank"] is None and r["section"] == "provisional" for r in rows)
        refit_store(store)
        rows = board.standings(store)
        assert [r["rank"] for r in rows] == [1, 2, 3, 4] and not any(r["provisional"] for r in rows)
        assert [r["version"] for r in rows] == [ids["top"], ids["mid2"], ids["mid"], ids["low"]]
        # A newcomer is provisional (unranked) until the next refit, and listed after the ranked.
        new = fake_version(store, store.add_user("di").id, "new")
        play_table(store, [new, ids["low"]], [[1, 2], [2, 1]])
        rows = board.standings(store)
        assert rows[-1]["version"] == new and rows[-1]["provisional"] and rows[-1]["rank"] is None
        for r in rows:
            # One figure: a rating inside its interval, a win rate inside its interval, from
            # the same matches (the refit's or, provisional, the live figure's).
            assert r["low"] < r["rating"] < r["high"]
            assert r["win_low"] <= r["win_rate"] <= r["win_high"]
            v = store.version(r["version"])
            assert {k: r[k] for k in shown(v)} == shown(v)
        refit_store(store)
        assert not any(r["provisional"] for r in board.standings(store))


def test_a_version_that_left_the_ladder_is_not_ranked_and_never_above_an_active_one(tmp_path: Path) -> None:
    store, ids = _arena(tmp_path)
    with store:
        refit_store(store)
        store.set_status(ids["top"], "withdrawn", "withdrawn by its owner")
        store.set_status(ids["low"], "disqualified", "an admin's")
        rows = board.standings(store)
        assert [(r["version"], r["rank"], r["section"]) for r in rows] == [
            (ids["mid2"], 1, "ranked"), (ids["mid"], 2, "ranked"),
            (ids["top"], None, "inactive"), (ids["low"], None, "inactive"),
        ]
        # Shown with their final figures: the best rating of all, still listed below.
        assert rows[2]["rating"] > rows[0]["rating"]
        # A bot's rank is its best active version's.
        assert board.bot_ranks(rows) == {"mid": 1}
        kept = json.loads(board.build(store))
        assert kept["official_matches"] == len(store.finished_rows())


def test_an_admin_marks_a_reference_bot(tmp_path: Path) -> None:
    store, ids = _arena(tmp_path)
    with store:
        gen = store.board_gen()
        store.set_reference(ids["low"], True)
        assert store.board_gen() == gen + 1 and store.version(ids["low"]).reference
        (low,) = [c for c in store.candidates() if c[0] == ids["low"]]
        assert low[5] is True
        assert [r["reference"] for r in board.standings(store) if r["version"] == ids["low"]] == [True]
        store.set_reference(ids["low"], False)
        assert not store.version(ids["low"]).reference
