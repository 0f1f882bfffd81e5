"""The code of another commit, for benchmarks that compare it with this one in one run.

:func:`export` writes the packages of a commit (``referee``, ``sdk``, ``sample_bots`` and the
generated ``thirtyone`` protos) into a folder with ``git archive`` (the repository and its
worktrees are left alone), and compiles them: a sandboxed bot cannot write ``__pycache__``,
so without the ``.pyc`` files every start of a bot would compile its imports again and the
old code would look slower than it is. :func:`env_for` is the environment that runs a
subprocess (and, through the tournament's ``bot_env``, its sandboxed bots) on that code.

The same is done for the working tree (``tree=None``: the packages as they are on disk), so
that both sides import the same way, through ``PYTHONPATH``.

With ``compiled=False`` nothing is compiled, and ``PYTHONDONTWRITEBYTECODE`` is set for the
referee too: each side has only the bytecode its own code writes, as after an editable install
in an environment that sets that variable (many container images, this project's CI machines)
or in a fresh checkout whose sample bots only ever ran sandboxed. The working tree is then
copied (:func:`export_worktree`), without its ``__pycache__`` folders.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What a bot and the referee import, relative to the repository root.
PACKAGES = ("referee", "sdk", "sample_bots", "proto/thirtyone")


def export(rev: str, dest: Path, compiled: bool = True) -> Path:
    """The packages of commit ``rev`` in ``dest`` (made), compiled unless told; returns ``dest``."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, *PACKAGES], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    if compiled:
        compile_tree(dest)
    return dest


def export_worktree(dest: Path) -> Path:
    """The packages of the working tree as they are on disk, in ``dest`` (made), without any
    bytecode; returns ``dest``."""
    for p in PACKAGES:
        shutil.copytree(ROOT / p, dest / p, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    return dest


def compile_tree(tree: Path) -> None:
    """Write the ``.pyc`` files of every package under ``tree``."""
    for p in PACKAGES:
        if (tree / p).is_dir():
            compileall.compile_dir(str(tree / p), quiet=1)


def pythonpath(tree: Path) -> str:
    """The ``PYTHONPATH`` that imports our packages from ``tree`` (protos live under ``proto``)."""
    return f"{tree}{os.pathsep}{tree / 'proto'}"


def env_for(tree: Path | None, compiled: bool = True) -> dict[str, str]:
    """This environment, importing our packages from ``tree`` (None: this working tree);
    ``compiled=False``: see the module's doc."""
    tree = tree or ROOT
    if compiled:
        compile_tree(tree)
        return {**os.environ, "PYTHONPATH": pythonpath(tree)}
    return {**os.environ, "PYTHONPATH": pythonpath(tree), "PYTHONDONTWRITEBYTECODE": "1"}


def short(rev: str) -> str:
    """A commit's short name (``rev`` itself if git cannot say)."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True)
    return done.stdout.strip() or rev


def python() -> str:
    """The interpreter that runs the benchmark (a venv's, so that gRPC and the rest are there)."""
    return sys.executable
