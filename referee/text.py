"""Small helpers for the English of messages people read."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun agreeing with it: ``1 match``, ``2 matches``, ``0 rounds``.

    ``nouns`` is the plural form when it is not ``noun + "s"``.
    """
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


#: Characters shown escaped, beside the C0 and C1 controls and DEL: the ones that reorder
#: or break lines on screen (bidirectional overrides and isolates, line and paragraph
#: separators), so a name cannot make a line read other than it is.
_UNSEEN = frozenset("\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str, *, keep: str = "") -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\n``,
    ``\\u202e``), for showing a text that came from outside (a log, a bot) on a terminal or in
    a message: a name like ``ESC]0;title BEL`` or ``ESC[2J`` is shown, never obeyed.

    Characters in ``keep`` (such as ``"\\n"`` for a message of several lines) stay as they are.
    """
    if text.isprintable() and not _UNSEEN.intersection(text):
        return text  # the common case, at C speed
    out = []
    for ch in text:
        code = ord(ch)
        if ch in keep or not (code < 32 or 127 <= code < 160 or ch in _UNSEEN):
            out.append(ch)
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif code < 256:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)
