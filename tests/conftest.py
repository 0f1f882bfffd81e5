"""Session-wide: the report header says whether this machine can sandbox bots, the
command-line output has the same width in every test process, and ``xdist_group`` keeps a
group's tests in one xdist process."""

from __future__ import annotations

import os

import pytest

from referee.bots.sandbox import probe


def pytest_report_header(config: pytest.Config) -> str:
    """One line at the top of every run: sandboxed tests run, or why they skip."""
    status = probe()
    if status.available:
        return f"bot sandbox: available ({status.bwrap_version}); the sandbox tests run"
    return f"bot sandbox: NOT available, its tests skip and tournaments run unsandboxed: {status.reason}"


def _group_suffix(item: pytest.Item) -> str | None:
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) if names else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give each grouped test the ``@group`` suffix by which ``--dist loadgroup`` schedules it.

    pytest-xdist 3.8 adds the suffix by assigning ``item._nodeid``; pytest 9.2 builds
    ``nodeid`` from the structured ``item._id`` instead, so the assignment is lost and every
    group is silently spread over the processes (pytest-dev/pytest-xdist#1386, fixed by an
    open pull request that sets the structured id, as this does). Runs after xdist's own hook,
    and does nothing where the suffix is already there (older pytest, or a fixed xdist), so it
    can stay until the fix is released. tests/test_xdist_groups.py fails if grouping stops
    working."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        suffix = _group_suffix(item)
        if suffix is None or item.nodeid.endswith(f"@{suffix}"):
            continue
        # Only a pytest with structured ids gets here (before 9.2 xdist's own suffix holds).
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(f"{item.nodeid}@{suffix}")


# Some tests read the CLI's tables, whose width follows COLUMNS when it is set (to a pipe, the
# output is otherwise 240 columns wide). pytest-xdist's workers get COLUMNS=80 and a terminal
# may export its own: the tests must read the same output in every process.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
