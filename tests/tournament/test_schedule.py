"""The schedule: every table, every deal in every seat rotation, seeds shared by the rotations
of a deal and by nothing else; checked on the schedule, on the stored matches and in the logs."""

from __future__ import annotations

import random
from collections import defaultdict
from itertools import combinations
from math import comb
from pathlib import Path

import pytest
from google.protobuf import json_format

from referee.log import read_log
from referee.tournament.schedule import ScheduledMatch, build_schedule, deal_seed
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import BotEntry, TournamentStore, now

from .conftest import SAMPLES, SANDBOX, ok, stored_matches

BOTS = ["delta", "alpha", "echo", "charlie", "bravo"]


def check_rotations(matches: list[ScheduledMatch], bots: list[str], k: int, games: int) -> None:
    """Every table of ``k`` bots plays ``games`` deals, each in all ``k`` seatings such that every
    bot sits in every seat once; a deal's seed is shared by its rotations and by nothing else."""
    assert len(matches) == comb(len(bots), k) * games * k
    assert len({m.key for m in matches}) == len(matches)
    by_deal: dict[tuple[tuple[str, ...], int], list[ScheduledMatch]] = defaultdict(list)
    for m in matches:
        assert sorted(m.seats) == list(m.table) and len(m.seats) == k
        by_deal[(m.table, m.deal)].append(m)
    assert {t for t, _ in by_deal} == set(combinations(sorted(bots), k))
    seeds = set()
    for (table, deal), group in by_deal.items():
        assert 0 <= deal < games
        assert sorted(m.rotation for m in group) == list(range(k))
        for bot in table:
            assert sorted(m.seats.index(bot) for m in group) == list(range(k)), (table, deal, bot)
        # All rotations of one deal: one seed; each one a cyclic shift of the table.
        assert len({m.seed for m in group}) == 1
        for m in group:
            assert m.seats == table[m.rotation :] + table[: m.rotation]
            assert m.key == f"{'+'.join(table)}/d{deal:03d}/r{m.rotation}"
        seeds.add(group[0].seed)
    assert len(seeds) == len(by_deal)  # different across deals and tables


@pytest.mark.parametrize(("n_bots", "k", "games"), [(2, 2, 3), (5, 2, 2), (5, 3, 2), (4, 4, 3), (5, 5, 1)])
def test_every_bot_sits_in_every_seat_of_every_deal(n_bots: int, k: int, games: int) -> None:
    bots = BOTS[:n_bots]
    schedule = build_schedule(bots, k, games, seed=1234)
    check_rotations(schedule, bots, k, games)
    # Canonical: the order bots are listed in does not matter; the seed fixes everything.
    shuffled = bots[:]
    random.Random(5).shuffle(shuffled)
    assert build_schedule(shuffled, k, games, seed=1234) == schedule
    assert schedule == sorted(schedule, key=lambda m: (m.table, m.deal, m.rotation))
    other = build_schedule(bots, k, games, seed=1235)
    assert [m.key for m in other] == [m.key for m in schedule]
    assert not {m.seed for m in other} & {m.seed for m in schedule}


def test_deal_seeds_are_keyed_by_tournament_seed_table_and_deal() -> None:
    t = ("a", "b", "c")
    assert deal_seed(7, t, 0) == deal_seed(7, t, 0)
    assert len({deal_seed(7, t, 0), deal_seed(8, t, 0), deal_seed(7, t, 1), deal_seed(7, ("a", "b", "d"), 0)}) == 4
    assert all(0 <= deal_seed(s, t, 0) < 2**64 for s in (0, 1, 2**64 - 1))


def test_too_few_bots_is_an_empty_schedule_and_bad_sizes_are_refused() -> None:
    assert build_schedule(["a", "b"], 3, 2, seed=1) == []
    with pytest.raises(ValueError, match="at least 2 seats"):
        build_schedule(["a", "b"], 1, 2, seed=1)
    with pytest.raises(ValueError, match="at least 1 deal"):
        build_schedule(["a", "b"], 2, 0, seed=1)


def test_stored_matches_and_their_logs_rotate_the_same_deals(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    with TournamentStore.create(folder, TournamentSettings(table_size=3, games=2, seed=99, sandbox=SANDBOX)) as store:
        # Recorded without a validation match: this test is about the schedule (submission
        # is tested through the command line elsewhere).
        for name in SAMPLES:
            store.add_bot(BotEntry(name, "sample", name, str(folder), name, None, name, "1.0", "", now()))
    ok("tournament", "run", folder, "-j", "2")

    rows = stored_matches(folder)
    assert len(rows) == 2 * 3
    as_scheduled = [
        ScheduledMatch(r.key, tuple(sorted(r.seats)), r.deal, r.rotation, r.seats, r.seed) for r in rows
    ]
    check_rotations(as_scheduled, list(SAMPLES), 3, 2)

    first_deals: dict[int, list[str]] = defaultdict(list)
    for r in rows:
        log = read_log(folder / r.log_path)
        assert log.header.seed == r.seed
        assert [s.label for s in log.header.seats] == list(r.seats)
        event = next(e.event for e in log.events if e.event.WhichOneof("payload") == "deal")
        assert event.round == 1
        first_deals[r.deal].append(json_format.MessageToJson(event, sort_keys=True))
    for d, texts in first_deals.items():
        assert len(texts) == 3
        assert len(set(texts)) == 1, f"deal {d}: the rotations were dealt different cards"
    assert first_deals[0][0] != first_deals[1][0]
