"""The arena's errors: each says what went wrong and carries the API's code and status.

One root, :class:`ArenaError`, so that the command line and the service each map errors in one
place. The status follows the HTTP meaning (401 no or bad token, 404 not found or not yours,
413 too large, 422 a bad field, 429 too many); the command line prints the message alone.
"""

from __future__ import annotations

from referee.faults import RefereeError


class ArenaError(RefereeError):
    """An arena request or command that cannot be done; the message says why and what to do."""

    code = "bad_request"
    status = 400

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status


class NotSignedIn(ArenaError):
    """No credentials, or credentials that are wrong, revoked or of a disabled user."""

    code = "unauthorized"
    status = 401


class NotFound(ArenaError):
    """No such thing, or one the caller may not see (the same answer, so nothing leaks)."""

    code = "not_found"
    status = 404


class Forbidden(ArenaError):
    """Signed in, but this needs an admin."""

    code = "forbidden"
    status = 403


class TooLarge(ArenaError):
    """An upload over a size limit."""

    code = "too_large"
    status = 413


class BadUpload(ArenaError):
    """An upload refused for its content (a link, a path leaving the folder, a bad manifest)."""

    code = "bad_upload"
    status = 422


class TooMany(ArenaError):
    """Over a rate or daily limit."""

    code = "too_many"
    status = 429


class Conflict(ArenaError):
    """The request clashes with what exists (a name taken by another user)."""

    code = "conflict"
    status = 409


class Busy(ArenaError):
    """The arena is at a limit of work it does at once (hashing passwords); try again soon."""

    code = "busy"
    status = 503
