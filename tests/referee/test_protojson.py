"""The log's JSON printer (referee.protojson) against protobuf's own (json_format), the
reference: on every message type of the contract, generated and hand-picked edge values, on
the fixture logs and on matches of every preset and variant, with faults; and logs written
both ways are the same bytes and verify."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thirtyone.v1 import bot_pb2, game_pb2, log_pb2

from referee import log as log_module
from referee import protojson, wire
from referee.bots.memory import MemoryPlayer, Reply
from referee.faults import CrashFault, MalformedFault
from referee.game import (
    KNOCK,
    PRESETS,
    Action,
    ActionKind,
    ActionRecord,
    Card,
    DealRecord,
    Match,
    Observation,
    Phase,
    RoundEnd,
    RoundResult,
    Rules,
)
from referee.log import encode_record, replay_log
from referee.match import MatchConfig, play_match
from referee.replay.verify import Verdict, verify_log
from referee.wire import FaultPolicyName


def reference(msg: Message) -> str:
    """What the referee wrote before referee.protojson, and what it must still write."""
    return json_format.MessageToJson(msg, indent=None, always_print_fields_with_no_presence=True)


def _message_types() -> list[Descriptor]:
    out: list[Descriptor] = []
    for module in (log_pb2, game_pb2, bot_pb2):
        for d in module.DESCRIPTOR.message_types_by_name.values():
            out.append(d)
    return out


MESSAGE_TYPES = _message_types()
ENCODERS = {d.full_name: protojson.encoder(d) for d in MESSAGE_TYPES}


def _class_of(desc: Descriptor) -> type[Message]:
    for module in (log_pb2, game_pb2, bot_pb2):
        cls = getattr(module, desc.name, None)
        if cls is not None and cls.DESCRIPTOR is desc:
            return cls  # type: ignore[no-any-return]
    raise AssertionError(desc.full_name)


# ---------------------------------------------------------------- generated messages

_INT_RANGES = {
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
}
# Names from bots and people: quotes, backslashes, control characters, accents, emoji.
_TEXT = st.one_of(st.text(max_size=8), st.sampled_from(["", "Ah", 'a "q"', "back\\slash", "tab\tnl\n", "é", "名前", "🂡", "\x00\x7f"]))


def _value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    t = field.type
    if t == FieldDescriptor.TYPE_MESSAGE:
        assert field.message_type is not None
        return _message(field.message_type, depth + 1)
    if t == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        # Known values and unknown ones (an open enum keeps them; the printer writes the number).
        return st.one_of(st.sampled_from([v.number for v in field.enum_type.values]), st.integers(-5, 99))
    if t == FieldDescriptor.TYPE_STRING:
        return _TEXT
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t == FieldDescriptor.TYPE_DOUBLE:
        return st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 30.5, 31.0, 21.0, 1e300, 5e-324]))
    lo, hi = _INT_RANGES[t]
    return st.one_of(st.integers(lo, hi), st.sampled_from([0, 1, hi]))


@st.composite
def _fill(draw: st.DrawFn, desc: Descriptor, depth: int) -> Message:
    msg = _class_of(desc)()
    for f in desc.fields:
        if depth > 3 and f.type == FieldDescriptor.TYPE_MESSAGE:
            continue
        if not draw(st.booleans()):
            continue  # left unset
        if f.is_repeated:
            values = draw(st.lists(_value(f, depth), max_size=3))
            if f.type == FieldDescriptor.TYPE_MESSAGE:
                getattr(msg, f.name).extend(values)
            else:
                getattr(msg, f.name).extend(values)
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            getattr(msg, f.name).CopyFrom(draw(_value(f, depth)))
        else:
            # A set oneof member unsets the others, as in real messages.
            setattr(msg, f.name, draw(_value(f, depth)))
    return msg


def _message(desc: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    return _fill(desc, depth)


@pytest.mark.parametrize("desc", MESSAGE_TYPES, ids=lambda d: d.name)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_generated_messages_print_as_json_format_prints_them(desc: Descriptor, data: st.DataObject) -> None:
    msg = data.draw(_message(desc))
    assert ENCODERS[desc.full_name](msg) == reference(msg)


# ---------------------------------------------------------------- edge values


def _edge_cases() -> Iterator[tuple[str, Message]]:
    yield "empty record", log_pb2.LogRecord()
    yield "empty header", log_pb2.LogRecord(header=log_pb2.LogHeader())
    yield "empty event", log_pb2.LogRecord(event=log_pb2.LogEvent())
    yield "event with an empty payload", log_pb2.LogRecord(event=log_pb2.LogEvent(deal=log_pb2.DealEvent()))
    yield "seed 2**64-1", log_pb2.LogRecord(header=log_pb2.LogHeader(seed=2**64 - 1, players=9))
    yield "seed 0 (written as a string)", log_pb2.LogRecord(header=log_pb2.LogHeader(seed=0))
    yield "uint32 max", log_pb2.SeatStats(seat=2**32 - 1, total_latency_us=2**64 - 1, max_latency_us=2**32 - 1)
    yield "optional at zero", log_pb2.SeatStats(late=0)
    yield "optional bool false", log_pb2.ActionEvent(late=False)
    yield "knocker 0", log_pb2.RoundEndEvent(knocker=0)
    yield "negative chips", log_pb2.RoundEndEvent(chips_after=[-(2**31), 0, 2**31 - 1])
    yield "minus zero", log_pb2.SeatValue(seat=0, value=-0.0, cards=[])
    yield "nan and infinities", log_pb2.RoundEndEvent(values=[log_pb2.SeatValue(value=v) for v in (float("nan"), float("inf"), float("-inf"))])
    yield "tiny and huge doubles", log_pb2.RoundEndEvent(values=[log_pb2.SeatValue(value=v) for v in (5e-324, 1e300, 30.5, 31.0, 0.1)])
    yield "unknown enum value", log_pb2.LogRecord(event=log_pb2.LogEvent(round_end=log_pb2.RoundEndEvent(reason=77)))  # type: ignore[arg-type]
    yield "negative enum value", game_pb2.Action(kind=-3)  # type: ignore[arg-type]
    for name in ['a "quoted" name', "back\\slash", "new\nline\ttab", "\x00\x1f\x7f", "é à ü", "名前", "🂡 emoji", "\u2028\u2029", ""]:
        yield f"name {name!r}", log_pb2.LogRecord(
            header=log_pb2.LogHeader(seats=[log_pb2.SeatInfo(name=name, label=name, source=name, author=name)], match_id=name)
        )
    yield "empty repeated fields", log_pb2.LogRecord(footer=log_pb2.LogFooter())
    yield "default action", game_pb2.Fault(default_action=game_pb2.Action())
    yield "three aces set", game_pb2.Rules(three_aces=0.0)
    yield "widow action", game_pb2.Action(kind=game_pb2.ACTION_KIND_SWAP_WIDOW, card="Ah", widow_card="Td")


@pytest.mark.parametrize(("what", "msg"), list(_edge_cases()), ids=[w for w, _ in _edge_cases()])
def test_edge_values_print_as_json_format_prints_them(what: str, msg: Message) -> None:
    assert ENCODERS[msg.DESCRIPTOR.full_name](msg) == reference(msg)


def test_types_it_cannot_print_are_refused_when_built() -> None:
    from google.protobuf import struct_pb2, timestamp_pb2

    with pytest.raises(protojson.UnsupportedField, match="well-known"):
        protojson.encoder(timestamp_pb2.Timestamp.DESCRIPTOR)
    with pytest.raises(protojson.UnsupportedField, match="well-known"):
        protojson.encoder(struct_pb2.Struct.DESCRIPTOR)


# ---------------------------------------------------------------- real logs


def check_log(path: Path) -> int:
    """Every line of a log is what json_format writes for its record; the line count."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, 1):
        record = json_format.Parse(line, log_pb2.LogRecord())
        assert reference(record) == line, f"{path.name}:{i}"
        assert encode_record(record) == line, f"{path.name}:{i}"
    return len(lines)


