"""The variants (docs/rules.md, "Variants") through :mod:`referee.wire`: rules, actions,
observations, public events, match ends and log lines, both ways, from real game states."""

from __future__ import annotations

import pytest
from thirtyone.v1 import bot_pb2, game_pb2, log_pb2

from referee import wire
from referee.game import (
    CALL,
    KNOCK,
    PASS,
    SWAP_HAND,
    Action,
    ActionKind,
    ActionRecord,
    Card,
    DealRecord,
    DummyState,
    EventKind,
    Match,
    Phase,
    PublicEvent,
    RoundResult,
    Rules,
    swap_upcard,
    swap_widow,
)

VARIANT_RULES = [
    Rules(dealer_option=True),
    Rules(under_the_gun=True),
    Rules(dummy=True),
    Rules(draw="widow"),
    Rules(scoring="pot", pot_rounds=7, ante=3),
    Rules.preset("cadillac"),
    Rules.preset("bicycle"),
    Rules.build("pagat", {"dummy": True, "dealer_option": True, "under_the_gun": True}),
]


@pytest.mark.parametrize("rules", VARIANT_RULES, ids=lambda r: r.describe())
def test_rules_round_trip(rules: Rules) -> None:
    msg = wire.rules_to_pb(rules)
    assert wire.rules_from_pb(msg) == rules
    assert msg.draw in (game_pb2.DRAW_STOCK, game_pb2.DRAW_WIDOW)
    assert msg.scoring in (game_pb2.SCORING_LIVES, game_pb2.SCORING_POT)
    assert msg.ante == rules.ante


def test_rules_written_before_the_variants_read_as_stock_lives_ante_1() -> None:
    msg = wire.rules_to_pb(Rules.preset("pagat"))
    for name in ("dealer_option", "under_the_gun", "dummy", "draw", "scoring", "pot_rounds", "ante"):
        msg.ClearField(name)  # type: ignore[arg-type]
    assert msg.draw == game_pb2.DRAW_UNSPECIFIED and msg.ante == 0
    assert wire.rules_from_pb(msg) == Rules.preset("pagat")


def test_unknown_draw_or_scoring_is_a_wire_error() -> None:
    msg = wire.rules_to_pb(Rules())
    msg.draw = 7  # type: ignore[assignment]
    with pytest.raises(wire.WireError, match=r"rules\.draw: 7"):
        wire.rules_from_pb(msg)


def test_conflicting_variants_on_the_wire_are_a_wire_error() -> None:
    msg = wire.rules_to_pb(Rules.preset("bicycle"))
    msg.dummy = True
    with pytest.raises(wire.WireError, match="cannot be played together"):
        wire.rules_from_pb(msg)


@pytest.mark.parametrize(
    "action",
    [CALL, SWAP_HAND, PASS, swap_upcard("Td"), swap_widow("Ah", "2c")],
    ids=str,
)
def test_new_action_kinds_round_trip(action: Action) -> None:
    msg = wire.action_to_pb(action)
    assert wire.action_from_pb(msg) == action
    assert bool(msg.widow_card) == (action.kind is ActionKind.SWAP_WIDOW)


def test_a_widow_swap_on_the_wire() -> None:
    msg = game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_WIDOW, card="10h", widow_card="Qs")
    assert wire.action_from_pb(msg) == swap_widow("Th", "Qs")  # "10" for T, as for any card


@pytest.mark.parametrize(
    ("msg", "words"),
    [
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_WIDOW, card="Ah"), "needs a card (from the hand) and a widow_card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_WIDOW, widow_card="Ah"), "needs a card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_WIDOW, card="Ah", widow_card="qs"), "action.widow_card: 'qs' is not a card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_WIDOW, card="ah", widow_card="Qs"), "action.card: 'ah' is not a card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_UPCARD), "a SWAP_UPCARD needs a card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_UPCARD, card="T d"), "is not a card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_CALL, card="Ah"), "given with ACTION_KIND_CALL, which takes no card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_HAND, card="Ah"), "which takes no card"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_DISCARD, card="Ah", widow_card="Qs"), "only SWAP_WIDOW takes one"),
        (game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_UPCARD, card="Ah", widow_card="Qs"), "only SWAP_WIDOW takes one"),
    ],
)
def test_malformed_variant_actions_are_wire_errors(msg: game_pb2.Action, words: str) -> None:
    with pytest.raises(wire.WireError, match=words.replace("(", r"\(").replace(")", r"\)")):
        wire.action_from_pb(msg)


def test_a_bot_answer_with_a_widow_swap_reads_back() -> None:
    did, action = wire.answer_from_pb(wire.answer_to_pb(12, swap_widow("Ah", "2c")))
    assert (did, action) == (12, swap_widow("Ah", "2c"))


# ---------------------------------------------------------------- observations from real states


def _first(m: Match, kind: ActionKind) -> Action:
    return next(a for a in m.legal_actions() if a.kind is kind)


def _round_trip(m: Match, seat: int) -> game_pb2.Observation:
    obs = m.observation(seat)
    msg = wire.observation_to_pb(obs)
    assert wire.observation_from_pb(msg) == obs
    return msg


