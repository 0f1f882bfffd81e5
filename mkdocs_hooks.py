"""MkDocs hooks for the manual (mkdocs.yml names this file under ``hooks``).

The SDK's docstrings cross-reference in Sphinx's roles (``:class:`View```,
``:func:`~sdk.harness.play_match```), which mkdocstrings passes through as text. The SDK
reference shows each such name as plain code, as Sphinx would: the role dropped, and a name
written with ``~`` shortened to its last part.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:attr|meth|func|class|mod|data|exc|obj|const):<code>(~?)([^<]*)</code>")


def _plain(match: re.Match[str]) -> str:
    tilde, name = match.group(1), match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if tilde else name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    """Sphinx roles in a rendered page become plain code."""
    return _ROLE.sub(_plain, html)
