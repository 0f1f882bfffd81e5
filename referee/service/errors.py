"""One error shape for the whole API: ``{"error": {"code": ..., "message": ...}}``.

The arena's errors carry their own status (:mod:`referee.ladder.errors`); any other
:class:`~referee.faults.RefereeError` reaching this edge is the server's own failure, a 500 as
for anything unexpected (the handler is on ``ArenaError`` rather than the root on purpose:
Starlette turns a handled exception after a streamed response started into a RuntimeError,
while an unhandled one reaches the server's log as itself). A bad field is
422, an unknown route 404 (as an HTML page to a browser that asked for a page outside
``/api/``), and anything unexpected 500 with a message that names no
internals (the stack trace goes to the server's log, never into a response).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from referee.ladder.errors import ArenaError


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The API's error body."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def wants_page(request: Request) -> bool:
    """Whether a 404 goes to a browser as a page: a path outside the API, asked for as HTML."""
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get("accept", "")


def install(app: FastAPI) -> None:
    """Register the handlers that map every error to the API's shape (and a 404 that a
    browser asked for as a page to an HTML page)."""
    from referee.service.routers.pages import not_found_page

    @app.exception_handler(ArenaError)
    async def _arena(request: Request, e: ArenaError) -> Response:
        if e.status == 404 and wants_page(request):
            return not_found_page(e.message)
        headers = {"WWW-Authenticate": "Bearer"} if e.status == 401 else None
        return error_response(e.status, e.code, e.message, headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return error_response(422, "bad_field", f"{where}: {first.get('msg', 'invalid value')}")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, e: HTTPException) -> Response:
        if e.status_code == 404 and wants_page(request):
            return not_found_page(f"There is no page {request.url.path} here.")
        code = {404: "not_found", 405: "method_not_allowed"}.get(e.status_code, "http_error")
        message = "no such route" if e.status_code == 404 else str(e.detail)
        return error_response(e.status_code, code, message)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, e: Exception) -> JSONResponse:
        # The server logs the traceback (Starlette re-raises it to uvicorn after this answer).
        return error_response(500, "internal", "the arena hit an internal error; the operator's log has the details")
