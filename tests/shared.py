"""Session fixtures built once for the whole run, however many pytest-xdist workers share it.

Each xdist worker is its own process with its own session, so a plain session fixture is
built once per worker: a tournament played three times over for three workers. As
pytest-xdist's documentation shows, the workers' temporary folders share a parent for the
run; the first worker to need a thing builds it there under a file lock, and the others wait
for it and read what it left. Without xdist (``-n 0``) the parent is shared by earlier runs
too, so then the thing is simply built in this session's own folder.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from filelock import FileLock

T = TypeVar("T")


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], T]) -> T:
    """``build(folder)`` run once per test run in a fresh ``folder`` kept for the run; its
    value (pickled) is what every worker gets. What ``folder`` holds must not be changed
    by the tests: they copy it first."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent / "shared"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.pickle"
    with FileLock(str(root / f"{name}.lock")):
        if done.is_file():
            value: T = pickle.loads(done.read_bytes())
            return value
        folder.mkdir()
        value = build(folder)
        done.write_bytes(pickle.dumps(value))
        return value
