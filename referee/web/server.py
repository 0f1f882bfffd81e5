"""The local web viewer: a small HTTP server over a :class:`~referee.web.data.Source`, and
the same pages written out as static files that work offline.

The server is the standard library's :class:`http.server.ThreadingHTTPServer`: the viewer is
local and single-user, serves a handful of small JSON answers and three static files, and
needs no routing, templating or async framework, so no dependency is added. It binds to
127.0.0.1 unless told otherwise, answers only requests whose ``Host`` is the address it
listens on (a page elsewhere cannot reach it through DNS rebinding), and only reads: the
tournament's database is opened read-only, per request.

Endpoints (all ``GET``):

- ``/`` the page; ``/static/app.js``, ``/static/style.css`` its script and style;
- ``/api/standings`` ``standings --json``'s data plus ``history`` (rating per match) and
  ``signature`` (changes when the results do; the page polls this);
- ``/api/matches?bot=&sort=key|finished|duration|rounds&desc=0|1&page=1&per=50`` one page of
  the match list;
- ``/api/replay/ID?view=omni|SEAT`` one view of a match (ID: its log's file stem) as the
  replay model's steps and frames; 403 with ``"held_back": true`` while another rotation of
  its deal (the same cards) is still to be played.
"""

from __future__ import annotations

import json
import shutil
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from referee.analysis.decisions import VIEWER_SAMPLES, analyse_log, analysis_to_dict
from referee.faults import LogError
from referee.tournament.store import StoreError
from referee.web.data import HeldBack, NotFound, Page, Source, match_id, replay_views

#: The page's files, shipped in the package (package-data).
STATIC_FILES = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}


def static_text(name: str) -> str:
    """One of the page's files (``index.html``, ``app.js``, ``style.css``)."""
    return resources.files("referee.web").joinpath("static", name).read_text(encoding="utf-8")


def js_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, data: Any, status: int = 200) -> None:
        self._send(status, json.dumps(data, separators=(",", ":")).encode(), "application/json; charset=utf-8")

    def _error(self, status: HTTPStatus, message: str, **extra: Any) -> None:
        self._json({"error": message, **extra}, status)

    def do_GET(self) -> None:
        host = (self.headers.get("Host") or "").lower()
        if host not in self.server.hosts:
            self._error(HTTPStatus.FORBIDDEN, f"unexpected Host {host!r}")
            return
        url = urlsplit(self.path)
        path = unquote(url.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        src = self.server.source
        try:
            if path in ("/", "/index.html"):
                self._send(200, static_text("index.html").encode(), "text/html; charset=utf-8")
            elif path.startswith("/static/") and path[8:] in STATIC_FILES:
                name = path[8:]
                self._send(200, static_text(name).encode(), STATIC_FILES[name])
            elif path == "/api/standings":
                self._json(src.standings(wait=False))
            elif path == "/api/matches":
                page = Page(
                    bot=query.get("bot") or None,
                    sort=query.get("sort", "key"),
                    desc=query.get("desc") in ("1", "true"),
                    page=_int(query.get("page"), 1),
                    per=_int(query.get("per"), 50),
                )
                self._json(src.matches(page))
            elif path.startswith("/api/replay/"):
                mid = path[len("/api/replay/"):]
                self._json(src.replay(mid, query.get("view", "omni"), analysis=query.get("analysis") in ("1", "true")))
            else:
                self._error(HTTPStatus.NOT_FOUND, f"no such page: {path}")
        except NotFound as e:
            self._error(HTTPStatus.NOT_FOUND, str(e))
        except HeldBack as e:
            # Not an error of the request: the replay exists and will be shown later.
            self._error(HTTPStatus.FORBIDDEN, str(e), held_back=True)
        except LogError as e:
            # The log is at fault, not the server: the message names its line.
            self._error(HTTPStatus.UNPROCESSABLE_ENTITY, str(e))
        except StoreError as e:
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, str(e))
        except (BrokenPipeError, ConnectionResetError):
            pass


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


