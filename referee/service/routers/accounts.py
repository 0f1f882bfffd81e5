"""``/api/v1/me``: the caller's account and tokens."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from referee.ladder.accounts import new_token
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
