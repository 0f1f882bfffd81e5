"""The one place where protobuf messages become domain objects and back.

The game model never sees a protobuf; the referee, the SDK and the log code convert here.
Conversions *from* the wire validate: anything a bot or a log file could get wrong raises
:class:`WireError` with a message that names the field and the bad value.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from thirtyone.v1 import bot_pb2, game_pb2, log_pb2

from referee import protojson
from referee.faults import RefereeError
from referee.game import (
    CALL,
    DECK,
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    SWAP_HAND,
    SWAP_UPCARDS,
    Action,
    ActionKind,
    ActionRecord,
    Card,
    DealRecord,
    DummyState,
    EventKind,
    ForfeitRecord,
    Observation,
    Phase,
    Pile,
    PublicEvent,
    RestockRecord,
    RoundEnd,
    RoundResult,
    Rules,
    RulesError,
    swap_widow,
)
from referee.game.errors import shown
from referee.game.rules import MAX_PLAYERS, MIN_PLAYERS
from referee.timecontrol import TimeControl

PROTOCOL_VERSION = 1


class WireError(RefereeError, ValueError):
    """A message that is malformed: missing or unknown fields, unreadable values."""


# ---------------------------------------------------------------- cards and actions


def card_to_pb(c: Card) -> str:
    """A card's wire form (its text)."""
    return c.text


# The wire's card text (game.proto): exactly a rank from RANKS then a suit from SUITS, case
# sensitive, nothing around it; the rules also accept "10" for the rank T (docs/rules.md, "Cards and notation": "10d").
# A table, not Card.parse: that parser is lenient for people ("ah", " 2c"), and the referee
# must not guess what a bot meant. A dict lookup is also the cheapest check on a hot path.
_WIRE_CARDS: dict[str, Card] = {c.text: c for c in DECK}
_WIRE_CARDS.update({"10" + c.text[1]: c for c in DECK if c.text[0] == "T"})
# Each card's text by its index: a tuple lookup, cheaper than the Card.text property on the
# paths that run for every decision.
_CARD_TEXT: tuple[str, ...] = tuple(Card(i).text for i in range(52))


def card_from_pb(text: str, field: str = "card") -> Card:
    """Read a card from the wire: exactly ``Ah``, ``Td``, ``7s`` (or ``10d`` for ``Td``).

    Strict, unlike :meth:`Card.parse`: a rank from ``23456789TJQKA`` (or ``10``) then a suit
    from ``cdhs``, case-sensitive, no whitespace. ``ah``, ``AH``, `` 2c`` raise
    :class:`WireError` naming the field and the text (a MALFORMED fault from a bot).
    """
    c = _WIRE_CARDS.get(text)
    if c is None:
        raise WireError(
            f"{field}: {shown(text)} is not a card (exactly a rank from 23456789TJQKA, or 10, then a suit "
            "from cdhs, case-sensitive, no spaces: e.g. 'Ah', 'Td', '7s')"
        )
    return c


def cards_to_pb(cs: Iterable[Card]) -> list[str]:
    """Cards' wire forms."""
    return [c.text for c in cs]


def cards_from_pb(texts: Iterable[str], field: str) -> tuple[Card, ...]:
    """Read several cards from the wire."""
    try:
        return tuple([_WIRE_CARDS[t] for t in texts])
    except KeyError:
        return tuple(card_from_pb(t, field) for t in texts)  # raises, naming the card


_KIND_TO_PB = {
    ActionKind.KNOCK: game_pb2.ACTION_KIND_KNOCK,
    ActionKind.DRAW_STOCK: game_pb2.ACTION_KIND_DRAW_STOCK,
    ActionKind.DRAW_DISCARD: game_pb2.ACTION_KIND_DRAW_DISCARD,
    ActionKind.DISCARD: game_pb2.ACTION_KIND_DISCARD,
    ActionKind.PASS: game_pb2.ACTION_KIND_PASS,
    ActionKind.SWAP_UPCARD: game_pb2.ACTION_KIND_SWAP_UPCARD,
    ActionKind.CALL: game_pb2.ACTION_KIND_CALL,
    ActionKind.SWAP_HAND: game_pb2.ACTION_KIND_SWAP_HAND,
    ActionKind.SWAP_WIDOW: game_pb2.ACTION_KIND_SWAP_WIDOW,
}
_SIMPLE_FROM_PB = {
    game_pb2.ACTION_KIND_KNOCK: KNOCK,
    game_pb2.ACTION_KIND_DRAW_STOCK: DRAW_STOCK,
    game_pb2.ACTION_KIND_DRAW_DISCARD: DRAW_DISCARD,
    game_pb2.ACTION_KIND_PASS: PASS,
    game_pb2.ACTION_KIND_CALL: CALL,
    game_pb2.ACTION_KIND_SWAP_HAND: SWAP_HAND,
}


def action_to_pb(a: Action) -> game_pb2.Action:
    """An action as a message."""
    msg = game_pb2.Action(kind=_KIND_TO_PB[a.kind])
    if a.card is not None:
        msg.card = a.card.text
    if a.widow_card is not None:
        msg.widow_card = a.widow_card.text
    return msg


def action_from_pb(msg: game_pb2.Action) -> Action:
    """Read an action; a missing kind, a card where none belongs or a bad card is malformed.

    Cards are read strictly (:func:`card_from_pb`); whether the action is legal is the game
    model's to say.
    """
    kind = msg.kind
    if kind == game_pb2.ACTION_KIND_SWAP_WIDOW:
        if not msg.card or not msg.widow_card:
            raise WireError("action: a SWAP_WIDOW needs a card (from the hand) and a widow_card")
        return swap_widow(card_from_pb(msg.card, "action.card"), card_from_pb(msg.widow_card, "action.widow_card"))
    if msg.widow_card:
        name = game_pb2.ActionKind.Name(kind) if kind in game_pb2.ActionKind.values() else str(kind)
        raise WireError(f"action.widow_card: {shown(msg.widow_card)} given with {name}; only SWAP_WIDOW takes one")
    if kind == game_pb2.ACTION_KIND_DISCARD:
        if not msg.card:
            raise WireError("action: a DISCARD needs a card")
        return DISCARDS[card_from_pb(msg.card, "action.card")]
    if kind == game_pb2.ACTION_KIND_SWAP_UPCARD:
        if not msg.card:
            raise WireError("action: a SWAP_UPCARD needs a card")
        return SWAP_UPCARDS[card_from_pb(msg.card, "action.card")]
    simple = _SIMPLE_FROM_PB.get(kind)
    if simple is None:
        raise WireError(f"action.kind: {kind} is not an action kind (unset or unknown)")
    if msg.card:
        raise WireError(f"action.card: {shown(msg.card)} given with {game_pb2.ActionKind.Name(kind)}, which takes no card")
    return simple


# ---------------------------------------------------------------- rules and time control

_TOAK = {"30.5": game_pb2.THREE_OF_A_KIND_30_5, "30": game_pb2.THREE_OF_A_KIND_30, "off": game_pb2.THREE_OF_A_KIND_OFF}
_BAN = {"first_turn": game_pb2.KNOCK_BAN_FIRST_TURN, "none": game_pb2.KNOCK_BAN_NONE, "first_lap": game_pb2.KNOCK_BAN_FIRST_LAP}
_STOCK = {"reshuffle": game_pb2.EMPTY_STOCK_RESHUFFLE, "showdown": game_pb2.EMPTY_STOCK_SHOWDOWN}
_TIED = {"double": game_pb2.KNOCKER_TIED_DOUBLE, "safe": game_pb2.KNOCKER_TIED_SAFE, "single": game_pb2.KNOCKER_TIED_SINGLE}
_BLITZ = {"immediate": game_pb2.BLITZ_IMMEDIATE}
_DRAW = {"stock": game_pb2.DRAW_STOCK, "widow": game_pb2.DRAW_WIDOW}
_SCORING = {"lives": game_pb2.SCORING_LIVES, "pot": game_pb2.SCORING_POT}


