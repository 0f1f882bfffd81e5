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
import keyword
import math
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

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


def double_text(v: float) -> str:
    """A double's JSON text as ``json_format`` prints it (``repr``; infinities and NaN as strings)."""
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


class _Plan:
    """The source of one encoder per message type, compiled together (see :func:`encoder`).

    Each message type becomes one straight-line function, ``_m0``, ``_m1``, ... (one per
    type, found through ``names``, so a type that holds itself calls its own function),
    appending the ``"key": value`` text of each set field to ``h`` and of each unset field
    to ``t``; the constants it uses (keys, zero texts, enum names) are in ``namespace``.
    This is what ``json_format`` works out by reflection for every message, done once.
    """

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.source: list[str] = []
        self.namespace: dict[str, Any] = {
            "Q": _quote,
            "D": double_text,
            "B": _bytes_text,
            "BOOL": _bool_text,
            "INT64": _int64_text,
            "DSET": _double_is_set,
        }

    def const(self, value: Any) -> str:
        """A name for a constant of the generated code."""
        name = f"c{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def message(self, desc: Descriptor) -> str:
        """The function name of a message type's encoder, planning it the first time."""
        found = self.names.get(desc.full_name)
        if found is not None:
            return found
        if desc.file.package == "google.protobuf":
            raise UnsupportedField(f"{desc.full_name}: a well-known type, with a JSON form of its own")
        if desc.extension_ranges:
            raise UnsupportedField(f"{desc.full_name}: a message with extensions")
        fields = sorted(desc.fields, key=lambda f: f.number)
        if fields != list(desc.fields):
            # Unset fields come in declaration order, set ones in number order: one pass in
            # number order gives both only when the two orders agree.
            raise UnsupportedField(f"{desc.full_name}: fields not declared in field-number order")
        fn = self.names[desc.full_name] = f"_m{len(self.names)}"  # before the fields: recursion
        body: list[str] = []
        numbers = [f.number for f in fields]
        planned: set[str] = set()
        for f in fields:
            oneof = f.containing_oneof
            if oneof is not None and len(oneof.fields) > 1:
                members = sorted(oneof.fields, key=lambda m: m.number)
                span = numbers[numbers.index(members[0].number) : numbers.index(members[-1].number) + 1]
                if span == [m.number for m in members]:
                    # One WhichOneof for the members, rather than a HasField for each.
                    if oneof.name not in planned:
                        planned.add(oneof.name)
                        body += self._oneof(oneof.name, members)
                    continue
                # Other fields between the members: each member in its own place, below.
            # A proto3 `optional` field sits alone in a (synthetic) oneof: a field with
            # presence, written when set, as a oneof of one member would be.
            body += self._field(f)
        self.source.append(f"def {fn}(m):\n    h = []\n    t = []\n")
        self.source.extend(f"    {line}\n" for line in body)
        self.source.append('    return "{" + ", ".join(h + t) + "}"\n\n')
        return fn

    def _get(self, f: FieldDescriptor) -> str:
        return f"m.{f.name}" if f.name.isidentifier() and not keyword.iskeyword(f.name) else f"getattr(m, {f.name!r})"

    def _text(self, f: FieldDescriptor, v: str) -> str:
        """The expression of one value ``v`` of field ``f`` as JSON text."""
        t = f.type
        if t == FieldDescriptor.TYPE_MESSAGE:
            assert f.message_type is not None
            if f.message_type.GetOptions().map_entry:
                raise UnsupportedField(f"{f.full_name}: a map field")
            return f"{self.message(f.message_type)}({v})"
        if t == FieldDescriptor.TYPE_ENUM:
            names = self.const(_enum_names(f))
            return f"({names}.get({v}) or str({v}))"
        if t == FieldDescriptor.TYPE_STRING:
            return f"Q({v})"
        if t == FieldDescriptor.TYPE_BOOL:
            return f"BOOL({v})"
        if t in _INT32_TYPES:
            return f"str({v})"
        if t in _INT64_TYPES:
            return f"INT64({v})"
        if t == FieldDescriptor.TYPE_DOUBLE:
            return f"D({v})"
        if t == FieldDescriptor.TYPE_BYTES:
            return f"B({v})"
        raise UnsupportedField(f"{f.full_name}: field type {t} (float and group fields are not written)")

    def _field(self, f: FieldDescriptor) -> list[str]:
        key = self.const(_quote(f.json_name) + ": ")
        get = self._get(f)
        if f.is_repeated:
            empty = self.const(_quote(f.json_name) + ": []")
            text = self._text(f, "x")
            if text.endswith("(x)") and text[:-3].isidentifier():
                item = text[:-3]  # a function of one value (Q, str, a message's): map it as it is
            else:
                item = self.const(eval(f"lambda x: {text}", self.namespace))
            return [
                f"v = {get}",
                "if v:",
                f'    h.append({key} + "[" + ", ".join(map({item}, v)) + "]")',
                "else:",
                f"    t.append({empty})",
            ]
        if f.has_presence:
            return [f"if m.HasField({f.name!r}):", f"    h.append({key} + {self._text(f, get)})"]
        zero = self.const(_quote(f.json_name) + ": " + _zero_text(f))
        test = "DSET(v)" if f.type == FieldDescriptor.TYPE_DOUBLE else "v"
        return [f"v = {get}", f"if {test}:", f"    h.append({key} + {self._text(f, 'v')})", "else:", f"    t.append({zero})"]

    def _oneof(self, name: str, members: list[FieldDescriptor]) -> list[str]:
        lines = [f"w = m.WhichOneof({name!r})"]
        for i, f in enumerate(members):
            key = self.const(_quote(f.json_name) + ": ")
            lines += [f"{'if' if i == 0 else 'elif'} w == {f.name!r}:", f"    h.append({key} + {self._text(f, self._get(f))})"]
        return lines

    def compile(self) -> None:
        """Define every planned function in the namespace."""
        exec(compile("".join(self.source), "<referee.protojson>", "exec"), self.namespace)