def _chaotic(seed: int) -> Callable[[Observation, int, int], Reply | Action]:
    """A random legal player that now and then answers late, illegally or crashes."""
    rng = random.Random(seed)

    def bot(obs: Observation, budget_ms: int, bank_ms: int) -> Reply | Action:
        roll = rng.random()
        if roll < 0.01:
            raise MalformedFault("an answer that is not an action: 'Zz' ☠")
        if roll < 0.012:
            raise CrashFault("the bot died (exit 3)", fatal=True)
        if roll < 0.03:
            return Reply(rng.choice(obs.legal_actions), took_ms=budget_ms + rng.randint(0, 400))
        return rng.choice(obs.legal_actions)

    return bot


_VARIANTS = {
    **{name: Rules.preset(name) for name in PRESETS},
    "dummy": Rules().with_options({"dummy": True}),
    "dealer_option": Rules().with_options({"dealer_option": True, "under_the_gun": True}),
    "widow": Rules().with_options({"draw": "widow"}),
    "pot": Rules().with_options({"scoring": "pot"}),
    "showdown": Rules().with_options({"empty_stock": "showdown", "max_turns_per_round": 20}),
    "mix": Rules().with_options({"dummy": True, "dealer_option": True, "under_the_gun": True, "scoring": "pot"}),
}