def _reverse(d: Mapping[str, int], field: str, value: int) -> str:
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
        dealer_option=r.dealer_option,
        under_the_gun=r.under_the_gun,
        dummy=r.dummy,
        draw=_DRAW[r.draw],
        scoring=_SCORING[r.scoring],
        pot_rounds=r.pot_rounds,
        ante=r.ante,
    )
    if r.three_aces is not None:
        msg.three_aces = float(r.three_aces)
    return msg


# A match's rules never change, and every observation carries them: build the message once.
# The constructor that receives it copies it, so the cached message is never mutated.
_cached_rules_pb = functools.lru_cache(maxsize=64)(rules_to_pb)


def rules_from_pb(msg: game_pb2.Rules) -> Rules:
    """Read rules; every option must be set to a known value.

    Every observation carries the match's rules, so a bot reads the same message at each
    decision: the rules read are kept by the message's bytes (a few hundred rules at most),
    and checking them again (``Rules.with_options``, some 70 us) is skipped.

    The variants' fields (16-22) did not exist in the first messages: there ``draw`` and
    ``scoring`` are UNSPECIFIED and ``ante`` is 0, read as ``"stock"``, ``"lives"`` and 1
    (the rules those messages were played under); the booleans' zero is their default.
    """
    return _rules_from_bytes(msg.SerializeToString(deterministic=True))


@functools.lru_cache(maxsize=256)
def _rules_from_bytes(data: bytes) -> Rules:
    # Not cached when it raises: a bad message is told as bad each time.
    return _read_rules(game_pb2.Rules.FromString(data))


def _read_rules(msg: game_pb2.Rules) -> Rules:
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
                "dealer_option": msg.dealer_option,
                "under_the_gun": msg.under_the_gun,
                "dummy": msg.dummy,
                "draw": _reverse(_DRAW, "draw", msg.draw) if msg.draw else "stock",
                "scoring": _reverse(_SCORING, "scoring", msg.scoring) if msg.scoring else "lives",
                "pot_rounds": msg.pot_rounds,
                "ante": msg.ante or 1,
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
    EventKind.SWAP_UPCARD: game_pb2.PUBLIC_EVENT_KIND_SWAP_UPCARD,
    EventKind.DEALER_PASS: game_pb2.PUBLIC_EVENT_KIND_DEALER_PASS,
    EventKind.CALL: game_pb2.PUBLIC_EVENT_KIND_CALL,
    EventKind.SWAP_HAND: game_pb2.PUBLIC_EVENT_KIND_SWAP_HAND,
    EventKind.SWAP_WIDOW: game_pb2.PUBLIC_EVENT_KIND_SWAP_WIDOW,
}
# PUBLIC_EVENT_KIND_ANTE and _POT_WON are not sent (game.proto says why): the observation's
# `chips` and `pot` carry all they would, and a round's pot is won after its last decision.
_EVENT_FROM_PB = {v: k for k, v in _EVENT_TO_PB.items()}
_PHASE_TO_PB = {
    Phase.TURN_START: game_pb2.PHASE_TURN_START,
    Phase.DISCARD: game_pb2.PHASE_DISCARD,
    Phase.DEALER_OPTION: game_pb2.PHASE_DEALER_OPTION,
}
_PHASE_FROM_PB = {v: k for k, v in _PHASE_TO_PB.items()}
_PILE_TO_PB = {Pile.STOCK: game_pb2.PILE_STOCK, Pile.DISCARD: game_pb2.PILE_DISCARD}
_PILE_FROM_PB = {v: k for k, v in _PILE_TO_PB.items()}
_DUMMY_TO_PB = {
    DummyState.NONE: game_pb2.DUMMY_STATE_NONE,
    DummyState.FACE_DOWN: game_pb2.DUMMY_STATE_FACE_DOWN,
    DummyState.TAKEN: game_pb2.DUMMY_STATE_TAKEN,
}
_DUMMY_FROM_PB = {v: k for k, v in _DUMMY_TO_PB.items()}


def public_event_to_pb(e: PublicEvent, face_up: Sequence[Card] = ()) -> game_pb2.PublicEvent:
    """A public event as a message; ``face_up`` is the round's face-up old hand, which a
    SWAP_HAND event carries (one dummy per round, so the observation's ``face_up``)."""
    msg = game_pb2.PublicEvent(kind=_EVENT_TO_PB[e.kind], seat=e.seat, card=e.card.text if e.card is not None else "")
    if e.taken_card is not None:
        msg.taken_card = e.taken_card.text
    if e.kind is EventKind.SWAP_HAND:
        msg.face_up_cards.extend(c.text for c in face_up)
    return msg


def public_event_from_pb(e: game_pb2.PublicEvent, where: str) -> PublicEvent:
    """Read a public event (``face_up_cards`` is the observation's ``dead_hand`` again)."""
    kind = _EVENT_FROM_PB.get(e.kind)
    if kind is None:
        raise WireError(f"{where}.kind: {e.kind} is not an event kind")
    card = card_from_pb(e.card, f"{where}.card") if e.card else None
    taken = card_from_pb(e.taken_card, f"{where}.taken_card") if e.taken_card else None
    return PublicEvent(kind, e.seat, card, taken)


def _event_from_pb(e: game_pb2.PublicEvent, i: int) -> PublicEvent:
    # public_event_from_pb's fast path (a bot reads every event of the round at every
    # decision): the same checks, and its message when one fails.
    kind = _EVENT_FROM_PB.get(e.kind)
    text, taken_text = e.card, e.taken_card
    card = _WIRE_CARDS.get(text) if text else None
    taken = _WIRE_CARDS.get(taken_text) if taken_text else None
    if kind is None or (text and card is None) or (taken_text and taken is None):
        return public_event_from_pb(e, f"observation.history[{i}]")
    return PublicEvent(kind, e.seat, card, taken)


def observation_to_pb(obs: Observation) -> game_pb2.Observation:
    """A seat's observation as a message (it carries nothing the observation does not)."""
    msg = game_pb2.Observation(
        seat=obs.seat,
        players=obs.players,
        round=obs.round_no,
        turn=obs.turn,
        phase=_PHASE_TO_PB[obs.phase],
        hand=[c.text for c in obs.hand],
        history=[public_event_to_pb(e, obs.face_up) for e in obs.history],
        discard_pile=[c.text for c in obs.discard_pile],
        stock_size=obs.stock_size,
        tokens=obs.tokens,
        in_game=obs.in_game,
        dealer=obs.dealer,
        turns_left_after_knock=obs.turns_left_after_knock,
        legal_actions=[action_to_pb(a) for a in obs.legal_actions],
        rules=_cached_rules_pb(obs.rules),
        widow=[c.text for c in obs.widow],
        dummy_state=_DUMMY_TO_PB[obs.dummy_state],
        dead_hand=[c.text for c in obs.face_up],
        pot=obs.pot,
        rounds_in_match=obs.rounds_in_match,
    )
    if obs.rules.scoring == "pot":
        msg.chips.extend(obs.chips)
    if obs.dummy_taker is not None:
        msg.dummy_taker = obs.dummy_taker
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
    history = [_event_from_pb(e, i) for i, e in enumerate(msg.history)]
    # UNSPECIFIED: a referee from before the dummy existed, so no dummy.
    dummy_state = _DUMMY_FROM_PB.get(msg.dummy_state) if msg.dummy_state else DummyState.NONE
    if dummy_state is None:
        raise WireError(f"observation.dummy_state: {msg.dummy_state} is not a dummy state")
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
        widow=cards_from_pb(msg.widow, "observation.widow"),
        dummy_state=dummy_state,
        dummy_taker=msg.dummy_taker if msg.HasField("dummy_taker") else None,
        face_up=cards_from_pb(msg.dead_hand, "observation.dead_hand"),
        # Empty under lives on the wire; the model's observation has a 0 per seat there.
        chips=tuple(msg.chips) if msg.chips else (0,) * msg.players,
        pot=msg.pot,
        rounds_in_match=msg.rounds_in_match,
    )


