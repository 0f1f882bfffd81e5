"""Small helpers for the English of messages people read."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun agreeing with it: ``1 match``, ``2 matches``, ``0 rounds``.

    ``nouns`` is the plural form when it is not ``noun + "s"``.
    """
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"
