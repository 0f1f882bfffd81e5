"""SPRT tests and gauntlets as tournaments: their schedules, their settings, how the test reads
stored results, and real runs (a verdict on real matches, a kill -9 resumed to the same
test, a small gauntlet)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import pytest

from referee.analysis.luck import LUCK_FILE
from referee.tournament.schedule import (
    build_schedule,
    build_sprt_schedule,
    deal_seed,
    not_runnable,
    schedule_for,
)
from referee.tournament.settings import SettingsError, SprtSettings, TournamentSettings
from referee.tournament.sprt import pentanomial_llr
from referee.tournament.sprt_run import SprtMonitor, deal_score, match_score
from referee.tournament.store import DB_NAME, TournamentStore
from tests.polling import poll_until

from .conftest import SANDBOX, done_count, fails, flat, ok, stored_matches, wait_gone

# ---------------------------------------------------------------- the gauntlet's schedule


def test_gauntlet_tables_all_hold_a_challenger_and_keep_the_round_robins_keys() -> None:
    bots = ["a", "b", "c", "d", "e"]
    challengers = ("c", "e")
    for k in (2, 3, 4):
        full = build_schedule(bots, k, 2, seed=9)
        gauntlet = build_schedule(bots, k, 2, seed=9, challengers=challengers)
        # Every table has a challenger; every table of the round robin that has one is played.
        assert {m.table for m in gauntlet} == {t for t in combinations(bots, k) if set(t) & set(challengers)}
        # The same matches as the round robin's, same keys, seeds, seats, in the same order.
        assert gauntlet == [m for m in full if set(m.table) & set(challengers)]
        # Duplicate deals and rotations as ever: each table's deal in every rotation, one seed.
        for m in gauntlet:
            assert m.seats == m.table[m.rotation :] + m.table[: m.rotation]
            assert m.seed == deal_seed(9, m.table, m.deal)
    # Two challengers, two seats: they meet each other too; the field never meets itself.
    pairs = {m.table for m in build_schedule(bots, 2, 1, seed=1, challengers=challengers)}
    assert ("c", "e") in pairs and ("a", "b") not in pairs and len(pairs) == 7


def test_gauntlet_settings_round_trip_and_checks() -> None:
    s = TournamentSettings(table_size=3, games=4, seed=5, format="gauntlet", challengers=("new",))
    again = TournamentSettings.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s
    assert schedule_for(again, ["x", "y", "new", "z"]) == build_schedule(["x", "y", "new", "z"], 3, 4, 5, challengers=("new",))
    toml = 'format = "gauntlet"\nchallengers = ["new"]\n[tournament]\ntable_size = 3\ngames = 4\nseed = 5\n'
    assert TournamentSettings.from_toml(toml) == s
    assert "gauntlet of new" in s.describe()
    assert not_runnable(s, ["x", "y"]) == "the gauntlet's challenger new is not submitted: submit it first"
    assert not_runnable(s, ["x", "new"]) is None
    # A round robin's stored settings read exactly as before.
    assert "format" not in TournamentSettings().to_dict()
    with pytest.raises(SettingsError, match="needs challengers"):
        TournamentSettings(format="gauntlet")
    with pytest.raises(SettingsError, match="challengers go with"):
        TournamentSettings(challengers=("a",))
    with pytest.raises(SettingsError, match="format must be one of"):
        TournamentSettings(format="swiss")


# ---------------------------------------------------------------- the SPRT's schedule


def test_sprt_schedule_two_seats_is_deal_first_with_both_rotations() -> None:
    sched = build_sprt_schedule("new", "old", (), 3, seed=4)
    assert [m.key for m in sched] == [f"new+old/d{d:03d}/r{r}" for d in range(3) for r in range(2)]
    assert [m.seats for m in sched[:2]] == [("new", "old"), ("old", "new")]
    assert len({m.seed for m in sched}) == 3


def test_sprt_schedule_larger_tables_pair_new_and_old_on_the_same_deal() -> None:
    sched = build_sprt_schedule("new", "old", ("f1", "f2"), 2, seed=4)
    assert len(sched) == 2 * 2 * 3
    # Deal order first: deal 0's six matches, then deal 1's.
    assert [m.deal for m in sched] == [0] * 6 + [1] * 6
    for d in range(2):
        deal = [m for m in sched if m.deal == d]
        assert len({m.seed for m in deal}) == 1  # the same cards for both tables
        with_new = [m for m in deal if "new" in m.seats]
        with_old = [m for m in deal if "old" in m.seats]
        # In each rotation OLD sits exactly where NEW sat, with the same neighbours.
        for a, b in zip(with_new, with_old, strict=True):
            assert a.rotation == b.rotation
            assert tuple("X" if n == "new" else n for n in a.seats) == tuple("X" if n == "old" else n for n in b.seats)
        assert {m.seats.index("new") for m in with_new} == {0, 1, 2}
    assert sched[0].key == "new+f1+f2/d000/r0"


def test_sprt_settings_round_trip_and_checks() -> None:
    s = TournamentSettings(
        table_size=3, games=50, seed=3, format="sprt", sprt=SprtSettings("new", "old", ("f1", "f2"), 0, 5, 0.05, 0.1)
    )
    assert TournamentSettings.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert schedule_for(s, ["new", "old", "f1"]) == []  # not all submitted yet
    assert schedule_for(s, ["new", "old", "f1", "f2"]) == build_sprt_schedule("new", "old", ("f1", "f2"), 50, 3)
    assert "sprt --dir" in (not_runnable(s, ["new", "old", "f1", "f2"]) or "")
    with pytest.raises(SettingsError, match="needs 2 filler"):
        TournamentSettings(table_size=3, format="sprt", sprt=SprtSettings("new", "old", ("f1",)))
    with pytest.raises(SettingsError, match="different names"):
        SprtSettings("a", "a")
    with pytest.raises(SettingsError, match="elo0 must be less than elo1"):
        SprtSettings("a", "b", elo0=5, elo1=5)
    with pytest.raises(SettingsError, match=r"needs an \[sprt\] table"):
        TournamentSettings(format="sprt")


# ---------------------------------------------------------------- scores and the monitor


def test_match_and_deal_scores() -> None:
    assert match_score([1, 2], 0) == 1.0 and match_score([1, 2], 1) == 0.0
    assert match_score([1, 1], 0) == 0.5  # max_rounds stopped it, placed equal
    assert match_score([2, 1, 3], 0) == 0.5
    assert match_score([1, 3, 3], 2) == 0.25
    # Two seats: NEW won one rotation and lost the other (WL), won both (WW), one draw (WD).
    assert deal_score("n", "o", [(("n", "o"), (1, 2)), (("o", "n"), (1, 2))]) == 0.5
    assert deal_score("n", "o", [(("n", "o"), (1, 2)), (("o", "n"), (2, 1))]) == 1.0
    assert deal_score("n", "o", [(("n", "o"), (1, 1)), (("o", "n"), (2, 1))]) == 0.75
    # Three seats: NEW's mean score 2/3 (1, 1/2, 1/2), OLD's 1/3 (0, 1/2, 1/2).
    new = [(("n", "f", "g"), (1, 2, 3)), (("g", "n", "f"), (1, 2, 3)), (("f", "g", "n"), (3, 1, 2))]
    old = [(("o", "f", "g"), (3, 1, 2)), (("g", "o", "f"), (1, 2, 3)), (("f", "g", "o"), (3, 1, 2))]
    assert deal_score("n", "o", new + old) == pytest.approx(0.5 + (2 / 3 - 1 / 3) / 2)


def _sprt_settings(games: int = 40) -> TournamentSettings:
    return TournamentSettings(games=games, seed=8, format="sprt", sprt=SprtSettings("n", "o", elo0=0, elo1=100))


def test_the_monitor_counts_complete_deals_in_order_whatever_order_matches_come_in() -> None:
    settings = _sprt_settings()
    sched = schedule_for(settings, ["n", "o"])
    # NEW wins every match with an even deal number, splits the odd ones.
    placings = {m.key: ((1, 2) if m.seats[0] == "n" else (2, 1)) if m.deal % 2 == 0 else (1, 2) for m in sched}
    in_order = SprtMonitor(settings)
    for m in sched:
        if in_order.finished:
            break
        in_order.add(m.key, m.seats, placings[m.key])
    assert in_order.test.verdict == "H1"
    n = in_order.test.n
    assert in_order.matches == 2 * n
    counts = [0, 0, n // 2, 0, n - n // 2]  # odd deals split (WL), even ones won twice (WW)
    assert in_order.result().pentanomial == counts
    assert in_order.test.llr == pytest.approx(pentanomial_llr(counts, 0, 100))
    # Matches arriving out of order (-j), some past the verdict: the same test, the same verdict.
    shuffled = SprtMonitor(settings)
    played = sched[: 2 * n + 3]
    for m in reversed(played):
        shuffled.add(m.key, m.seats, placings[m.key])
    assert shuffled.result().to_dict() | {"matches_stored": 0} == in_order.result().to_dict() | {"matches_stored": 0}
    # A deal with a match missing holds the test back at that deal.
    gap = SprtMonitor(settings)
    for m in sched[:10]:
        if m.key != sched[3].key:
            gap.add(m.key, m.seats, placings[m.key])
    assert gap.test.n == 1


# ---------------------------------------------------------------- real runs


def _stored(folder: Path) -> int:
    """Matches stored so far; 0 while the database is being made (no tables yet)."""
    try:
        return done_count(folder) if (folder / DB_NAME).exists() else 0
    except sqlite3.OperationalError:
        return 0


def _sprt_cmd(*args: object) -> list[str]:
    return [sys.executable, "-c", "from referee.cli import main; main()", "sprt", *map(str, args)]


def _json_of(stdout: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(stdout)
    return data


#: A quick, deterministic test: threshold against random (seeded by the match), decided in ~20 deals.
# The raw scores: the pentanomial model takes some deals to decide, so that the kill lands
# mid-test (a test with the luck taken out resumes through test_a_short_test_...).
QUICK = ("threshold", "random", "--seed", "11", "--elo1", "60", "--budget-ms", "100", "--sandbox", SANDBOX, "--json", "--no-luck")


@pytest.mark.slow
def test_a_killed_test_resumes_to_the_same_verdict(tmp_path: Path) -> None:
    # The uninterrupted run.
    ref = tmp_path / "ref"
    whole = ok("sprt", *QUICK, "--dir", ref, "-j", "2")
    reference = _json_of(whole.stdout)
    assert reference["verdict"] == "H1", whole.output
    assert int(str(reference["deals"])) >= 8, reference

    # The same test, killed (-9, its whole process group) after a few matches, then run again.
    folder = tmp_path / "killed"
    log = tmp_path / "killed.out"
    with open(log, "wb") as f:
        proc = subprocess.Popen(_sprt_cmd(*QUICK, "--dir", folder, "-j", "2"), stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        poll_until("six stored matches", lambda: _stored(folder) >= 6, timeout_s=120, while_=lambda: proc.poll() is None,
                   detail=lambda: f"its output:\n{log.read_text()}")  # fmt: skip
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stored = done_count(folder)
    assert 6 <= stored < 2 * int(str(reference["deals"])), stored
    assert wait_gone([proc.pid]) == []
    # Resumed with the folder alone (the bots are in it).
    again = ok("sprt", "--dir", folder, "--json", "-j", "2")
    assert "continuing the test" in flat(again.stderr)
    resumed = _json_of(again.stdout)
    same = ("verdict", "llr", "bounds", "elo", "interval", "los", "deals", "matches", "pentanomial", "score")
    assert {k: resumed[k] for k in same} == {k: reference[k] for k in same}
    # The stored matches are the reference's (deterministic bots), deal by deal.
    placings = {r.key: r.placings for r in stored_matches(ref)}
    for r in stored_matches(folder):
        if r.key in placings:
            assert r.placings == placings[r.key], r.key
    # And once more: the test is over, nothing is played, the same verdict.
    third = ok("sprt", "--dir", folder, "--json")
    assert {k: _json_of(third.stdout)[k] for k in same} == {k: reference[k] for k in same}
    assert "played" not in third.stderr
    # A tournament folder like any other.
    standings = json.loads(ok("standings", folder, "--json").stdout)
    # The test is over at its verdict: the standings are final and show the seed.
    assert standings["progress"]["complete"] is True
    assert standings["seed_hidden"] is False and standings["settings"]["seed"] is not None
    assert {row["bot"] for row in standings["standings"]} == {"threshold", "random"}
    assert "the sequential test ended" in ok("standings", folder).stdout
    ok("replay", folder, "--verify")
    fails("tournament", "run", folder, message="this folder holds an SPRT test")
    fails("sprt", "greedy", "random", "--dir", folder, message="this folder tests threshold against random")
    fails("sprt", "--dir", folder, "--elo1", "5", message="this folder's test has elo1 60.0, not 5.0")


@pytest.mark.slow
def test_montecarlo_beats_threshold(tmp_path: Path) -> None:
    started = time.monotonic()
    # One life per match keeps matches short. montecarlo is some 75 Elo above threshold so
    # (estimates of runs while choosing these bounds: +68 to +102), far above elo1: H0 would
    # be a rare error (beta 5% at a true +40, much less at +75). Decided in ~10 deals.
    result = ok(
        "sprt", "montecarlo", "threshold", "--dir", tmp_path / "t", "--seed", "7", "--elo0", "-100", "--elo1", "40",
        "--rule", "lives=1", "--budget-ms", "150", "--max-deals", "200", "-j", "2", "--sandbox", SANDBOX, "--json",
        "--no-luck",
    )
    data = _json_of(result.stdout)
    print(f"montecarlo vs threshold: {data['verdict']} after {data['deals']} deals, elo {data['elo']}, "
          f"{time.monotonic() - started:.0f} s")
    assert data["verdict"] == "H1", result.output
    assert data["pentanomial"] is not None and sum(data["pentanomial"]) == data["deals"]  # type: ignore[arg-type]
    assert "H1 accepted" in flat(result.stderr)


@pytest.mark.slow
def test_a_small_gauntlet(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    ok("tournament", "new", folder, "--challenger", "threshold", "-k", "2", "-n", "1", "--seed", "3", "--sandbox", SANDBOX)
    for bot in ("random", "greedy", "threshold"):
        ok("submit", folder, bot)
    ok("tournament", "run", folder, "-j", "2")
    rows = stored_matches(folder)
    assert sorted(r.key for r in rows) == [
        "greedy+threshold/d000/r0", "greedy+threshold/d000/r1", "random+threshold/d000/r0", "random+threshold/d000/r1",
    ]
    standings = json.loads(ok("standings", folder, "--json").stdout)
    assert standings
    with TournamentStore.open(folder, readonly=True) as store:
        assert store.settings.format == "gauntlet" and store.settings.challengers == ("threshold",)


def test_a_short_test_stops_at_its_deal_limit(tmp_path: Path) -> None:
    # The quick tier's whole run of the command (the slow tier's reach verdicts): two deals,
    # both rotations each, one life per match.
    result = ok(
        "sprt", "greedy", "random", "--max-deals", "2", "--rule", "lives=1",
        "--dir", tmp_path / "t", "--seed", "5", "--sandbox", SANDBOX, "--json",
    )  # fmt: skip
    data = _json_of(result.stdout)
    assert data["deals"] == 2 and data["matches"] == 4 and data["finished"] is True, data
    keys = sorted(f"greedy+random/d00{d}/r{r}" for d in range(2) for r in range(2))
    assert sorted(r.key for r in stored_matches(tmp_path / "t")) == keys
    # The luck is taken out by default: the normal model, each match's luck kept once.
    assert data["model"] == "normal" and data["pentanomial"] is None
    luck = data["luck"]
    assert isinstance(luck, dict) and luck["beta"] == 0 and luck["raw_score"] == data["score"]  # beta from deal 16 on
    kept = [json.loads(line) for line in (tmp_path / "t" / LUCK_FILE).read_text().splitlines()]
    assert sorted(k["key"] for k in kept) == keys and all(len(k["luck"]) == 2 for k in kept)
    assert any(v != 0 for k in kept for v in k["luck"])
    # Read again from the stored matches (as a resumed run does): the same test, the luck
    # read from the file rather than measured again.
    before = (tmp_path / "t" / LUCK_FILE).read_bytes()
    with TournamentStore.open(tmp_path / "t", readonly=True) as store:
        again = SprtMonitor.from_store(store).result().to_dict()
    assert {k: again[k] for k in ("llr", "score", "deals", "luck")} == {k: data[k] for k in ("llr", "score", "deals", "luck")}
    assert (tmp_path / "t" / LUCK_FILE).read_bytes() == before


def test_bad_sprt_commands_are_refused(tmp_path: Path) -> None:
    fails("sprt", "greedy", message="name both bots, NEW and OLD")
    fails("sprt", message="name the bots to test")
    fails("sprt", "greedy", "random", "-k", "3", "--dir", tmp_path / "a", message="--table-size 3 needs 2 filler bots")
    fails("sprt", "greedy", "random", "--elo0", "5", "--elo1", "5", "--dir", tmp_path / "b", message="elo0 must be less than elo1")
    fails("sprt", "greedy", "random", "--alpha", "0.9", "--dir", tmp_path / "c", message="alpha must be between 0 and 0.5")
    fails("sprt", "greedy", "./nowhere.py", "--dir", tmp_path / "d", message="no such file")
    assert not any(tmp_path.iterdir())  # nothing made


@pytest.mark.slow
def test_a_test_at_a_table_of_three_with_filler_bots(tmp_path: Path) -> None:
    # The same bot twice (an A/A test): named threshold.new and threshold.old, with two
    # deterministic fillers (the random bot draws from the match id, which differs by table).
    result = ok(
        "sprt", "threshold", "threshold", "--field", "greedy,threshold", "--max-deals", "2", "--rule", "lives=1",
        "--dir", tmp_path / "t", "--seed", "5", "--sandbox", SANDBOX, "--json",
    )
    data = _json_of(result.stdout)
    assert data["model"] == "normal" and data["pentanomial"] is None
    assert (data["new"], data["old"], data["field"]) == ("threshold.new", "threshold.old", ["greedy", "threshold"])
    assert data["deals"] == 2 and data["matches"] == 12 and data["finished"] is True
    # Identical bots at identical seats with identical cards: identical results, no difference.
    assert data["verdict"] == "undecided" and data["score"] == 0.5
    rows = stored_matches(tmp_path / "t")
    assert len(rows) == 12 and {len(r.seats) for r in rows} == {3}
