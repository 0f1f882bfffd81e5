"""Proto JSON text of a message, byte for byte as protobuf's own printer writes it, faster.

:func:`encoder` gives, for one message type, a function that returns exactly what
``json_format.MessageToJson(msg, indent=None, always_print_fields_with_no_presence=True)``
returns: the match log's encoding (:mod:`referee.log`). ``json_format`` walks each message
by reflection and builds a dict for :func:`json.dumps` (about 0.1 ms a log line, most of the
referee's own cost per decision); here the walk is planned once per message type from its
descriptor, and each field becomes text directly.

What the printer does, and so what the plan reproduces:

- Keys are the fields' JSON names. First come the fields that are *set* (``ListFields``:
  a field with presence when present, a repeated field when not empty, any other field when
  not zero, ``-0.0`` counting as set), in field-number order; then every field without
  presence that is not set, at its zero value (``0``, ``""``, ``false``, ``[]``, the zero
  enum's name), in declaration order. Fields with presence that are unset are left out.
- 64-bit integers are JSON strings (``"42"``); enums their value's name (its number when the
  value is not in the enum); doubles as Python's ``repr`` (``30.5``, ``31.0``), infinities and
  NaN as the strings ``"Infinity"``, ``"-Infinity"`` and ``"NaN"``; bytes in base64; strings
  with every character outside ASCII escaped (``json.dumps``'s ``ensure_ascii``).
- Separators are ``", "`` and ``": "`` on one line.

Messages outside that set (maps, ``float`` fields, well-known types such as ``Timestamp``,
proto2's closed enums, extensions) are refused when the encoder is built, with the field
named: nothing in ``thirtyone.v1`` uses them, and a change of the schema that did must come
with its own test against ``json_format`` (``tests/referee/test_protojson.py`` compares the
two on every message type of the log).
"""

from __future__ import annotations

import base64
import json.encoder
import math
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

#: A message to its JSON text.
Encoder = Callable[[Any], str]

# json.dumps(..., ensure_ascii=True) quotes and escapes every string with this function (the
# C one where it exists): using it directly gives the same bytes.
_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii

_INT32_TYPES = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_SFIXED32,
}
_INT64_TYPES = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}


class UnsupportedField(TypeError):
    """A field whose JSON form this module does not write (see the module's docstring)."""


def _int64_text(v: int) -> str:
    return '"' + str(v) + '"'


def _bool_text(v: bool) -> str:
    return "true" if v else "false"


def _double_text(v: float) -> str:
    if math.isinf(v):
        return '"-Infinity"' if v < 0 else '"Infinity"'
    if math.isnan(v):
        return '"NaN"'
    return float.__repr__(v)


def _bytes_text(v: bytes) -> str:
    return '"' + base64.b64encode(v).decode("ascii") + '"'


def _double_is_set(v: float) -> bool:
    # Proto3 keeps -0.0 (its bits are not zero), and ListFields lists it.
    return v != 0.0 or math.copysign(1.0, v) < 0


def _value_text(field: FieldDescriptor, encoders: dict[str, Encoder]) -> Callable[[Any], str]:
    """One value of ``field`` to JSON text."""
    t = field.type
    where = f"{field.full_name}"
    if t == FieldDescriptor.TYPE_MESSAGE:
        sub = field.message_type
        assert sub is not None
        if sub.GetOptions().map_entry:
            raise UnsupportedField(f"{where}: a map field")
        return _message_encoder(sub, encoders)
    if t == FieldDescriptor.TYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        if enum.is_closed:
            raise UnsupportedField(f"{where}: a closed (proto2) enum")
        for ev in enum.values:
            if ev.GetOptions().ListFields():
                raise UnsupportedField(f"{where}: enum value {ev.name} has options (a JSON name of its own?)")
        names = {ev.number: '"' + ev.name + '"' for ev in enum.values}

        def enum_text(v: int) -> str:
            name = names.get(v)
            return name if name is not None else str(v)

        return enum_text
    if t == FieldDescriptor.TYPE_STRING:
        return _quote
    if t == FieldDescriptor.TYPE_BOOL:
        return _bool_text
    if t in _INT32_TYPES:
        return int.__repr__
    if t in _INT64_TYPES:
        return _int64_text
    if t == FieldDescriptor.TYPE_DOUBLE:
        return _double_text
    if t == FieldDescriptor.TYPE_BYTES:
        return _bytes_text
    raise UnsupportedField(f"{where}: field type {t} (float and group fields are not written)")


