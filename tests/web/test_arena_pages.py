"""The arena's web pages in a real headless Chromium, against a real ``arena serve`` process
with real bots: sign-up with invites, uploads through the form, validation, play, replays,
a bot's own output, and who may see what.

The quick tests cover the accounts (sign up, CSRF, sign out, markup in a name), and, over
results written in the store before the server starts (no bot runs), the leaderboard's
sparklines, a bot's rating history and head-to-head, and the admin's list of versions; the
slow one plays a ladder. Screenshots of every page at 1280x800 and 390x844 go to ``docs/arena-*.png``
when ``THIRTYONE_DOCS_SHOTS=1`` (the README shows the leaderboard), else to the artefacts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.ladder.accounts import add_user, new_token, set_password
from referee.ladder.store import ArenaStore, Version
from tests.arena.conftest import SAMPLES, Arena, fake_version, make_arena, play_table
from tests.polling import poll_until
from tests.web.conftest import ARTIFACTS

DOCS = Path(__file__).resolve().parents[2] / "docs"
SIZES = {"1280": (1280, 800), "390": (390, 844)}
PASSWORD = "a long enough password"
#: Markup that would run or add an element if a page put a user's text in as HTML.
MARKUP = '<img src=x id=injected onerror="window.pwned=1"><script>window.pwned=1</script>'
#: Markup with no slash, so that it can be a bot's name in a page's path (/bots/NAME). The
#: service refuses such names; the quick arena writes them in its store, as if one got past.
MARKUP_NAME = '<img src=x id=injected onerror="window.pwned=1">'

# One server for the module: its tests stay in one worker (--dist loadgroup).
pytestmark = [pytest.mark.timeout(900), pytest.mark.xdist_group("test_arena_pages")]


@dataclass
class Tab:
    """One browser context (its own cookies) and page, with the errors it logged."""

    context: Any
    page: Any
    base: str
    errors: list[str] = field(default_factory=list)
    #: Console errors this tab expects (a 404 it asked for on purpose).
    allowed: list[str] = field(default_factory=list)

    def go(self, path: str) -> Any:
        """Open a page and wait until the script has drawn it."""
        r = self.page.goto(self.base + path)
        # (wait_for_function would evaluate a string, which the pages' CSP forbids)
        self.page.wait_for_selector("#app[data-drawn]", state="attached")
        return r

    def injected(self) -> bool:
        """Whether any user text got in as markup."""
        return bool(self.page.evaluate("!!document.getElementById('injected') || window.pwned === 1 || document.querySelectorAll('#app script').length > 0"))

    def shot(self, name: str, *, for_docs: bool = True) -> None:
        """Screenshots of the page as it is, at both widths; neither may scroll sideways.
        ``for_docs=False``: never into docs/ (a page that shows a test's markup, say)."""
        docs = for_docs and os.environ.get("THIRTYONE_DOCS_SHOTS") == "1"
        for tag, (w, h) in SIZES.items():
            self.page.set_viewport_size({"width": w, "height": h})
            self.page.wait_for_timeout(50)  # a layout pass, not a wait for an event
            wide = self.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            out = (DOCS if docs else ARTIFACTS) / f"arena-{name}-{tag}.png"
            out.parent.mkdir(exist_ok=True)
            self.page.screenshot(path=str(out), full_page=not docs)
            assert wide <= 0, f"{name} at {w} px scrolls sideways by {wide} px (see {out})"
        self.page.set_viewport_size({"width": 1280, "height": 800})

    def csrf(self) -> str:
        """This tab's session's CSRF token, as the pages read it."""
        return str(self.context.request.get(self.base + "/api/v1/session").json()["csrf"])


@pytest.fixture
def tabs(browser: Any) -> Iterator[Any]:
    """Make tabs on a base URL; at the end none may have logged an unexpected error."""
    made: list[Tab] = []

    def make(base: str) -> Tab:
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        pg = ctx.new_page()
        pg.set_default_timeout(30_000)
        t = Tab(ctx, pg, base)

        def on_console(m: Any) -> None:
            if m.type in ("error", "warning") and not any(a in m.text for a in t.allowed):
                t.errors.append(f"console {m.type} on {pg.url}: {m.text}")

        pg.on("console", on_console)
        pg.on("pageerror", lambda e: t.errors.append(f"page error on {pg.url}: {e}"))
        made.append(t)
        return t

    yield make
    try:
        assert [e for t in made for e in t.errors] == []
    finally:
        for t in made:
            t.context.close()


def _serve(a: Arena) -> tuple[Arena, str]:
    toml = a.folder / "arena.toml"
    toml.write_text(re.sub(r"^failed_logins_per_minute = .*$", "failed_logins_per_minute = 100000", toml.read_text(), flags=re.M))
    with ArenaStore.open(a.folder) as store:
        boss, a.tokens["boss"] = add_user(store, "boss", admin=True)
        set_password(store, boss, PASSWORD)
    a.serve()
    return a, a.url


def _invite(a: Arena) -> str:
    r = a.api("POST", "/api/v1/admin/invites", "boss")
    assert r.status_code == 201, r.text
    return str(r.json()["code"])


def sign_up(t: Tab, name: str, invite: str, password: str = PASSWORD) -> None:
    """Fill in the sign-up form as a person does."""
    t.go("/signup")
    t.page.fill("#f-name", name)
    t.page.fill("#f-password", password)
    t.page.fill("#f-password2", password)
    t.page.fill("#f-invite", invite)
    t.page.click("#signup-form button[type=submit]")


def sign_in(t: Tab, name: str) -> None:
    """Sign in through the form."""
    t.go("/signin")
    t.page.fill("#f-name", name)
    t.page.fill("#f-password", PASSWORD)
    t.page.click("#signin-form button[type=submit]")
    t.page.wait_for_url(t.base + "/me")


@dataclass(frozen=True)
class Seeded:
    """The versions the quick arena's store holds, with results and no bot ever run."""

    sharp1: int
    sharp2: int
    steady: int
    odd: int
    #: The rotations of a table of Ada's given up by the arena: no output to read.
    given_up: tuple[str, ...]


def _seed(folder: Path) -> Seeded:
    # Results written as the ladder writes them, before the service starts: only sharp.v2
    # stays active, so the ladder, with fewer active versions than seats, plays none of them.
    with ArenaStore.open(folder) as store:
        ada, bo, odd_user = store.add_user("ada"), store.add_user("bo"), store.add_user(MARKUP_NAME)
        sharp1, steady = fake_version(store, ada.id, "sharp"), fake_version(store, bo.id, "steady")
        odd = fake_version(store, odd_user.id, MARKUP_NAME)
        for i in range(9):
            play_table(store, [sharp1, steady], [[1, 2], [2, 1] if i % 3 else [1, 2]])
        sharp2 = fake_version(store, ada.id, "sharp")
        for i in range(12):
            play_table(store, [sharp2, steady], [[1, 2], [2, 1] if i % 4 else [1, 2]])
        # A shared first place (a split pot) is a draw: nobody wins it.
        play_table(store, [sharp2, odd], [[1, 1], [2, 1]])
        play_table(store, [sharp2, odd], [[2, 1], [1, 2]])
        given_up = store.schedule_table([sharp2, steady], lambda tid: "c", placement=False)
        for m in given_up:
            store.void_match(m.key, "the arena's own failure, again and again")
        store.set_status(steady, "withdrawn", "withdrawn by its owner")
        store.set_status(odd, "disqualified", MARKUP)
        set_password(store, ada, PASSWORD)
    return Seeded(sharp1, sharp2, steady, odd, tuple(m.key for m in given_up))


@pytest.fixture(scope="module")
def quick_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Arena, str]]:
    a = make_arena(tmp_path_factory.mktemp("pages-quick") / "arena")
    a.seeded = _seed(a.folder)  # type: ignore[attr-defined]
    a, url = _serve(a)
    yield a, url
    a.stop()