def _enum_names(f: FieldDescriptor) -> dict[int, str]:
    """An enum field's values as their quoted names; refused for what json_format treats apart."""
    enum = f.enum_type
    assert enum is not None
    if enum.is_closed:
        raise UnsupportedField(f"{f.full_name}: a closed (proto2) enum")
    for ev in enum.values:
        if ev.GetOptions().ListFields():
            raise UnsupportedField(f"{f.full_name}: enum value {ev.name} has options (a JSON name of its own?)")
    return {ev.number: '"' + ev.name + '"' for ev in enum.values}


def _zero_text(f: FieldDescriptor) -> str:
    """The JSON text of a field without presence at its zero value."""
    v = f.default_value
    t = f.type
    if t == FieldDescriptor.TYPE_ENUM:
        return _enum_names(f).get(v) or str(v)
    if t == FieldDescriptor.TYPE_STRING:
        return _quote(v)
    if t == FieldDescriptor.TYPE_BOOL:
        return _bool_text(v)
    if t in _INT32_TYPES:
        return str(v)
    if t in _INT64_TYPES:
        return _int64_text(v)
    if t == FieldDescriptor.TYPE_DOUBLE:
        return double_text(v)
    if t == FieldDescriptor.TYPE_BYTES:
        return _bytes_text(v)
    raise UnsupportedField(f"{f.full_name}: field type {t} (float and group fields are not written)")


def encoder(desc: Descriptor) -> Encoder:
    """The proto JSON printer of one message type (see the module's docstring).

    Raises :class:`UnsupportedField` for a message type (or a type it holds) with a field
    this module does not write.
    """
    plan = _Plan()
    fn = plan.message(desc)
    plan.compile()
    encode: Encoder = plan.namespace[fn]
    return encode
