"""Session-wide: the report header says whether this machine can sandbox bots."""

from __future__ import annotations

import pytest

from referee.bots.sandbox import probe


def pytest_report_header(config: pytest.Config) -> str:
    """One line at the top of every run: sandboxed tests run, or why they skip."""
    status = probe()
    if status.available:
        return f"bot sandbox: available ({status.bwrap_version}); the sandbox tests run"
    return f"bot sandbox: NOT available, its tests skip and tournaments run unsandboxed: {status.reason}"