def test_sign_up_sign_out_sign_in_and_csrf(quick_arena: tuple[Arena, str], tabs: Any) -> None:
    a, url = quick_arena
    t = tabs(url)
    # Signed out: only public pages; a private one sends the browser to the sign-in page.
    t.go("/")
    assert t.page.is_hidden("#nav-me")
    t.go("/me")
    t.page.wait_for_url(re.compile(r"/signin\?next=%2Fme$"))
    assert httpx.get(url + "/api/v1/versions").status_code == 401
    # A password that breaks a rule is refused, saying which; a name with markup too, as text.
    # (Chromium logs every refused request, a 4xx answer, as a console error: expected here.)
    t.allowed.append("422")
    sign_up(t, "quinn", _invite(a), password="short")
    # (the browser's own minlength check stops the form first; the API says the same)
    r = httpx.post(url + "/api/v1/signup", json={"name": "quinn", "password": "aaaaaaaaaaaa", "invite": "x"})
    assert r.status_code == 422 and "one character repeated" in r.text
    sign_up(t, MARKUP[:30], _invite(a))
    t.page.wait_for_selector("#form-error:not(:empty)")
    assert "markup" in t.page.text_content("#form-error") and not t.injected()
    t.shot("signup")
    # A good sign-up signs in and lands on "My bots"; the cookie is Secure, HttpOnly, Strict.
    sign_up(t, "quinn", _invite(a))
    t.page.wait_for_url(url + "/me")
    t.page.wait_for_selector("#upload-form")
    cookie = next(c for c in t.context.cookies() if c["name"] == "arena_session")
    assert cookie["secure"] and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert t.page.text_content("#me-name") == "quinn"
    # A change made with the session but without its CSRF token is refused, and with it accepted.
    refused = t.context.request.post(url + "/api/v1/me/tokens")
    assert refused.status == 403 and "CSRF" in refused.text()
    refused = t.context.request.post(url + "/api/v1/me/tokens", headers={"X-CSRF-Token": "wrong"})
    assert refused.status == 403
    assert t.context.request.post(url + "/api/v1/me/tokens", headers={"X-CSRF-Token": t.csrf()}).status == 201
    # The page's own button sends it.
    t.page.click("#make-token")
    assert t.page.wait_for_selector("#token").text_content().startswith("t31_")
    # A used invite cannot be used again.
    used = httpx.post(url + "/api/v1/signup", json={"name": "other", "password": PASSWORD, "invite": "nope"})
    assert used.status_code == 422 and "invite" in used.text
    # Sign out ends the session: the old cookie no longer works.
    t.page.click("#signout")
    t.page.wait_for_selector("#nav-signin")
    assert httpx.get(url + "/api/v1/versions", cookies={"arena_session": cookie["value"]}).status_code == 401
    # Sign in again; a wrong password is refused with a message.
    t.go("/signin")
    t.page.fill("#f-name", "quinn")
    t.page.fill("#f-password", "not the password")
    t.allowed.append("401")
    t.page.click("#signin-form button[type=submit]")
    t.page.wait_for_selector("#form-error:not(:empty)")
    assert "wrong user name or password" in t.page.text_content("#form-error")
    t.shot("signin")
    t.page.fill("#f-password", PASSWORD)
    t.page.click("#signin-form button[type=submit]")
    t.page.wait_for_url(url + "/me")
    t.page.wait_for_selector("#upload-form")


