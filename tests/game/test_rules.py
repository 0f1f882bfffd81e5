"""Rule options and presets (docs/rules.md, "Rules options", "Presets"): validation and every
way to set them."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from referee.game import (
    OPTION_NAMES,
    PRESETS,
    Match,
    Rules,
    RulesError,
    parse_overrides,
    rules_from_mapping,
    rules_from_toml,
    rules_to_toml,
)
from referee.game.errors import GameError
from referee.game.rules import coerce_option

# docs/rules.md, "Presets", transcribed (plus the defaults of the options the table leaves out).
TABLE: dict[str, dict[str, Any]] = {
    "standard": {
        "three_of_a_kind": "30.5",
        "knocker_alone_loss": 2,
        "knocker_tied": "double",
        "knock_ban": "first_turn",
        "empty_stock": "reshuffle",
        "lives": 3,
        "bus": True,
        "simultaneous_31_loss": 2,
    },
    "pagat": {
        "three_of_a_kind": "off",
        "knocker_alone_loss": 2,
        "knocker_tied": "safe",
        "knock_ban": "none",
        "empty_stock": "showdown",
        "lives": 3,
        "bus": True,
        "simultaneous_31_loss": 2,
    },
    "family": {
        "three_of_a_kind": "30.5",
        "knocker_alone_loss": 1,
        "knocker_tied": "single",
        "knock_ban": "none",
        "empty_stock": "reshuffle",
        "lives": 3,
        "bus": False,
        "simultaneous_31_loss": 2,
    },
}
DEFAULTS: dict[str, Any] = {
    "three_aces": None,
    "min_knock": 0,
    "flush_may_knock": False,
    "blitz": "immediate",
    "max_turns_per_round": 200,
    "max_rounds": 500,
    # docs/rules.md, "Variants".
    "dealer_option": False,
    "under_the_gun": False,
    "dummy": False,
    "draw": "stock",
    "scoring": "lives",
    "pot_rounds": 0,
    "ante": 1,
}
# docs/rules.md, "Variants": the variant presets, as changes to the table above.
VARIANT_PRESETS: dict[str, dict[str, Any]] = {
    "cadillac": TABLE["standard"] | DEFAULTS | {"lives": 4, "three_aces": 33},
    "bicycle": TABLE["pagat"] | DEFAULTS | {"draw": "widow", "scoring": "pot"},
}

# Per option: good values (typed), bad values (typed), good text, bad text.
GOOD: dict[str, list[Any]] = {
    "three_of_a_kind": ["30.5", "30", "off"],
    "three_aces": [None, 32.5, 33, 1, 100],
    "simultaneous_31_loss": [1, 2, 3, 10],
    "knock_ban": ["first_turn", "none", "first_lap"],
    "min_knock": [0, 17, 19, 21, 20.5, 31],
    "flush_may_knock": [True, False],
    "blitz": ["immediate"],
    "empty_stock": ["reshuffle", "showdown"],
    "max_turns_per_round": [1, 200, 100_000],
    "knocker_alone_loss": [1, 2, 3],
    "knocker_tied": ["double", "safe", "single"],
    "lives": [1, 3, 4, 99],
    "bus": [True, False],
    "max_rounds": [1, 500, 100_000],
    "dealer_option": [True, False],
    "under_the_gun": [True, False],
    "dummy": [True, False],
    "draw": ["stock", "widow"],
    "scoring": ["lives", "pot"],
    "pot_rounds": [0, 1, 12, 10_000],
    "ante": [1, 5, 100],
}
BAD: dict[str, list[Any]] = {
    "three_of_a_kind": ["31", "on", "", None, True, 29],
    "three_aces": [0, 0.5, 32.3, 101, "x", True, float("nan"), float("inf")],
    "simultaneous_31_loss": [0, 11, -1, 1.5, "two", True, None],
    "knock_ban": ["first", "None", "", None, 0],
    "min_knock": [-1, 31.5, 17.2, True, None, "low", float("nan")],
    "flush_may_knock": ["maybe", 2, None],
    "blitz": ["end_of_turn", "", None],
    "empty_stock": ["shuffle", None, 1],
    "max_turns_per_round": [0, 100_001, 2.5, None, False],
    "knocker_alone_loss": [0, 11, None, 1.5],
    "knocker_tied": ["triple", "", None],
    "lives": [0, 100, -3, 2.5, None, True],
    "bus": ["yes please", 0.5, None],
    "max_rounds": [0, 100_001, None, "many"],
    "dealer_option": ["maybe", 2, None],
    "under_the_gun": ["sometimes", 0.5, None],
    "dummy": [3, None, "dummy"],
    "draw": ["deck", "", None, 1, "Widow"],
    "scoring": ["chips", "", None, True],
    "pot_rounds": [-1, 10_001, 2.5, None, True, "all"],
    "ante": [0, 101, -1, 1.5, None, False],
}
# What each option's error message must mention as accepted.
ACCEPTS: dict[str, list[str]] = {
    "three_of_a_kind": ["'30.5'", "'30'", "'off'"],
    "three_aces": ["null", "32.5"],
    "simultaneous_31_loss": ["1", "10"],
    "knock_ban": ["'first_turn'", "'none'", "'first_lap'"],
    "min_knock": ["0", "31"],
    "flush_may_knock": ["true", "false"],
    "blitz": ["'immediate'"],
    "empty_stock": ["'reshuffle'", "'showdown'"],
    "max_turns_per_round": ["1", "100000"],
    "knocker_alone_loss": ["1", "10"],
    "knocker_tied": ["'double'", "'safe'", "'single'"],
    "lives": ["1", "99"],
    "bus": ["true", "false"],
    "max_rounds": ["1", "100000"],
    "dealer_option": ["true", "false"],
    "under_the_gun": ["true", "false"],
    "dummy": ["true", "false"],
    "draw": ["'stock'", "'widow'"],
    "scoring": ["'lives'", "'pot'"],
    "pot_rounds": ["0", "10000"],
    "ante": ["1", "100"],
}
# Options that cannot be played together (docs/rules.md, "Variants").
CONFLICTS = [({"dealer_option": True}, {"draw": "widow"}), ({"dummy": True}, {"draw": "widow"})]


def _toml(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else f'"{v}"'


def conflicting(opts: dict[str, Any]) -> bool:
    return any(all(opts.get(k) == v for k, v in (a | b).items()) for a, b in CONFLICTS)


def test_option_names_are_the_documented_ones() -> None:
    assert set(OPTION_NAMES) == set(TABLE["standard"]) | set(DEFAULTS)
    assert set(GOOD) == set(BAD) == set(ACCEPTS) == set(OPTION_NAMES)
    assert set(PRESETS) == {"standard", "pagat", "family", "cadillac", "bicycle"}


@pytest.mark.parametrize("name", list(VARIANT_PRESETS))
def test_variant_presets_match_the_table(name: str) -> None:
    r = Rules.preset(name)
    assert r.options() == VARIANT_PRESETS[name]
    assert r.describe() == name and r.differences() == {}
    assert rules_from_toml(rules_to_toml(r)) == r


@pytest.mark.parametrize(("a", "b"), CONFLICTS)
def test_options_that_cannot_be_played_together(a: dict[str, Any], b: dict[str, Any]) -> None:
    makers: list[Callable[[], Rules]] = [
        lambda: Rules.build("standard", a | b),
        lambda: Rules.build("bicycle", a),
        lambda: Rules(**(a | b)),
        lambda: rules_from_toml(
            "[rules]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in (a | b).items())
        ),
    ]
    for make in makers:
        with pytest.raises(RulesError) as e:
            make()
        msg = str(e.value)
        for name in (*a, *b):
            assert repr(name) in msg, msg
    # Each alone is fine.
    Rules.build("standard", a)
    Rules.build("standard", b)


def test_options_unused_under_the_pot_are_accepted() -> None:
    r = Rules.build(
        "bicycle", {"lives": 7, "bus": False, "knocker_alone_loss": 3, "max_rounds": 2, "simultaneous_31_loss": 4}
    )
    assert r.lives == 7 and r.scoring == "pot"
    # ... and pot options under lives.
    assert Rules.build("standard", {"ante": 9, "pot_rounds": 4}).ante == 9


@pytest.mark.parametrize("name", list(TABLE))
def test_presets_match_the_table(name: str) -> None:
    r = Rules.preset(name)
    assert r.options() == TABLE[name] | DEFAULTS
    assert r.preset_name == name
    assert r.describe() == name
    assert r.differences() == {}
    assert Rules.build(name) == r


def test_default_rules_are_standard() -> None:
    assert Rules() == Rules.preset("standard")
    assert Match(3, seed=1).rules == Rules.preset("standard")


def test_unknown_preset() -> None:
    with pytest.raises(RulesError) as e:
        Rules.preset("casino")
    msg = str(e.value)
    assert "'casino'" in msg and all(p in msg for p in PRESETS)
    with pytest.raises(RulesError):
        Rules.build("Standard")
    with pytest.raises(RulesError):
        Rules.preset(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), [(n, v) for n in GOOD for v in GOOD[n]])
def test_good_values_accepted_everywhere(name: str, value: Any) -> None:
    r = Rules.build("standard", {name: value})
    assert getattr(r, name) == value
    assert Rules().with_options({name: value}) == r
    assert Rules(**{name: value}) == r
    assert coerce_option(name, value) == value


@pytest.mark.parametrize(("name", "value"), [(n, v) for n in BAD for v in BAD[n]])
def test_bad_values_rejected_naming_option_and_accepted(name: str, value: Any) -> None:
    makers: list[Callable[[], Rules]] = [
        lambda: Rules.build("standard", {name: value}),
        lambda: Rules.preset("pagat").with_options({name: value}),
        lambda: Rules(**{name: value}),
    ]
    for make in makers:
        with pytest.raises(RulesError) as e:
            make()
        msg = str(e.value)
        assert repr(name) in msg
        assert repr(value) in msg
        for word in ACCEPTS[name]:
            assert word in msg, (msg, word)


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_bad_text_rejected_naming_option(name: str) -> None:
    if name == "three_aces":
        bad = "lots"
    elif name in ("flush_may_knock", "bus", "dealer_option", "under_the_gun", "dummy"):
        bad = "perhaps"
    else:
        bad = "9999999"
    with pytest.raises(RulesError) as e:
        parse_overrides([f"{name}={bad}"])
    assert repr(name) in str(e.value)
    for word in ACCEPTS[name]:
        assert word in str(e.value)


@pytest.mark.parametrize("key", ["foo", "Lives", "preset_name", "three_of_kind", ""])
def test_unknown_option(key: str) -> None:
    with pytest.raises(RulesError) as e:
        Rules.build("standard", {key: 1})
    assert repr(key) in str(e.value)
    assert "lives" in str(e.value)  # lists the options
    with pytest.raises(RulesError) as e:
        Rules().with_options({key: 1})
    assert repr(key) in str(e.value)
    if key:
        with pytest.raises(RulesError) as e:
            parse_overrides([f"{key}=1"])
        assert repr(key) in str(e.value)


def test_rules_are_frozen_and_hashable() -> None:
    r = Rules()
    with pytest.raises(AttributeError):
        r.lives = 4  # type: ignore[misc]
    assert hash(r) == hash(Rules.preset("standard"))
    assert len({Rules(), Rules.preset("standard"), Rules.preset("pagat")}) == 2


def test_build_sets_options_on_top_of_a_preset() -> None:
    r = Rules.build("pagat", {"lives": 4, "bus": False})
    assert r.preset_name == "pagat"
    assert r.lives == 4 and r.bus is False
    assert r.three_of_a_kind == "off" and r.knocker_tied == "safe"  # the rest is pagat's
    assert r.differences() == {"lives": 4, "bus": False}
    # with_options keeps the preset name and leaves the original alone.
    r2 = r.with_options({"lives": 5})
    assert r2.preset_name == "pagat" and r2.lives == 5 and r.lives == 4
    assert r.with_options({}) == r


def test_text_values_are_coerced() -> None:
    r = Rules.build(
        "standard",
        {
            "lives": "4",
            "bus": "false",
            "flush_may_knock": "yes",
            "min_knock": "21",
            "three_aces": "32.5",
            "three_of_a_kind": "30",
        },
    )
    assert (r.lives, r.bus, r.flush_may_knock, r.min_knock, r.three_aces, r.three_of_a_kind) == (
        4,
        False,
        True,
        21,
        32.5,
        "30",
    )
    assert Rules.build("standard", {"three_aces": "null"}).three_aces is None
    # TOML authors may write 30.5 or 30 unquoted.
    assert Rules.build("standard", {"three_of_a_kind": 30.5}).three_of_a_kind == "30.5"
    assert Rules.build("standard", {"three_of_a_kind": 30}).three_of_a_kind == "30"


@pytest.mark.parametrize(
    ("text", "option", "value"),
    [
        ("dealer_option=true", "dealer_option", True),
        ("under_the_gun=on", "under_the_gun", True),
        ("dummy=yes", "dummy", True),
        ("draw=widow", "draw", "widow"),
        ("scoring=pot", "scoring", "pot"),
        ("pot_rounds=0", "pot_rounds", 0),
        ("ante=5", "ante", 5),
        ("lives=4", "lives", 4),
        (" lives = 4 ", "lives", 4),
        ("bus=off", "bus", False),
        ("bus=on", "bus", True),
        ("bus=TRUE", "bus", True),
        ("bus=0", "bus", False),
        ("three_aces=33", "three_aces", 33),
        ("three_aces=32.5", "three_aces", 32.5),
        ("three_aces=null", "three_aces", None),
        ("three_aces=none", "three_aces", None),
        ("three_of_a_kind=off", "three_of_a_kind", "off"),
        ("three_of_a_kind=30.5", "three_of_a_kind", "30.5"),
        ("knock_ban=first_lap", "knock_ban", "first_lap"),
        ("min_knock=17", "min_knock", 17),
        ("min_knock=20.5", "min_knock", 20.5),
        ("knocker_tied=safe", "knocker_tied", "safe"),
        ("empty_stock=showdown", "empty_stock", "showdown"),
        ("max_rounds=10", "max_rounds", 10),
    ],
)
def test_parse_overrides(text: str, option: str, value: Any) -> None:
    out = parse_overrides([text])
    assert out == {option: value}
    assert type(out[option]) is type(value)
    assert getattr(Rules.build("standard", out), option) == value


def test_parse_overrides_many_and_last_wins() -> None:
    out = parse_overrides(["lives=4", "bus=false", "lives=5"])
    assert out == {"lives": 5, "bus": False}
    assert parse_overrides([]) == {}


@pytest.mark.parametrize("item", ["lives", "=4", "lives 4", ""])
def test_parse_overrides_needs_key_value(item: str) -> None:
    with pytest.raises(RulesError) as e:
        parse_overrides([item])
    assert repr(item) in str(e.value)
    assert "key=value" in str(e.value)


def test_toml_top_level_and_rules_table() -> None:
    top = 'preset = "pagat"\nlives = 4\nbus = false\n'
    table = '[rules]\npreset = "pagat"\nlives = 4\nbus = false\n'
    expected = Rules.build("pagat", {"lives": 4, "bus": False})
    assert rules_from_toml(top) == expected
    assert rules_from_toml(table) == expected
    # No preset: standard.
    assert rules_from_toml("lives = 5") == Rules.build("standard", {"lives": 5})
    assert rules_from_toml("") == Rules()
    assert rules_from_toml("three_of_a_kind = 30\nthree_aces = 33").three_aces == 33
    assert rules_from_toml("three_of_a_kind = 30\nthree_aces = 33").three_of_a_kind == "30"
    assert rules_from_toml("min_knock = 21.0").min_knock == 21


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("lives = 0", ["'lives'", "1", "99"]),
        ("[rules]\nknock_ban = 'sometimes'", ["'knock_ban'", "'first_turn'"]),
        ("colour = 'red'", ["'colour'"]),
        ("preset = 'poker'", ["'poker'", "standard"]),
        ("preset = 3", ["preset", "3"]),
        ("rules = 3", ["[rules]"]),
        ("lives = ", ["TOML"]),
    ],
)
def test_toml_errors(text: str, words: list[str]) -> None:
    with pytest.raises(RulesError) as e:
        rules_from_toml(text)
    for w in words:
        assert w in str(e.value)


ROUND_TRIP = [
    Rules(),
    Rules.preset("pagat"),
    Rules.preset("family"),
    Rules.build("pagat", {"three_aces": 32.5, "min_knock": 20.5, "flush_may_knock": True}),
    Rules.build("family", {"three_of_a_kind": "30", "three_aces": 33, "lives": 7, "bus": True}),
    Rules.build("standard", {"knock_ban": "first_lap", "max_rounds": 9, "max_turns_per_round": 12}),
    Rules.build(
        "standard", {"knocker_tied": "single", "knocker_alone_loss": 1, "simultaneous_31_loss": 3}
    ),
    Rules.preset("cadillac"),
    Rules.preset("bicycle"),
    Rules.build("bicycle", {"under_the_gun": True, "pot_rounds": 7, "ante": 3}),
    Rules.build("standard", {"dealer_option": True, "dummy": True, "under_the_gun": True}),
    Rules.build("cadillac", {"scoring": "pot", "dummy": True}),
]


@pytest.mark.parametrize("rules", ROUND_TRIP, ids=lambda r: r.describe())
def test_toml_round_trip(rules: Rules) -> None:
    text = rules_to_toml(rules)
    assert text.startswith("[rules]\n")
    back = rules_from_toml(text)
    assert back == rules
    assert back.describe() == rules.describe()
    assert rules_to_toml(back) == text


def test_toml_round_trip_every_option_combination() -> None:
    names = list(OPTION_NAMES)
    # Pairwise: every value of every option next to every value of each other option.
    for a, b in itertools.combinations(names, 2):
        for va in GOOD[a]:
            for vb in GOOD[b][:2]:
                if conflicting({a: va, b: vb}):
                    with pytest.raises(RulesError):
                        Rules.build("standard", {a: va, b: vb})
                    continue
                r = Rules.build("standard", {a: va, b: vb})
                assert rules_from_toml(rules_to_toml(r)) == r


def test_rules_from_mapping() -> None:
    assert rules_from_mapping({"preset": "family", "lives": 2}) == Rules.build(
        "family", {"lives": 2}
    )
    assert rules_from_mapping({"lives": 2}, default_preset="pagat") == Rules.build(
        "pagat", {"lives": 2}
    )


def test_describe() -> None:
    assert Rules().describe() == "standard"
    assert Rules.preset("pagat").describe() == "pagat"
    assert Rules.build("pagat", {"lives": 4}).describe() == "pagat + lives=4"
    assert Rules.build("standard", {"bus": False, "three_aces": 33}).describe() == (
        "standard + three_aces=33, bus=false"
    )
    # Setting an option to the preset's own value is no difference.
    assert Rules.build("family", {"bus": False}).describe() == "family"
    # Back to null after a change.
    assert (
        Rules.build("standard", {"three_aces": 33}).with_options({"three_aces": None}).describe()
        == "standard"
    )
    assert Rules.build("family", {"bus": True, "knock_ban": "first_lap"}).describe() == (
        "family + knock_ban=first_lap, bus=true"
    )
    assert Rules.build("standard", {"dummy": True, "scoring": "pot", "ante": 2}).describe() == (
        "standard + dummy=true, scoring=pot, ante=2"
    )
    assert Rules.build("bicycle", {"under_the_gun": True, "pot_rounds": 12}).describe() == (
        "bicycle + under_the_gun=true, pot_rounds=12"
    )
    assert Rules.build("pagat", {"draw": "widow", "scoring": "pot"}).describe() == (
        "pagat + draw=widow, scoring=pot"
    )


@pytest.mark.parametrize("players", [0, 1, 10, -2, True, 2.0, "3"])
def test_player_count_is_checked(players: Any) -> None:
    with pytest.raises(GameError) as e:
        Match(players, seed=1)
    assert "2 to 9" in str(e.value)
    assert repr(players) in str(e.value)


@pytest.mark.parametrize("players", range(2, 10))
def test_two_to_nine_players(players: int) -> None:
    m = Match(players, seed=players)
    assert len(m.seats_in) == players
    assert all(len(m.hand(s)) == 3 for s in range(players)) or m.round_no > 1


def test_whole_number_options_accept_integral_floats_from_toml() -> None:
    # TOML and JSON writers may give 3.0 for 3; that is the same number of lives.
    r = rules_from_toml("[rules]\nlives = 3.0\nknocker_alone_loss = 1.0\n")
    assert r.lives == 3 and isinstance(r.lives, int)
    assert r.knocker_alone_loss == 1 and isinstance(r.knocker_alone_loss, int)


def test_unknown_preset_name_is_rejected() -> None:
    with pytest.raises(RulesError, match="unknown preset 'bogus'"):
        Rules(preset_name="bogus")
