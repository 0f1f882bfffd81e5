"""The fixture logs and the referee's real variant logs are, line for line, what protobuf's
own printer (json_format) writes for their records (tests/referee/test_protojson.py checks the
printer itself)."""

from __future__ import annotations

from pathlib import Path

from tests.referee.test_protojson import check_log


def test_fixture_logs_are_what_json_format_writes(logs: dict[str, Path], real_logs: dict[str, Path]) -> None:
    n = sum(check_log(p) for p in [*logs.values(), *real_logs.values()])
    assert n > 500
