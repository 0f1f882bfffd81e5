"""Session-wide: the report header says whether this machine can sandbox bots, and the
command-line output has the same width in every test process."""

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


# Some tests read the CLI's tables, whose width follows COLUMNS when it is set (to a pipe, the
# output is otherwise 240 columns wide). pytest-xdist's workers get COLUMNS=80 and a terminal
# may export its own: the tests must read the same output in every process.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
