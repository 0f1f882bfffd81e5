"""Bytecode for the Python our sandboxed bots import, written once by the referee.

A sample bot or an SDK bot imports our packages (``sdk``, ``referee``, the generated
``thirtyone`` messages) from folders its sandbox binds read-only, with
``PYTHONDONTWRITEBYTECODE`` set: it cannot write a ``__pycache__``, so where none is there
every start of every bot compiles those modules from source again. That is more than a third
of a Python bot's start (measured in ``benchmarks/bench_startup.py``) and is paid on every
start of a tournament, a ladder or a test run. An editable install (``pip install -e .``)
writes no bytecode, nor does a referee run with ``PYTHONDONTWRITEBYTECODE`` (as many
container images set it), nor a sample bot, which only ever runs in a sandbox.

So the referee writes it, before the first bot starts, as ``pip`` does at an ordinary install:
the standard ``__pycache__/NAME.TAG.pyc`` beside each source, checked by the source's time
and size, so that a bot's interpreter takes it or, if the source changed since, compiles the
source as it would have anyway. Only our own packages: a bot's own files are a stranger's
code and stay uncompiled by us. A folder we may not write (a system install) is left as it is.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass

#: Folders never walked: a Node bot's packages, version control, caches.
_SKIPPED = frozenset({"node_modules", "__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"})


@dataclass(frozen=True, slots=True)
class BytecodeReport:
    """What :func:`write_bytecode` found: sources already compiled, compiled now, and not
    compiled (a folder we may not write, or a source that does not compile)."""

    current: int
    written: int
    failed: int


def cached_path(source: str) -> str:
    """Where the interpreter that runs a bot looks for ``source``'s bytecode: beside it, in
    ``__pycache__`` (a bot's clean environment sets no ``PYTHONPYCACHEPREFIX``, whatever
    this process's is)."""
    folder, name = os.path.split(source)
    tag = sys.implementation.cache_tag
    return os.path.join(folder, "__pycache__", f"{os.path.splitext(name)[0]}.{tag}.pyc")


def is_current(source: str, cached: str) -> bool:
    """Whether ``cached`` is bytecode of this interpreter's for ``source`` as it is now, by the
    source's modification time and size (the check the import system makes)."""
    try:
        st = os.stat(source)
        with open(cached, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if len(head) != 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags, mtime, size = struct.unpack("<III", head[4:])
    # flags 0: checked by time and size (hash-based bytecode is never written here).
    return bool(flags == 0 and mtime == int(st.st_mtime) & 0xFFFFFFFF and size == st.st_size & 0xFFFFFFFF)


def _sources(folder: str) -> Iterable[str]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in _SKIPPED and not d.startswith(".")]
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(root, name)


def write_bytecode(folders: Iterable[str]) -> BytecodeReport:
    """Write the bytecode of every ``.py`` file under ``folders`` that has none current."""
    # Not compileall: it writes where this process's PYTHONPYCACHEPREFIX says, which a bot's
    # interpreter (clean environment) never looks at, and it reports no counts.
    current = written = failed = 0
    for source in (s for f in folders for s in _sources(f)):
        cached = cached_path(source)
        if is_current(source, cached):
            current += 1
            continue
        try:
            # Time and size, whatever SOURCE_DATE_EPOCH says (py_compile's default then is a
            # hash, which the interpreter checks by reading the whole source every import).
            py_compile.compile(source, cfile=cached, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
        except (OSError, py_compile.PyCompileError):
            failed += 1
        else:
            written += 1
    return BytecodeReport(current, written, failed)