class ViewerServer(ThreadingHTTPServer):
    """The viewer's HTTP server over one folder."""

    daemon_threads = True

    def __init__(self, source: Source, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> None:
        super().__init__((host, port), _Handler)
        self.source = source
        self.verbose = verbose
        self.port = int(self.server_address[1])
        names = {host, "localhost", "127.0.0.1", "[::1]"} if host in ("127.0.0.1", "localhost", "::1") else {host}
        if host in ("0.0.0.0", "::", ""):
            names = set()  # listening everywhere: any Host (the organiser asked for it)
        self.hosts = {f"{n}:{self.port}" for n in names}
        if not names:
            self.hosts = _Anything()

    @property
    def url(self) -> str:
        """The page's address."""
        host = self.server_address[0]
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else str(host)
        return f"http://{shown}:{self.port}/"

    def serve_in_thread(self) -> threading.Thread:
        """Serve from a daemon thread (for tests); stop with :meth:`shutdown`."""
        t = threading.Thread(target=self.serve_forever, name="thirtyone-web", daemon=True)
        t.start()
        return t


class _Anything(set[str]):
    def __contains__(self, item: object) -> bool:
        return True


# ---------------------------------------------------------------- static pages


def page_html(data_scripts: str, *, inline: bool) -> str:
    """The page with its data scripts; its style and script inline (one file) or linked."""
    html = static_text("index.html")
    if inline:
        html = html.replace('<link rel="stylesheet" href="static/style.css">', "<style>\n" + static_text("style.css") + "\n</style>")
        script = static_text("app.js").replace("</", "<\\/")
        html = html.replace('<script src="static/app.js"></script>', data_scripts + "<script>\n" + script + "\n</script>")
    else:
        html = html.replace('<script src="static/app.js"></script>', data_scripts + '<script src="static/app.js"></script>')
    return html


def replay_html(log: Path, *, analyse: bool = False, samples: int = VIEWER_SAMPLES) -> str:
    """One self-contained page (style, script and data inline) replaying one match log
    (with ``analyse``, each decision judged beside its step)."""
    mid = match_id(log)
    doc = analysis_to_dict(analyse_log(log, samples=samples)) if analyse else None
    views = replay_views(log, doc)
    for v in views.values():
        v["id"] = mid
    data = {"mode": "single", "match": mid, "replays": {mid: views}}
    return page_html(f"<script>window.THIRTYONE_DATA = {js_json(data)};</script>\n", inline=True)


def export_site(source: Source, out: Path, *, on_match: Any = None) -> int:
    """Write the whole site into ``out`` as static files that work from disk, offline.

    Data are JavaScript files loaded by ``<script>`` (a browser refuses ``fetch`` of
    ``file://``): ``data/site.js`` (standings, history, every match) and one
    ``data/replays/ID.js`` per match with all its views. Returns the number of matches.
    """
    out = Path(out)
    (out / "static").mkdir(parents=True, exist_ok=True)
    (out / "data" / "replays").mkdir(parents=True, exist_ok=True)
    for name in STATIC_FILES:
        (out / "static" / name).write_text(static_text(name), encoding="utf-8")
    matches = source.all_matches()
    site = {"mode": "static", "standings": source.standings(), "matches": matches}
    (out / "data" / "site.js").write_text(f"window.THIRTYONE_DATA = {js_json(site)};\n", encoding="utf-8")
    written = 0
    for m in matches:
        mid = m["id"]
        try:
            views = replay_views(source.log_path(mid))
        except (NotFound, HeldBack, LogError):
            # A match held back is in the list (its result), without its replay: the page
            # says why (``held_back``).
            continue
        for v in views.values():
            v["id"] = mid
        js = f"window.THIRTYONE_REPLAY({js_json(mid)}, {js_json(views)});\n"
        (out / "data" / "replays" / f"{mid}.js").write_text(js, encoding="utf-8")
        written += 1
        if on_match is not None:
            on_match(written, len(matches))
    (out / "index.html").write_text(page_html('<script src="data/site.js"></script>\n', inline=False), encoding="utf-8")
    return written


def remove_export(out: Path) -> None:
    """Remove an earlier export's files (``index.html``, ``static/``, ``data/``) only."""
    for sub in ("static", "data"):
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)
    if (out / "index.html").is_file():
        (out / "index.html").unlink()


__all__ = ["STATIC_FILES", "ViewerServer", "export_site", "remove_export", "replay_html", "static_text"]