def decision_request(obs: Observation, decision_id: int, budget_ms: int, bank_ms: int) -> bot_pb2.PlayRequest:
    """The stream message that asks a bot for one decision."""
    return bot_pb2.PlayRequest(
        decision_request=bot_pb2.DecisionRequest(
            decision_id=decision_id, observation=observation_to_pb(obs), budget_ms=budget_ms, time_bank_ms=bank_ms
        )
    )


# The decision request as bytes. A request is an observation, and most of an observation is
# the same from one decision to the next: the rules (the whole match), the history (it only
# grows within a round), the legal actions (a few dozen different ones in all). Protobuf
# messages concatenate: the bytes of two messages of one type, one after the other, parse as
# the two merged, repeated fields appended in order. So the request is the bytes of what
# changes, built as a message, followed by the bytes of the rest, each serialised once and
# kept. A bot reads the same Observation as from decision_request(...) (tests check it);
# only the order of the fields on the wire differs, which protobuf parsers ignore.


def _length_delimited(number: int, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length (varints), the payload."""
    head = bytearray()
    for n in ((number << 3) | 2, len(payload)):
        while n > 0x7F:
            head.append((n & 0x7F) | 0x80)
            n >>= 7
        head.append(n)
    return bytes(head) + payload


_HISTORY_FIELD = game_pb2.Observation.DESCRIPTOR.fields_by_name["history"].number
_LEGAL_FIELD = game_pb2.Observation.DESCRIPTOR.fields_by_name["legal_actions"].number
_RULES_FIELD = game_pb2.Observation.DESCRIPTOR.fields_by_name["rules"].number
_OBSERVATION_FIELD = bot_pb2.DecisionRequest.DESCRIPTOR.fields_by_name["observation"].number
_DECISION_FIELD = bot_pb2.PlayRequest.DESCRIPTOR.fields_by_name["decision_request"].number


@functools.lru_cache(maxsize=64)
def _rules_bytes(r: Rules) -> bytes:
    return _length_delimited(_RULES_FIELD, rules_to_pb(r).SerializeToString())


# Bounded by the game: 14 kinds, 9 seats, 53 cards (a SWAP_HAND also by the face-up hand).
@functools.lru_cache(maxsize=8192)
def _event_bytes(e: PublicEvent, face_up: tuple[Card, ...]) -> bytes:
    return _length_delimited(_HISTORY_FIELD, public_event_to_pb(e, face_up).SerializeToString())


@functools.lru_cache(maxsize=1024)
def _action_bytes(a: Action) -> bytes:
    return _length_delimited(_LEGAL_FIELD, action_to_pb(a).SerializeToString())


def decision_request_bytes(obs: Observation, decision_id: int, budget_ms: int, bank_ms: int) -> bytes:
    """:func:`decision_request` serialised, with less work: what the Play stream sends.

    The same message as ``decision_request(obs, ...)`` once parsed; the parts that repeat
    from one decision to the next (rules, history events, legal actions) are serialised once
    and kept (see above).
    """
    t = _CARD_TEXT
    msg = game_pb2.Observation(
        seat=obs.seat,
        players=obs.players,
        round=obs.round_no,
        turn=obs.turn,
        phase=_PHASE_TO_PB[obs.phase],
        hand=[t[c] for c in obs.hand],
        discard_pile=[t[c] for c in obs.discard_pile],
        stock_size=obs.stock_size,
        tokens=obs.tokens,
        in_game=obs.in_game,
        dealer=obs.dealer,
        turns_left_after_knock=obs.turns_left_after_knock,
        dummy_state=_DUMMY_TO_PB[obs.dummy_state],
        pot=obs.pot,
        rounds_in_match=obs.rounds_in_match,
    )
    if obs.widow:
        msg.widow.extend([t[c] for c in obs.widow])
    face_up = obs.face_up
    if face_up:
        msg.dead_hand.extend([t[c] for c in face_up])
    if obs.rules.scoring == "pot":
        msg.chips.extend(obs.chips)
    if obs.dummy_taker is not None:
        msg.dummy_taker = obs.dummy_taker
    if obs.drawn_card is not None:
        msg.drawn_card = t[obs.drawn_card]
    if obs.drawn_from is not None:
        msg.drawn_from = _PILE_TO_PB[obs.drawn_from]
    if obs.knocker is not None:
        msg.knocker = obs.knocker
    swap_hand = EventKind.SWAP_HAND
    observation = b"".join(
        [
            msg.SerializeToString(),
            *[_event_bytes(e, face_up if e.kind is swap_hand else ()) for e in obs.history],
            *[_action_bytes(a) for a in obs.legal_actions],
            _rules_bytes(obs.rules),
        ]
    )
    request = bot_pb2.DecisionRequest(
        decision_id=decision_id, budget_ms=budget_ms, time_bank_ms=bank_ms
    ).SerializeToString() + _length_delimited(_OBSERVATION_FIELD, observation)
    return _length_delimited(_DECISION_FIELD, request)


# ---------------------------------------------------------------- round results (log)

_END_TO_PB = {
    RoundEnd.NATURAL_31: log_pb2.ROUND_END_REASON_NATURAL_31,
    RoundEnd.BLITZ: log_pb2.ROUND_END_REASON_BLITZ,
    RoundEnd.KNOCK: log_pb2.ROUND_END_REASON_KNOCK,
    RoundEnd.EMPTY_STOCK: log_pb2.ROUND_END_REASON_EMPTY_STOCK_PASS,
    RoundEnd.MAX_TURNS: log_pb2.ROUND_END_REASON_MAX_TURNS,
    RoundEnd.ABANDONED: log_pb2.ROUND_END_REASON_ABANDONED,
    RoundEnd.CALL: log_pb2.ROUND_END_REASON_CALL,
}
_END_FROM_PB: dict[int, RoundEnd] = {v: k for k, v in _END_TO_PB.items()}


def round_end_to_pb(r: RoundResult) -> log_pb2.RoundEndEvent:
    """A round's result as a log event."""
    msg = log_pb2.RoundEndEvent()
    _fill_round_end(msg, r)
    return msg


def _fill_round_end(msg: log_pb2.RoundEndEvent, r: RoundResult) -> None:
    # In place (add() for the repeated messages): no message is built to be copied.
    t = _CARD_TEXT
    msg.reason = _END_TO_PB[r.end]
    if r.knocker is not None:
        msg.knocker = r.knocker
    msg.thirty_one_seats.extend(r.thirty_one)
    for s, v in sorted(r.values.items()):
        msg.values.add(seat=s, value=v, cards=[t[c] for c in r.hands[s]])
    for s, n in sorted(r.lives_lost.items()):
        msg.lives_lost.add(seat=s, count=n)
    msg.tokens_after.extend(r.tokens_after)
    msg.eliminated.extend(r.eliminated)
    msg.sudden_death = r.sudden_death
    msg.pot_winners.extend(r.winners)
    msg.high_card_tie_break = r.high_card_tie_break
    msg.chips_after.extend(r.chips_after)


def round_end_reason_from_pb(value: int) -> RoundEnd:
    """Read a round-end reason."""
    try:
        return _END_FROM_PB[value]
    except KeyError:
        raise WireError(f"round_end.reason: {value} is not a round-end reason") from None


def seat_list(values: Sequence[int]) -> list[int]:
    """Repeated seat numbers as a plain list."""
    return [int(v) for v in values]


# ---------------------------------------------------------------- the Play stream and identity
#
# Small frozen records for what the stream carries besides observations. They live here,
# next to their only conversions, because nothing but the wire needs them: the referee builds
# them to send, the SDK receives them and hands them to bots as they are.

FaultKindName = Literal["timeout", "late", "crash", "illegal", "malformed"]
MatchEndReasonName = Literal["last_player", "max_rounds", "aborted", "pot_rounds"]


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who a bot is (GetIdentity): recorded in every match log and shown in standings."""

    name: str
    version: str = ""
    author: str = ""
    protocol_version: int = PROTOCOL_VERSION


def identity_to_pb(ident: BotIdentity) -> bot_pb2.GetIdentityResponse:
    """A bot's identity as the GetIdentity answer."""
    return bot_pb2.GetIdentityResponse(
        name=ident.name, version=ident.version, author=ident.author, protocol_version=ident.protocol_version
    )


def identity_from_pb(msg: bot_pb2.GetIdentityResponse) -> BotIdentity:
    """Read a GetIdentity answer; the name must not be blank."""
    if not msg.name.strip():
        raise WireError("identity.name: empty (a bot must have a name)")
    return BotIdentity(msg.name, msg.version, msg.author, msg.protocol_version)


@dataclass(frozen=True, slots=True)
class MatchInfo:
    """The start of a match as told to one seat (MatchStart)."""

    match_id: str
    seat: int
    players: int
    rules: Rules
    time_control: TimeControl

    @property
    def lives(self) -> int:
        """Tokens each seat starts with (``rules.lives``)."""
        return self.rules.lives


def match_start_to_pb(info: MatchInfo) -> bot_pb2.MatchStart:
    """A match start as a message."""
    return bot_pb2.MatchStart(
        match_id=info.match_id,
        seat=info.seat,
        players=info.players,
        rules=rules_to_pb(info.rules),
        time_control=time_control_to_pb(info.time_control),
        lives=info.rules.lives,
    )


def match_start_from_pb(msg: bot_pb2.MatchStart) -> MatchInfo:
    """Read a match start: 2 to 9 players, a seat among them, full rules and time control."""
    if not MIN_PLAYERS <= msg.players <= MAX_PLAYERS:
        raise WireError(f"match_start.players: {msg.players} (must be {MIN_PLAYERS} to {MAX_PLAYERS})")
    if msg.seat >= msg.players:
        raise WireError(f"match_start.seat: {msg.seat} is not a seat of a {msg.players}-player match")
    if not msg.HasField("rules"):
        raise WireError("match_start.rules: missing")
    if not msg.HasField("time_control"):
        raise WireError("match_start.time_control: missing")
    rules = rules_from_pb(msg.rules)
    if msg.lives != rules.lives:
        raise WireError(f"match_start.lives: {msg.lives} differs from rules.lives={rules.lives}")
    return MatchInfo(msg.match_id, msg.seat, msg.players, rules, time_control_from_pb(msg.time_control))


def match_start_request(info: MatchInfo) -> bot_pb2.PlayRequest:
    """The stream message that starts a match."""
    return bot_pb2.PlayRequest(match_start=match_start_to_pb(info))


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision asked of a seat (DecisionRequest), as read from the stream."""

    decision_id: int
    observation: Observation
    budget_ms: int
    bank_ms: int


def decision_from_pb(msg: bot_pb2.DecisionRequest) -> Decision:
    """Read a decision request; its id is never 0 and its observation must be present."""
    if msg.decision_id == 0:
        raise WireError("decision_request.decision_id: 0 (ids start at 1)")
    if not msg.HasField("observation"):
        raise WireError("decision_request.observation: missing")
    return Decision(msg.decision_id, observation_from_pb(msg.observation), msg.budget_ms, msg.time_bank_ms)


def answer_to_pb(decision_id: int, action: Action) -> bot_pb2.PlayResponse:
    """A bot's answer to decision ``decision_id``."""
    return bot_pb2.PlayResponse(decision_id=decision_id, action=action_to_pb(action))


def answer_from_pb(msg: bot_pb2.PlayResponse) -> tuple[int, Action]:
    """Read a bot's answer: the decision id it answers and its action (malformed raises)."""
    if not msg.HasField("action"):
        raise WireError("answer.action: missing")
    return msg.decision_id, action_from_pb(msg.action)


_FAULT_TO_PB: dict[str, game_pb2.FaultKind.ValueType] = {
    "timeout": game_pb2.FAULT_KIND_TIMEOUT,
    "late": game_pb2.FAULT_KIND_LATE,
    "crash": game_pb2.FAULT_KIND_CRASH,
    "illegal": game_pb2.FAULT_KIND_ILLEGAL,
    "malformed": game_pb2.FAULT_KIND_MALFORMED,
}
_MATCH_END_TO_PB: dict[str, game_pb2.MatchEndReason.ValueType] = {
    "last_player": game_pb2.MATCH_END_REASON_LAST_PLAYER_STANDING,
    "max_rounds": game_pb2.MATCH_END_REASON_MAX_ROUNDS,
    "aborted": game_pb2.MATCH_END_REASON_ABORTED,
    "pot_rounds": game_pb2.MATCH_END_REASON_POT_ROUNDS,
}


def _name_of(d: Mapping[str, int], value: int, field: str) -> str:
    for k, v in d.items():
        if v == value:
            return k
    raise WireError(f"{field}: {value} is not a known value (unset or unknown)")


@dataclass(frozen=True, slots=True)
class FaultInfo:
    """A fault of one seat as reported on the wire (the Fault message)."""

    kind: FaultKindName
    seat: int
    round_no: int
    turn: int
    #: The decision it answers, or 0 when it is tied to none.
    decision_id: int
    message: str
    strike: int
    forfeited: bool
    #: The action the referee played instead, if any.
    default_action: Action | None = None


def fault_to_pb(f: FaultInfo) -> game_pb2.Fault:
    """A fault as a message."""
    msg = game_pb2.Fault(
        kind=_FAULT_TO_PB[f.kind],
        seat=f.seat,
        round=f.round_no,
        turn=f.turn,
        decision_id=f.decision_id,
        message=f.message,
        strike=f.strike,
        forfeited=f.forfeited,
    )
    if f.default_action is not None:
        msg.default_action.CopyFrom(action_to_pb(f.default_action))
    return msg


def fault_from_pb(msg: game_pb2.Fault) -> FaultInfo:
    """Read a fault."""
    kind = cast(FaultKindName, _name_of(_FAULT_TO_PB, msg.kind, "fault.kind"))
    return FaultInfo(
        kind=kind,
        seat=msg.seat,
        round_no=msg.round,
        turn=msg.turn,
        decision_id=msg.decision_id,
        message=msg.message,
        strike=msg.strike,
        forfeited=msg.forfeited,
        default_action=action_from_pb(msg.default_action) if msg.HasField("default_action") else None,
    )


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The end of a match as told to one seat (MatchEnd)."""

    match_id: str
    #: Per seat: 1 is best; shared placings ranked 1, 2, 2, 4.
    placings: tuple[int, ...]
    #: This seat's placing.
    placing: int
    reason: MatchEndReasonName
    #: This seat's faults in the match, in order.
    faults: tuple[FaultInfo, ...] = ()
    #: Under ``scoring="pot"``: every seat's net chips at the end (may be negative); empty
    #: under lives.
    chips: tuple[int, ...] = ()


def match_end_to_pb(result: MatchResult) -> bot_pb2.MatchEnd:
    """A match end as a message."""
    return bot_pb2.MatchEnd(
        match_id=result.match_id,
        placings=result.placings,
        placing=result.placing,
        reason=_MATCH_END_TO_PB[result.reason],
        faults=[fault_to_pb(f) for f in result.faults],
        chips=result.chips,
    )


def match_end_from_pb(msg: bot_pb2.MatchEnd) -> MatchResult:
    """Read a match end."""
    reason = cast(MatchEndReasonName, _name_of(_MATCH_END_TO_PB, msg.reason, "match_end.reason"))
    return MatchResult(
        match_id=msg.match_id,
        placings=tuple(msg.placings),
        placing=msg.placing,
        reason=reason,
        faults=tuple(fault_from_pb(f) for f in msg.faults),
        chips=tuple(msg.chips),
    )


def match_end_request(result: MatchResult) -> bot_pb2.PlayRequest:
    """The stream message that ends a match."""
    return bot_pb2.PlayRequest(match_end=match_end_to_pb(result))



# ---------------------------------------------------------------- the match log (log.proto)
#
# Added with the referee (issue 4). Deals, restocks, actions and forfeits come from the game
# model's records; seats, statistics, header and footer are the referee's own. Readers
# validate, so a hand-edited or damaged log fails with the field named.

FaultPolicyName = Literal["lenient", "strict"]
_POLICY_TO_PB: dict[str, log_pb2.FaultPolicy.ValueType] = {
    "lenient": log_pb2.FAULT_POLICY_LENIENT,
    "strict": log_pb2.FAULT_POLICY_STRICT,
}
_DRAW_KINDS = (ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD)
_MAX_UINT32 = 2**32 - 1


def identity_request() -> bot_pb2.GetIdentityRequest:
    """The GetIdentity request, carrying the referee's protocol version."""
    return bot_pb2.GetIdentityRequest(protocol_version=PROTOCOL_VERSION)


def match_end_reason_to_pb(reason: MatchEndReasonName) -> game_pb2.MatchEndReason.ValueType:
    """A match-end reason as its enum value."""
    return _MATCH_END_TO_PB[reason]


@dataclass(frozen=True, slots=True)
class SeatInfo:
    """The bot at one seat, as the log header records it."""

    seat: int
    identity: BotIdentity
    #: How the bot was named to the referee, exactly as given (a ``NAME=`` prefix included).
    source: str
    #: The name people see: the ``NAME=`` label, else the bot's own name.
    label: str = ""


def seat_info_to_pb(info: SeatInfo) -> log_pb2.SeatInfo:
    """A seat's bot as a message."""
    return log_pb2.SeatInfo(
        seat=info.seat,
        name=info.identity.name,
        bot_version=info.identity.version,
        author=info.identity.author,
        source=info.source,
        label=info.label or info.identity.name,
    )


@dataclass(frozen=True, slots=True)
class SeatStats:
    """Decision statistics of one seat over a match (latencies in microseconds)."""

    seat: int
    decisions: int
    total_latency_us: int
    max_latency_us: int
    faults: int
    #: Answers past the budget that the bank could not cover, inside the grace.
    late: int = 0

    @property
    def mean_latency_us(self) -> float:
        """Mean decision latency; 0 without decisions."""
        return self.total_latency_us / self.decisions if self.decisions else 0.0


def seat_stats_to_pb(s: SeatStats) -> log_pb2.SeatStats:
    """A seat's statistics as a message."""
    msg = log_pb2.SeatStats(
        seat=s.seat,
        decisions=s.decisions,
        total_latency_us=s.total_latency_us,
        max_latency_us=min(s.max_latency_us, _MAX_UINT32),
        faults=s.faults,
    )
    if s.late:
        # Only when set: a match without late answers logs what it logged before.
        msg.late = s.late
    return msg


@dataclass(frozen=True, slots=True)
class LogHeaderInfo:
    """A match log's header: everything needed to replay the match, known before it starts."""

    schema_version: int
    software_version: str
    protocol_version: int
    match_id: str
    seed: int
    players: int
    rules: Rules
    time_control: TimeControl
    seats: tuple[SeatInfo, ...]
    fault_policy: FaultPolicyName
    max_strikes: int


def log_header_to_pb(h: LogHeaderInfo) -> log_pb2.LogRecord:
    """The first line of a match log."""
    return log_pb2.LogRecord(
        header=log_pb2.LogHeader(
            schema_version=h.schema_version,
            software_version=h.software_version,
            protocol_version=h.protocol_version,
            match_id=h.match_id,
            seed=h.seed,
            players=h.players,
            rules=rules_to_pb(h.rules),
            time_control=time_control_to_pb(h.time_control),
            seats=[seat_info_to_pb(s) for s in h.seats],
            fault_policy=_POLICY_TO_PB[h.fault_policy],
            max_strikes=h.max_strikes,
        )
    )


def log_header_from_pb(msg: log_pb2.LogHeader) -> LogHeaderInfo:
    """Read a log header: 2-9 players, one seat entry each, full rules and time control."""
    if not MIN_PLAYERS <= msg.players <= MAX_PLAYERS:
        raise WireError(f"header.players: {msg.players} (must be {MIN_PLAYERS} to {MAX_PLAYERS})")
    if len(msg.seats) != msg.players:
        raise WireError(f"header.seats: {len(msg.seats)} entries for {msg.players} players")
    if not msg.HasField("rules"):
        raise WireError("header.rules: missing")
    if not msg.HasField("time_control"):
        raise WireError("header.time_control: missing")
    seats = []
    for i, s in enumerate(msg.seats):
        if s.seat != i:
            raise WireError(f"header.seats[{i}].seat: {s.seat} (seats must be listed in order)")
        seats.append(
            SeatInfo(i, BotIdentity(s.name, s.bot_version, s.author, msg.protocol_version), s.source, s.label or s.name)
        )
    return LogHeaderInfo(
        schema_version=msg.schema_version,
        software_version=msg.software_version,
        protocol_version=msg.protocol_version,
        match_id=msg.match_id,
        seed=msg.seed,
        players=msg.players,
        rules=rules_from_pb(msg.rules),
        time_control=time_control_from_pb(msg.time_control),
        seats=tuple(seats),
        fault_policy=cast(FaultPolicyName, _name_of(_POLICY_TO_PB, msg.fault_policy, "header.fault_policy")),
        max_strikes=msg.max_strikes,
    )


def deal_event_to_pb(rec: DealRecord) -> log_pb2.LogRecord:
    """A round's deal as a log line (a Hand for every seat dealt in; the dummy's or the
    widow's cards under those variants, and no up-card with the widow)."""
    t = _CARD_TEXT
    line = log_pb2.LogRecord()
    event = line.event
    event.round = rec.round_no
    event.turn = 0
    deal = event.deal  # filled in place, as the action's line is
    deal.SetInParent()
    deal.dealer = rec.dealer
    deal.deck.extend([t[c] for c in rec.deck])
    for s, h in enumerate(rec.hands):
        if h:
            deal.hands.add(seat=s, cards=[t[c] for c in h])
    if rec.upcard is not None:
        deal.upcard = t[rec.upcard]
    deal.dummy.extend([t[c] for c in rec.dummy])
    deal.widow.extend([t[c] for c in rec.widow])
    return line


def ante_event_to_pb(rec: DealRecord) -> log_pb2.LogRecord | None:
    """The antes of a deal as the log line that follows it; None outside ``scoring="pot"``."""
    if not rec.antes:
        return None
    return log_pb2.LogRecord(
        event=log_pb2.LogEvent(
            round=rec.round_no,
            turn=0,
            ante=log_pb2.AnteEvent(
                paid=[log_pb2.SeatCount(seat=s, count=n) for s, n in enumerate(rec.antes) if n],
                pot_after=rec.pot,
            ),
        )
    )


def deal_from_pb(round_no: int, players: int, msg: log_pb2.DealEvent) -> DealRecord:
    """Read a deal; ``hands`` has an empty entry for every seat not dealt in.

    The up-card is missing only in a deal with a widow (``draw="widow"``). The antes are
    not part of a deal line (the AnteEvent after it holds them): they read as none.
    """
    hands: list[tuple[Card, ...]] = [()] * players
    for h in msg.hands:
        if not 0 <= h.seat < players:
            raise WireError(f"deal.hands: seat {h.seat} is not a seat of a {players}-player match")
        hands[h.seat] = cards_from_pb(h.cards, f"deal.hands[seat {h.seat}]")
    widow = cards_from_pb(msg.widow, "deal.widow")
    if not msg.upcard and not widow:
        raise WireError("deal.upcard: missing")
    if msg.upcard and widow:
        raise WireError("deal.upcard: a deal with a widow has no up-card")
    return DealRecord(
        round_no,
        msg.dealer,
        cards_from_pb(msg.deck, "deal.deck"),
        tuple(hands),
        card_from_pb(msg.upcard, "deal.upcard") if msg.upcard else None,
        cards_from_pb(msg.dummy, "deal.dummy"),
        widow,
    )


def restock_event_to_pb(rec: RestockRecord, turn: int) -> log_pb2.LogRecord:
    """A new stock (top card first) as a log line."""
    return log_pb2.LogRecord(
        event=log_pb2.LogEvent(
            round=rec.round_no, turn=turn, restock=log_pb2.RestockEvent(index=rec.number, stock=[c.text for c in rec.stock])
        )
    )


def restock_from_pb(round_no: int, msg: log_pb2.RestockEvent) -> RestockRecord:
    """Read a restock."""
    return RestockRecord(round_no, msg.index, cards_from_pb(msg.stock, "restock.stock"))


def phase_to_pb(phase: Phase) -> game_pb2.Phase.ValueType:
    """A decision's phase as its enum value."""
    return _PHASE_TO_PB[phase]


def phase_from_pb(value: int) -> Phase | None:
    """Read a phase; None for UNSPECIFIED (a log written before ActionEvent.phase existed)."""
    if value == game_pb2.PHASE_UNSPECIFIED:
        return None
    for phase, v in _PHASE_TO_PB.items():
        if v == value:
            return phase
    raise WireError(f"action.phase: {value} is not a phase")


def taken_cards(rec: ActionRecord, dummy: Sequence[Card] = ()) -> tuple[Card, ...]:
    """The cards a swap put into the seat's hand (ActionEvent.taken_cards): the old up-card,
    the widow card, or for SWAP_HAND ``dummy``, the dummy's cards as they lay before it."""
    kind = rec.action.kind
    if kind is ActionKind.SWAP_HAND:
        return tuple(dummy)
    if rec.taken_card is not None:
        return (rec.taken_card,)
    return ()


def action_event_to_pb(
    rec: ActionRecord,
    decision_id: int,
    latency_us: int,
    by_referee: bool,
    phase: Phase | None = None,
    taken: Sequence[Card] = (),
    late: bool = False,
) -> log_pb2.LogRecord:
    """An action as a log line, with the card drawn (even from the stock), the cards a swap
    took (``taken``, see :func:`taken_cards`), the decision's phase and its timing (``late``:
    past the budget and the bank left, inside the grace; written only when true)."""
    # Filled in place: one line per decision, and building the nested messages by keyword
    # copies each into its parent (three times the work).
    line = log_pb2.LogRecord()
    event = line.event
    event.round = rec.round_no
    event.turn = rec.turn
    ev = event.action
    ev.seat = rec.seat
    action = rec.action
    msg = ev.action
    msg.kind = _KIND_TO_PB[action.kind]
    if action.card is not None:
        msg.card = _CARD_TEXT[action.card]
    if action.widow_card is not None:
        msg.widow_card = _CARD_TEXT[action.widow_card]
    ev.decision_id = decision_id
    ev.latency_us = min(latency_us, _MAX_UINT32)
    ev.by_referee = by_referee
    if taken:
        ev.taken_cards.extend([_CARD_TEXT[c] for c in taken])
    if phase is not None:
        ev.phase = _PHASE_TO_PB[phase]
    if late:
        ev.late = True
    if rec.card is not None and action.kind in _DRAW_KINDS:
        ev.drawn_card = _CARD_TEXT[rec.card]
    return line


# The action line as text, without the message (one line per decision, the log's hottest):
# exactly what referee.protojson (and json_format) print for action_event_to_pb's record,
# by the same rules: set fields in field-number order, then the unset ones at their zero
# values in declaration order (tests/referee/test_protojson.py compares the two). The keys
# and enum names come from the descriptors.


def _keys(desc: Descriptor) -> dict[str, str]:
    return {f.name: json.dumps(f.json_name) + ": " for f in desc.fields}


_EV_KEYS = _keys(log_pb2.LogEvent.DESCRIPTOR)
_AE_KEYS = _keys(log_pb2.ActionEvent.DESCRIPTOR)
_A_KEYS = _keys(game_pb2.Action.DESCRIPTOR)
_KIND_JSON = {k: json.dumps(game_pb2.ActionKind.Name(v)) for k, v in _KIND_TO_PB.items()}
_PHASE_JSON = {p: json.dumps(game_pb2.Phase.Name(v)) for p, v in _PHASE_TO_PB.items()}
_CARD_JSON: tuple[str, ...] = tuple(json.dumps(t) for t in _CARD_TEXT)
_LINE_HEAD = "{" + json.dumps(log_pb2.LogRecord.DESCRIPTOR.fields_by_name["event"].json_name) + ": {"
_NO_PHASE = json.dumps(game_pb2.Phase.Name(game_pb2.PHASE_UNSPECIFIED))


# The action line's pieces, keys joined to their values' text once: "key": and each field's
# zero text (one line per decision, so no key is looked up or joined per line).
_A_KIND = _A_KEYS["kind"]
_A_CARD = _A_KEYS["card"]
_A_WIDOW = _A_KEYS["widow_card"]
_Z_A_CARD = _A_CARD + '""'
_Z_A_WIDOW = _A_WIDOW + '""'
_AE_SEAT = _AE_KEYS["seat"]
_AE_ACTION = _AE_KEYS["action"]
_AE_DRAWN = _AE_KEYS["drawn_card"]
_AE_ID = _AE_KEYS["decision_id"]
_AE_LATENCY = _AE_KEYS["latency_us"]
_AE_TAKEN = _AE_KEYS["taken_cards"]
_AE_PHASE = _AE_KEYS["phase"]
_SET_BY_REFEREE = _AE_KEYS["by_referee"] + "true"
_SET_LATE = _AE_KEYS["late"] + "true"
_Z_SEAT = _AE_SEAT + "0"
_Z_DRAWN = _AE_DRAWN + '""'
_Z_ID = _AE_ID + '"0"'
_Z_LATENCY = _AE_LATENCY + "0"
_Z_BY_REFEREE = _AE_KEYS["by_referee"] + "false"
_Z_TAKEN = _AE_TAKEN + "[]"
_Z_PHASE = _AE_PHASE + _NO_PHASE
_EV_ROUND = _EV_KEYS["round"]
_EV_TURN = _EV_KEYS["turn"]
_EV_ACTION = _EV_KEYS["action"]
_Z_ROUND = _EV_ROUND + "0"
_Z_TURN = _EV_TURN + "0"


def action_event_line(
    rec: ActionRecord,
    decision_id: int,
    latency_us: int,
    by_referee: bool,
    phase: Phase | None = None,
    taken: Sequence[Card] = (),
    late: bool = False,
) -> str:
    """:func:`action_event_to_pb`'s record as its log line (``referee.log.encode_record`` of
    it, byte for byte), without building the message."""
    action = rec.action
    cj = _CARD_JSON
    # Action: kind (1, never the zero value), card (2), widow_card (3).
    card = action.card
    widow = action.widow_card
    if card is not None:
        if widow is not None:
            action_json = "{" + _A_KIND + _KIND_JSON[action.kind] + ", " + _A_CARD + cj[card] + ", " + _A_WIDOW + cj[widow] + "}"
        else:
            action_json = "{" + _A_KIND + _KIND_JSON[action.kind] + ", " + _A_CARD + cj[card] + ", " + _Z_A_WIDOW + "}"
    elif widow is not None:
        action_json = "{" + _A_KIND + _KIND_JSON[action.kind] + ", " + _A_WIDOW + cj[widow] + ", " + _Z_A_CARD + "}"
    else:
        action_json = "{" + _A_KIND + _KIND_JSON[action.kind] + ", " + _Z_A_CARD + ", " + _Z_A_WIDOW + "}"

    # ActionEvent: the set fields in number order, then the unset ones at zero.
    seat = rec.seat
    if seat:
        parts = [_AE_SEAT + str(seat), _AE_ACTION + action_json]
        zeros = []
    else:
        parts = [_AE_ACTION + action_json]
        zeros = [_Z_SEAT]
    if rec.card is not None and action.kind in _DRAW_KINDS:
        parts.append(_AE_DRAWN + cj[rec.card])
    else:
        zeros.append(_Z_DRAWN)
    if decision_id:
        parts.append(_AE_ID + '"' + str(decision_id) + '"')
    else:
        zeros.append(_Z_ID)
    latency = latency_us if latency_us < _MAX_UINT32 else _MAX_UINT32
    if latency:
        parts.append(_AE_LATENCY + str(latency))
    else:
        zeros.append(_Z_LATENCY)
    if by_referee:
        parts.append(_SET_BY_REFEREE)
    else:
        zeros.append(_Z_BY_REFEREE)
    if taken:
        parts.append(_AE_TAKEN + "[" + ", ".join([cj[c] for c in taken]) + "]")
    else:
        zeros.append(_Z_TAKEN)
    if phase is not None:
        parts.append(_AE_PHASE + _PHASE_JSON[phase])
    else:
        zeros.append(_Z_PHASE)
    if late:
        parts.append(_SET_LATE)
    if zeros:
        parts += zeros
    event_json = "{" + ", ".join(parts) + "}"

    # LogEvent: round (1), turn (2), the action (5).
    round_no = rec.round_no
    turn = rec.turn
    if round_no:
        if turn:
            body = _EV_ROUND + str(round_no) + ", " + _EV_TURN + str(turn) + ", " + _EV_ACTION + event_json
        else:
            body = _EV_ROUND + str(round_no) + ", " + _EV_ACTION + event_json + ", " + _Z_TURN
    elif turn:
        body = _EV_TURN + str(turn) + ", " + _EV_ACTION + event_json + ", " + _Z_ROUND
    else:
        body = _EV_ACTION + event_json + ", " + _Z_ROUND + ", " + _Z_TURN
    return _LINE_HEAD + body + "}}"


_DEAL_KEYS = _keys(log_pb2.DealEvent.DESCRIPTOR)
_HAND_KEYS = _keys(log_pb2.Hand.DESCRIPTOR)
_RE_KEYS = _keys(log_pb2.RoundEndEvent.DESCRIPTOR)
_SV_KEYS = _keys(log_pb2.SeatValue.DESCRIPTOR)
_SC_KEYS = _keys(log_pb2.SeatCount.DESCRIPTOR)
_END_JSON = {e: json.dumps(log_pb2.RoundEndReason.Name(v)) for e, v in _END_TO_PB.items()}


def _cards_json(cards: Iterable[Card]) -> str:
    c = _CARD_JSON
    return "[" + ", ".join([c[x] for x in cards]) + "]"


def _ints_json(values: Iterable[int]) -> str:
    return "[" + ", ".join([str(v) for v in values]) + "]"


def _event_line(round_no: int, turn: int, key: str, payload_json: str) -> str:
    # LogEvent: round (1) and turn (2) first when set, the payload (a message, so always
    # there), then round and turn at zero.
    k = _EV_KEYS
    parts = []
    zeros = []
    if round_no:
        parts.append(k["round"] + str(round_no))
    else:
        zeros.append(k["round"] + "0")
    if turn:
        parts.append(k["turn"] + str(turn))
    else:
        zeros.append(k["turn"] + "0")
    parts.append(k[key] + payload_json)
    return _LINE_HEAD + ", ".join(parts + zeros) + "}}"


def deal_event_line(rec: DealRecord) -> str:
    """:func:`deal_event_to_pb`'s line (``referee.log.encode_record`` of it, byte for byte),
    without building the message (one a round, the longest line after the header)."""
    k = _DEAL_KEYS
    parts = []
    zeros = []
    if rec.dealer:
        parts.append(k["dealer"] + str(rec.dealer))
    else:
        zeros.append(k["dealer"] + "0")
    if rec.deck:
        parts.append(k["deck"] + _cards_json(rec.deck))
    else:
        zeros.append(k["deck"] + "[]")
    hk = _HAND_KEYS
    # Hand: the seat (1) is set unless 0, its cards (2) are never empty (empty hands are not written).
    hands = [
        "{" + hk["seat"] + str(s) + ", " + hk["cards"] + _cards_json(h) + "}"
        if s
        else "{" + hk["cards"] + _cards_json(h) + ", " + hk["seat"] + "0}"
        for s, h in enumerate(rec.hands)
        if h
    ]
    if hands:
        parts.append(k["hands"] + "[" + ", ".join(hands) + "]")
    else:
        zeros.append(k["hands"] + "[]")
    if rec.upcard is not None:
        parts.append(k["upcard"] + _CARD_JSON[rec.upcard])
    else:
        zeros.append(k["upcard"] + '""')
    for name, cards in (("dummy", rec.dummy), ("widow", rec.widow)):
        if cards:
            parts.append(k[name] + _cards_json(cards))
        else:
            zeros.append(k[name] + "[]")
    return _event_line(rec.round_no, 0, "deal", "{" + ", ".join(parts + zeros) + "}")


def round_end_event_line(r: RoundResult) -> str:
    """:func:`round_end_event_to_pb`'s line (``referee.log.encode_record`` of it, byte for
    byte), without building the message."""
    k = _RE_KEYS
    parts = []
    zeros = []
    # RoundEnd has no member for the zero value: the reason is always set.
    parts.append(k["reason"] + _END_JSON[r.end])
    if r.knocker is not None:  # optional: present when set, even at 0
        parts.append(k["knocker"] + str(r.knocker))
    if r.thirty_one:
        parts.append(k["thirty_one_seats"] + _ints_json(r.thirty_one))
    else:
        zeros.append(k["thirty_one_seats"] + "[]")
    if r.values:
        vk = _SV_KEYS
        values = []
        for s, v in sorted(r.values.items()):
            head = []
            tail = []
            if s:
                head.append(vk["seat"] + str(s))
            else:
                tail.append(vk["seat"] + "0")
            v = float(v)
            if v != 0.0 or math.copysign(1.0, v) < 0:  # proto3 keeps -0.0 as set
                head.append(vk["value"] + protojson.double_text(v))
            else:
                tail.append(vk["value"] + "0.0")
            cards = r.hands[s]
            if cards:
                head.append(vk["cards"] + _cards_json(cards))
            else:
                tail.append(vk["cards"] + "[]")
            values.append("{" + ", ".join(head + tail) + "}")
        parts.append(k["values"] + "[" + ", ".join(values) + "]")
    else:
        zeros.append(k["values"] + "[]")
    if r.lives_lost:
        parts.append(k["lives_lost"] + _seat_counts_json(sorted(r.lives_lost.items())))
    else:
        zeros.append(k["lives_lost"] + "[]")
    for name, ints in (("tokens_after", r.tokens_after), ("eliminated", r.eliminated)):
        if ints:
            parts.append(k[name] + _ints_json(ints))
        else:
            zeros.append(k[name] + "[]")
    if r.sudden_death:
        parts.append(k["sudden_death"] + "true")
    else:
        zeros.append(k["sudden_death"] + "false")
    if r.winners:
        parts.append(k["pot_winners"] + _ints_json(r.winners))
    else:
        zeros.append(k["pot_winners"] + "[]")
    if r.high_card_tie_break:
        parts.append(k["high_card_tie_break"] + "true")
    else:
        zeros.append(k["high_card_tie_break"] + "false")
    if r.chips_after:
        parts.append(k["chips_after"] + _ints_json(r.chips_after))
    else:
        zeros.append(k["chips_after"] + "[]")
    return _event_line(r.round_no, r.turns, "round_end", "{" + ", ".join(parts + zeros) + "}")


def _seat_counts_json(items: Iterable[tuple[int, int]]) -> str:
    sk = _SC_KEYS
    out = []
    for s, n in items:
        head = []
        tail = []
        if s:
            head.append(sk["seat"] + str(s))
        else:
            tail.append(sk["seat"] + "0")
        if n:
            head.append(sk["count"] + str(n))
        else:
            tail.append(sk["count"] + "0")
        out.append("{" + ", ".join(head + tail) + "}")
    return "[" + ", ".join(out) + "]"


def action_record_from_pb(round_no: int, turn: int, msg: log_pb2.ActionEvent) -> ActionRecord:
    """Read a logged action as the model records it (a DISCARD's card is the card discarded;
    a swap's card is the card given up and its taken card the one received, for SWAP_UPCARD
    and SWAP_WIDOW; the cards of a SWAP_HAND are in ``msg.taken_cards``)."""
    action = action_from_pb(msg.action)
    kind = action.kind
    taken = cards_from_pb(msg.taken_cards, "action.taken_cards")
    card: Card | None
    taken_card: Card | None = None
    if kind in (ActionKind.DISCARD, ActionKind.SWAP_UPCARD, ActionKind.SWAP_WIDOW):
        card = action.card
        if kind is not ActionKind.DISCARD and len(taken) == 1:
            taken_card = taken[0]
    elif msg.drawn_card:
        card = card_from_pb(msg.drawn_card, "action.drawn_card")
    else:
        card = None
    return ActionRecord(round_no, turn, msg.seat, action, card, taken_card)


def forfeit_event_to_pb(rec: ForfeitRecord) -> log_pb2.LogRecord:
    """A seat leaving the match, as a log line."""
    return log_pb2.LogRecord(
        event=log_pb2.LogEvent(round=rec.round_no, turn=rec.turn, forfeit=log_pb2.ForfeitEvent(seat=rec.seat, reason=rec.reason))
    )


def forfeit_from_pb(round_no: int, turn: int, msg: log_pb2.ForfeitEvent) -> ForfeitRecord:
    """Read a forfeit."""
    return ForfeitRecord(round_no, turn, msg.seat, msg.reason)


def thirty_one_event_to_pb(r: RoundResult) -> log_pb2.LogRecord:
    """The seats that showed 31 in a round (dealt, or reached by a discard) as a log line."""
    return log_pb2.LogRecord(
        event=log_pb2.LogEvent(
            round=r.round_no,
            turn=r.turns,
            thirty_one=log_pb2.ThirtyOneEvent(seats=r.thirty_one, natural=r.end is RoundEnd.NATURAL_31),
        )
    )


def pot_award_event_to_pb(r: RoundResult) -> log_pb2.LogRecord | None:
    """The award of a round's pot as the log line before its RoundEndEvent; None outside
    ``scoring="pot"``."""
    if not r.chips_after:
        return None
    return log_pb2.LogRecord(
        event=log_pb2.LogEvent(
            round=r.round_no,
            turn=r.turns,
            pot_award=log_pb2.PotAwardEvent(
                pot=r.pot,
                won=[log_pb2.SeatCount(seat=s, count=r.chips_won[s]) for s in sorted(r.winners)],
                remainder=r.carried,
            ),
        )
    )


def round_end_event_to_pb(r: RoundResult) -> log_pb2.LogRecord:
    """A round's result as a log line."""
    line = log_pb2.LogRecord()
    event = line.event
    event.round = r.round_no
    event.turn = r.turns
    event.round_end.SetInParent()
    _fill_round_end(event.round_end, r)
    return line


def fault_event_to_pb(f: FaultInfo) -> log_pb2.LogRecord:
    """A fault as a log line."""
    return log_pb2.LogRecord(
        event=log_pb2.LogEvent(round=f.round_no, turn=f.turn, fault=log_pb2.FaultEvent(fault=fault_to_pb(f)))
    )


@dataclass(frozen=True, slots=True)
class LogFooterInfo:
    """A match log's last line: the result."""

    placings: tuple[int, ...]
    winner: int | None
    reason: MatchEndReasonName
    rounds: int
    stats: tuple[SeatStats, ...]
    #: Under ``scoring="pot"``: net chips per seat at the end (empty under lives).
    chips: tuple[int, ...] = ()
    #: Under ``scoring="pot"``: chips left in the pot after the last round (nobody's).
    pot_left: int = 0


def log_footer_to_pb(f: LogFooterInfo) -> log_pb2.LogRecord:
    """The last line of a match log."""
    footer = log_pb2.LogFooter(
        placings=f.placings,
        reason=_MATCH_END_TO_PB[f.reason],
        rounds=f.rounds,
        seats=[seat_stats_to_pb(s) for s in f.stats],
        chips=f.chips,
        pot_left=f.pot_left,
    )
    if f.winner is not None:
        footer.winner = f.winner
    return log_pb2.LogRecord(footer=footer)


def log_footer_from_pb(msg: log_pb2.LogFooter) -> LogFooterInfo:
    """Read a log footer."""
    return LogFooterInfo(
        placings=tuple(msg.placings),
        winner=msg.winner if msg.HasField("winner") else None,
        reason=cast(MatchEndReasonName, _name_of(_MATCH_END_TO_PB, msg.reason, "footer.reason")),
        rounds=msg.rounds,
        stats=tuple(
            SeatStats(s.seat, s.decisions, s.total_latency_us, s.max_latency_us, s.faults, s.late) for s in msg.seats
        ),
        chips=tuple(msg.chips),
        pot_left=msg.pot_left,
    )


# ---------------------------------------------------------------- comparing messages (replay)
#
# Added with the replay verifier (issue 6): it re-creates each log line from the game model
# and names the first field where the log differs, in the JSON names the log file uses.


def message_difference(expected: Message, actual: Message) -> tuple[str, str, str] | None:
    """The first field where two messages of one type differ, or None if they are equal.

    Returns ``(path, expected, actual)``: the field's path in the log's JSON names
    (``roundEnd.livesLost[0].count``) and both values as JSON text (``absent`` for a field
    one side does not hold).
    """
    if expected == actual:
        return None
    # Imported here: a bot imports this module at every start, and never compares messages.
    from google.protobuf import json_format

    a = json_format.MessageToDict(expected, always_print_fields_with_no_presence=True)
    b = json_format.MessageToDict(actual, always_print_fields_with_no_presence=True)
    found = _first_difference(a, b, "")
    if found is None:  # equal as JSON, unequal as messages: a NaN, or 0.0 against -0.0
        want, got = (json_format.MessageToJson(m, indent=None) for m in (expected, actual))
        return (expected.DESCRIPTOR.name, want, got)
    return found


_ABSENT = object()  # a field one side of a comparison does not hold


def _json_text(value: object) -> str:
    return "absent" if value is _ABSENT else json.dumps(value)


def _first_difference(a: object, b: object, path: str) -> tuple[str, str, str] | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            found = _first_difference(a.get(key, _ABSENT), b.get(key, _ABSENT), sub)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        if len(a) != len(b):
            return (f"{path} (length)", str(len(a)), str(len(b)))
        return None
    if a != b:
        return (path, _json_text(a), _json_text(b))
    return None
