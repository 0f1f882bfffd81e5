"""The arena's HTTP service: an ASGI app (FastAPI) over :mod:`referee.ladder`, served by uvicorn.

ASGI only: routes parse, check who may call (a dependency beside each route, see
:mod:`referee.service.deps`), call the ladder's modules and shape the answer. The app's
lifespan owns the ladder process (:mod:`referee.ladder.loop`).
"""

from referee.service.app import ServiceConfig, create_app

__all__ = ["ServiceConfig", "create_app"]
