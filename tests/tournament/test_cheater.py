"""The sandbox end to end: a bot that cheats by reading its match's log gains nothing.

Three real tournaments (``thirtyone`` CLI, bot processes, gRPC, SQLite, worker processes) of
the same deals (same ``--seed``), each ``cheater`` vs ``threshold``, 2 seats:

- ``honest``: the cheater with ``--honest``, i.e. the threshold bot's play: the reference;
- ``sandboxed``: the cheater searching everything it can see, under ``--sandbox auto``;
- ``unsandboxed`` (the control): the same, under ``--sandbox off``.

A cheater that finds nothing plays exactly like the honest bot, and every bot here is
deterministic, so the sandboxed tournament must give exactly the honest one's results,
match by match, not merely a win rate inside its confidence interval. The control shows the
test can fail: without the sandbox the cheater finds the log of its match in progress (the
header and each round's whole deck are written before the first decision) and wins far more
than the honest bot's 95% interval allows.

The cheater (``tests/tournament/bots/cheater.py``) is submitted as a command bot from a
folder holding only a copy of it, so that its own folder in the sandbox holds nothing of the
tournaments' (a tournament's bot sees its own folder only, so its command names its file
there). Unsandboxed it searches the tournaments' own folder (``--search-root``), not the whole
machine: what other programs leave in ``/tmp`` must play no part in a test.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from referee.bots.sandbox import probe

from .conftest import ok, outcomes

CHEATER = Path(__file__).resolve().parent / "bots" / "cheater.py"
#: Deals per table; each is played in both seat rotations, so twice as many matches.
GAMES = 20
SEED = 20261201

pytestmark = pytest.mark.slow


#: Why the sandboxed test cannot run here ("" when bots can be sandboxed).
NO_SANDBOX = "" if probe().available else f"bots cannot be sandboxed here: {probe().reason}"


@pytest.fixture(scope="module")
def submit_from(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the cheater, to submit the command bot from (its working folder
    when it runs)."""
    folder = tmp_path_factory.mktemp("cheater-cwd")
    shutil.copy(CHEATER, folder / CHEATER.name)
    # A command bot runs in place, in the folder it was submitted from: as root it runs as
    # nobody, who must be able to read it (pytest makes its folders 0700).
    folder.chmod(0o755)
    (folder / CHEATER.name).chmod(0o644)
    return folder


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of this module's tournaments: all the unsandboxed cheater may search."""
    return tmp_path_factory.mktemp("cheater-tournaments")


def play(folder: Path, cwd: Path, *, sandbox: str, honest: bool, search_root: Path | None = None) -> dict[str, Any]:
    """Create, submit and run a cheater-vs-threshold tournament; its standings JSON, with
    ``"seconds"`` (the whole) and ``"by_bot"`` (standings rows by bot name) added."""
    t0 = time.monotonic()
    ok("tournament", "new", folder, "--table-size", 2, "--games", GAMES, "--seed", SEED, "--sandbox", sandbox)
    command = f"{sys.executable} {CHEATER.name}" + (" --honest" if honest else "")
    if search_root is not None:
        command += f" --search-root {search_root}"
    with contextlib.chdir(cwd):  # a command bot runs in the folder it was submitted from
        ok("submit", folder, command, "--name", "cheater")
        ok("submit", folder, "threshold")
    ok("tournament", "run", folder, "-j", 2)
    data: dict[str, Any] = json.loads(ok("standings", folder, "--json").stdout)
    data["seconds"] = time.monotonic() - t0
    data["by_bot"] = {row["bot"]: row for row in data["standings"]}
    return data


def summary(label: str, data: dict[str, Any]) -> str:
    """One line for people: the cheater's wins, win rate and interval, and the time taken."""
    c = data["by_bot"]["cheater"]
    return (
        f"{label}: cheater won {c['wins']}/{c['matches']} = {c['win_rate']:.3f} "
        f"(95% CI {c['win_rate_low95']:.3f}-{c['win_rate_high95']:.3f}) in {data['seconds']:.1f} s"
    )


def no_faults(data: dict[str, Any]) -> None:
    """Every match was played by the bots themselves: a timeout would let the referee play
    for a seat, and results would then depend on the machine's load, not on the bots."""
    for row in data["standings"]:
        faults = {k: v for k, v in row.items() if k.startswith("faults_") or k == "forfeits"}
        assert not any(faults.values()), f"{row['bot']} faulted: {faults}"
        assert row["matches"] == 2 * GAMES


@pytest.fixture(scope="module")
def honest(arena: Path, submit_from: Path) -> tuple[Path, dict[str, Any]]:
    """The reference: the cheater with ``--honest`` (threshold's play), unsandboxed."""
    folder = arena / "honest"
    data = play(folder, submit_from, sandbox="off", honest=True)
    print(summary("honest", data))
    no_faults(data)
    return folder, data


@pytest.mark.skipif(bool(NO_SANDBOX), reason=NO_SANDBOX or "bots can be sandboxed")
def test_sandboxed_cheater_does_exactly_as_well_as_the_honest_bot(
    honest: tuple[Path, dict[str, Any]], arena: Path, submit_from: Path
) -> None:
    """Sandboxed, the cheater finds no log: same wins, and every match as with ``--honest``."""
    honest_folder, ref = honest
    folder = arena / "sandboxed"
    data = play(folder, submit_from, sandbox="auto", honest=False)
    print(summary("sandboxed", data))
    assert data["settings"]["sandbox"] == "auto"
    no_faults(data)
    cheat, fair = data["by_bot"]["cheater"], ref["by_bot"]["cheater"]
    # The claim: within the honest bot's 95% interval of the same deals...
    assert fair["win_rate_low95"] <= cheat["win_rate"] <= fair["win_rate_high95"], (summary("sandboxed", data), summary("honest", ref))
    # ...and the strongest true form of it: the cheater found nothing to read, so it made
    # every decision the honest bot made, and every match ended the same way.
    assert cheat["wins"] == fair["wins"]
    mine, theirs = outcomes(folder), outcomes(honest_folder)
    assert mine.keys() == theirs.keys()
    differ = [k for k in mine if mine[k] != theirs[k]]
    assert not differ, f"{len(differ)} match(es) went otherwise than with the honest bot, e.g. {differ[0]}: {mine[differ[0]]} vs {theirs[differ[0]]}"


def test_unsandboxed_cheater_reads_its_log_and_wins(
    honest: tuple[Path, dict[str, Any]], arena: Path, submit_from: Path
) -> None:
    """The control: the same tournament with ``--sandbox off`` lets the cheater win clearly
    more, so the test above can fail."""
    _, ref = honest
    folder = arena / "unsandboxed"
    data = play(folder, submit_from, sandbox="off", honest=False, search_root=arena)
    print(summary("unsandboxed", data))
    no_faults(data)
    cheat, fair = data["by_bot"]["cheater"], ref["by_bot"]["cheater"]
    # Beyond the honest bot's interval, and the two intervals apart.
    assert cheat["win_rate"] > fair["win_rate_high95"], (summary("unsandboxed", data), summary("honest", ref))
    assert cheat["win_rate_low95"] > fair["win_rate_high95"], (summary("unsandboxed", data), summary("honest", ref))
