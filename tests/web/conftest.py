"""The web viewer's tests: a real headless Chromium (Debian's ``chromium``) driven by
Playwright for Python through the browser at ``executable_path``; no browser is downloaded.

Where no browser can run (no ``chromium`` on the PATH or in ``THIRTYONE_CHROMIUM``, or no
Playwright), the browser tests skip with the reason (shown by ``-ra``). Screenshots of each
page go to ``tests/web/artifacts/`` (ignored by git); they are looked at, never compared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from referee.cli.standings_view import standings_json
from referee.tournament.settings import TournamentSettings
from referee.web.data import Source
from referee.web.server import ViewerServer
from tests.replay.fixtures import write_all
from tests.shared import built_once
from tests.tournament.conftest import SANDBOX

ARTIFACTS = Path(__file__).parent / "artifacts"


def chromium_path() -> str | None:
    """The system's Chromium: ``THIRTYONE_CHROMIUM``, else ``chromium`` on the PATH."""
    return os.environ.get("THIRTYONE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium for one test module (skips, saying why, where there is none).

    Not for the session: Playwright's sync API keeps an event loop running in this process
    while it is open, and a referee started by a later test in the same process (a worker of
    pytest-xdist plays many files) could not start its own.
    """
    path = chromium_path()
    if path is None:
        reason = "no browser: install Debian's chromium (apt-get install chromium) or set THIRTYONE_CHROMIUM"
        print(f"\nskipping the browser tests: {reason}")
        pytest.skip(reason)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "Playwright for Python is not installed (pip install -e '.[test]')"
        print(f"\nskipping the browser tests: {reason}")
        pytest.skip(reason)
    with sync_playwright() as p:
        # --no-sandbox: Chromium's own sandbox cannot start as root (CI's containers).
        b = p.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


@dataclass
class Console:
    """Console messages and page errors of one page: none may be an error."""

    messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def page(browser: Any) -> Iterator[tuple[Any, Console]]:
    """A fresh page (its own context), with its console and requests collected; the test
    fails if the page logged an error or threw."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(10_000)
    con = Console()

    def on_console(m: Any) -> None:
        con.messages.append(f"{m.type}: {m.text}")
        if m.type in ("error", "warning"):
            con.errors.append(f"console {m.type}: {m.text}")

    pg.on("console", on_console)
    pg.on("pageerror", lambda e: con.errors.append(f"page error: {e}"))
    pg.on("request", lambda r: con.requests.append(r.url))
    try:
        yield pg, con
        assert con.errors == [], con.errors
    finally:
        context.close()


def shot(pg: Any, name: str) -> Path:
    """Save a screenshot of the page as an artefact; its path is printed."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


@dataclass(frozen=True)
class Played:
    """A small real tournament of the sample bots, played to its end."""

    folder: Path
    #: What `thirtyone standings --json` printed for it.
    standings: dict[str, Any]


#: Tables of three, one deal in every rotation: 3 matches of the three sample bots.
SETTINGS = TournamentSettings(table_size=3, games=1, seed=15015, sandbox=SANDBOX)


#: Played in a process of its own: Playwright's sync API keeps an event loop running in this
#: process's main thread, where the referee could not start its own.
_PLAY = """
import sys
from pathlib import Path
from tests.tournament.conftest import SAMPLES, cli, make_tournament
from tests.web.conftest import SETTINGS
folder = Path(sys.argv[1])
make_tournament(folder, SETTINGS, SAMPLES)
for args in (("tournament", "run", folder, "-j", "2"), ("standings", folder, "--json")):
    result = cli(*args)
    assert result.exit_code == 0, result.output
print(result.stdout)
"""


@pytest.fixture(scope="session")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """The sample bots' tournament, played once for the whole run with real bot processes."""

    def play(root: Path) -> Played:
        folder = root / "t"
        repo = Path(__file__).resolve().parents[2]
        done = subprocess.run([sys.executable, "-c", _PLAY, str(folder)], capture_output=True, text=True, timeout=600, cwd=repo)
        assert done.returncode == 0, done.stderr
        return Played(folder, json.loads(done.stdout))

    return built_once(tmp_path_factory, "web", play)


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The replay tests' fixture logs (standard, specials, long, pagat and the variants') in one folder."""
    return built_once(tmp_path_factory, "logs", lambda folder: write_all(folder, variants=True))


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start a viewer over a folder (in this process, any free port); returns its URL."""
    servers: list[ViewerServer] = []

    def start(folder: Path) -> str:
        server = ViewerServer(Source(folder, standings_json), "127.0.0.1", 0)
        server.serve_in_thread()
        servers.append(server)
        return server.url

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()
