"""``create_app``: the arena's ASGI app, whose lifespan owns the ladder process.

The ladder (:mod:`referee.ladder.loop`) runs as a child process of the service, in its
process group: it is the only writer of results, and its workers and bots are its own
children. The lifespan starts it, restarts it if it dies, and at shutdown stops it with
SIGTERM (SIGKILL after a grace), so that stopping the service stops everything. If the
service itself is killed, the ladder sees its parent gone and stops on its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from fastapi import FastAPI
from fastapi.routing import APIRoute

from referee import __version__
from referee.ladder.accounts import FailureLimiter
from referee.ladder.settings import load
from referee.ladder.store import ArenaStore
from referee.service import errors
from referee.service.door import Door, DoorMiddleware
from referee.service.routers import accounts, admin, bots, ladder, matches, pages, session

#: The API's routers, one per area.
ROUTERS = (accounts.router, session.router, bots.router, ladder.router, matches.router, admin.router)
#: Seconds the ladder gets to stop after SIGTERM before it is killed.
LADDER_STOP_S = 10.0


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """What ``arena serve`` serves: the arena folder, and how its ladder plays."""

    folder: Path
    jobs: int = 1
    ray: str | None = None
    #: Whether the lifespan runs the ladder (tests of the API alone may leave it out).
    ladder: bool = True
    #: How the port is guarded: the host names answered, the proxies believed, the limits.
    door: Door = field(default_factory=Door)


class LadderProcess:
    """The ladder's child process, kept running while the service is up."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def _spawn(self) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "referee.ladder.loop", str(self.config.folder), "-j", str(self.config.jobs),
                "--watch-parent", str(os.getpid())]
        if self.config.ray:
            argv += ["--ray", self.config.ray]
        return subprocess.Popen(argv)

    def start(self) -> None:
        """Start the ladder, and a thread that restarts it should it die."""
        self.proc = self._spawn()
        self._thread = threading.Thread(target=self._supervise, name="ladder-supervisor", daemon=True)
        self._thread.start()

    def _supervise(self) -> None:
        while not self._stopping.is_set():
            assert self.proc is not None
            code = self.proc.wait()
            if self._stopping.is_set():
                return
            print(f"arena: the ladder stopped (exit {code}); it starts again in 2 s", file=sys.stderr, flush=True)
            if self._stopping.wait(2.0):
                return
            self.proc = self._spawn()

    def stop(self) -> None:
        """SIGTERM, a grace, then SIGKILL: the ladder stops its workers and bots itself."""
        self._stopping.set()
        p = self.proc
        if p is None or p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(LADDER_STOP_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def api_routes() -> list[APIRoute]:
    """Every route of the API, with its full path (a test walks them all)."""
    return [r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute)]


def create_app(config: ServiceConfig) -> FastAPI:
    """The arena's app over ``config.folder`` (see the module doc)."""
    folder = config.folder.resolve()
    settings = load(folder)
    ArenaStore.open(folder, settings=settings).close()  # a bad folder fails now, not at the first request
    ladder_proc = LadderProcess(replace(config, folder=folder))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if config.ladder:
            ladder_proc.start()
        try:
            yield
        finally:
            ladder_proc.stop()

    app = FastAPI(
        title="Thirty-One arena",
        version=__version__,
        summary="Bots for the card game 31 on a ladder that never stops: upload, validate, play, rate, replay.",
        lifespan=lifespan,
        # No browsable docs page: FastAPI's loads its script from a CDN, outside the pages'
        # Content-Security-Policy. The OpenAPI document stays at /openapi.json.
        docs_url=None,
        redoc_url=None,
    )
    app.state.folder = folder
    app.state.settings = settings
    app.state.limiter = FailureLimiter(settings.failed_logins_per_minute, 60.0)
    app.state.signups = FailureLimiter(settings.signups_per_hour, 3600.0, "too many sign-ups from this address")
    app.state.refused_uploads = FailureLimiter(
        settings.refused_uploads_per_hour, 3600.0, "too many of your uploads were refused in the last hour; fix the bot, then upload it again"
    )
    app.state.ladder = ladder_proc
    errors.install(app)
    app.add_middleware(DoorMiddleware, hosts=config.door.allowed_hosts(), upload_limit=settings.max_archive_bytes)
    for r in ROUTERS:
        app.include_router(r)
    app.include_router(pages.router)  # the web pages: no part of the API's schema
    return app