def _path_points(d: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r"[ML]([-\d.]+) ([-\d.]+)", d)]


def test_rating_history_head_to_head_and_the_admins_versions(quick_arena: tuple[Arena, str], tabs: Any) -> None:
    a, url = quick_arena
    seeded: Seeded = a.seeded  # type: ignore[attr-defined]
    t = tabs(url)
    # The leaderboard: a sparkline per row of its latest ratings, a link to the bot's history.
    # Ranked means playing: once the ladder's first refit has run, sharp.v2 (the one active
    # version) is ranked; the retired, withdrawn and disqualified ones are shown apart.
    poll_until("the first refit", lambda: httpx.get(url + "/api/v1/standings").json()["official_at"], timeout_s=300, interval_s=0.2)
    t.go("/")
    row = t.page.wait_for_selector(f"#standings tr[data-version='{seeded.sharp2}']")
    assert row.query_selector("td").text_content() == "1" and "*" not in row.query_selector("span.rating").text_content()
    sections = {int(r.get_attribute("data-version")): r.get_attribute("data-section") for r in t.page.query_selector_all("#standings tbody tr")}
    assert sections == {seeded.sharp2: "ranked", seeded.sharp1: "inactive", seeded.steady: "inactive", seeded.odd: "inactive"}
    assert "95% interval" in t.page.text_content("#rating-note")
    hist = httpx.get(url + "/api/v1/bots/sharp/ratings").json()
    by_version = {v["version"]: v for v in hist["versions"]}
    assert len(by_version[seeded.sharp2]["points"]) == 28 and by_version[seeded.sharp2]["points"][0][0] == 1
    assert row.query_selector("svg.spark").get_attribute("data-points") == "24"  # the latest 24 of 28
    assert t.page.text_content(f"#standings tr[data-version='{seeded.odd}'] td.name") == f"{MARKUP_NAME}.v1 (disqualified)"
    assert not t.injected()
    # The README's picture is the slow test's ordinary board, not this one's escaping test.
    t.shot("leaderboard-escaped", for_docs=False)
    row.query_selector("a.spark-link").click()
    t.page.wait_for_url(url + "/bots/sharp#ratings")
    t.page.wait_for_selector("#rating-plot")
    # One line per version that played, through each of its points and no other: none at 0.
    for vid in (seeded.sharp1, seeded.sharp2):
        line = t.page.query_selector(f"#rating-plot path.history[data-version='{vid}']")
        pts = _path_points(line.get_attribute("d"))
        assert len(pts) == len(by_version[vid]["points"]) == int(line.get_attribute("data-points"))
        ys = [y for _, y in pts]
        assert len(set(ys)) > 1  # a history, not a flat line from a default
    first_x = {vid: _path_points(t.page.get_attribute(f"path.history[data-version='{vid}']", "d"))[0][0] for vid in (seeded.sharp1, seeded.sharp2)}
    assert first_x[seeded.sharp1] == first_x[seeded.sharp2]  # both start at their match 1
    # Head-to-head per opponent version; the shared first place is a draw.
    h2h = httpx.get(url + "/api/v1/bots/sharp/head-to-head").json()["rows"]
    odd_row = next(r for r in h2h if r["version"] == seeded.sharp2 and r["opponent"] == seeded.odd)
    assert (odd_row["matches"], odd_row["wins"], odd_row["losses"], odd_row["draws"]) == (4, 1, 2, 1)
    assert odd_row["score"] == 0.375
    cells = t.page.query_selector_all(f"#head-to-head tr[data-version='{seeded.sharp2}'][data-opponent='{seeded.odd}'] td")
    assert [c.text_content() for c in cells] == ["sharp.v2", f"{MARKUP_NAME}.v1", MARKUP_NAME, "4", "1", "2", "1", "38%"]
    assert len(t.page.query_selector_all("#head-to-head tbody tr")) == len(h2h) == 3
    # These results have no logs: no replay link leads to a 404.
    assert t.page.query_selector_all("#matches tbody tr") and not t.page.query_selector_all("#matches a[href$='/replay']")
    assert not t.injected()
    t.go("/bots/sharp")  # (from its top, for the screenshot: the link scrolled to the plot)
    t.page.wait_for_selector("#head-to-head")
    # The bot's rank is its best active version's; the retired one shows its final figure.
    assert t.page.text_content("#bot-rank") == "Rank 1 (its best active version's)."
    v1 = [c.text_content() for c in t.page.query_selector_all(f"tr[data-version='{seeded.sharp1}'] td")]
    assert v1[:3] == ["sharp.v1", "retired", "\u2013"] and v1[3].isdigit()
    t.shot("bot")
    # The bot whose name is markup has a page of its own, drawn as text.
    t.page.click(f"#head-to-head tr[data-opponent='{seeded.odd}'] a")
    t.page.wait_for_selector("#rating-plot")
    assert t.page.text_content("h1") == f"Bot {MARKUP_NAME}" and not t.injected()
    # The admin's list of versions: every version, why it stopped, a disqualify button each.
    boss = tabs(url)
    sign_in(boss, "boss")
    boss.go("/admin")
    boss.page.wait_for_selector("#admin-versions")
    ids = [int(r.get_attribute("data-version")) for r in boss.page.query_selector_all("#admin-versions tr[data-version]")]
    assert ids == sorted([seeded.sharp1, seeded.sharp2, seeded.steady, seeded.odd], reverse=True)
    assert boss.page.text_content(f"#admin-versions tr[data-version='{seeded.odd}'] td.reason") == MARKUP
    assert boss.page.query_selector(f"#admin-versions tr[data-version='{seeded.odd}'] button.disqualify") is None
    assert not boss.injected()
    # A reference bot is marked, and unmarked, from its row.
    boss.page.click(f"#admin-versions tr[data-version='{seeded.steady}'] button.reference")
    boss.page.wait_for_selector(f"#admin-versions tr[data-version='{seeded.steady}'] button.reference[aria-pressed='true']")
    assert [r["reference"] for r in httpx.get(url + "/api/v1/standings").json()["standings"] if r["version"] == seeded.steady] == [True]
    boss.page.click(f"#admin-versions tr[data-version='{seeded.steady}'] button.reference")
    boss.page.wait_for_selector(f"#admin-versions tr[data-version='{seeded.steady}'] button.reference[aria-pressed='false']")
    boss.shot("admin")
    boss.page.select_option("#version-filter", "active")
    boss.page.wait_for_selector("#admin-versions tbody tr:only-child")
    boss.page.fill("#dq-reason", "plays " + MARKUP_NAME)
    boss.page.once("dialog", lambda d: d.accept())
    boss.page.click(f"#admin-versions tr[data-version='{seeded.sharp2}'] button.disqualify")
    boss.page.wait_for_selector("#no-versions")  # no active version left
    v = a.api("GET", "/api/v1/admin/versions", "boss", params={"status": "disqualified"}).json()
    assert {x["id"]: x["reason"] for x in v} == {seeded.sharp2: "plays " + MARKUP_NAME, seeded.odd: MARKUP}
    assert not boss.injected()


