"""The luck correction (referee/analysis/luck.py): mean zero whatever the bots do."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from referee.analysis.luck import LuckError, match_luck
from referee.game import Rules
from tests.replay.fixtures import Plan, write_fixture


def _z(values: list[float]) -> float:
    """The mean of ``values`` in standard errors."""
    n = len(values)
    m = sum(values) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in values) / (n - 1))
    return m / (sd / math.sqrt(n))


def _lucks(tmp_path: Path, rules: Rules, players: int, matches: int, **sizes: int) -> tuple[list[float], list[float]]:
    """Per (chance event, seat): its luck; and per (match, seat): the match's luck."""
    terms: list[float] = []
    totals: list[float] = []
    knocks = (20, 22, 24, 26, 28, 30, 21, 23)
    for i in range(matches):
        # Seats that knock at different hands: the bots are not the reference policy.
        plan = Plan(names=[f"p{s}" for s in range(players)], rules=rules, seed=100 + i, knock_at=knocks[i % 3 : i % 3 + players])
        log = write_fixture(tmp_path / f"{rules.preset_name}-{i}.jsonl", plan)
        ml = match_luck(log, seed=i, **sizes)
        assert ml.players == players and len(ml.terms) > 0
        terms += [t.luck[s] for t in ml.terms for s in range(players)]
        totals += list(ml.luck)
        for raw, luck, adj in zip(ml.raw, ml.luck, ml.adjusted, strict=True):
            assert adj == pytest.approx(raw - luck)
    return terms, totals


def test_luck_has_mean_zero_over_matches(tmp_path: Path) -> None:
    terms, totals = _lucks(tmp_path, Rules(), 2, 8, samples=4, cards=6, deals=8)
    assert abs(_z(terms)) < 3
    assert any(abs(x) > 0.05 for x in totals)  # it does measure something


@pytest.mark.slow
@pytest.mark.parametrize(
    "rules",
    [
        *(Rules.preset(name) for name in ("standard", "pagat", "family", "cadillac", "bicycle")),
        Rules().with_options({"dealer_option": True, "under_the_gun": True}),
        Rules().with_options({"dummy": True, "scoring": "pot", "pot_rounds": 4}),
    ],
    ids=lambda r: r.preset_name + ("+" + "+".join(sorted(r.differences())) if r.differences() else ""),
)
def test_luck_has_mean_zero_under_every_preset_and_variant(tmp_path: Path, rules: Rules) -> None:
    terms, totals = _lucks(tmp_path, rules, 3, 10, samples=4, cards=6, deals=8)
    assert abs(_z(terms)) < 3
    assert abs(_z(totals)) < 3


def test_a_log_that_diverges_is_refused(tmp_path: Path) -> None:
    log = write_fixture(tmp_path / "m.jsonl", Plan(names=("a", "b"), seed=3))
    lines = log.read_text().splitlines()
    # The first stock draw names another card than the deal put on top of the stock.
    bad = tmp_path / "bad.jsonl"
    i = next(k for k, line in enumerate(lines) if '"drawnCard": "' in line and "DRAW_STOCK" in line)
    card = lines[i].split('"drawnCard": "')[1][:2]
    other = "2c" if card != "2c" else "3c"
    lines[i] = lines[i].replace(f'"drawnCard": "{card}"', f'"drawnCard": "{other}"')
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(LuckError, match="diverges"):
        match_luck(bad, samples=2, cards=2, deals=2)
