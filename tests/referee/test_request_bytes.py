"""The decision request the Play stream sends (wire.decision_request_bytes, built from parts
kept between decisions) is the message wire.decision_request builds, under every preset and
variant; and rules read from the wire are read once, bad rules refused every time."""

from __future__ import annotations

import random

import pytest
from thirtyone.v1 import bot_pb2, game_pb2

from referee import wire
from referee.game import KNOCK, PRESETS, Match, Rules

VARIANTS = {
    **{name: Rules.preset(name) for name in PRESETS},
    "dummy": Rules().with_options({"dummy": True}),
    "dealer_option": Rules().with_options({"dealer_option": True, "under_the_gun": True}),
    "widow": Rules().with_options({"draw": "widow"}),
    "pot": Rules().with_options({"scoring": "pot"}),
    "showdown": Rules().with_options({"empty_stock": "showdown", "max_turns_per_round": 30}),
    "mix": Rules().with_options({"dummy": True, "dealer_option": True, "under_the_gun": True, "scoring": "pot"}),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_request_bytes_parse_to_the_request_message(variant: str) -> None:
    rules = VARIANTS[variant]
    seen = 0
    for seed in range(3):
        rng = random.Random(seed)
        m = Match(rng.randint(2, 6), rules, seed=seed)
        decision = 0
        while not m.is_over:
            # Every seat's view, not only the one to move: the history hides others' draws.
            for seat in range(m.players):
                obs = m.observation(seat)
                decision += 1
                want = wire.decision_request(obs, decision, 250, rng.randint(0, 10_000))
                got = bot_pb2.PlayRequest.FromString(
                    wire.decision_request_bytes(obs, decision, 250, want.decision_request.time_bank_ms)
                )
                assert got == want, (variant, seed, decision)
                seen += 1
            obs = m.observation(m.current)
            if m.turn > 40 and KNOCK in obs.legal_actions:
                action = KNOCK  # rounds of random play would go on a long time
            else:
                action = rng.choice(obs.legal_actions)
            m.apply_unchecked(action)
            m.take_records()
    assert seen > 100


def test_rules_read_from_the_wire_are_read_once_and_bad_rules_every_time() -> None:
    msg = wire.rules_to_pb(Rules.preset("pagat"))
    first = wire.rules_from_pb(msg)
    assert first == Rules.preset("pagat") and wire.rules_from_pb(game_pb2.Rules.FromString(msg.SerializeToString())) is first
    bad = game_pb2.Rules()
    bad.CopyFrom(msg)
    bad.knock_ban = 99  # type: ignore[assignment]
    for _ in range(2):
        with pytest.raises(wire.WireError, match=r"rules\.knock_ban: 99"):
            wire.rules_from_pb(bad)
