"""The scheduler alone (pure, seeded): placement, information, fair exposure, references,
owners and the window a restart rebuilds. Nothing is timed here (benchmarks/bench_ratings.py)."""

from __future__ import annotations

import random
from collections import Counter

from referee.ladder.scheduler import (
    Candidate,
    Rules,
    Window,
    can_seat,
    cap,
    choose_table,
    pair_value,
    within_caps,
)


def _board(n: int, *, tables: int = 10, se: float = 0.1, owners: int | None = None, seed: int = 3) -> list[Candidate]:
    """``n`` versions evenly spread in strength, each of its own owner unless ``owners``."""
    return [
        Candidate(i, i % owners if owners else i, -2.0 + 4.0 * i / max(n - 1, 1), se, tables)
        for i in range(n)
    ]


def _play(cands: list[Candidate], rules: Rules, tables: int, seed: int = 1) -> list[tuple[int, ...]]:
    """``tables`` choices in a row, each noted in the window (the versions' figures fixed)."""
    rng = random.Random(seed)
    window = Window(rules.window)
    out = []
    for _ in range(tables):
        choice = choose_table(cands, rules, window, rng)
        assert choice is not None
        window.add(choice.seats)
        out.append(choice.seats)
    return out


def _most_in_any_window(tables: list[tuple[int, ...]], size: int) -> Counter[int]:
    most: Counter[int] = Counter()
    for start in range(max(1, len(tables) - size + 1)):
        counts = Counter(v for t in tables[start:start + size] for v in t)
        for v, c in counts.items():
            most[v] = max(most[v], c)
    return most


def test_no_table_with_fewer_versions_or_owners_than_seats() -> None:
    rng = random.Random(1)
    assert choose_table(_board(2), Rules(3), Window(100), rng) is None
    # Four versions of two owners: no table of three without two of one owner...
    two_owners = _board(4, owners=2)
    assert not can_seat(two_owners, Rules(3)) and choose_table(two_owners, Rules(3), Window(100), rng) is None
    # ...unless the arena allows it.
    assert choose_table(two_owners, Rules(3, same_owner=True), Window(100), rng) is not None


def test_a_new_version_plays_placement_first_against_opponents_from_across_the_board() -> None:
    cands = _board(30)
    rules = Rules(2, placement_tables=3)
    rng = random.Random(2)
    window = Window(100)
    seen = []
    newcomer = Candidate(99, 99, 0.0, 6.0, 0)
    for t in range(3):
        choice = choose_table([*cands, newcomer], rules, window, rng)
        assert choice is not None and choice.placement and choice.focus == 99 and 99 in choice.seats
        (other,) = set(choice.seats) - {99}
        seen.append(other)
        window.add(choice.seats)
        newcomer = Candidate(99, 99, 0.0, 6.0, t + 1)
    # One opponent from each third of the board (ids are in order of strength here).
    assert sorted(o // 10 for o in seen) == [0, 1, 2]
    # Placement done: no more placement tables.
    choice = choose_table([*cands, newcomer], rules, window, rng)
    assert choice is not None and not choice.placement


def test_the_table_is_the_pair_whose_order_is_most_in_doubt() -> None:
    # Settled versions far apart, and two close ones whose order is uncertain.
    cands = [Candidate(i, i, float(i), 0.05, 20) for i in range(8)]
    cands += [Candidate(10, 10, 3.5, 0.4, 20), Candidate(11, 11, 3.6, 0.4, 20)]
    choice = choose_table(cands, Rules(2, min_share=0), Window(100), random.Random(1))
    assert choice is not None and set(choice.seats) == {10, 11}
    # A result that is a foregone conclusion is worth little, however uncertain the figures.
    hopeless = Candidate(1, 1, -8.0, 0.5, 20)
    strong = Candidate(2, 2, 1.0, 0.5, 20)
    close = Candidate(3, 3, 1.2, 0.5, 20)
    assert pair_value(strong, close) > 100 * pair_value(hopeless, strong)


def test_no_version_takes_more_than_its_share_of_any_window() -> None:
    # One pair worth far more than the rest: the cap, not the value, must stop it.
    cands = _board(12, se=0.02)
    cands[5] = Candidate(5, 5, cands[6].theta, 2.0, 10)
    rules = Rules(2, window=100, max_share=1.5)
    tables = _play(cands, rules, 600)
    limit = cap(rules, len(cands), False)
    assert limit == 25  # 1.5 x 100 tables x 2 seats / 12 versions
    most = _most_in_any_window(tables, 100)
    assert max(most.values()) <= limit
    assert most[5] == limit  # it does get as much as it may
    # Every version plays (a starved one is seated next).
    assert set(most) == {c.id for c in cands}


def test_a_reference_bot_is_capped_lower() -> None:
    cands = _board(6)
    cands[0] = Candidate(0, 0, cands[1].theta + 0.01, 1.0, 10, reference=True)  # as interesting as can be
    rules = Rules(2, window=100, reference_share=0.5)
    tables = _play(cands, rules, 400)
    most = _most_in_any_window(tables, 100)
    assert most[0] <= cap(rules, 6, True) == 16  # half of 100 x 2 / 6
    assert most[0] >= 10


def test_no_two_versions_of_one_owner_at_a_table_unless_allowed() -> None:
    # Owners 0-3, three versions each, next to each other in strength: the closest pairs.
    cands = [Candidate(i, i // 3, -2.0 + 4.0 * i / 11, 0.5, 10) for i in range(12)]
    tables = _play(cands, Rules(3), 300)
    owner = {c.id: c.owner for c in cands}
    assert all(len({owner[v] for v in t}) == 3 for t in tables)
    together = _play(cands, Rules(3, same_owner=True), 300)
    assert any(len({owner[v] for v in t}) < 3 for t in together)


def test_a_pair_is_not_repeated_endlessly() -> None:
    # Two pairs of equal value: the window's repeat penalty alternates them.
    cands = [Candidate(0, 0, 0.0, 0.5, 10), Candidate(1, 1, 0.1, 0.5, 10),
             Candidate(2, 2, 5.0, 0.5, 10), Candidate(3, 3, 5.1, 0.5, 10)]
    tables = _play(cands, Rules(2, min_share=0), 40)
    pairs = Counter(tables)
    assert pairs[(0, 1)] >= 15 and pairs[(2, 3)] >= 15


def test_the_window_is_rebuilt_from_the_latest_tables() -> None:
    rng = random.Random(4)
    tables = [tuple(sorted(rng.sample(range(20), 3))) for _ in range(250)]
    live = Window(100)
    for t in tables:
        live.add(t)
    rebuilt = Window.of(100, tables)
    assert len(live) == len(rebuilt) == 99
    assert all(live.count(v) == rebuilt.count(v) for v in range(20))
    assert all(live.pair(a, b) == rebuilt.pair(a, b) for a in range(20) for b in range(20) if a != b)
    cands = [Candidate(v, v, 0.0, 0.1, 10) for v in range(20)]
    assert within_caps((0, 1, 2), cands, rebuilt, Rules(3)) == all(
        rebuilt.count(v) + 1 <= cap(Rules(3), 20, False) for v in (0, 1, 2)
    )


def test_a_thousand_versions_and_larger_tables() -> None:
    rng = random.Random(5)
    cands = [Candidate(v, v % 400, rng.gauss(0, 1), rng.uniform(0.05, 0.5), 10) for v in range(1000)]
    for k in (2, 4, 8):
        choice = choose_table(cands, Rules(k), Window(100), rng)
        assert choice is not None and len(set(choice.seats)) == k
        assert len({v % 400 for v in choice.seats}) == k
