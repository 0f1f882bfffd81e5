"""Admin: users (disable, enable, invites), versions (disqualify, reference), the ladder (pause, resume, settings)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query

from referee.ladder.accounts import new_invite
from referee.ladder.errors import NotFound
from referee.ladder.store import STATUSES
from referee.service.deps import MAX_ID, Admin, Store, admin
from referee.service.views import version_admin, version_private

router = APIRouter(prefix="/api/v1/admin", tags=["admin"], dependencies=[Depends(admin)])


@router.get("/users")
def users(store: Store) -> list[dict[str, Any]]:
    """Every user (admin)."""
    return [{"id": u.id, "name": u.name, "admin": u.admin, "disabled": u.disabled, "created_at": u.created_at} for u in store.users()]


@router.post("/users/{name}/disable")
def disable(name: str, store: Store, me: Admin) -> dict[str, Any]:
    """Disable a user: their tokens and sessions stop working, their versions stop playing (admin)."""
    u = store.user_named(name)
    store.set_disabled(u.id, True)
    for v in store.versions(owner_id=u.id, status=("active", "queued")):
        store.set_status(v.id, "withdrawn", "its user was disabled")
    return {"name": u.name, "disabled": True}


@router.post("/users/{name}/enable")
def enable(name: str, store: Store) -> dict[str, Any]:
    """Enable a disabled user again (admin)."""
    u = store.user_named(name)
    store.set_disabled(u.id, False)
    return {"name": u.name, "disabled": False}


@router.post("/invites", status_code=201)
def invite(store: Store) -> dict[str, Any]:
    """A new invite code for the web sign-up, shown this once (admin)."""
    return {"code": new_invite(store)}


@router.get("/versions")
def versions(
    store: Store,
    status: Annotated[str | None, Query(pattern=f"^({'|'.join(STATUSES)})$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID, description="Only versions of lower ids (the next page)")] = None,
) -> list[dict[str, Any]]:
    """Every version, newest first, with its owner, status and why it stopped (admin)."""
    return [version_admin(v) for v in store.versions(status=(status,) if status else (), limit=limit, before=before)]


@router.post("/versions/{version_id}/disqualify")
def disqualify(version_id: Annotated[int, Path(ge=1, le=MAX_ID)], store: Store, reason: Annotated[str, Body(embed=True, max_length=500)] = "disqualified by an admin") -> dict[str, Any]:
    """Disqualify a version: it plays no more; tables it sits at score it as absent (admin)."""
    try:
        v = store.version(version_id)
    except NotFound:
        raise NotFound(f"no version {version_id}") from None
    store.set_status(v.id, "disqualified", reason)
    return version_private(store.version(v.id))


@router.post("/versions/{version_id}/reference")
def mark_reference(
    version_id: Annotated[int, Path(ge=1, le=MAX_ID)], store: Store, reference: Annotated[bool, Body(embed=True)] = True
) -> dict[str, Any]:
    """Mark a version a reference bot, or not (``{"reference": false}``): the ladder caps a
    reference's share of tables at the arena's ``reference_share_pct`` of a fair share (admin)."""
    store.set_reference(version_id, reference)
    return version_admin(store.version(version_id))


@router.post("/ladder/pause")
def pause(store: Store) -> dict[str, Any]:
    """Pause the ladder: matches in play finish, no new table starts (admin)."""
    store.set_meta("paused", "1")
    return {"paused": True}


@router.post("/ladder/resume")
def resume(store: Store) -> dict[str, Any]:
    """Resume the ladder (admin)."""
    store.set_meta("paused", "0")
    return {"paused": False}


@router.get("/settings")
def settings(store: Store) -> dict[str, Any]:
    """The arena's settings, read-only (admin): they are edited in the folder's arena.toml."""
    return {"settings": store.settings.to_dict(), "described": dict(store.settings.describe())}