def _dealt(rules: Rules, players: int = 3) -> Match:
    """A match of ``rules`` whose first deal has no natural 31 (so it waits on a decision)."""
    for seed in range(1, 50):
        m = Match(players, rules, seed=seed)
        if m.round_no == 1:
            return m
    raise AssertionError("no deal without a natural 31")


def test_the_dealers_option_observed_and_swapped() -> None:
    m = _dealt(Rules(dealer_option=True))
    msg = _round_trip(m, m.dealer)
    assert msg.phase == game_pb2.PHASE_DEALER_OPTION and msg.turn == 0
    assert {a.kind for a in msg.legal_actions} == {game_pb2.ACTION_KIND_PASS, game_pb2.ACTION_KIND_SWAP_UPCARD}
    old_up = m.pile[-1]
    give = m.hands[m.dealer][0]
    m.apply(swap_upcard(give))
    if m.round_no == 1:  # no blitz
        for seat in range(3):
            ev = _round_trip(m, seat).history[0]
            assert ev.kind == game_pb2.PUBLIC_EVENT_KIND_SWAP_UPCARD
            assert (ev.card, ev.taken_card) == (give.text, old_up.text)


def test_the_dealers_pass_is_a_dealer_pass_event() -> None:
    m = _dealt(Rules(dealer_option=True))
    m.apply(PASS)
    ev = _round_trip(m, 0).history[0]
    assert ev.kind == game_pb2.PUBLIC_EVENT_KIND_DEALER_PASS and ev.card == "" and ev.taken_card == ""


def test_a_call_is_offered_and_observed() -> None:
    m = _dealt(Rules(under_the_gun=True))
    msg = _round_trip(m, m.current)
    assert game_pb2.ACTION_KIND_CALL in [a.kind for a in msg.legal_actions]


def test_the_dummy_face_down_then_taken() -> None:
    m = _dealt(Rules(dummy=True))
    msg = _round_trip(m, m.current)
    assert msg.dummy_state == game_pb2.DUMMY_STATE_FACE_DOWN and not msg.HasField("dummy_taker") and not msg.dead_hand
    taker = m.current
    old = m.hand(taker)
    m.apply(SWAP_HAND)
    assert m.round_no == 1, "the dummy made a blitz: pick another seed"
    for seat in range(3):
        msg = _round_trip(m, seat)
        assert msg.dummy_state == game_pb2.DUMMY_STATE_TAKEN and msg.dummy_taker == taker
        assert list(msg.dead_hand) == [c.text for c in old]
        ev = msg.history[-1]
        assert ev.kind == game_pb2.PUBLIC_EVENT_KIND_SWAP_HAND and list(ev.face_up_cards) == [c.text for c in old]
        assert ev.card == "" and ev.taken_card == ""
        # The dummy's cards are the taker's secret.
        if seat != taker:
            assert not set(msg.hand) & {c.text for c in m.hand(taker)}


def test_the_widow_game_observed_and_swapped() -> None:
    m = _dealt(Rules.preset("bicycle"))
    msg = _round_trip(m, m.current)
    assert len(msg.widow) == 3 and not msg.discard_pile and msg.stock_size == 0
    assert msg.dummy_state == game_pb2.DUMMY_STATE_NONE
    assert list(msg.chips) == [-1, -1, -1] and msg.pot == 3 and msg.rounds_in_match == 9
    assert all(e.kind != game_pb2.PUBLIC_EVENT_KIND_ANTE for e in msg.history)  # antes are not sent
    swap = _first(m, ActionKind.SWAP_WIDOW)
    m.apply(swap)
    if m.round_no == 1:
        ev = _round_trip(m, 1).history[-1]
        assert ev.kind == game_pb2.PUBLIC_EVENT_KIND_SWAP_WIDOW
        assert (ev.card, ev.taken_card) == (str(swap.card), str(swap.widow_card))


def test_chips_are_sent_only_under_the_pot() -> None:
    msg = _round_trip(_dealt(Rules()), 0)
    assert not msg.chips and msg.pot == 0 and msg.rounds_in_match == 0
    assert msg.dummy_state == game_pb2.DUMMY_STATE_NONE


def test_an_observation_from_an_older_referee_reads() -> None:
    msg = wire.observation_to_pb(_dealt(Rules()).observation(0))
    msg.ClearField("dummy_state")
    obs = wire.observation_from_pb(msg)
    assert obs.dummy_state is DummyState.NONE and obs.chips == (0, 0, 0)


def test_public_event_kinds_ante_and_pot_won_are_not_read() -> None:
    msg = game_pb2.PublicEvent(kind=game_pb2.PUBLIC_EVENT_KIND_ANTE, seat=0, chips=1)
    with pytest.raises(wire.WireError, match="not an event kind"):
        wire.public_event_from_pb(msg, "history[0]")
    assert wire.public_event_to_pb(PublicEvent(EventKind.CALL, 2)).kind == game_pb2.PUBLIC_EVENT_KIND_CALL


