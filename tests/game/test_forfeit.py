"""``Match.forfeit``: a seat leaves at once (the referee's fault policy; docs/rules.md,
"Forfeits")."""

from __future__ import annotations

import pytest

from referee.game import (
    DRAW_DISCARD,
    KNOCK,
    EventKind,
    ForfeitRecord,
    GameError,
    IllegalActionError,
    MatchEnd,
    Phase,
    PublicEvent,
    RoundEnd,
    Rules,
)
from tests.game.helpers import (
    clone,
    idle_turn,
    idle_until_round_ends,
    play,
    stacked_deck,
    stacked_match,
)

HANDS4 = {0: "Ah Kh 2c", 1: "As Ks 2d", 2: "Ad Kd 3c", 3: "2h 3s 4d"}


def conserved(m) -> bool:  # type: ignore[no-untyped-def]
    cs = m.cards_in_play()
    return len(cs) == 52 and len(set(cs)) == 52


def test_forfeit_of_a_waiting_seat() -> None:
    m = stacked_match(4, stacked_deck(4, hands=HANDS4), lives=1, bus=False, knock_ban="none")
    m.forfeit(2, "timeout")
    assert m.seats_in == [0, 1, 3] and m.hand(2) == ()
    assert conserved(m) and len(m.dead) == 3
    assert m.history[-1] == PublicEvent(EventKind.FORFEIT, 2)
    assert ForfeitRecord(1, 0, 2, "timeout") in m.take_records()
    assert m.placings == (1, 1, 4, 1)
    assert m.current == 0 and not m.over
    # Play goes on without seat 2.
    play(m, "0: knock")
    idle_turn(m)
    assert m.current == 3
    idle_turn(m)
    (r,) = m.rounds
    assert r.end is RoundEnd.KNOCK and set(r.hands) == {0, 1, 3}
    assert r.eliminated == (3,)
    # Seat 3 was still in when 2 left, so it places above 2.
    assert m.placings == (1, 1, 4, 3)
    assert m.dealer == 0 and m.current == 1  # round 2: seats 2 and 3 skipped
    assert m.hand(2) == () and m.hand(3) == ()


def test_forfeit_of_the_seat_to_move_holding_four_cards() -> None:
    m = stacked_match(3, stacked_deck(3, stock="9h"))
    play(m, "0: draw stock")
    assert len(m.hand(0)) == 4
    m.forfeit(0)
    assert conserved(m) and len(m.dead) == 4
    assert m.current == 1 and m.phase is Phase.TURN_START and m.drawn is None
    assert m.seats_in == [1, 2]
    idle_turn(m)
    assert m.current == 2
    idle_turn(m)
    assert m.current == 1


def test_forfeit_of_an_owed_seat_in_the_last_lap() -> None:
    m = stacked_match(4, stacked_deck(4, hands=HANDS4), knock_ban="none")
    play(m, "0: knock")
    assert m.turns_left == 3
    m.forfeit(3)
    assert m.turns_left == 2
    idle_turn(m)
    idle_turn(m)
    assert m.round_no == 2
    r = m.rounds[0]
    assert r.end is RoundEnd.KNOCK and r.turns == 3 and set(r.values) == {0, 1, 2}


def test_forfeit_of_the_seat_to_move_in_the_last_lap() -> None:
    m = stacked_match(4, stacked_deck(4, hands=HANDS4), knock_ban="none")
    play(m, "0: knock", "1: draw stock")
    m.forfeit(1)
    assert m.current == 2 and m.turns_left == 2
    idle_turn(m)
    idle_turn(m)
    assert m.round_no == 2 and m.rounds[0].end is RoundEnd.KNOCK


def test_forfeit_of_the_last_owed_seat_ends_the_round() -> None:
    m = stacked_match(
        3, stacked_deck(3, hands={0: "Ah Kh 2c", 1: "9s 6s 2d", 2: "2h 3s 4d"}), knock_ban="none"
    )
    play(m, "0: knock")
    idle_turn(m)
    assert m.current == 2
    m.forfeit(2)
    assert m.round_no == 2
    r = m.rounds[0]
    assert r.end is RoundEnd.KNOCK and set(r.values) == {0, 1}
    assert r.lives_lost == {1: 1}


