"""The arena's web pages: one page shell (``static/arena.html`` and ``arena.js``) for every
path below, and the local viewer's replay page for a match whose deal is finished.

The pages hold no data: the script reads the JSON API with the browser's session cookie.
Every page is served under a strict Content-Security-Policy (scripts and styles from this
site only, no inline script, no framing), so a name that slipped markup past the checks
still could not run.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import HTMLResponse

from referee.analysis.decisions import cached_analysis
from referee.ladder.errors import NotFound
from referee.service.deps import Store
from referee.web.data import replay_views
from referee.web.server import static_text as viewer_text

router = APIRouter(include_in_schema=False)

#: The headers of every page and page file.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
#: The pages' own files, and the viewer's the replay page reuses.
TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "html": "text/html; charset=utf-8"}
STATIC = ("arena.js", "arena.css")
VIEWER_STATIC = ("app.js", "style.css")
#: The paths served by the page shell (the script picks the page from the path).
SHELL_PATHS = ("/", "/signin", "/signup", "/me", "/me/output/{key}", "/matches", "/matches/{key}", "/bots/{name}", "/admin")


def static_text(name: str) -> str:
    """One of the pages' files, shipped in the package."""
    return resources.files("referee.service").joinpath("static", name).read_text(encoding="utf-8")


def _send(text: str, ext: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type=TYPES[ext], headers=SECURITY_HEADERS)


def not_found_page(message: str) -> Response:
    """A 404 for a browser: the page shell with the header, its own title, and the message
    drawn in (the script then only fills in the header)."""
    body = (f'<main id="app" data-status="404"><h1>Not found</h1><p class="bad" id="error">{html.escape(message)}</p>'
            '<p><a href="/">The leaderboard</a> · <a href="/matches">every match</a></p></main>')
    text = static_text("arena.html").replace("<title>Thirty-One arena</title>", "<title>Not found · Thirty-One arena</title>")
    return _send(text.replace('<main id="app"><p class="muted">Loading…</p></main>', body), "html", 404)


def shell() -> Response:
    """The page shell (the same for every page)."""
    return _send(static_text("arena.html"), "html")


for _path in SHELL_PATHS:
    router.add_api_route(_path, shell, methods=["GET"], response_class=HTMLResponse)


@router.get("/static/{name}")
def page_file(name: str) -> Response:
    """The pages' script and style."""
    if name not in STATIC:
        raise NotFound(f"no file {name!r}")
    return _send(static_text(name), name.rsplit(".", 1)[1])


@router.get("/viewer/static/{name}")
def viewer_file(name: str) -> Response:
    """The local viewer's script and style, for the replay page."""
    if name not in VIEWER_STATIC:
        raise NotFound(f"no file {name!r}")
    return _send(viewer_text(name), name.rsplit(".", 1)[1])


def _public_log(store: Any, key: str) -> Any:
    m = store.match(key)
    if not (m.deal_done and m.status == "done" and m.log_path):
        raise NotFound(f"the replay of match {key} is not public yet: every rotation of its deal must finish first")
    return store.folder / m.log_path


@router.get("/matches/{key}/replay")
def replay_page(key: str, store: Store, analysis: bool = False) -> Response:
    """The local viewer's replay page for one finished match (its data in a script of its
    own); with ``?analysis=1``, each decision judged beside its step (docs/analysis.md)."""
    _public_log(store, key)
    html = viewer_text("index.html").replace('href="static/', 'href="/viewer/static/')
    q = "?analysis=1" if analysis else ""
    data = f'<script src="/matches/{key}/replay.js{q}"></script>\n<script src="/viewer/static/app.js"></script>'
    html = html.replace('<script src="static/app.js"></script>', data)
    html = html.replace('<span class="brand">', '<a class="brand" href="/">').replace("arena</span>", "arena</a>", 1)
    other = (
        f' · <a id="analysis-link" href="/matches/{key}/replay">without the analysis</a>'
        if analysis
        else f' · <a id="analysis-link" href="/matches/{key}/replay?analysis=1">with each decision analysed</a>'
    )
    html = html.replace('<span id="source"></span>', f'<a id="source" href="/matches/{key}">← match {key}: seats, seed, log</a>{other}')
    return _send(html, "html")


@router.get("/matches/{key}/replay.js")
def replay_data(key: str, store: Store, analysis: bool = False) -> Response:
    """A finished match's replay, every view, as the viewer's single-match data script (with
    ``?analysis=1``, the decisions judged: made once, then kept beside the log)."""
    log = _public_log(store, key)
    views = replay_views(log, cached_analysis(log) if analysis else None)
    for v in views.values():
        v["id"] = key
    data = {"mode": "single", "match": key, "replays": {key: views}}
    body = json.dumps(data, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")
    return _send(f"window.THIRTYONE_DATA = {body};\n", "js")
