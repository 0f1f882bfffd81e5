"""`--seat N` shows only what that seat saw (docs/rules.md, "What a bot sees").

Every card printed in a seat's replay is checked against that seat's knowledge, computed
independently of the replay code: the log is replayed by :func:`referee.log.replay_log`,
and before every action the seat's :func:`~referee.game.knowledge.knowledge` of its own
observation is taken. A section (a deal, a turn, a round's end) may only print cards the
seat had seen by the end of it, plus the hands a showdown or a 31 shows to everyone.

Under the variants (docs/rules.md, "Variants") the public table also holds the widow (dealt and
after every swap), both cards of a dealer's up-card swap or a widow swap, and a dummy-taker's
old hand lying face up; the dummy's cards are only ever the taker's (and everyone's at a
showdown, as the taker's hand).
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from pathlib import Path

import pytest
from rich.console import Console

from referee import wire
from referee.game import ActionKind, ActionRecord, Card, Match, Phase
from referee.game.knowledge import knowledge
from referee.log import read_log, replay_log
from referee.replay import build_replay, load_log
from referee.replay.model import ActionStep, DealStep, RoundEndStep
from referee.replay.render import Section, sections

_SYMBOL_CARD = re.compile(r"[2-9TJQKA][♣♦♥♠]")
_TEXT_CARD = re.compile(r"\b[2-9TJQKA][cdhs]\b")  # fault messages and actions name cards as text
_SUITS = "♣♦♥♠"


def _cards_in(text: str) -> set[Card]:
    found = {Card.parse(m[0] + "cdhs"[_SUITS.index(m[1])]) for m in _SYMBOL_CARD.findall(text)}
    found |= {Card.parse(m) for m in _TEXT_CARD.findall(text)}
    return found


def _text(section: Section) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=100, color_system=None, force_terminal=False)
    console.print(section.renderable)
    text: str = buf.getvalue()
    return text


class _Knowledge:
    """What ``seat`` had seen, per round and turn, replayed independently of the replay code."""

    def __init__(self, path: Path, seat: int) -> None:
        self.seat = seat
        # (round, turn, phase) -> cards seen at that decision; (round, turn) -> cards made public.
        self.seen: dict[tuple[int, int, Phase], set[Card]] = defaultdict(set)
        self.public: dict[tuple[int, int], set[Card]] = defaultdict(set)
        self.revealed: dict[int, set[Card]] = defaultdict(set)
        self.dealt: dict[int, set[Card]] = {}

        def hook(m: Match, rec: ActionRecord, decision_id: int, by_referee: bool) -> None:
            obs = m.observation(seat)
            self.seen[(m.round_no, m.turn, m.phase)] |= knowledge(obs).seen
            kind = rec.action.kind
            shown = kind in (ActionKind.DISCARD, ActionKind.DRAW_DISCARD) or (rec.seat == seat and kind is ActionKind.DRAW_STOCK)
            public = self.public[(rec.round_no, rec.turn)]
            if shown and rec.card is not None:
                public.add(rec.card)
            if kind in (ActionKind.SWAP_UPCARD, ActionKind.SWAP_WIDOW):
                # Public exchanges: the hand card given and the card taken (the up-card, the widow's).
                assert rec.action.card is not None
                public.add(rec.action.card)
                public.add(rec.action.widow_card if kind is ActionKind.SWAP_WIDOW else m.pile[-1])  # type: ignore[arg-type]
            elif kind is ActionKind.SWAP_HAND:
                # The old hand lies face up for everyone; the dummy becomes the taker's own hand.
                public |= set(m.hand(rec.seat))
                if rec.seat == seat:
                    public |= set(m.dummy)

        result = replay_log(path, on_action=hook)
        for r in result.rounds:
            # A showdown shows every hand; a 31 shows only the 31.
            for s in r.hands if r.showdown else r.thirty_one:
                self.revealed[r.round_no] |= set(r.hands[s])
            self.revealed[r.round_no] |= set(r.widow) | set(r.face_up)
        log = read_log(path)
        for le in log.events:
            if le.event.HasField("deal"):
                d = wire.deal_from_pb(le.event.round, log.header.players, le.event.deal)
                # Its own hand, the up-card or the widow; never the face-down dummy.
                self.dealt[le.event.round] = set(d.hands[seat]) | ({d.upcard} if d.upcard is not None else set()) | set(d.widow)

    def allowed(self, section: Section) -> set[Card]:
        r, t = section.round_no, section.turn
        if section.kind in ("header", "result", "notice"):
            return set()
        if section.kind == "deal":
            return self.dealt[r]
        upto = t if section.kind == "turn" else 10**9
        cards = set(self.dealt[r])
        for (rr, tt, phase), seen in self.seen.items():
            # Up to the end of this turn: the next turn's first decision, not its later ones.
            if rr == r and (tt <= upto or (tt == upto + 1 and phase is Phase.TURN_START)):
                cards |= seen
        for (rr, tt), shown in self.public.items():
            if rr == r and tt <= upto:
                cards |= shown
        if section.kind == "round_end":
            cards |= self.revealed[r]
        return cards


_PLAYERS = (("standard", 3), ("specials", 4), ("long", 2), ("pagat", 2), ("option", 3), ("dummy", 3), ("bicycle", 3), ("cadillac", 2))
CASES = [(name, seat) for name, players in _PLAYERS for seat in range(players)]


@pytest.mark.parametrize(("name", "seat"), CASES)
def test_a_seat_sees_only_its_own_cards_and_the_public_table(logs: dict[str, Path], name: str, seat: int) -> None:
    path = logs[name]
    known = _Knowledge(path, seat)
    replay = build_replay(load_log(path), seat)
    checked = 0
    for section in sections(replay):
        leaked = _cards_in(_text(section)) - known.allowed(section)
        assert not leaked, f"seat {seat} is shown {sorted(map(str, leaked))} in {section.kind} {section.round_no}.{section.turn}"
        checked += 1
    assert checked > 5


@pytest.mark.parametrize(("name", "seat"), [(name, seat) for name in ("real-bicycle", "real-mix") for seat in range(3)])
def test_a_seat_sees_only_its_own_cards_in_real_variant_matches(real_logs: dict[str, Path], name: str, seat: int) -> None:
    path = real_logs[name]
    known = _Knowledge(path, seat)
    for section in sections(build_replay(load_log(path), seat)):
        leaked = _cards_in(_text(section)) - known.allowed(section)
        assert not leaked, f"seat {seat} is shown {sorted(map(str, leaked))} in {section.kind} {section.round_no}.{section.turn}"


@pytest.mark.parametrize("name", ["standard", "specials", "dummy", "bicycle"])
def test_the_check_would_catch_a_leak(logs: dict[str, Path], name: str) -> None:
    """The omniscient render shows cards the seat never saw, so the check above has teeth."""
    path = logs[name]
    known = _Knowledge(path, 0)
    leaks = 0
    for section in sections(build_replay(load_log(path))):
        leaks += len(_cards_in(_text(section)) - known.allowed(section))
    assert leaks > 20


def test_a_seat_sees_its_own_draws_and_faults_but_not_others(logs: dict[str, Path]) -> None:
    def text(seat: int | None) -> str:
        return "".join(_text(s) for s in sections(build_replay(load_log(logs["specials"]), seat)))

    dave, alice, everyone = text(3), text(0), text(None)
    # Seat 3's fault message names a card of its hand; only seat 3 and the omniscient view see it.
    assert "illegal action discard" in dave and "illegal action discard" in everyone
    assert "FAULT" not in alice and "played by the referee" not in alice
    assert "forfeits the match" in alice and "3 strikes: illegal" not in alice  # a public forfeit, private reason
    assert "draws from the stock" in alice  # others' stock draws stay hidden
    assert re.search(r"#0 alice\s+draws [2-9TJQKA][♣♦♥♠] from the stock", alice)  # its own are shown
    assert "seed" not in alice and "seed 11" in everyone


def test_the_dummy_is_face_down_until_taken_and_then_only_the_takers(logs: dict[str, Path]) -> None:
    log = load_log(logs["dummy"])
    omni = build_replay(log)
    deals = [s for s in omni.steps if isinstance(s, DealStep)]
    assert deals and all(d.dummy_size == 3 and len(d.dummy) == 3 for d in deals)  # the omniscient view sees it
    swaps = [s for s in omni.steps if isinstance(s, ActionStep) and s.action.kind is ActionKind.SWAP_HAND]
    assert swaps
    for seat in range(3):
        steps = build_replay(log, seat).steps
        assert all(d.dummy == () and d.dummy_size == 3 for d in steps if isinstance(d, DealStep))
        for step in steps:
            if isinstance(step, ActionStep) and step.action.kind is ActionKind.SWAP_HAND:
                own = step.seat == seat
                assert step.face_up and len(step.face_up) == 3  # public: the old hand, face up
                assert (step.taken is not None) == own and (step.hand is not None) == own
                if own:
                    assert step.hand is not None and step.taken == step.hand.cards
            if isinstance(step, RoundEndStep):
                assert step.dummy == ()  # a dummy nobody took stays face down for a seat


def test_the_widow_and_the_pot_are_public(logs: dict[str, Path]) -> None:
    log = load_log(logs["bicycle"])
    omni = build_replay(log)
    public = [(type(s).__name__, getattr(s, "widow", None), getattr(s, "chips", None)) for s in omni.steps if isinstance(s, DealStep | RoundEndStep)]
    for seat in range(3):
        view = build_replay(log, seat)
        mine = [(type(s).__name__, getattr(s, "widow", None), getattr(s, "chips", None)) for s in view.steps if isinstance(s, DealStep | RoundEndStep)]
        assert mine == public
        ends = [s for s in view.steps if isinstance(s, RoundEndStep)]
        assert [(e.winners, e.pot, e.chips_won, e.carried, e.chips_after) for e in ends] == [
            (e.winners, e.pot, e.chips_won, e.carried, e.chips_after) for e in omni.steps if isinstance(e, RoundEndStep)
        ]
        swaps = [s for s in view.steps if isinstance(s, ActionStep) and s.action.kind is ActionKind.SWAP_WIDOW]
        assert swaps and all(len(s.widow) == 3 and s.taken is not None for s in swaps)
        assert all((s.hand is not None) == (s.seat == seat) for s in swaps)
    # The pot's arithmetic: every round's antes and carry go to the winners or to the next round.
    ends = [s for s in omni.steps if isinstance(s, RoundEndStep)]
    assert any(e.high_card_tie_break for e in ends) and any(e.carried for e in ends)
    for e in ends:
        assert sum(e.chips_won) + e.carried == e.pot