async def _play(rules: Rules, seed: int, path: Path, policy: FaultPolicyName) -> None:
    names = ["plain", 'quote "q"', "ünïcödé 名前", "back\\slash\n"]
    players = [MemoryPlayer(_chaotic(seed * 10 + s), label=names[s]) for s in range(4)]
    await play_match(players, seed=seed, config=MatchConfig(rules=rules, fault_policy=policy), log_path=path)


@pytest.mark.parametrize("variant", list(_VARIANTS))
def test_matches_of_every_variant_write_json_format_bytes_and_verify(
    variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    rules = _VARIANTS[variant]
    runs: tuple[tuple[int, FaultPolicyName], ...] = ((1, "lenient"), (2, "strict"))
    for seed, policy in runs:
        new = tmp_path / f"new-{seed}.jsonl"
        old = tmp_path / f"old-{seed}.jsonl"
        asyncio.run(_play(rules, seed, new, policy))
        with monkeypatch.context() as m:
            # The old way: every line a message, printed by json_format.
            m.setattr(log_module, "encode_record", reference)
            m.setattr(wire, "action_event_line", wire.action_event_to_pb)
            m.setattr(wire, "deal_event_line", wire.deal_event_to_pb)
            m.setattr(wire, "round_end_event_line", wire.round_end_event_to_pb)
            asyncio.run(_play(rules, seed, old, policy))
        assert new.read_bytes() == old.read_bytes()
        assert check_log(new) > 2
        for path in (new, old):
            assert replay_log(path).complete
            # What `thirtyone replay --verify` says of the log.
            assert verify_log(path).verdict is Verdict.OK, verify_log(path)


# ---------------------------------------------------------------- the action line, printed directly


def _action_records() -> list[tuple[ActionRecord, tuple[Card, ...], Phase]]:
    """Every kind of action the model records (swaps, draws, passes, calls...), with the
    dummy as it lay and the phase, from random matches of every variant."""
    out = []
    for rules in _VARIANTS.values():
        for seed in range(2):
            rng = random.Random(seed)
            m = Match(rng.randint(2, 5), rules, seed=seed)
            while not m.is_over:
                obs = m.observation(m.current)
                action = KNOCK if m.turn > 30 and KNOCK in obs.legal_actions else rng.choice(obs.legal_actions)
                phase, dummy = m.phase, tuple(m.dummy)
                m.apply_unchecked(action)
                out += [(r, dummy, phase) for r in m.take_records() if isinstance(r, ActionRecord)]
    return out


ACTION_RECORDS = _action_records()


def test_every_kind_of_action_is_among_the_records() -> None:
    assert {r.action.kind for r, _, _ in ACTION_RECORDS} == set(ActionKind)


@settings(max_examples=400, deadline=None)
@given(
    pick=st.integers(0, len(ACTION_RECORDS) - 1),
    decision_id=st.one_of(st.sampled_from([0, 1, 2**63, 2**64 - 1]), st.integers(0, 2**64 - 1)),
    latency_us=st.one_of(st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**40]), st.integers(0, 2**33)),
    by_referee=st.booleans(),
    with_phase=st.booleans(),
    late=st.booleans(),
    round_turn=st.sampled_from([None, (0, 0), (1, 0), (0, 5)]),
)
def test_the_action_line_is_the_records_line(
    pick: int,
    decision_id: int,
    latency_us: int,
    by_referee: bool,
    with_phase: bool,
    late: bool,
    round_turn: tuple[int, int] | None,
) -> None:
    rec, dummy, phase = ACTION_RECORDS[pick]
    if round_turn is not None:
        rec = rec._replace(round_no=round_turn[0], turn=round_turn[1])
    taken = wire.taken_cards(rec, dummy)
    args = (rec, decision_id, latency_us, by_referee, phase if with_phase else None, taken, late)
    line = wire.action_event_line(*args)
    assert line == reference(wire.action_event_to_pb(*args))