def test_only_a_finished_match_offers_its_output(quick_arena: tuple[Arena, str], tabs: Any) -> None:
    a, url = quick_arena
    seeded: Seeded = a.seeded  # type: ignore[attr-defined]
    t = tabs(url)
    sign_in(t, "ada")
    t.go("/me")
    t.page.click(f"#v{seeded.sharp2} > summary")
    t.page.wait_for_selector(f".matches-of tr:has(a[href='/matches/{seeded.given_up[0]}'])")
    statuses = _output_cells(t)
    # The newest first: the table given up, then the finished ones, each with its output.
    assert [k for k, (status, _) in statuses.items() if status == "void"] == sorted(seeded.given_up, reverse=True)
    assert {has for status, has in statuses.values() if status == "void"} == {False}
    assert {has for status, has in statuses.values() if status == "done"} == {True}
    t.go(f"/me/output/{seeded.given_up[0]}")
    t.page.wait_for_selector("#no-output")
    assert "given up" in t.page.text_content("#no-output") and not t.page.query_selector("pre.output")
    t.go(f"/me/output/{next(k for k, (status, _) in statuses.items() if status == 'done')}")
    t.page.wait_for_selector("pre.output")
    assert t.page.query_selector("#no-output") is None


def _rejected_version(store: ArenaStore, user_id: int, name: str, code: str, reason: str) -> Version:
    """A one-file version of ``name`` put in the store as an upload would, then rejected."""
    staged = store.folder / "uploads" / f"staged-{name}"
    staged.mkdir()
    (staged / "bot.py").write_text(code)

    def place(vid: int) -> str:
        staged.rename(store.folder / "versions" / str(vid))
        return f"versions/{vid}"

    version = store.add_version(user_id, name, place=place, command="python bot.py", sha256="", n_files=1,
                                size=len(code), source="bot.py", mu=25.0, sigma=8.0)
    store.set_status(version.id, "rejected", reason)
    return version


