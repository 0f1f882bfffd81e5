"""A submitted bot's files: copied into the tournament, hashed, and checked at every launch.

A bot is a folder plus a command. At submission its folder (or its one Python file) is
copied into the tournament's ``bots/NAME/`` with a SHA-256 over every file's path, kind,
executable bit and content, so that editing the original later does not change the
tournament; before each launch the copy is hashed again, and a changed bot is refused rather
than run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

from referee.bots.sandbox import make_readable
from referee.faults import RefereeError

#: The largest bot folder accepted, in bytes, and the most files.
MAX_FOLDER_BYTES = 256 * 1024 * 1024
MAX_FOLDER_FILES = 50_000
#: Left out of a copied folder: version control and bytecode caches, which the bot never needs.
IGNORED = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})


class BotFilesError(RefereeError, ValueError):
    """A bot's folder cannot be copied (too large, a link leading out), or its copy changed."""


def _walk(root: Path, skip: frozenset[Path] = frozenset()) -> list[tuple[str, os.stat_result, Path]]:
    """Every entry under ``root`` (relative text, lstat, path), sorted, without ignored names."""
    found: list[tuple[str, os.stat_result, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED and (here / d).resolve() not in skip)
        for name in sorted(dirnames + filenames):
            p = here / name
            if name in IGNORED or p.resolve() in skip:
                continue
            found.append((p.relative_to(root).as_posix(), p.lstat(), p))
    found.sort(key=lambda e: e[0])
    return found


def folder_sha256(root: Path) -> str:
    """SHA-256 over every entry's path, kind, executable bit and content (or link target)."""
    h = hashlib.sha256()
    for rel, st, p in _walk(root):
        if stat.S_ISLNK(st.st_mode):
            h.update(b"L\0" + rel.encode() + b"\0" + os.readlink(p).encode() + b"\0")
        elif stat.S_ISDIR(st.st_mode):
            h.update(b"D\0" + rel.encode() + b"\0")
        elif stat.S_ISREG(st.st_mode):
            h.update(b"F\0" + rel.encode() + (b"\0x\0" if st.st_mode & 0o111 else b"\0-\0"))
            with open(p, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 16), b""):
                    h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 of one file's content."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def copy_folder(src: Path, dest: Path, *, skip: tuple[Path, ...] = ()) -> str:
    """Copy bot folder ``src`` to the new folder ``dest``; return the copy's hash.

    Refuses, naming the problem, a folder over :data:`MAX_FOLDER_BYTES` or
    :data:`MAX_FOLDER_FILES`, a special file, and a link that leads outside the folder (it
    would not resolve inside the bot's sandbox anyway). ``skip`` are folders left out (the
    tournament's own, when it lies inside the bot's folder).
    """
    src = src.resolve()
    if not src.is_dir():
        raise BotFilesError(f"--dir {src}: not a folder")
    entries = _walk(src, frozenset(p.resolve() for p in skip))
    if len(entries) > MAX_FOLDER_FILES:
        raise BotFilesError(f"--dir {src} holds over {MAX_FOLDER_FILES} files; a bot folder may hold at most {MAX_FOLDER_FILES}")
    total = 0
    for rel, st, p in entries:
        if stat.S_ISLNK(st.st_mode):
            target = (p.parent / os.readlink(p)).resolve()
            if not (target == src or src in target.parents):
                raise BotFilesError(f"--dir {src}: {rel} is a link to {os.readlink(p)}, outside the bot's folder")
        elif stat.S_ISREG(st.st_mode):
            total += st.st_size
        elif not stat.S_ISDIR(st.st_mode):
            raise BotFilesError(f"--dir {src}: {rel} is not a regular file, folder or link")
    if total > MAX_FOLDER_BYTES:
        raise BotFilesError(
            f"--dir {src} holds {total / 2**20:.1f} MiB; a bot folder may hold at most {MAX_FOLDER_BYTES // 2**20} MiB"
        )
    dest.mkdir(mode=0o755)
    for rel, st, p in entries:
        target = dest / rel
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(p), target)
        elif stat.S_ISDIR(st.st_mode):
            target.mkdir()
        else:
            shutil.copy2(p, target, follow_symlinks=False)
    # The bot runs as an unprivileged user when the referee is root: its copy is readable by
    # all (the tournament folder above it stays 0700, so no user of this machine gains).
    make_readable(dest)
    return folder_sha256(dest)


def check_unchanged(path: Path, expected: str, *, name: str) -> None:
    """Raise :class:`BotFilesError` if bot ``name``'s copy at ``path`` no longer hashes to ``expected``.

    An unchanged copy is then made readable by every user (its folder's, for a copied file),
    as copies are made now: a copy made before that rule would otherwise not start where
    bots run as an unprivileged user (the referee as root). The hash does not depend on it.
    """
    try:
        actual = folder_sha256(path) if path.is_dir() else file_sha256(path)
    except OSError as e:
        raise BotFilesError(f"bot {name!r}: its files at {path} cannot be read ({e.strerror or e}); it is not run") from None
    if actual != expected:
        raise BotFilesError(
            f"bot {name!r}: its files at {path} changed since it was submitted (sha256 {actual[:12]}…, "
            f"submitted {expected[:12]}…); it is not run: withdraw and submit it again"
        )
    try:
        make_readable(path if path.is_dir() else path.parent)
    except OSError as e:
        raise BotFilesError(f"bot {name!r}: its files at {path} cannot be made readable ({e.strerror or e}); it is not run") from None
