"""Paths in what a bot's owner reads, shown as the owner knows them.

A bot's output and its validation's reasons name files by the server's paths: the bot's
frozen folder inside the arena's data folder, the SDK and Python where the arena is
installed. Its owner knows only their own folder, and the server's layout is none of their
business: so the bot's files are shown relative to its folder (``File "bot.py"``) and the
arena's own files under short names (``<sdk>/server.py``, ``<python>/random.py``).
"""

from __future__ import annotations

import functools
import sysconfig
from pathlib import Path


@functools.cache
def _install_paths() -> tuple[tuple[str, str], ...]:
    """The arena's installed code, each folder with the name shown for it."""
    import referee
    import sdk

    found: dict[str, str] = {}
    for key, shown in (("purelib", "<site-packages>"), ("platlib", "<site-packages>"), ("stdlib", "<python>"), ("platstdlib", "<python>")):
        path = sysconfig.get_paths().get(key)
        if path:
            found[path] = shown
    found[str(Path(sdk.__file__).resolve().parent)] = "<sdk>"
    found[str(Path(referee.__file__).resolve().parent)] = "<referee>"
    return tuple(found.items())


def as_owner_sees(text: str, bot_folder: Path, arena_folder: Path | None = None) -> str:
    """``text`` with the bot's folder made relative and the server's folders named briefly
    (see the module doc). Longer paths are replaced first, so a folder inside another keeps
    its own name."""
    pairs: dict[str, str] = {}
    for folder in {str(bot_folder), str(bot_folder.resolve())}:
        pairs[folder + "/"] = ""
        pairs[folder] = "."
    if arena_folder is not None:
        for folder in {str(arena_folder), str(arena_folder.resolve())}:
            pairs[folder] = "<arena>"
    pairs.update(_install_paths())
    for path in sorted(pairs, key=len, reverse=True):
        if path in text:
            text = text.replace(path, pairs[path])
    return text