def test_forfeit_of_the_knocker_in_the_last_lap() -> None:
    m = stacked_match(
        3, stacked_deck(3, hands={0: "2c 3d 4h", 1: "9s 8s 2d", 2: "Td 5d 3c"}), knock_ban="none"
    )
    play(m, "0: knock")
    m.forfeit(0)
    assert m.current == 1
    idle_turn(m)
    idle_turn(m)
    r = m.rounds[0]
    assert r.end is RoundEnd.KNOCK and set(r.values) == {1, 2}
    assert r.lives_lost == {2: 1}  # the knocker's 4 is gone with it


def test_forfeit_leaving_one_player_ends_the_match() -> None:
    m = stacked_match(2)
    m.forfeit(1, "crashed")
    assert m.over and m.end is MatchEnd.LAST_PLAYER and m.winner == 0
    assert m.placings == (1, 2)
    (r,) = m.rounds
    assert r.end is RoundEnd.ABANDONED and r.lives_lost == {} and not r.showdown
    assert m.tokens == [3, 3]
    with pytest.raises(IllegalActionError, match="over"):
        play(m, "draw stock")
    with pytest.raises(GameError, match="over"):
        m.forfeit(0)


def test_two_forfeits_later_one_places_higher() -> None:
    m = stacked_match(3)
    m.forfeit(1)
    play(m, "0: draw stock")
    m.forfeit(2)
    assert m.over and m.winner == 0
    assert m.placings == (1, 3, 2)


def test_forfeit_below_everyone_in_above_those_already_out() -> None:
    round1 = stacked_deck(4, hands=HANDS4)
    m = stacked_match(4, {1: round1}, lives=1, bus=False, max_turns_per_round=4)
    idle_until_round_ends(m)
    assert m.rounds[0].eliminated == (3,)
    m.forfeit(0)
    assert m.placings == (3, 1, 1, 4)
    assert not m.over


def test_forfeit_errors() -> None:
    m = stacked_match(3)
    for bad in (-1, 3, 7):
        with pytest.raises(GameError, match=f"seat {bad}"):
            m.forfeit(bad)
    m.forfeit(1)
    with pytest.raises(GameError, match="seat 1"):
        m.forfeit(1)


def test_forfeit_of_the_dealer() -> None:
    m = stacked_match(3, max_turns_per_round=2)
    m.forfeit(2)
    idle_until_round_ends(m)
    assert m.round_no == 2 and m.dealer == 0 and m.current == 1


def every_legal_action_applies(m) -> None:  # type: ignore[no-untyped-def]
    for a in m.legal_actions():
        c = clone(m)
        c.apply(a)  # must neither be refused nor crash
        assert sorted(c.cards_in_play()) == sorted(m.cards_in_play())


@pytest.mark.parametrize("preset", ["standard", "pagat"])
def test_forfeit_after_taking_the_only_discard(preset: str) -> None:
    """The seat to move takes the one card of the discard pile, then forfeits: the next seat
    must not be offered a draw from an empty discard pile (docs/rules.md, "A turn":
    DRAW_DISCARD takes the top discard; there is none)."""
    m = stacked_match(3, stacked_deck(3, upcard="Kh"), Rules.preset(preset))
    play(m, "0: draw discard")
    m.forfeit(0)
    assert m.current == 1 and m.phase is Phase.TURN_START
    assert conserved(m)
    if not m.pile:
        assert DRAW_DISCARD not in m.legal_actions()
    every_legal_action_applies(m)


def test_first_seat_forfeits_before_acting_the_ban_still_holds() -> None:
    """The rules of the game leave this open; the model's choice (docs/rules.md, "Forfeits"):
    a forfeit is no turn, so the next seat plays the round's first turn (no knock under
    knock_ban=first_turn), and max_turns does not count it."""
    m = stacked_match(3, max_turns_per_round=2)
    m.forfeit(0)
    assert m.current == 1 and m.turn == 0
    assert KNOCK not in m.legal_actions()
    idle_turn(m)
    assert m.round_no == 1 and KNOCK in m.legal_actions()
    idle_turn(m)
    assert m.round_no == 2 and m.rounds[0].turns == 2


def test_a_forfeited_hand_is_never_shown() -> None:
    m = stacked_match(3, stacked_deck(3, hands={1: "Ah Kh 2c"}), knock_ban="none")
    play(m, "0: knock")
    m.forfeit(1)
    idle_turn(m)
    r = m.rounds[0]
    assert 1 not in r.hands and 1 not in r.values
