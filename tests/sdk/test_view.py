"""The View's helpers agree with the game model; its seat logic and clock behave."""

from __future__ import annotations

import time

import pytest

from referee.game import (
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    Match,
    Phase,
    Pile,
    Rules,
    hand_value,
)
from sdk.view import SeatMemory, View


def test_values_agree_with_the_model() -> None:
    for seed in range(30):
        m = Match(4, Rules(), seed=seed)
        steps = 0
        while not m.over and steps < 60:
            seat = m.current
            view = View(m.observation(seat))
            if view.phase is Phase.TURN_START:
                assert view.value == m.value(seat)
                top = view.top_discard
                if top is not None:
                    best = max(
                        hand_value([x for x in (*view.hand, top) if x != d], m.rules) for d in view.hand
                    )
                    assert view.value_with(top) == best
                action = DRAW_DISCARD if seed % 2 and view.can(DRAW_DISCARD) else DRAW_STOCK
            else:
                assert len(view.hand) == 4 and view.drawn_card in view.hand
                assert view.value == hand_value([c for c in view.hand if c != view.drawn_card], m.rules)
                card, value = view.best_discard()
                assert card in view.legal_discards
                assert value == max(view.value_if(discard=c) for c in view.legal_discards)
                if view.drawn_from is Pile.DISCARD:
                    assert view.drawn_card not in view.legal_discards
                action = DISCARDS[card]
            m.apply(action)
            steps += 1


def test_errors_name_the_hand() -> None:
    m = Match(2, Rules(), seed=1)
    view = View(m.observation(m.current))
    with pytest.raises(ValueError, match="four cards"):
        view.best_discard()
    with pytest.raises(ValueError, match="one of four"):
        view.value_if(discard=view.hand[0])
    with pytest.raises(ValueError, match="new card"):
        view.value_with(view.hand[0])


def test_seats_next_seat_and_knock() -> None:
    m = Match(4, Rules(knock_ban="none"), seed=2)
    seat = m.current
    view = View(m.observation(seat))
    assert view.next_seat == (seat + 1) % 4
    assert view.opponents == tuple(s for s in range(4) if s != seat)
    assert view.seats_in == (0, 1, 2, 3) and view.out == () and view.on_the_bus == ()
    assert view.can(KNOCK)
    m.apply(KNOCK)
    # After a knock the knocker is skipped; the last player before the showdown has no next.
    seen = []
    while m.knocker is not None and not m.over and m.round_no == 1:
        v = View(m.observation(m.current))
        if v.phase is Phase.TURN_START:
            seen.append((v.seat, v.next_seat, v.turns_left_after_knock))
            m.apply(DRAW_STOCK)
        else:
            m.apply(DISCARDS[v.best_discard()[0]])
    assert [t[0] for t in seen] == [(seat + k) % 4 for k in (1, 2, 3)]
    assert seen[0][1] == (seat + 2) % 4 and seen[1][1] == (seat + 3) % 4 and seen[2][1] is None


def test_clock() -> None:
    m = Match(2, Rules(), seed=1)
    t0 = time.monotonic()
    view = View(m.observation(m.current), budget_ms=200, bank_ms=1000, received_at=t0)
    assert view.deadline == pytest.approx(t0 + 0.2)
    assert view.hard_deadline == pytest.approx(t0 + 1.2)
    assert 0 < view.time_left() <= 0.2
    late = View(m.observation(m.current), budget_ms=1, received_at=t0 - 5)
    assert late.time_left() == 0


def test_memory_resets_each_round() -> None:
    m = Match(2, Rules(), seed=4)
    mem = SeatMemory()
    first = mem.view(m.observation(m.current))
    assert first.knowledge.upcard == m.pile[0]
    assert "View seat" in repr(first)
