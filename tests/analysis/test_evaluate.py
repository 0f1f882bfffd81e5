"""The position evaluator (sdk/evaluate.py) and decision analysis (referee/analysis/decisions.py)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from referee.analysis.decisions import analyse_log, judge, judge_decision
from referee.game import DECK, DRAW_STOCK, KNOCK, Match, Phase, Pile, Rules, cards, discard
from referee.game.knowledge import knowledge
from referee.game.position import Position, match_from_position, position_of
from sdk.evaluate import evaluate
from tests.replay.fixtures import Plan, write_fixture


def _blitz_position() -> Position:
    """Seat 0 has drawn the ace of spades to the king and queen of spades and the 5 of
    diamonds: throwing the 5 makes 31 (a blitz: seat 1 loses a life), throwing the ace
    leaves 20 against a 25 that draws on."""
    mine = cards("Ks Qs 5d As")
    theirs = cards("Ad Kd 4d")
    pile = cards("3c")
    rest = [c for c in DECK if c not in (*mine, *theirs, *pile)]
    random.Random(3).shuffle(rest)
    return Position(
        rules=Rules(),
        players=2,
        round_no=1,
        dealer=1,
        tokens=(3, 3),
        alive=(True, True),
        hands=(tuple(mine), tuple(theirs)),
        stock=tuple(rest),
        pile=tuple(pile),
        dead=(),
        current=0,
        phase=Phase.DISCARD,
        drawn=mine[3],
        drawn_from=Pile.STOCK,
        knocker=None,
        owes=(False, False),
        had_turn=(False, False),
        turn=0,
    )


def test_the_evaluator_finds_a_blitz_and_flags_the_throw_that_misses_it_as_a_blunder() -> None:
    pos = _blitz_position()
    m = match_from_position(pos)
    two, ace = discard(cards("5d")[0]), discard(cards("As")[0])
    for source in (pos, m.observation(0)):
        values = evaluate(source, samples=32, seed=1)
        assert values.best.action == two
        assert values.best.lives == 0.0  # a blitz costs the blitzer nothing
        j = judge(values, ace, Phase.DISCARD, pos.rules, 2)
        assert j.kind == "kept the wrong suit"
        assert judge(values, two, Phase.DISCARD, pos.rules, 2).flag is None
        if source is pos:
            assert j.flag == "blunder"
        else:
            # The seat guesses the other hand weaker than the 25 it is: a mistake all the same.
            assert j.flag == "mistake"


def test_a_knock_with_twelve_is_a_blunder() -> None:
    # Seat 0 holds 12 and may knock at the start of its turn; seat 1 holds 30.
    pos = replace(
        _blitz_position(),
        hands=(tuple(cards("2c 3d 9h")), tuple(cards("Ad Kd 9d"))),
        pile=tuple(cards("3c")),
        phase=Phase.TURN_START,
        drawn=None,
        drawn_from=None,
        turn=2,
        had_turn=(True, True),
    )
    rest = [c for c in DECK if c not in (*pos.hands[0], *pos.hands[1], *pos.pile)]
    pos = replace(pos, stock=tuple(rest))
    m = match_from_position(pos)
    assert KNOCK in m.legal_actions()
    for j in judge_decision(m, KNOCK, samples=16, seed=2).values():
        assert j.best != KNOCK
        assert j.flag == "blunder"
        assert j.kind == "knocked too early"


def test_the_evaluator_is_deterministic_for_a_seed() -> None:
    m = Match(3, Rules(), seed=4)
    a = evaluate(m.observation(m.current), samples=8, seed=5)
    b = evaluate(m.observation(m.current), samples=8, seed=5)
    c = evaluate(m.observation(m.current), samples=8, seed=6)
    assert a == b
    assert a != c


def _scramble_hidden(m: Match, seat: int, seed: int) -> Match:
    """The same match as ``seat`` sees it, with every card it cannot locate moved: the other
    hands' unknown cards, the dummy and the stock dealt again among themselves."""
    pos = position_of(m)
    hidden = sorted(knowledge(m.observation(seat)).hidden)
    moved = list(hidden)
    random.Random(seed).shuffle(moved)
    swap = dict(zip(hidden, moved, strict=True))
    hands = tuple(tuple(swap.get(c, c) if s != seat else c for c in h) for s, h in enumerate(pos.hands))
    return match_from_position(
        replace(
            pos,
            hands=hands,
            stock=tuple(swap.get(c, c) for c in pos.stock),
            dummy=tuple(swap.get(c, c) for c in pos.dummy),
            unused=tuple(swap.get(c, c) for c in pos.unused),
        )
    )


def test_the_seat_view_uses_nothing_the_seat_could_not_see(tmp_path: Path) -> None:
    """Decisions of a real log, judged again with every card the seat could not locate moved:
    the seat's view is the same, the deal's view (which sees them) is not."""
    log = write_fixture(tmp_path / "m.jsonl", Plan(names=("a", "b", "c"), seed=21, knock_at=(22, 25, 27)))
    from referee.log import LogWatcher, walk_log

    checked: list[bool] = []

    class Check(LogWatcher):
        def deciding(self, at, match, record, event):  # type: ignore[no-untyped-def]
            if len(match.legal_actions()) < 2 or len(checked) >= 12:
                return
            other = _scramble_hidden(match, match.current, len(checked))
            assert other.observation(match.current) == match.observation(match.current)
            a = judge_decision(match, record.action, samples=6, seed=3)
            b = judge_decision(other, record.action, samples=6, seed=3)
            assert a["seat"] == b["seat"]
            checked.append(a["deal"].values != b["deal"].values)

    walk_log(log, Check())
    assert len(checked) == 12
    assert any(checked)  # the scramble changed what the deal's view sees


def test_analyse_log_judges_every_decision_with_a_choice(tmp_path: Path) -> None:
    log = write_fixture(tmp_path / "m.jsonl", Plan(names=("a", "b"), seed=11, knock_at=(22, 27)))
    a = analyse_log(log, samples=8)
    assert a.decisions and all(set(d.judged) == {"seat", "deal"} for d in a.decisions)
    assert {d.seat for d in a.decisions} == {0, 1}
    for view in ("seat", "deal"):
        for s in a.summaries(view):
            assert s.decisions > 0 and 0 <= s.accuracy <= 100
            assert s.lost >= 0
    only = analyse_log(log, seats=[1], views=["seat"], samples=8)
    assert {d.seat for d in only.decisions} == {1}
    # A seat's judgement does not depend on which other decisions were analysed.
    mine = [d.judged["seat"] for d in a.decisions if d.seat == 1]
    assert [d.judged["seat"] for d in only.decisions] == mine
    assert DRAW_STOCK in {d.taken for d in a.decisions}


@pytest.mark.slow
def test_every_variants_log_is_analysed(tmp_path: Path) -> None:
    from tests.replay.fixtures import write_all

    for name, log in write_all(tmp_path, variants=True).items():
        a = analyse_log(log, samples=3)
        assert a.decisions, name
        assert a.notes == () or all("diverges" not in n for n in a.notes), (name, a.notes)
        assert a.unit == ("chips" if a.rules.scoring == "pot" else "lives")
        for d in a.decisions:
            for j in d.judged.values():
                assert j.loss >= 0 and j.values.of(d.taken) is not None
