"""The ladder's public face: the leaderboard, its state, the runtimes a bot may use."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Response

from referee.ladder import board
from referee.ladder.uploads import MANIFEST, RUNTIMES, STATIC_BINARY
from referee.service.deps import Store, public

router = APIRouter(prefix="/api/v1", tags=["ladder"], dependencies=[Depends(public)])


@router.get("/standings", response_class=Response, responses={200: {"content": {"application/json": {}}}})
def leaderboard(store: Store) -> Response:
    """The leaderboard, best first (public): the official refit's figures once it has run,
    the live ratings beside them. Served as the ladder keeps it built, when current."""
    return Response(board.body(store), media_type="application/json")


@router.get("/ladder")
def ladder_state(store: Store) -> dict[str, Any]:
    """Whether the ladder plays, how many matches it has played, and its settings (public)."""
    return {
        "paused": store.paused,
        "matches": store.counts(),
        "settings": dict(store.settings.describe()),
        # The same, as arena.toml's tables: what 'remote submit --check' validates with.
        "config": store.settings.to_dict(),
    }


@router.get("/runtimes")
def runtimes() -> dict[str, Any]:
    """What a bot may run on, and the manifest it needs (public)."""
    return {
        "manifest": MANIFEST,
        "runtimes": [{"command": k, "description": v} for k, v in RUNTIMES.items()] + [{"command": "./FILE", "description": STATIC_BINARY}],
    }
