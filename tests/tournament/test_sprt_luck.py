"""SPRT with the luck taken out: the control variate in the test's sums, and its setting."""

from __future__ import annotations

import random

import pytest

from referee.tournament.settings import SettingsError, SprtSettings
from referee.tournament.sprt import CONTROL_AFTER, SequentialTest, SprtError, SprtParams
from referee.tournament.sprt_run import deal_luck


def _deals(n: int, seed: int, centre: float) -> list[tuple[float, float]]:
    """Deal scores around ``centre`` whose spread is mostly a luck ``c`` of mean zero (slope
    0.2 per unit)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.gauss(0, 1)
        x = min(max(centre + 0.2 * c + rng.gauss(0, 0.05), 0.0), 1.0)
        out.append((x, c))
    return out


def test_the_control_takes_the_luck_out_of_the_variance_not_the_mean() -> None:
    params = SprtParams(-1, 1, 1e-12, 1e-12)  # bounds that no run of these reaches
    with_c = SequentialTest(params, "normal", control=True)
    without = SequentialTest(params, "normal")
    for x, c in _deals(400, 1, 0.5):
        with_c.add(x, c)
        without.add(x)
    assert with_c.raw_mean == without.mean and with_c.raw_variance == without.variance
    assert with_c.beta == pytest.approx(0.2, abs=0.02)
    assert with_c.variance < 0.1 * with_c.raw_variance
    # The mean moves only by beta times the sample's mean luck (which is near zero).
    assert with_c.mean == pytest.approx(0.5, abs=0.01)
    luck = with_c.result().extra["luck"]
    assert luck["variance_ratio"] < 0.1 and luck["raw_score"] == pytest.approx(without.mean)


def test_the_control_decides_sooner() -> None:
    params = SprtParams(0, 40, 0.05, 0.05)
    counts = []
    for control in (False, True):
        t = SequentialTest(params, "normal", control=control)
        for x, c in _deals(5000, 2, 0.6):
            t.add(x, c if control else None)
            if t.finished:
                break
        counts.append(t.n)
        assert t.verdict == "H1"
    assert counts[1] < counts[0] / 2
    assert counts[1] >= CONTROL_AFTER


def test_a_control_needs_the_normal_model_and_every_deals_luck() -> None:
    params = SprtParams()
    with pytest.raises(SprtError, match="normal model"):
        SequentialTest(params, "pentanomial", control=True)
    t = SequentialTest(params, "normal", control=True)
    with pytest.raises(SprtError, match="luck"):
        t.add(0.5)
    with pytest.raises(SprtError, match="no control"):
        SequentialTest(params, "normal").add(0.5, 0.1)


def test_the_luck_setting_round_trips_and_is_off_when_absent() -> None:
    s = SprtSettings(new="a", old="b", luck=True)
    assert SprtSettings.from_dict(s.to_dict()) == s
    assert SprtSettings.from_dict({"new": "a", "old": "b"}).luck is False
    with pytest.raises(SettingsError, match="luck must be true or false"):
        SprtSettings.from_dict({"new": "a", "old": "b", "luck": "yes"})


def test_a_deals_luck_is_half_the_difference_of_new_and_old() -> None:
    matches = [(("new", "old"), (0.5, -0.25)), (("old", "new"), (1.0, 0.0))]
    # NEW: mean of 0.5 and 0.0; OLD: mean of -0.25 and 1.0.
    assert deal_luck("new", "old", matches) == pytest.approx((0.25 - 0.375) / 2)


def test_the_live_view_says_the_luck_is_taken_out_and_shows_the_raw_elo_on_request() -> None:
    from rich.console import Console

    from referee.cli.sprt import render

    t = SequentialTest(SprtParams(0, 40), "normal", control=True)
    for x, c in _deals(CONTROL_AFTER + 4, 5, 0.55):
        t.add(x, c)
    r = t.result(max_deals=100, matches=2 * t.n, matches_stored=2 * t.n)
    for raw in (False, True):
        console = Console(record=True, width=160)
        console.print(render(r, "new", "old", raw=raw))
        text = console.export_text()
        assert "taken out: variance x" in text
        assert ("raw Elo" in text) is raw