def test_my_bots_deletes_a_rejected_version(quick_arena: tuple[Arena, str], tabs: Any) -> None:
    a, url = quick_arena
    with ArenaStore.open(a.folder) as store:
        oops = _rejected_version(store, store.user_named("ada").id, "oops", "def act(:\n", "SyntaxError: invalid syntax")
    t = tabs(url)
    sign_in(t, "ada")
    t.go("/me")
    row = f"tr[data-version='{oops.id}']"
    t.page.wait_for_selector(f"{row} button.delete")
    # Only the rejected version offers Delete.
    assert len(t.page.query_selector_all("button.delete")) == 1
    t.page.once("dialog", lambda d: d.accept())
    t.page.click(f"{row} button.delete")
    t.page.wait_for_selector(row, state="detached")
    assert a.api("GET", "/api/v1/bots/oops").status_code == 404
    assert not (a.folder / "versions" / str(oops.id)).exists()


def _output_cells(t: Tab) -> dict[str, tuple[str, bool]]:
    """The matches on "My bots": each one's status and whether it links to its output."""
    out: dict[str, tuple[str, bool]] = {}
    for row in t.page.query_selector_all(".matches-of tbody tr"):
        key = row.query_selector("a[href^='/matches/']").get_attribute("href").removeprefix("/matches/")
        out[key] = (row.query_selector("td:nth-child(2)").text_content(), row.query_selector("a.output-link") is not None)
    return out


def _seed_ordinary(folder: Path) -> None:
    """Three bots of three users with a history, retired before the service starts (so the
    ladder plays only the test's own): the leaderboard the README shows is an ordinary one."""
    with ArenaStore.open(folder) as store:
        names = (("kim", "hoarder"), ("lee", "plodder"), ("max", "maverick"))
        vids = [fake_version(store, store.add_user(user).id, bot) for user, bot in names]
        for i in range(8):
            play_table(store, [vids[0], vids[1]], [[1, 2], [2, 1] if i % 3 else [1, 2]])
            play_table(store, [vids[1], vids[2]], [[2, 1], [1, 2] if i % 2 else [2, 1]])
            play_table(store, [vids[0], vids[2]], [[1, 2], [1, 2] if i % 4 else [2, 1]])
        for vid in vids:
            store.set_status(vid, "retired", "retired when a newer version became active")


@pytest.mark.slow
def test_two_users_upload_play_watch_and_read_their_output(tmp_path: Path, tabs: Any) -> None:
    a = make_arena(tmp_path / "arena")
    _seed_ordinary(a.folder)
    # A refit every few seconds, so that the board pictured has official figures throughout.
    toml = a.folder / "arena.toml"
    toml.write_text(re.sub(r"^refit_every_s = .*$", "refit_every_s = 3", toml.read_text(), flags=re.M))
    a, url = _serve(a)
    try:
        _two_users(a, url, tabs, tmp_path)
    finally:
        a.stop()


def _upload(t: Tab, path: Path) -> int:
    t.page.set_input_files("#f-file", str(path))
    t.page.click("#upload-form button[type=submit]")
    t.page.wait_for_selector("#upload-note:has-text('uploaded ')")
    return int(t.page.get_attribute("tr[data-version]", "data-version"))


