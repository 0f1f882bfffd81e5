"""The local harness: sample bots play full matches under every preset, errors are clear."""

from __future__ import annotations

import pytest

import sdk
from referee import wire
from referee.game import MatchEnd, Rules, card
from sample_bots import NAMES, load
from sdk.harness import IllegalMoveError, play_match, play_matches

# The searching bot thinks for a fifth of each budget; tests/sdk/test_montecarlo.py plays it
# with a fixed, small sample count instead.
FAST = [n for n in NAMES if n != "montecarlo"]

PRESETS = ("standard", "pagat", "family")


def _tables(players: int, matches: int, first_seed: int) -> list[tuple[int, list[type[sdk.Bot]]]]:
    # Seats filled from the sample bots in turn, shifted every match, so each bot meets
    # each other bot in every seat.
    classes = [load(n) for n in FAST]
    return [
        (first_seed + i, [classes[(i + j) % len(classes)] for j in range(players)]) for i in range(matches)
    ]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_sample_bots_play_legal_matches(preset: str, players: int) -> None:
    for seed, bots in _tables(players, 20, 1000 * players):
        outcome = play_match(bots, seed=seed, rules=preset)  # raises on an illegal move
        assert outcome.end in (MatchEnd.LAST_PLAYER, MatchEnd.MAX_ROUNDS)
        assert 1 in outcome.placings
        assert outcome.rounds == len(outcome.round_results) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("players", [2, 3, 4, 5, 6, 7, 8, 9])
def test_sample_bots_play_legal_matches_at_length(preset: str, players: int) -> None:
    for name in FAST:  # each bot alone at the table too: self-play reaches other states
        play_matches([load(name)] * players, n=3, seeds=range(90_000, 90_003), rules=preset)
    for seed, bots in _tables(players, 12, 50_000 + 1000 * players):
        play_match(bots, seed=seed, rules=preset)


class _Recorder(sdk.Bot):
    """Greedy enough to finish, and records what the harness tells it."""

    name = "recorder"

    def __init__(self) -> None:
        self.starts: list[wire.MatchInfo] = []
        self.ends: list[wire.MatchResult] = []
        self.decisions = 0

    def on_match_start(self, info: wire.MatchInfo) -> None:
        self.starts.append(info)

    def on_match_end(self, result: wire.MatchResult) -> None:
        self.ends.append(result)

    def act(self, view: sdk.View) -> sdk.Action:
        self.decisions += 1
        # The harness hands over the very observation the referee would put on the wire.
        assert wire.observation_from_pb(wire.observation_to_pb(view.observation)) == view.observation
        assert view.budget_ms == 250 and view.bank_ms <= 10_000
        return load("greedy")().act(view)


def test_hooks_and_outcome() -> None:
    a, b = _Recorder(), _Recorder()
    outcome = play_match([a, load("random"), b], seed=3, rules="family", match_id="t1")
    assert [i.seat for i in a.starts + b.starts] == [0, 2]
    assert all(i.match_id == "t1" and i.players == 3 and i.rules == Rules.preset("family") for i in a.starts)
    assert a.ends[0].placings == outcome.placings and a.ends[0].placing == outcome.placings[0]
    assert b.ends[0].placing == outcome.placings[2]
    assert outcome.decisions[0] == a.decisions and outcome.decisions[2] == b.decisions
    assert outcome.names == ("recorder", "random", "recorder")
    if outcome.winner is not None:
        assert outcome.placings[outcome.winner] == 1


def test_same_seed_same_match() -> None:
    bots = [load("random"), load("greedy"), load("threshold")]
    one = play_match(bots, seed=42)
    two = play_match(bots, seed=42)
    assert one.placings == two.placings and one.round_results == two.round_results


def test_play_matches_rotates_seats() -> None:
    series = play_matches([load("greedy"), load("random")], n=6, rules="standard")
    assert len(series.outcomes) == 6
    assert [s[0] for s in series.seats] == [0, 1, 0, 1, 0, 1]
    assert series.wins(0) + series.wins(1) <= 6
    assert 1 <= series.mean_placing(0) <= 2
    assert "greedy" in str(series)


class _Cheat(sdk.Bot):
    name = "cheat"

    def act(self, view: sdk.View) -> sdk.Action:
        if view.must_discard:
            return sdk.discard(next(c for c in sdk.cards("Ah Kh Qh Jh Th") if c not in view.hand))
        return sdk.DRAW_STOCK


