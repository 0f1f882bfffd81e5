"""The one place where protobuf messages become domain objects and back.

The game model never sees a protobuf; the referee, the SDK and the log code convert here.
Conversions *from* the wire validate: anything a bot or a log file could get wrong raises
:class:`WireError` with a message that names the field and the bad value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from thirtyone.v1 import bot_pb2, game_pb2, log_pb2

from referee.game import (
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    Action,
    ActionKind,
    Card,
    CardParseError,
    EventKind,
    Observation,
    Phase,
    Pile,
    PublicEvent,
    RoundEnd,
    RoundResult,
    Rules,
    RulesError,
)
from referee.timecontrol import TimeControl

PROTOCOL_VERSION = 1


class WireError(ValueError):
    """A message that is malformed: missing or unknown fields, unreadable values."""


# ---------------------------------------------------------------- cards and actions


def card_to_pb(c: Card) -> str:
    """A card's wire form (its text)."""
    return c.text


def card_from_pb(text: str, field: str = "card") -> Card:
    """Read a card from the wire."""
    try:
        return Card.parse(text)
    except CardParseError:
        raise WireError(f"{field}: {text!r} is not a card (expected e.g. 'Ah', 'Td', '7s')") from None


def cards_to_pb(cs: Iterable[Card]) -> list[str]:
    """Cards' wire forms."""
    return [c.text for c in cs]


def cards_from_pb(texts: Iterable[str], field: str) -> tuple[Card, ...]:
    """Read several cards from the wire."""
    return tuple(card_from_pb(t, field) for t in texts)


_KIND_TO_PB = {
    ActionKind.KNOCK: game_pb2.ACTION_KIND_KNOCK,
    ActionKind.DRAW_STOCK: game_pb2.ACTION_KIND_DRAW_STOCK,
    ActionKind.DRAW_DISCARD: game_pb2.ACTION_KIND_DRAW_DISCARD,
    ActionKind.DISCARD: game_pb2.ACTION_KIND_DISCARD,
    ActionKind.PASS: game_pb2.ACTION_KIND_PASS,
}
_SIMPLE_FROM_PB = {
    game_pb2.ACTION_KIND_KNOCK: KNOCK,
    game_pb2.ACTION_KIND_DRAW_STOCK: DRAW_STOCK,
    game_pb2.ACTION_KIND_DRAW_DISCARD: DRAW_DISCARD,
    game_pb2.ACTION_KIND_PASS: PASS,
}


def action_to_pb(a: Action) -> game_pb2.Action:
    """An action as a message."""
    msg = game_pb2.Action(kind=_KIND_TO_PB[a.kind])
    if a.card is not None:
        msg.card = a.card.text
    return msg


def action_from_pb(msg: game_pb2.Action) -> Action:
    """Read an action; a missing kind, a card where none belongs or a bad card is malformed."""
    kind = msg.kind
    if kind == game_pb2.ACTION_KIND_DISCARD:
        if not msg.card:
            raise WireError("action: a DISCARD needs a card")
        return DISCARDS[card_from_pb(msg.card, "action.card")]
    simple = _SIMPLE_FROM_PB.get(kind)
    if simple is None:
        raise WireError(f"action.kind: {kind} is not an action kind (unset or unknown)")
    if msg.card:
        raise WireError(f"action.card: {msg.card!r} given with {game_pb2.ActionKind.Name(kind)}, which takes no card")
    return simple


# ---------------------------------------------------------------- rules and time control

_TOAK = {"30.5": game_pb2.THREE_OF_A_KIND_30_5, "30": game_pb2.THREE_OF_A_KIND_30, "off": game_pb2.THREE_OF_A_KIND_OFF}
_BAN = {"first_turn": game_pb2.KNOCK_BAN_FIRST_TURN, "none": game_pb2.KNOCK_BAN_NONE, "first_lap": game_pb2.KNOCK_BAN_FIRST_LAP}
_STOCK = {"reshuffle": game_pb2.EMPTY_STOCK_RESHUFFLE, "showdown": game_pb2.EMPTY_STOCK_SHOWDOWN}
_TIED = {"double": game_pb2.KNOCKER_TIED_DOUBLE, "safe": game_pb2.KNOCKER_TIED_SAFE, "single": game_pb2.KNOCKER_TIED_SINGLE}
_BLITZ = {"immediate": game_pb2.BLITZ_IMMEDIATE}


def _reverse(d: dict[str, int], field: str, value: int) -> str:
    for k, v in d.items():
        if v == value:
            return k
    raise WireError(f"rules.{field}: {value} is not a known value")


