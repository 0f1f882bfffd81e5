"""``/api/v1/me``: the caller's account and tokens."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from referee.ladder.accounts import hash_secret, new_token
from referee.ladder.errors import Conflict
from referee.service.deps import SignedIn, Store

router = APIRouter(prefix="/api/v1", tags=["accounts"])


@router.get("/me")
def me(user: SignedIn) -> dict[str, Any]:
    """Who the caller is (signed-in)."""
    return {"id": user.id, "name": user.name, "admin": user.admin, "created_at": user.created_at}


@router.post("/me/tokens", status_code=201)
def make_token(user: SignedIn, store: Store) -> dict[str, Any]:
    """A new API token for the caller (signed-in), shown this once."""
    return {"token": new_token(store, user)}


@router.delete("/me/token")
def revoke_own_token(user: SignedIn, request: Request, store: Store) -> dict[str, Any]:
    """Revoke the API token this request carries (signed-in): ``thirtyone remote logout``."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Conflict("this request carries no API token (a web session signs out with DELETE /api/v1/session)")
    store.revoke_token(hash_secret(token.strip()))
    return {"revoked": True, "user": user.name}