def test_illegal_move_names_bot_action_and_reason() -> None:
    with pytest.raises(IllegalMoveError) as caught:
        play_match([_Cheat, load("greedy")], seed=1)
    e = caught.value
    assert e.bot == "cheat" and e.seat == 0
    assert isinstance(e.action, sdk.Action) and e.action.card is not None
    assert "is not in the hand" in e.reason
    text = str(e)
    assert "cheat" in text and str(e.action) in text and "legal:" in text
    assert isinstance(e, sdk.IllegalActionError)


class _Wordy(sdk.Bot):
    name = "wordy"

    def act(self, view: sdk.View) -> sdk.Action:
        return "knock"  # type: ignore[return-value]


def test_not_an_action_is_an_illegal_move() -> None:
    with pytest.raises(IllegalMoveError, match=r"not an sdk\.Action"):
        play_match([_Wordy, load("greedy")], seed=1)


class _Broken(sdk.Bot):
    name = "broken"

    def act(self, view: sdk.View) -> sdk.Action:
        raise RuntimeError("oops")


def test_bot_exception_propagates_with_where() -> None:
    with pytest.raises(RuntimeError, match="oops") as caught:
        play_match([load("greedy"), _Broken], seed=2)
    assert any("broken" in note and "seat 1" in note for note in caught.value.__notes__)


def test_factories_and_rules_objects() -> None:
    rules = Rules.build("standard", {"lives": 1, "min_knock": 21})
    outcome = play_match([lambda: load("greedy")(), load("threshold")], seed=8, rules=rules)
    assert outcome.rules == rules
    assert card("Ah") in sdk.cards("Ah Kd")


# ---------------------------------------------------------------- the variants


def test_check_bot_plays_every_preset_and_variant() -> None:
    from sample_bots import check_bot
    from sdk.harness import CHECK_PRESETS, CHECK_VARIANTS, check_cases

    assert set(CHECK_PRESETS) >= {"standard", "pagat", "family", "cadillac", "bicycle"}
    assert set(CHECK_VARIANTS) == {"dealer_option", "under_the_gun", "dummy", "widow", "pot"}
    labels = [label for label, _ in check_cases()]
    assert "standard + dummy=true" in labels and "standard + draw=widow" in labels
    lines: list[str] = []
    played = check_bot(load("threshold"), table_sizes=(3,), matches=1, report=lines.append)
    assert len(played) == len(lines) == len(CHECK_PRESETS) + len(CHECK_VARIANTS)
    assert lines[3].startswith("cadillac, 3 players: 1 matches")
    assert any(line.startswith("standard + scoring=pot, 3 players") for line in lines)


class _NoWidow(sdk.Bot):
    """Plays the stock game only: passes where the widow game has no stock."""

    name = "no-widow"

    def act(self, view: sdk.View) -> sdk.Action:
        if view.must_discard:
            return sdk.discard(view.best_discard()[0])
        if view.is_dealer_option:
            return sdk.PASS
        return sdk.DRAW_STOCK if view.stock_size or not view.widow_game else sdk.PASS


def test_check_bot_names_the_variant_that_failed() -> None:
    from sample_bots import check_bot

    with pytest.raises(IllegalMoveError) as caught:
        check_bot(_NoWidow, presets=("standard",), variants={"widow": Rules(draw="widow")}, table_sizes=(2,), matches=1)
    assert "the widow game has no stock, discard pile or pass" in caught.value.reason
    assert any("rules 'standard + draw=widow', 2 players" in n for n in caught.value.__notes__)


def test_a_pot_match_ends_after_its_rounds() -> None:
    ends: list[wire.MatchResult] = []

    class Pot(sdk.Bot):
        name = "pot"

        def act(self, view: sdk.View) -> sdk.Action:
            assert view.playing_for_pot and view.rounds_in_match == 6 and view.pot >= 2
            return load("threshold")().act(view)

        def on_match_end(self, result: wire.MatchResult) -> None:
            ends.append(result)

    out = play_match([Pot, load("greedy")], seed=4, rules="bicycle")
    assert out.end is MatchEnd.POT_ROUNDS and out.rounds == 6
    chips = out.round_results[-1].chips_after
    assert out.placings == ((1, 2) if chips[0] > chips[1] else (2, 1) if chips[0] < chips[1] else (1, 1))
    assert ends[0].reason == "pot_rounds"


def test_check_bot_without_opponents_still_works_with_a_warning() -> None:
    """A test scaffolded before opponents were the caller's (``from sdk.harness import
    check_bot``; ``check_bot(MyBot, matches=5)``) keeps passing, and is told what to use."""
    import sample_bots
    from sdk.harness import check_bot

    with pytest.warns(DeprecationWarning, match="sample_bots.check_bot"):
        series = check_bot(sample_bots.load("greedy"), matches=1, presets=("standard",), variants={}, table_sizes=(2,))
    assert series and all(s.outcomes for s in series)