def _two_users(a: Arena, url: str, tabs: Any, tmp: Path) -> None:
    ann, ben, out = tabs(url), tabs(url), tabs(url)
    sign_up(ann, "ann", _invite(a))
    sign_up(ben, "ben", _invite(a))
    for t in (ann, ben):
        t.page.wait_for_url(url + "/me")
        t.page.wait_for_selector("#upload-form")
    # Ben's bot writes markup to its stderr, which his pages must show as text.
    noisy = tmp / "noisy.py"
    seeded = '        self.rng = random.Random(f"{info.match_id}/{info.seat}")'
    source = (SAMPLES / "random.py").read_text()
    assert seeded in source
    noisy.write_text(source.replace(seeded, f"        import sys\n        print({MARKUP!r}, file=sys.stderr, flush=True)\n{seeded}"))
    ann_v = _upload(ann, SAMPLES / "greedy.py")
    ben_v = _upload(ben, noisy)
    ann.shot("me-queued")
    # The page refreshes itself while a version validates: wait for "active" on it.
    for t, v in ((ann, ann_v), (ben, ben_v)):
        t.page.wait_for_selector(f"tr[data-version='{v}'] .status.active", timeout=240_000)
        # Its row says it all now: the upload's note is gone.
        assert t.page.text_content("#upload-note") == ""

    def a_finished_deal() -> str | None:
        ms = httpx.get(url + "/api/v1/matches", params={"status": "done"}, timeout=30).json()
        done = [m for m in ms if m.get("seed") and "log" in m]  # (the seeded history has no logs)
        return done[0]["key"] if done else None

    key = poll_until("a match whose deal is finished", a_finished_deal, timeout_s=300, interval_s=1)
    # The leaderboard shows both, live; the filter by user keeps one.
    ann.go("/")
    def refitted() -> bool:
        rows = httpx.get(url + "/api/v1/standings", timeout=30).json()["standings"]
        return {r["version"] for r in rows if not r["provisional"]} >= {ann_v, ben_v}

    poll_until("the official refit of both live versions", refitted, timeout_s=300, interval_s=1)
    for v in (ann_v, ben_v):
        ann.page.wait_for_selector(f"#standings tr[data-version='{v}']")
    # (the page polls every three seconds: wait until it shows the refit, no live figure left)
    # (page.evaluate, not wait_for_function: that evaluates a string, which the pages' CSP forbids)
    poll_until(
        "the leaderboard showing no live figure",
        lambda: not ann.page.evaluate("[...document.querySelectorAll('#standings td')].some(td => td.textContent.trim().endsWith('*'))"),
        timeout_s=60,
        interval_s=0.5,
    )
    ann.shot("leaderboard")
    ann.page.select_option("#user-filter", "ben")
    ann.page.wait_for_selector("#standings tbody tr:only-child")
    # The match page: seats, the commitment and the revealed seed, the log, the replay.
    ann.go(f"/matches/{key}")
    m = httpx.get(url + f"/api/v1/matches/{key}").json()
    assert ann.page.text_content("#commitment") == m["commitment"]
    assert ann.page.text_content("#seed") == m["seed"]
    log = ann.context.request.get(url + ann.page.get_attribute("#log-link", "href"))
    assert log.status == 200 and log.text().startswith("{")
    ann.shot("match")
    ann.page.click("#replay-link")
    ann.page.wait_for_selector(".felt")
    assert ann.page.get_attribute("#source", "href") == f"/matches/{key}"
    ann.shot("replay")
    # Each decision judged beside its step, on request (docs/analysis.md).
    ann.page.click("#analysis-link")
    ann.page.wait_for_selector("#analysis-summary [data-summary]", timeout=120_000)
    assert ann.page.get_attribute("#analysis-link", "href") == f"/matches/{key}/replay"
    ann.go("/matches")
    ann.page.wait_for_selector("#matches")
    ann.shot("matches")
    ann.go("/bots/greedy")
    ann.page.wait_for_selector("#head-to-head")
    ann.page.wait_for_selector("#rating-plot path.history")
    # Each reads their own bot's output; Ben's markup is text.
    ben.go("/me")
    ben.page.click(f"#v{ben_v} > summary")
    ben.page.wait_for_selector(".output-link")
    # The ladder schedules a table's rotations together: those not played yet offer no output.
    assert all(status == "done" for status, has in _output_cells(ben).values() if has)
    ben.shot("me")
    ben.page.click(".output-link")
    ben.page.wait_for_selector("pre.output")
    assert "<img src=x id=injected" in ben.page.text_content("pre.output") and not ben.injected()
    ben.shot("output")
    ann.go(f"/me/output/{key}")
    ann.page.wait_for_selector("pre.output")
    assert "<img" not in ann.page.text_content("#app")  # Ann sees only her own bot's output
    # Ben asking for Ann's private things gets 404, in the browser and in the API.
    ben.allowed.append("404")
    for path in (f"/api/v1/versions/{ann_v}", f"/api/v1/versions/{ann_v}/files"):
        assert ben.context.request.get(url + path).status == 404
    assert ben.context.request.post(url + f"/api/v1/versions/{ann_v}/withdraw", headers={"X-CSRF-Token": ben.csrf()}).status == 404
    # A signed-out browser sees the public pages, and no private one.
    out.go("/")
    out.page.wait_for_selector("#standings")
    assert out.page.is_hidden("#nav-me")
    out.go(f"/matches/{key}")
    out.page.wait_for_selector("#commitment")
    out.allowed.append("401")
    assert out.context.request.get(url + f"/api/v1/matches/{key}/output").status == 401
    # Ann withdraws her version through the page (the confirm dialog accepted).
    ann.go("/me")
    ann.page.once("dialog", lambda d: d.accept())
    ann.page.click(f"tr[data-version='{ann_v}'] button.withdraw")
    ann.page.wait_for_selector(f"tr[data-version='{ann_v}'] .status.withdrawn")
    # The admin's page.
    boss = tabs(url)
    sign_in(boss, "boss")
    boss.go("/admin")
    boss.page.wait_for_selector("#make-invite")
    boss.page.click("#make-invite")
    assert len(boss.page.wait_for_selector("#invite").text_content()) > 10
    boss.page.click("#pause")
    boss.page.wait_for_selector("#resume")
    assert httpx.get(url + "/api/v1/ladder").json()["paused"] is True
    boss.page.click("#resume")
    boss.page.wait_for_selector("#pause")
    # An admin's reason, with markup, reaches the owner's page as text.
    r = a.api("POST", f"/api/v1/admin/versions/{ben_v}/disqualify", "boss", json={"reason": MARKUP})
    assert r.status_code == 200, r.text
    ben.go("/me")
    ben.page.click(f"#v{ben_v} > summary")
    ben.page.wait_for_selector(f"#v{ben_v} pre.reason")
    assert ben.page.text_content(f"#v{ben_v} pre.reason") == MARKUP
    for t in (ann, ben, out, boss):
        assert not t.injected()


# ------------------------------------------------------------ a bot author's pages (issue 37)

#: A rejected version's reason as the validator writes it: a traceback whose ^^^ marks a place.
TRACEBACK = """Traceback (most recent call last):
  File "bot.py", line 3, in <module>
    def act(self, view) -> Action
                                 ^
SyntaxError: expected ':'"""
#: The report of a version's validation, as check-bot prints its steps.
REPORT = "ok   manifest\nok   starts and answers\nok   a match against the random bot"