#: One step of a message's plan: given the message, add the field's ``"key": value`` text to
#: the set fields (first list) or the unset ones (second list).
_Step = Callable[[Any, list[str], list[str]], None]


def _step(field: FieldDescriptor, encoders: dict[str, Encoder]) -> _Step:
    """The plan's step for one field (not a member of a real oneof: see _oneof_step)."""
    name = field.name
    key = _quote(field.json_name) + ": "
    text = _value_text(field, encoders)
    if field.is_repeated:
        empty = key + "[]"

        def repeated(msg: Any, head: list[str], tail: list[str]) -> None:
            values = getattr(msg, name)
            if values:
                head.append(key + "[" + ", ".join(map(text, values)) + "]")
            else:
                tail.append(empty)

        return repeated
    if field.has_presence:

        def present(msg: Any, head: list[str], tail: list[str]) -> None:
            if msg.HasField(name):
                head.append(key + text(getattr(msg, name)))

        return present
    zero = key + text(field.default_value)
    if field.type == FieldDescriptor.TYPE_DOUBLE:

        def double(msg: Any, head: list[str], tail: list[str]) -> None:
            v = getattr(msg, name)
            if _double_is_set(v):
                head.append(key + text(v))
            else:
                tail.append(zero)

        return double

    def scalar(msg: Any, head: list[str], tail: list[str]) -> None:
        v = getattr(msg, name)
        if v:
            head.append(key + text(v))
        else:
            tail.append(zero)

    return scalar


def _oneof_step(oneof_name: str, members: list[FieldDescriptor], encoders: dict[str, Encoder]) -> _Step:
    """One step for all the members of a oneof: the one set, if any (a WhichOneof, rather
    than a HasField for each member)."""
    keyed = {f.name: (_quote(f.json_name) + ": ", f.name) for f in members}
    texts: dict[str, Callable[[Any], str]] = {}
    for f in members:
        texts[f.name] = _value_text(f, encoders)

    def oneof(msg: Any, head: list[str], tail: list[str]) -> None:
        which = msg.WhichOneof(oneof_name)
        if which is not None:
            key, attr = keyed[which]
            head.append(key + texts[which](getattr(msg, attr)))

    return oneof


def _message_encoder(desc: Descriptor, encoders: dict[str, Encoder]) -> Encoder:
    found = encoders.get(desc.full_name)
    if found is not None:
        return found
    if desc.file.package == "google.protobuf":
        raise UnsupportedField(f"{desc.full_name}: a well-known type, with a JSON form of its own")
    steps: list[_Step] = []

    def encode(msg: Message) -> str:
        head: list[str] = []
        tail: list[str] = []
        for step in steps:
            step(msg, head, tail)
        if tail:
            head += tail
        return "{" + ", ".join(head) + "}"

    # Registered before the fields are planned, so that a recursive message type finds it.
    encoders[desc.full_name] = encode
    fields = sorted(desc.fields, key=lambda f: f.number)
    if fields != list(desc.fields):
        # Unset fields come in declaration order, set ones in number order: one list of
        # steps in number order gives both only when the two orders agree.
        raise UnsupportedField(f"{desc.full_name}: fields not declared in field-number order")
    if desc.extension_ranges:
        raise UnsupportedField(f"{desc.full_name}: a message with extensions")
    numbers = [f.number for f in fields]
    planned: set[str] = set()
    for f in fields:
        oneof = f.containing_oneof
        if oneof is None or len(oneof.fields) == 1:
            # A proto3 `optional` field sits alone in a (synthetic) oneof: a field with
            # presence, written when set, as a oneof of one member would be.
            steps.append(_step(f, encoders))
            continue
        members = sorted(oneof.fields, key=lambda m: m.number)
        span = numbers[numbers.index(members[0].number) : numbers.index(members[-1].number) + 1]
        if span != [m.number for m in members]:
            # Other fields between the members: each member in its own place.
            steps.append(_step(f, encoders))
        elif oneof.name not in planned:
            planned.add(oneof.name)
            steps.append(_oneof_step(oneof.name, members, encoders))
    return encode


def encoder(desc: Descriptor) -> Encoder:
    """The proto JSON printer of one message type (see the module's docstring).

    Raises :class:`UnsupportedField` for a message type (or a type it holds) with a field
    this module does not write.
    """
    return _message_encoder(desc, {})
