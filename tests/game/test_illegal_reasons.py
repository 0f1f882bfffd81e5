"""Malformed actions get a reason that names the real problem."""

from __future__ import annotations

import pytest

from referee.game import Action, ActionKind, IllegalActionError, Match, card


def test_knock_with_a_card_is_refused_for_the_card() -> None:
    m = Match(3, seed=5)
    bad = Action(ActionKind.KNOCK, card("Ah"))
    reason = m.why_illegal(bad)
    assert reason is not None and "takes no card" in reason
    with pytest.raises(IllegalActionError, match="takes no card"):
        m.apply(bad)


def test_discard_without_a_card_is_refused() -> None:
    m = Match(3, seed=5)
    reason = m.why_illegal(Action(ActionKind.DISCARD, None))
    assert reason == "a discard must name a card"


def test_acting_out_of_turn_names_both_seats() -> None:
    m = Match(3, seed=5)
    assert m.why_illegal(m.legal_actions()[0], seat=2) == "it is seat 0's turn, not seat 2's"
