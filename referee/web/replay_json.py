"""The replay model's steps as JSON-able dicts, for the browser.

The browser never reads a match log: it is handed what :func:`referee.replay.build_replay`
produced, for one point of view, through :func:`replay_to_json`. The conversion is generic
(every dataclass field of a step becomes a key, cards become their text ``"Td"``, enums
their names), so a field or a step kind added to the model appears without a change here;
the viewer draws a kind it does not know as the step's ``text``.

Next to the steps, :func:`replay_to_json` gives one *frame* per step: the table as the
viewer knew it after that step (hands it may see, how many cards the others hold, the
discard pile, the stock's size, tokens, the knocker; under the variants the widow, the dummy
face down or the cards the view may see of it, a taker's old hand face up, each seat's chips
and the pot). Frames are computed from the steps of that view only, so a seat's frames can
hold nothing its steps do not.

Pure: no files beyond the log the caller reads, no printing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from enum import Enum
from pathlib import PurePath
from typing import Any

from referee.analysis.decisions import analysis_for_viewer
from referee.game import ActionKind, Card
from referee.game.actions import Action
from referee.replay.model import (
    ActionStep,
    DealStep,
    FaultStep,
    ForfeitStep,
    Replay,
    RestockStep,
    ResultStep,
    RoundEndStep,
    Step,
    ThirtyOneStep,
)

#: JSON values: what :func:`to_json` returns.
Json = Any

#: Cards of the discard pile kept in a frame (the top of the pile last).
PILE_SHOWN = 8


def to_json(value: object) -> Json:
    """Any value of the replay model as JSON: dataclasses field by field, cards as text."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Card):
        return value.text
    if isinstance(value, Enum):
        v = value.value
        return v if isinstance(v, str) else value.name.lower()
    if isinstance(value, int | float):
        return value
    if isinstance(value, Action):
        return {"kind": to_json(value.kind), "card": to_json(value.card), "widow_card": to_json(value.widow_card), "text": str(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(to_json(k)): to_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list | set | frozenset):
        return [to_json(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    return str(value)


def step_kind(step: object) -> str:
    """``DealStep`` -> ``deal``, ``RoundEndStep`` -> ``round_end``, ``ThirtyOneStep`` -> ``thirty_one``."""
    name = type(step).__name__.removesuffix("Step")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def step_text(step: object) -> str:
    """A plain description of any step, for kinds the viewer does not draw itself."""
    data = to_json(step)
    at = data.pop("at", None) if isinstance(data, dict) else None
    where = ""
    if isinstance(at, dict):
        where = f"round {at.get('round_no')}, turn {at.get('turn')}: {at.get('event')}"
    parts = []
    if isinstance(data, dict):
        for k, v in data.items():
            if v is None or v == [] or (isinstance(v, dict | list) and len(str(v)) > 80):
                continue
            parts.append(f"{k.replace('_', ' ')} {_plain(v)}")
    return f"{step_kind(step).replace('_', ' ')}" + (f" ({where})" if where else "") + (": " + "; ".join(parts) if parts else "")


def _plain(v: Json) -> str:
    if isinstance(v, list):
        return " ".join(_plain(x) for x in v)
    if isinstance(v, dict):
        return str(v.get("text") or ", ".join(f"{k} {_plain(x)}" for k, x in v.items()))
    return str(v)


#: The step kinds the page draws itself (``static/app.js``, ``describe``); any other kind
#: carries its ``text``, which the page shows as it is.
DRAWN_KINDS = frozenset(("deal", "action", "restock", "fault", "forfeit", "thirty_one", "round_end", "result"))


def step_to_json(step: Step | object) -> dict[str, Json]:
    """One step as a dict: ``kind``, every field of the step, and, for a kind the page does
    not draw itself (:data:`DRAWN_KINDS`), ``text``."""
    data = to_json(step)
    kind = step_kind(step)
    out: dict[str, Json] = {"kind": kind}
    if isinstance(data, dict):
        out.update(data)
    if kind not in DRAWN_KINDS:
        out["text"] = step_text(step)
    return out


# ---------------------------------------------------------------- frames


class _Table:
    """The table as one view knows it, updated step by step."""

    def __init__(self, players: int, lives: int) -> None:
        self.n = players
        self.round_no = 0
        self.turn = 0
        self.dealer: int | None = None
        #: Cards the viewer sees in each seat's hand (None: face down).
        self.hands: list[list[str] | None] = [None] * players
        self.values: list[float | None] = [None] * players
        self.counts = [0] * players
        self.pile: list[str] = []
        self.pile_size = 0
        self.stock = 0
        self.tokens = [lives] * players
        self.in_game = [True] * players
        self.knocker: int | None = None
        self.active: int | None = None
        self.faults = [0] * players
        self.shown: dict[int, Json] = {}
        self.thirty_one: list[int] = []
        self.out: list[int] = []
        self.placings: list[int] | None = None
        # The variants (docs/rules.md, "Variants"): public cards, the dummy, chips and the pot.
        self.widow: list[str] = []
        self.dummy_size = 0
        self.dummy_cards: list[str] = []
        self.dummy_taker: int | None = None
        self.face_up: list[str] = []
        self.chips: list[int] | None = None
        self.pot: int | None = None

    def deal(self, d: DealStep) -> None:
        self.round_no = d.at.round_no
        self.turn = 0
        self.dealer = d.dealer
        self.tokens = list(d.tokens)
        self.in_game = list(d.in_game)
        self.hands = [None] * self.n
        self.values = [None] * self.n
        self.counts = [3 if d.in_game[s] else 0 for s in range(self.n)]
        for h in d.hands:
            self.hands[h.seat] = [c.text for c in h.cards]
            self.values[h.seat] = h.value
            self.counts[h.seat] = len(h.cards)
        # The widow game deals no up-card: the discard pile stays empty.
        self.pile = [d.upcard.text] if d.upcard is not None else []
        self.pile_size = len(self.pile)
        self.stock = d.stock_size
        self.knocker = None
        self.active = None
        self.shown = {}
        self.thirty_one = []
        self.widow = [c.text for c in d.widow]
        self.dummy_size = d.dummy_size
        self.dummy_cards = [c.text for c in d.dummy]
        self.dummy_taker = None
        self.face_up = []
        if d.antes:
            self.chips = list(d.chips)
            self.pot = d.pot

    def action(self, a: ActionStep) -> None:
        seat, kind = a.seat, a.action.kind
        self.turn = a.at.turn
        self.active = seat
        if kind is ActionKind.DRAW_STOCK:
            self.stock = max(0, self.stock - 1)
            self.counts[seat] += 1
        elif kind is ActionKind.DRAW_DISCARD:
            if self.pile:
                self.pile.pop()
            self.pile_size = max(0, self.pile_size - 1)
            self.counts[seat] += 1
        elif kind is ActionKind.DISCARD:
            if a.card is not None:
                self.pile.append(a.card.text)
            self.pile_size += 1
            self.counts[seat] = max(0, self.counts[seat] - 1)
        elif kind in (ActionKind.KNOCK, ActionKind.CALL):
            self.knocker = seat
        elif kind is ActionKind.SWAP_UPCARD:
            # The hand card goes face up in the up-card's place.
            if a.card is not None:
                if self.pile:
                    self.pile.pop()
                self.pile.append(a.card.text)
        elif kind is ActionKind.SWAP_HAND:
            self.dummy_size = 0
            self.dummy_cards = []
            self.dummy_taker = seat
            self.face_up = [c.text for c in a.face_up]
        if a.widow:
            self.widow = [c.text for c in a.widow]
        if a.hand is not None:
            self.hands[seat] = [c.text for c in a.hand.cards]
            self.values[seat] = a.hand.value
            self.counts[seat] = len(a.hand.cards)

    def apply(self, step: object) -> None:
        if isinstance(step, DealStep):
            self.deal(step)
        elif isinstance(step, ActionStep):
            self.action(step)
        elif isinstance(step, RestockStep):
            self.stock = step.stock_size
            self.pile = [step.top_discard.text] if step.top_discard is not None else []
            self.pile_size = len(self.pile)
            self.active = step.seat
        elif isinstance(step, FaultStep):
            self.faults[step.fault.seat] += 1
            self.active = step.fault.seat
        elif isinstance(step, ForfeitStep):
            self.in_game[step.seat] = False
            self.counts[step.seat] = 0
            self.hands[step.seat] = None
            self.values[step.seat] = None
            self.out.append(step.seat)
        elif isinstance(step, ThirtyOneStep):
            self.thirty_one = list(step.seats)
            for h in step.hands:
                self.shown[h.seat] = to_json(h)
        elif isinstance(step, RoundEndStep):
            for h in step.shown:
                self.shown[h.seat] = to_json(h)
            self.tokens = list(step.tokens_after)
            self.in_game = list(step.in_game_after)
            self.out.extend(s for s in step.eliminated if s not in self.out)
            self.active = None
            if step.widow:
                self.widow = [c.text for c in step.widow]
            if step.dummy:
                self.dummy_cards = [c.text for c in step.dummy]
            if step.chips_after:
                self.chips = list(step.chips_after)
                self.pot = step.carried
        elif isinstance(step, ResultStep):
            self.placings = list(step.placings)
            self.active = None
            if step.chips:
                self.chips = list(step.chips)
                self.pot = step.pot_left
        if hasattr(step, "at"):
            at = step.at
            self.round_no = at.round_no or self.round_no

    def frame(self) -> dict[str, Json]:
        return {
            "round": self.round_no,
            "turn": self.turn,
            "dealer": self.dealer,
            "hands": [list(h) if h is not None else None for h in self.hands],
            "values": list(self.values),
            "counts": list(self.counts),
            "pile": self.pile[-PILE_SHOWN:],
            "pile_size": self.pile_size,
            "stock": self.stock,
            "tokens": list(self.tokens),
            "in_game": list(self.in_game),
            "knocker": self.knocker,
            "active": self.active,
            "faults": list(self.faults),
            "shown": {str(k): v for k, v in sorted(self.shown.items())},
            "thirty_one": list(self.thirty_one),
            "out": list(self.out),
            "placings": self.placings,
            "widow": list(self.widow),
            "dummy_size": self.dummy_size,
            "dummy_cards": list(self.dummy_cards),
            "dummy_taker": self.dummy_taker,
            "face_up": list(self.face_up),
            "chips": list(self.chips) if self.chips is not None else None,
            "pot": self.pot,
        }


def header_to_json(replay: Replay) -> dict[str, Json]:
    """The header as a view may show it: the seed only in the omniscient view."""
    h = replay.header
    data: dict[str, Json] = to_json(h)
    data["rules_text"] = h.rules.describe()
    data["time_text"] = h.time_control.describe()
    data["labels"] = [s.label or s.identity.name for s in h.seats]
    # As text: a 64-bit seed is beyond a JavaScript number's exact integers.
    data["seed"] = str(h.seed) if replay.viewer is None else None
    return data


def replay_to_json(replay: Replay, analysis: dict[str, Json] | None = None) -> dict[str, Json]:
    """A replay (one point of view) as JSON: header, steps, one frame per step, and how it ends.

    With ``analysis`` (:func:`referee.analysis.decisions.analysis_to_dict` of the same log),
    each action step this view may judge gets ``analysis``: by view (``seat``, ``deal``), the
    best action and what the one taken cost; and the replay gets the summaries this view may
    show (:func:`~referee.analysis.decisions.analysis_for_viewer`)."""
    h = replay.header
    table = _Table(h.players, h.rules.lives)
    steps: list[Json] = []
    frames: list[Json] = []
    shown = analysis_for_viewer(analysis, replay.viewer) if analysis is not None else None
    by_line = {d["line"]: d["views"] for d in shown["decisions"]} if shown is not None else {}
    for step in replay.steps:
        table.apply(step)
        data = step_to_json(step)
        if isinstance(step, ActionStep) and step.at.line in by_line:
            data["analysis"] = by_line[step.at.line]
        steps.append(data)
        frames.append(table.frame())
    return {
        "analysis": None if shown is None else {k: v for k, v in shown.items() if k != "decisions"},
        "viewer": replay.viewer,
        "header": header_to_json(replay),
        "steps": steps,
        "frames": frames,
        "complete": replay.complete,
        "divergence": str(replay.divergence) if replay.divergence is not None else None,
        "stops": None if replay.complete else replay.stop_description(),
        "notes": list(replay.notes),
    }


__all__ = ["DRAWN_KINDS", "header_to_json", "replay_to_json", "step_kind", "step_text", "step_to_json", "to_json"]
