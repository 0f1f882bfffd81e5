"""The replay viewer's keyboard hints show where there is a keyboard, and not on a phone (a
touch screen at 390 px: issue 37, item 14). In a real headless Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.tournament.conftest import cli


def test_keyboard_hints_show_on_a_desktop_and_not_on_a_phone(browser: Any, logs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "match.html"
    result = cli("replay", logs["standard"], "--html", out)
    assert result.exit_code == 0, result.output
    seen = {}
    for name, options in (
        ("desktop", {"viewport": {"width": 1280, "height": 800}}),
        ("phone", {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}),
    ):
        context = browser.new_context(**options)
        try:
            pg = context.new_page()
            pg.goto(out.as_uri())
            pg.wait_for_selector("#key-hints", state="attached")
            seen[name] = pg.is_visible("#key-hints")
        finally:
            context.close()
    assert seen == {"desktop": True, "phone": False}
