"""After signing in, the arena's page goes only to a path of its own site, in a real headless
Chromium against a real ``arena serve``: ``/signin?next=/%5Cevil.example/`` once sent the
browser to another host (a browser reads ``/\\`` as ``//``).

Every request the page makes to any other host is aborted, so no test ever leaves the machine:
the page that followed such a ``next`` ends on Chromium's error page instead of this site.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from referee.ladder.accounts import add_user, set_password
from referee.ladder.store import ArenaStore
from tests.arena.conftest import Arena, make_arena

PASSWORD = "a long enough password"
#: ``next`` values that lead off the site, read or resolved as a browser does.
OFF_SITE = ("/\\evil.example/", "//evil.example/", "/\\/evil.example/", "https://evil.example/", "/.//evil.example/")

pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("test_arena_redirect")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """An arena with one user who has a password."""
    a = make_arena(tmp_path_factory.mktemp("redirect") / "arena")
    toml = a.folder / "arena.toml"
    toml.write_text(re.sub(r"^failed_logins_per_minute = .*$", "failed_logins_per_minute = 100000", toml.read_text(), flags=re.M))
    with ArenaStore.open(a.folder) as store:
        user, _ = add_user(store, "ada")
        set_password(store, user, PASSWORD)
    with a:
        a.serve()
        yield a
        a.stop()


def _sign_in_with_next(browser: Any, base: str, next_: str) -> str:
    """Open the sign-in page with ``next_``, sign in, and return the address the page went to."""
    ctx = browser.new_context()
    try:
        ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base + "/") else route.abort())
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{base}/signin?next={quote(next_, safe='')}")
        page.wait_for_selector("#signin-form")
        page.fill("#f-name", "ada")
        page.fill("#f-password", PASSWORD)
        with page.expect_event("framenavigated", lambda frame: frame == page.main_frame and "/signin" not in frame.url):
            page.click("#signin-form button[type=submit]")
        return str(page.url)
    finally:
        ctx.close()


def test_sign_in_goes_to_a_next_path_of_this_site(served: Arena, browser: Any) -> None:
    assert _sign_in_with_next(browser, served.url, "/matches") == served.url + "/matches"


@pytest.mark.parametrize("next_", OFF_SITE)
def test_sign_in_never_leaves_the_site_for_its_next(served: Arena, browser: Any, next_: str) -> None:
    went = _sign_in_with_next(browser, served.url, next_)
    assert went.startswith(served.url + "/"), f"next={next_!r} sent the browser to {went}"