# ---------------------------------------------------------------- the deal and round-end lines, printed directly


def _round_records() -> tuple[list[DealRecord], list[RoundResult]]:
    """The deals and round results of random matches of every variant, forfeits included
    (a round abandoned, seats out with empty hands)."""
    deals: list[DealRecord] = []
    ends: list[RoundResult] = []
    for rules in _VARIANTS.values():
        for seed in range(3):
            rng = random.Random(seed)
            m = Match(rng.randint(2, 5), rules, seed=seed)
            while not m.is_over:
                if seed == 2 and rng.random() < 0.05:
                    m.forfeit(m.current, "a test")
                else:
                    obs = m.observation(m.current)
                    m.apply_unchecked(KNOCK if m.turn > 30 and KNOCK in obs.legal_actions else rng.choice(obs.legal_actions))
                for r in m.take_records():
                    if isinstance(r, DealRecord):
                        deals.append(r)
                    elif isinstance(r, RoundResult):
                        ends.append(r)
    return deals, ends


DEALS, ROUND_ENDS = _round_records()


def test_the_records_cover_what_the_lines_can_hold() -> None:
    assert any(d.dummy for d in DEALS) and any(d.widow for d in DEALS) and any(d.upcard is None for d in DEALS)
    assert any(not h for d in DEALS for h in d.hands)  # a seat out
    assert {r.end for r in ROUND_ENDS} >= {RoundEnd.KNOCK, RoundEnd.ABANDONED}
    assert any(r.knocker == 0 for r in ROUND_ENDS) and any(r.knocker is None for r in ROUND_ENDS)
    assert any(r.chips_after for r in ROUND_ENDS) and any(r.winners for r in ROUND_ENDS)
    assert any(r.lives_lost for r in ROUND_ENDS) and any(r.eliminated for r in ROUND_ENDS)


@settings(max_examples=300, deadline=None)
@given(pick=st.integers(0, len(DEALS) - 1), round_no=st.sampled_from([None, 0, 1, 2**32 - 1]), dealer=st.sampled_from([None, 0, 3]))
def test_the_deal_line_is_the_records_line(pick: int, round_no: int | None, dealer: int | None) -> None:
    rec = DEALS[pick]
    if round_no is not None:
        rec = rec._replace(round_no=round_no)
    if dealer is not None:
        rec = rec._replace(dealer=dealer)
    assert wire.deal_event_line(rec) == reference(wire.deal_event_to_pb(rec))


def test_a_deal_with_nothing_in_it_prints_its_zero_values() -> None:
    rec = DealRecord(0, 0, (), ((), ()), None)
    assert wire.deal_event_line(rec) == reference(wire.deal_event_to_pb(rec))


@settings(max_examples=300, deadline=None)
@given(
    pick=st.integers(0, len(ROUND_ENDS) - 1),
    round_turns=st.sampled_from([None, (0, 0), (1, 0), (0, 7), (2**32 - 1, 2**32 - 1)]),
    knocker=st.sampled_from(["keep", None, 0, 4]),
    flags=st.sampled_from([None, (True, False), (False, True), (True, True)]),
    value=st.sampled_from([None, 0.0, -0.0, 0, 21, 30.5, 31.0, float("inf")]),
    lives=st.sampled_from([None, {}, {0: 0}, {0: 1, 3: 2}]),
)
def test_the_round_end_line_is_the_records_line(
    pick: int,
    round_turns: tuple[int, int] | None,
    knocker: int | str | None,
    flags: tuple[bool, bool] | None,
    value: float | None,
    lives: dict[int, int] | None,
) -> None:
    r = ROUND_ENDS[pick]
    if round_turns is not None:
        r = r._replace(round_no=round_turns[0], turns=round_turns[1])
    if knocker != "keep":
        r = r._replace(knocker=knocker)
    if flags is not None:
        r = r._replace(sudden_death=flags[0], high_card_tie_break=flags[1])
    if value is not None and r.values:
        # A value of every kind the double field can hold, on the first seat listed.
        first = min(r.values)
        r = r._replace(values={**r.values, first: value})
    if lives is not None:
        r = r._replace(lives_lost=lives)
    assert wire.round_end_event_line(r) == reference(wire.round_end_event_to_pb(r))