def rules_to_pb(r: Rules) -> game_pb2.Rules:
    """Rules as a message."""
    msg = game_pb2.Rules(
        preset=r.preset_name,
        three_of_a_kind=_TOAK[r.three_of_a_kind],
        simultaneous_31_loss=r.simultaneous_31_loss,
        knock_ban=_BAN[r.knock_ban],
        min_knock=float(r.min_knock),
        flush_may_knock=r.flush_may_knock,
        blitz=_BLITZ[r.blitz],
        empty_stock=_STOCK[r.empty_stock],
        max_turns_per_round=r.max_turns_per_round,
        knocker_alone_loss=r.knocker_alone_loss,
        knocker_tied=_TIED[r.knocker_tied],
        lives=r.lives,
        bus=r.bus,
        max_rounds=r.max_rounds,
    )
    if r.three_aces is not None:
        msg.three_aces = float(r.three_aces)
    return msg


def rules_from_pb(msg: game_pb2.Rules) -> Rules:
    """Read rules; every option must be set to a known value."""
    try:
        base = Rules.preset(msg.preset) if msg.preset else Rules()
        return base.with_options(
            {
                "three_of_a_kind": _reverse(_TOAK, "three_of_a_kind", msg.three_of_a_kind),
                "three_aces": msg.three_aces if msg.HasField("three_aces") else None,
                "simultaneous_31_loss": msg.simultaneous_31_loss,
                "knock_ban": _reverse(_BAN, "knock_ban", msg.knock_ban),
                "min_knock": msg.min_knock,
                "flush_may_knock": msg.flush_may_knock,
                "blitz": _reverse(_BLITZ, "blitz", msg.blitz),
                "empty_stock": _reverse(_STOCK, "empty_stock", msg.empty_stock),
                "max_turns_per_round": msg.max_turns_per_round,
                "knocker_alone_loss": msg.knocker_alone_loss,
                "knocker_tied": _reverse(_TIED, "knocker_tied", msg.knocker_tied),
                "lives": msg.lives,
                "bus": msg.bus,
                "max_rounds": msg.max_rounds,
            }
        )
    except RulesError as e:
        raise WireError(f"rules: {e}") from None


def time_control_to_pb(tc: TimeControl) -> game_pb2.TimeControl:
    """Time control as a message."""
    return game_pb2.TimeControl(decision_budget_ms=tc.budget_ms, time_bank_ms=tc.bank_ms, grace_ms=tc.grace_ms)


def time_control_from_pb(msg: game_pb2.TimeControl) -> TimeControl:
    """Read a time control."""
    try:
        return TimeControl(msg.decision_budget_ms, msg.time_bank_ms, msg.grace_ms)
    except ValueError as e:
        raise WireError(f"time_control: {e}") from None


# ---------------------------------------------------------------- observations

_EVENT_TO_PB = {
    EventKind.DRAW_STOCK: game_pb2.PUBLIC_EVENT_KIND_DRAW_STOCK,
    EventKind.DRAW_DISCARD: game_pb2.PUBLIC_EVENT_KIND_DRAW_DISCARD,
    EventKind.DISCARD: game_pb2.PUBLIC_EVENT_KIND_DISCARD,
    EventKind.KNOCK: game_pb2.PUBLIC_EVENT_KIND_KNOCK,
    EventKind.PASS: game_pb2.PUBLIC_EVENT_KIND_PASS,
    EventKind.RESTOCK: game_pb2.PUBLIC_EVENT_KIND_RESTOCK,
    EventKind.FORFEIT: game_pb2.PUBLIC_EVENT_KIND_FORFEIT,
}
_EVENT_FROM_PB = {v: k for k, v in _EVENT_TO_PB.items()}
_PHASE_TO_PB = {Phase.TURN_START: game_pb2.PHASE_TURN_START, Phase.DISCARD: game_pb2.PHASE_DISCARD}
_PHASE_FROM_PB = {v: k for k, v in _PHASE_TO_PB.items()}
_PILE_TO_PB = {Pile.STOCK: game_pb2.PILE_STOCK, Pile.DISCARD: game_pb2.PILE_DISCARD}
_PILE_FROM_PB = {v: k for k, v in _PILE_TO_PB.items()}


def observation_to_pb(obs: Observation) -> game_pb2.Observation:
    """A seat's observation as a message (it carries nothing the observation does not)."""
    msg = game_pb2.Observation(
        seat=obs.seat,
        players=obs.players,
        round=obs.round_no,
        turn=obs.turn,
        phase=_PHASE_TO_PB[obs.phase],
        hand=[c.text for c in obs.hand],
        history=[
            game_pb2.PublicEvent(kind=_EVENT_TO_PB[e.kind], seat=e.seat, card=e.card.text if e.card is not None else "")
            for e in obs.history
        ],
        discard_pile=[c.text for c in obs.discard_pile],
        stock_size=obs.stock_size,
        tokens=obs.tokens,
        in_game=obs.in_game,
        dealer=obs.dealer,
        turns_left_after_knock=obs.turns_left_after_knock,
        legal_actions=[action_to_pb(a) for a in obs.legal_actions],
        rules=rules_to_pb(obs.rules),
    )
    if obs.drawn_card is not None:
        msg.drawn_card = obs.drawn_card.text
    if obs.drawn_from is not None:
        msg.drawn_from = _PILE_TO_PB[obs.drawn_from]
    if obs.knocker is not None:
        msg.knocker = obs.knocker
    return msg


