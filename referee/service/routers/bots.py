"""Bots and their versions: uploads, status, files (owner), withdrawal and reactivation (owner), public pages."""

from __future__ import annotations

import shutil
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from referee.ladder.errors import ArenaError, BadUpload, NotFound, TooLarge, TooMany
from referee.ladder.uploads import accept_upload, human_size
from referee.service.deps import OwnedVersion, SignedIn, Store, public
from referee.service.views import (
    HISTORY_POINTS,
    head_to_head,
    ranks,
    rating_history,
    version_private,
    version_public,
)

router = APIRouter(prefix="/api/v1", tags=["bots"])


async def _read_capped(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the upload is {human_size(int(declared))}; an upload may be at most {human_size(limit)}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"the upload is over {human_size(limit)}; an upload may be at most {human_size(limit)}")
            chunks.append(chunk)
    except ClientDisconnect:  # gone, or closed for sending too slowly: no one reads the answer
        raise BadUpload("the upload was cut off before its end") from None
    return b"".join(chunks)


@router.post("/versions", status_code=201)
async def upload(
    request: Request,
    user: SignedIn,
    store: Store,
    filename: Annotated[str, Query(max_length=200, description="The upload's file name: .tar.gz, .tgz, .tar, .zip or .py")],
    name: Annotated[str | None, Query(max_length=100, description="The bot's name (default: the manifest's, or the file's)")] = None,
) -> dict[str, Any]:
    """Upload a new version of one of the caller's bots (signed-in): the body is the archive
    or the Python file itself. It is queued for validation. Refused uploads count against a
    limit of their own per user (``refused_uploads_per_hour``)."""
    refused = request.app.state.refused_uploads
    key = f"user:{user.id}"
    refused.check(key)
    try:
        data = await _read_capped(request, store.settings.max_archive_bytes)
        if not data:
            raise BadUpload("the upload is empty: send the archive or the .py file as the request's body")
        # Unpacking and hashing take a while: on a worker thread, not the event loop's.
        v = await run_in_threadpool(accept_upload, store, user, filename, data, name=name)
    except ArenaError as e:
        if not isinstance(e, TooMany):
            refused.fail(key)
        raise
    return version_private(v)


@router.get("/versions")
def my_versions(user: SignedIn, store: Store) -> list[dict[str, Any]]:
    """The caller's versions, newest first, with their validation status (signed-in)."""
    by_version, _ = ranks(store)
    return [version_private(v, by_version.get(v.id)) for v in store.versions(owner_id=user.id)]


@router.get("/versions/{version_id}")
def my_version(v: OwnedVersion, store: Store) -> dict[str, Any]:
    """One of the caller's versions, with why it was refused if it was (owner)."""
    return version_private(v, ranks(store)[0].get(v.id))


@router.get("/versions/{version_id}/files")
def version_files(v: OwnedVersion, store: Store) -> list[dict[str, Any]]:
    """The files of one of the caller's versions (owner)."""
    root = store.folder / v.files
    return [
        {"path": str(p.relative_to(root)), "size": p.stat().st_size}
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    ]


@router.post("/versions/{version_id}/withdraw")
def withdraw(v: OwnedVersion, store: Store) -> dict[str, Any]:
    """Take one of the caller's versions off the ladder (owner); its history stays."""
    if v.status in ("rejected", "withdrawn", "disqualified"):
        raise ArenaError(f"version {v.label} is {v.status} already", code="conflict", status=409)
    store.set_status(v.id, "withdrawn", "withdrawn by its owner")
    return version_private(store.version(v.id))


@router.post("/versions/{version_id}/reactivate")
def reactivate(v: OwnedVersion, store: Store) -> dict[str, Any]:
    """Bring one of the caller's retired or withdrawn versions back onto the ladder (owner):
    it plays again with its history, and the bot's other active version retires, as after
    an upload. A rejected or disqualified version cannot come back (409)."""
    return version_private(store.reactivate(v.id), ranks(store)[0].get(v.id))


@router.delete("/versions/{version_id}")
def delete_rejected(v: OwnedVersion, store: Store) -> dict[str, Any]:
    """Delete one of the caller's rejected versions (owner): its entry and its files. It never
    played; its upload still counts toward the day's limit."""
    gone = store.delete_rejected(v.id)
    shutil.rmtree(store.folder / gone.files, ignore_errors=True)
    return {**version_private(gone), "deleted": True}


@router.get("/bots/{name}", dependencies=[Depends(public)])
def bot_page(name: str, store: Store) -> dict[str, Any]:
    """A bot's public page: its versions with their ratings and ranks, and the bot's rank:
    its best active version's (None while it has no ranked version) (public)."""
    versions = _versions_of(store, name)
    by_version, by_bot = ranks(store)
    return {"name": name, "owner": versions[0].owner, "rank": by_bot.get(name),
            "versions": [version_public(v, by_version.get(v.id)) for v in versions]}


def _versions_of(store: Store, name: str) -> list[Any]:
    versions = store.versions(bot=name)
    if not versions:
        raise NotFound(f"no bot named {name!r}")
    return versions


@router.get("/bots/{name}/ratings", dependencies=[Depends(public)])
def bot_ratings(
    name: str, store: Store,
    points: Annotated[int, Query(ge=2, le=5000, description="Most points per version, evenly spread")] = HISTORY_POINTS,
) -> dict[str, Any]:
    """A bot's rating history (public): each version's live (provisional) rating after each of
    its matches, as ``[match number, rating, low, high]`` (95%), oldest first."""
    return {"name": name, "versions": rating_history(store, _versions_of(store, name), points)}


@router.get("/bots/{name}/head-to-head", dependencies=[Depends(public)])
def bot_head_to_head(name: str, store: Store) -> dict[str, Any]:
    """How each of a bot's versions fared against each opponent version it met (public):
    matches, wins (placed above it), losses, draws (equal placings: nobody wins a shared
    first place) and the score (wins and half the draws, over the matches)."""
    return {"name": name, "rows": head_to_head(store, _versions_of(store, name))}
