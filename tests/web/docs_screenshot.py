"""Take the manual's screenshot of the replay viewer (docs/viewer.png, on docs/viewer.md).

Run ``python tests/web/docs_screenshot.py`` (needs Debian's chromium and Playwright, as the
browser tests do). It writes the replay tests' fixture logs to a temporary folder, serves
them, opens the "standard" match in the omniscient view at its first showdown after a knock,
and saves the visible part of the page.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from playwright.sync_api import sync_playwright

from referee.cli.standings_view import standings_json
from referee.game import RoundEnd
from referee.log import read_log
from referee.replay.model import RoundEndStep, build_replay
from referee.web.data import Source
from referee.web.server import ViewerServer
from tests.replay.fixtures import write_all
from tests.web.conftest import chromium_path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    out = ROOT / "docs" / "viewer.png"
    with tempfile.TemporaryDirectory() as tmp:
        logs = write_all(Path(tmp) / "logs")
        steps = build_replay(read_log(logs["standard"])).steps
        at = next(i for i, s in enumerate(steps) if isinstance(s, RoundEndStep) and s.end is RoundEnd.KNOCK)
        server = ViewerServer(Source(Path(tmp) / "logs", standings_json), "127.0.0.1", 0)
        server.serve_in_thread()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1180, "height": 815})
                page.goto(f"{server.url}#/replay/standard/omni/{at}")
                page.wait_for_selector("#showdown")
                page.screenshot(path=str(out))
                browser.close()
        finally:
            server.shutdown()
            server.server_close()
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
