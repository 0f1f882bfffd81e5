"""Session fixtures built once for the whole run, however many pytest-xdist workers share it.

Each xdist worker is its own process with its own session, so a plain session fixture is
built once per worker: a tournament played three times over for three workers. As
pytest-xdist's documentation shows, the workers' temporary folders share a parent for the
run; the first worker to need a thing builds it there under a file lock, and the others wait
for it and read what it left. Without xdist (``-n 0``) the parent is shared by earlier runs
too, so then the thing is simply built in this session's own folder.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable, Iterator
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


@contextlib.contextmanager
def one_at_a_time(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[None]:
    """Hold a lock shared by every xdist worker of the run while the block runs: for things two
    of which at once starve each other on a small machine (Ray clusters). pytest 9.2 no longer
    lets pytest-xdist 3.8's ``xdist_group`` put tests in one worker (it sets ``item._nodeid``,
    which pytest no longer reads), so a lock is what keeps them apart."""
    root = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else tmp_path_factory.getbasetemp()
    with FileLock(str(root / f"{name}.lock")):
        yield
