"""``pytest.mark.xdist_group`` really keeps a group's tests in one xdist process.

The suite leans on it: a costly module fixture (bot processes, a tournament, a browser, a Ray
cluster) is built once for its module only if the module's tests run in one process, and two
Ray clusters at once starve each other on two cores. Grouping has broken silently before
(pytest 9.2 with pytest-xdist 3.8: every test still passes, each process just builds its own
fixture), so these tests fail when it stops working.
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.xdist_group("test_xdist_groups")

WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_seen: dict[str, str] = {}


@pytest.mark.parametrize("n", range(4))
def test_every_test_of_a_group_runs_in_the_same_process(n: int, request: pytest.FixtureRequest) -> None:
    # xdist's workers see --dist as "no"; it leaves them this flag instead.
    if WORKER is None or not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not scheduled by pytest-xdist's --dist loadgroup (the suite's default)")
    # The scheduler reads the group from the id's suffix; without it the group is ignored.
    assert request.node.nodeid.endswith("@test_xdist_groups"), request.node.nodeid
    # All four land in this process, one after another: the first seen is the first run.
    _seen.setdefault("worker", str(WORKER))
    _seen[str(n)] = str(WORKER)
    assert list(_seen) == ["worker", *map(str, range(n + 1))], f"tests of the group ran elsewhere: {_seen}"