def observation_from_pb(msg: game_pb2.Observation) -> Observation:
    """Read an observation (the SDK's side of the wire)."""
    phase = _PHASE_FROM_PB.get(msg.phase)
    if phase is None:
        raise WireError(f"observation.phase: {msg.phase} is not a phase")
    history = []
    for i, e in enumerate(msg.history):
        kind = _EVENT_FROM_PB.get(e.kind)
        if kind is None:
            raise WireError(f"observation.history[{i}].kind: {e.kind} is not an event kind")
        history.append(PublicEvent(kind, e.seat, card_from_pb(e.card, f"observation.history[{i}].card") if e.card else None))
    drawn_from = _PILE_FROM_PB.get(msg.drawn_from) if msg.drawn_from else None
    return Observation(
        seat=msg.seat,
        players=msg.players,
        round_no=msg.round,
        turn=msg.turn,
        phase=phase,
        to_move=len(msg.legal_actions) > 0,
        hand=cards_from_pb(msg.hand, "observation.hand"),
        drawn_card=card_from_pb(msg.drawn_card, "observation.drawn_card") if msg.drawn_card else None,
        drawn_from=drawn_from,
        history=tuple(history),
        discard_pile=cards_from_pb(msg.discard_pile, "observation.discard_pile"),
        stock_size=msg.stock_size,
        tokens=tuple(msg.tokens),
        in_game=tuple(msg.in_game),
        dealer=msg.dealer,
        knocker=msg.knocker if msg.HasField("knocker") else None,
        turns_left_after_knock=msg.turns_left_after_knock,
        rules=rules_from_pb(msg.rules),
        legal_actions=tuple(action_from_pb(a) for a in msg.legal_actions),
    )


def decision_request(obs: Observation, decision_id: int, budget_ms: int, bank_ms: int) -> bot_pb2.PlayRequest:
    """The stream message that asks a bot for one decision."""
    return bot_pb2.PlayRequest(
        decision_request=bot_pb2.DecisionRequest(
            decision_id=decision_id, observation=observation_to_pb(obs), budget_ms=budget_ms, time_bank_ms=bank_ms
        )
    )


# ---------------------------------------------------------------- round results (log)

_END_TO_PB = {
    RoundEnd.NATURAL_31: log_pb2.ROUND_END_REASON_NATURAL_31,
    RoundEnd.BLITZ: log_pb2.ROUND_END_REASON_BLITZ,
    RoundEnd.KNOCK: log_pb2.ROUND_END_REASON_KNOCK,
    RoundEnd.EMPTY_STOCK: log_pb2.ROUND_END_REASON_EMPTY_STOCK_PASS,
    RoundEnd.MAX_TURNS: log_pb2.ROUND_END_REASON_MAX_TURNS,
    RoundEnd.ABANDONED: log_pb2.ROUND_END_REASON_ABANDONED,
}
_END_FROM_PB = {v: k for k, v in _END_TO_PB.items()}


def round_end_to_pb(r: RoundResult) -> log_pb2.RoundEndEvent:
    """A round's result as a log event."""
    msg = log_pb2.RoundEndEvent(
        reason=_END_TO_PB[r.end],
        thirty_one_seats=r.thirty_one,
        values=[
            log_pb2.SeatValue(seat=s, value=v, cards=cards_to_pb(r.hands[s])) for s, v in sorted(r.values.items())
        ],
        lives_lost=[log_pb2.SeatCount(seat=s, count=n) for s, n in sorted(r.lives_lost.items())],
        tokens_after=r.tokens_after,
        eliminated=r.eliminated,
        sudden_death=r.sudden_death,
    )
    if r.knocker is not None:
        msg.knocker = r.knocker
    return msg


def round_end_reason_from_pb(value: int) -> RoundEnd:
    """Read a round-end reason."""
    try:
        return _END_FROM_PB[value]
    except KeyError:
        raise WireError(f"round_end.reason: {value} is not a round-end reason") from None


def seat_list(values: Sequence[int]) -> list[int]:
    """Repeated seat numbers as a plain list."""
    return [int(v) for v in values]