@dataclass(frozen=True)
class Authored:
    """The author arena's versions: flip.v1 retired with its own matches, flip.v2 active
    with newer ones (more than a page of them), a rejected syntaxbot, and Dee's wall."""

    flip1: int
    flip2: int
    wall: int
    syntax: int
    quick_match: str


def _seed_author(folder: Path) -> Authored:
    with ArenaStore.open(folder) as store:
        cy, dee = store.add_user("cy"), store.add_user("dee")
        store.add_user("eve")  # no bot at all
        wall, flip1 = fake_version(store, dee.id, "wall"), fake_version(store, cy.id, "flip")
        for i in range(12):
            play_table(store, [flip1, wall], [[1, 2], [2, 1] if i % 3 else [1, 2]])
        flip2 = fake_version(store, cy.id, "flip")  # retires flip.v1, as an upload does
        keys = [k for i in range(12) for k in play_table(store, [flip2, wall], [[2, 1], [1, 2] if i % 2 else [2, 1]])]
        store.set_status(flip2, "active", report=REPORT)
        with store.tx() as c:  # a match quicker than the page's 0.1 s
            c.execute("UPDATE matches SET duration_s = 0.03 WHERE key = ?", (keys[-1],))
        # Only flip.v2 stays active: the ladder, with fewer active versions than seats, plays none.
        store.set_status(wall, "withdrawn", "withdrawn by its owner")
        syntax = _rejected_version(store, cy.id, "syntaxbot", "def act(self, view) -> Action\n", TRACEBACK).id
        set_password(store, cy, PASSWORD)
    return Authored(flip1, flip2, wall, syntax, keys[-1])


@pytest.fixture(scope="module")
def author_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Arena, str]]:
    a = make_arena(tmp_path_factory.mktemp("pages-author") / "arena")
    a.seeded = _seed_author(a.folder)  # type: ignore[attr-defined]
    a, url = _serve(a)
    yield a, url
    a.stop()


def _now(t: Tab, vid: int) -> str:
    return str(t.page.text_content(f"#v{vid} .now"))


def test_my_bots_lists_each_versions_own_matches_and_reactivates(author_arena: tuple[Arena, str], tabs: Any) -> None:
    a, url = author_arena
    s: Authored = a.seeded  # type: ignore[attr-defined]
    # The bot's newest matches are all flip.v2's: flip.v1's own come from its own list.
    own = httpx.get(url + "/api/v1/matches", params={"version": s.flip1, "limit": 20}).json()
    assert len(own) == 20 and all(any(x["version"] == s.flip1 for x in m["seats"]) for m in own)
    newest = httpx.get(url + "/api/v1/matches", params={"bot": "flip", "limit": 20}).json()
    assert not any(x["version"] == s.flip1 for m in newest for x in m["seats"])
    assert httpx.get(url + "/api/v1/matches", params={"version": s.flip1, "bot": "wall"}).status_code == 404
    t = tabs(url)
    sign_in(t, "cy")
    t.go("/me")
    t.page.wait_for_selector(f"#v{s.flip1}", state="attached")
    # Every version's details folded; no upload note where nothing was uploaded.
    assert t.page.eval_on_selector_all("details.version", "ds => ds.map(d => d.open)") == [False, False, False]
    assert t.page.text_content("#upload-note") == ""
    t.page.click(f"#v{s.flip1} > summary")
    t.page.wait_for_selector(f"#v{s.flip1} .matches-of tbody tr")
    rows = t.page.query_selector_all(f"#v{s.flip1} .matches-of tbody tr")
    assert [r.query_selector("a[href^='/matches/']").text_content() for r in rows] == [m["key"] for m in own]
    assert {r.query_selector("td.opponents").text_content().split(" (")[0] for r in rows} == {"wall.v1"}
    assert "(1 file, 0 bytes)" in t.page.text_content(f"#v{s.flip1} .uploaded")
    assert t.page.text_content(f"#v{s.flip1} > summary") == "flip.v1 retired 24 matches played"
    assert t.page.text_content(f"#v{s.syntax} > summary") == "syntaxbot.v1 rejected 0 matches played yet"
    # A retired version says what is true now, offers Reactivate and no Withdraw.
    assert _now(t, s.flip1) == "Retired: flip.v2 plays in its place. Reactivate brings it back (and retires flip.v2)."
    assert t.page.text_content(f"#v{s.flip1} pre.reason") == "retired when flip.v2 became active"
    flip1_row, flip2_row = f"tr[data-version='{s.flip1}']", f"tr[data-version='{s.flip2}']"
    assert t.page.query_selector(f"{flip1_row} button.withdraw") is None and t.page.query_selector(f"{flip1_row} button.reactivate")
    assert t.page.query_selector(f"{flip2_row} button.withdraw") and t.page.query_selector(f"{flip2_row} button.reactivate") is None
    # The active version's validation report, folded in its details; a version that never
    # played has no rating (a dash), not 0.
    t.page.click(f"tr[data-version='{s.flip2}'] a[href='#v{s.flip2}']")
    t.page.click(f"#v{s.flip2} details.report > summary")
    assert t.page.text_content(f"#v{s.flip2} pre.report") == REPORT
    assert [c.text_content() for c in t.page.query_selector_all(f"tr[data-version='{s.syntax}'] td")][3:6] == ["\u2013", "\u2013", "0"]
    # Withdraw flip.v2: flip.v1 no longer claims that a newer version plays.
    t.page.once("dialog", lambda d: d.accept())
    t.page.click(f"{flip2_row} button.withdraw")
    t.page.wait_for_selector(f"{flip2_row} .status.withdrawn")
    assert _now(t, s.flip1) == "Retired: no version of flip plays now. Reactivate brings it back."
    assert t.page.eval_on_selector(f"#v{s.flip1}", "d => d.open")  # (what was open stays open as the page redraws)
    # Reactivate flip.v1 from the page; then flip.v2 through the API, which retires flip.v1.
    t.page.click(f"{flip1_row} button.reactivate")
    t.page.wait_for_selector(f"{flip1_row} .status.active")
    assert _now(t, s.flip2) == "Withdrawn: flip.v1 plays in its place. Reactivate brings it back (and retires flip.v1)."
    _token(a, "cy")
    back = a.api("POST", f"/api/v1/versions/{s.flip2}/reactivate", "cy")
    assert back.status_code == 200 and back.json()["status"] == "active", back.text
    v1 = a.api("GET", f"/api/v1/versions/{s.flip1}", "cy").json()
    assert (v1["status"], v1["reason"]) == ("retired", "retired when flip.v2 was reactivated")
    # A rejected version cannot come back, nor one already active.
    for vid, said in ((s.syntax, "failed its checks"), (s.flip2, "plays already")):
        r = a.api("POST", f"/api/v1/versions/{vid}/reactivate", "cy")
        assert r.status_code == 409 and "cannot be reactivated" in r.text and said in r.text, r.text