def test_match_end_carries_chips() -> None:
    result = wire.MatchResult("m1", (1, 3, 2), 3, "pot_rounds", (), (4, -5, 0))
    msg = wire.match_end_to_pb(result)
    assert msg.reason == game_pb2.MATCH_END_REASON_POT_ROUNDS and list(msg.chips) == [4, -5, 0]
    assert wire.match_end_from_pb(bot_pb2.MatchEnd.FromString(msg.SerializeToString())) == result


# ---------------------------------------------------------------- log lines


def test_a_widow_deal_line_has_no_upcard_and_reads_back() -> None:
    m = _dealt(Rules.preset("bicycle"))
    deal = next(r for r in m.take_records() if isinstance(r, DealRecord))
    line = wire.deal_event_to_pb(deal).event
    assert line.deal.upcard == "" and list(line.deal.widow) == [c.text for c in deal.widow]
    back = wire.deal_from_pb(1, 3, line.deal)
    assert (back.deck, back.hands, back.upcard, back.widow) == (deal.deck, deal.hands, None, deal.widow)
    ante = wire.ante_event_to_pb(deal)
    assert ante is not None
    assert [(p.seat, p.count) for p in ante.event.ante.paid] == [(0, 1), (1, 1), (2, 1)]
    assert ante.event.ante.pot_after == 3


def test_a_dummy_deal_line() -> None:
    m = _dealt(Rules(dummy=True))
    deal = next(r for r in m.take_records() if isinstance(r, DealRecord))
    line = wire.deal_event_to_pb(deal).event.deal
    assert list(line.dummy) == [c.text for c in deal.dummy] and line.upcard
    assert wire.deal_from_pb(1, 3, line).dummy == deal.dummy
    assert wire.ante_event_to_pb(deal) is None  # no pot


def test_a_deal_line_with_both_upcard_and_widow_is_unreadable() -> None:
    msg = log_pb2.DealEvent(dealer=0, upcard="Ah", widow=["2c", "3c", "4c"])
    with pytest.raises(wire.WireError, match="no up-card"):
        wire.deal_from_pb(1, 2, msg)


def test_swap_action_lines_round_trip() -> None:
    up = ActionRecord(1, 0, 2, swap_upcard("Td"), Card.parse("Td"), Card.parse("Ah"))
    line = wire.action_event_to_pb(up, 1, 5, False, Phase.DEALER_OPTION, wire.taken_cards(up)).event
    assert line.action.phase == game_pb2.PHASE_DEALER_OPTION and list(line.action.taken_cards) == ["Ah"]
    assert wire.action_record_from_pb(1, 0, line.action) == up
    widow = ActionRecord(1, 3, 0, swap_widow("Td", "Ah"), Card.parse("Td"), Card.parse("Ah"))
    line = wire.action_event_to_pb(widow, 4, 5, False, Phase.TURN_START, wire.taken_cards(widow)).event
    assert wire.action_record_from_pb(1, 3, line.action) == widow
    dummy = tuple(map(Card.parse, ("2c", "3c", "4c")))
    hand = ActionRecord(1, 1, 1, SWAP_HAND, None)
    line = wire.action_event_to_pb(hand, 2, 5, False, Phase.TURN_START, wire.taken_cards(hand, dummy)).event
    assert list(line.action.taken_cards) == ["2c", "3c", "4c"]
    assert wire.phase_from_pb(line.action.phase) is Phase.TURN_START
    assert wire.phase_from_pb(game_pb2.PHASE_UNSPECIFIED) is None
    knock = ActionRecord(1, 1, 1, KNOCK, None)
    assert wire.taken_cards(knock, dummy) == ()


def _pot_round(rules: Rules) -> RoundResult:
    m = _dealt(rules)
    while m.round_no == 1:
        m.apply(m.legal_actions()[0])
    return m.rounds[0]


def test_pot_round_end_and_award_lines() -> None:
    r = _pot_round(Rules.preset("bicycle"))
    award = wire.pot_award_event_to_pb(r)
    assert award is not None
    pa = award.event.pot_award
    assert pa.pot == r.pot and pa.remainder == r.carried
    assert [(w.seat, w.count) for w in pa.won] == [(s, r.chips_won[s]) for s in r.winners]
    end = wire.round_end_to_pb(r)
    assert list(end.pot_winners) == list(r.winners) and list(end.chips_after) == list(r.chips_after)
    assert end.high_card_tie_break == r.high_card_tie_break
    assert not end.lives_lost


def test_a_call_ends_a_round_with_reason_call() -> None:
    m = _dealt(Rules(under_the_gun=True))
    m.apply(CALL)
    end = wire.round_end_to_pb(m.rounds[0])
    assert end.reason == log_pb2.ROUND_END_REASON_CALL and end.HasField("knocker")
    assert wire.round_end_reason_from_pb(end.reason).value == "call"
    assert wire.pot_award_event_to_pb(m.rounds[0]) is None  # lives: no pot


def test_footer_chips_round_trip() -> None:
    f = wire.LogFooterInfo((1, 2), 0, "pot_rounds", 4, (), (3, -5), 2)
    assert wire.log_footer_from_pb(wire.log_footer_to_pb(f).footer) == f