def _token(a: Arena, user: str) -> None:
    """Give ``user`` an API token, for ``a.api`` (once)."""
    if user not in a.tokens:
        with ArenaStore.open(a.folder) as store:
            a.tokens[user] = new_token(store, store.user_named(user))


def _header_height(t: Tab) -> float:
    return float(t.page.eval_on_selector("#top", "e => e.getBoundingClientRect().height"))


def test_pages_titles_not_found_header_and_the_admins_columns(author_arena: tuple[Arena, str], tabs: Any) -> None:
    a, url = author_arena
    s: Authored = a.seeded  # type: ignore[attr-defined]
    # An unknown path: a page to a browser, JSON to the API (and to a client that asks no page).
    page = httpx.get(url + "/nosuchpage", headers={"Accept": "text/html,application/xhtml+xml"})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html") and "<h1>Not found</h1>" in page.text
    replay = httpx.get(url + f"/matches/{s.quick_match}/replay", headers={"Accept": "text/html"})
    assert replay.status_code == 404 and "is not public yet" in replay.text and "<title>Not found" in replay.text
    for path, accept in (("/api/v1/nosuch", "text/html"), ("/nosuchpage", "application/json")):
        r = httpx.get(url + path, headers={"Accept": accept})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    t = tabs(url)
    t.allowed.append("404")  # (Chromium logs the 404s asked for here)
    t.go("/nosuchpage")
    assert t.page.text_content("h1") == "Not found" and "/nosuchpage" in t.page.text_content("#error")
    assert t.page.title() == "Not found · Thirty-One arena"
    # Every page its own title.
    titles = {}
    for path in ("/", "/matches", "/bots/flip", f"/matches/{s.quick_match}", "/signin", "/signup"):
        t.go(path)
        titles[path] = t.page.title()
    assert len(set(titles.values())) == len(titles) and all(x.endswith("Thirty-One arena") for x in titles.values()), titles
    # A user with no bot is said to have none; the matches' last column has a header.
    t.go("/?user=eve")
    assert t.page.text_content("#empty") == "eve has no bot on this board. Every user's bots."
    t.go("/matches")
    assert t.page.text_content("#matches thead th:last-child") == "replay"
    # A match quicker than a tenth of a second is not "in 0.0 s".
    t.go(f"/matches/{s.quick_match}")
    assert t.page.text_content("#finished").endswith(" in <0.1 s")
    # The header keeps its height once signed in (as an admin too: one more link).
    out_height = _header_height(t)
    sign_in(t, "boss")
    assert _header_height(t) == out_height
    # The admin's versions: Disqualify only on one that can play; names whole; tracebacks' lines kept.
    t.go("/admin")
    t.page.wait_for_selector("#admin-versions")
    for row in t.page.query_selector_all("#admin-versions tbody tr"):
        st = row.query_selector(".status").text_content()
        assert (row.query_selector("button.disqualify") is not None) == (st in ("queued", "validating", "active")), st
    syntax_row = f"#admin-versions tr[data-version='{s.syntax}']"
    reason = t.page.query_selector(f"{syntax_row} td.reason")
    assert reason.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap" and reason.text_content() == TRACEBACK
    for width in (1280, 1000):
        t.page.set_viewport_size({"width": width, "height": 800})
        assert t.page.eval_on_selector(f"{syntax_row} a", "e => e.getClientRects().length") == 1, width  # one piece: unbroken
    t.page.set_viewport_size({"width": 1280, "height": 800})
