"""Matches: the public list and pages, logs once a deal is finished, and a bot's output (its owner's)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import FileResponse

from referee.ladder.errors import NotFound
from referee.ladder.paths import as_owner_sees
from referee.service.deps import MAX_ID, OwnSeats, Store, public
from referee.service.views import match_view
from referee.tournament.tasks import output_dir_of, output_file_name

router = APIRouter(prefix="/api/v1", tags=["matches"])
#: Most of one bot's output a response carries (the file keeps up to 1 MiB).
OUTPUT_BYTES = 256 * 1024


@router.get("/matches", dependencies=[Depends(public)])
def list_matches(
    store: Store,
    bot: Annotated[str | None, Query(max_length=100)] = None,
    version: Annotated[int | None, Query(ge=1, le=MAX_ID, description="Only this version's matches")] = None,
    status: Annotated[str | None, Query(pattern="^(pending|done|void)$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    before: Annotated[str | None, Query(max_length=40)] = None,
) -> list[dict[str, Any]]:
    """Matches, newest first (public): of a bot's versions with ``bot``, of one version with
    ``version``; page with ``before``."""
    ids: list[int] = []
    if version is not None:
        v = store.version(version)
        if bot is not None and v.bot != bot:
            raise NotFound(f"no version {version} of bot {bot!r}")
        ids = [v.id]
    elif bot is not None:
        ids = [v.id for v in store.versions(bot=bot)]
        if not ids:
            raise NotFound(f"no bot named {bot!r}")
    rows = store.matches(version_ids=ids, status=status, limit=limit, before=before)
    cache = {}
    for m in rows:
        for vid in m.seats:
            if vid not in cache:
                cache[vid] = store.version(vid)
    return [match_view(store, m, cache) for m in rows]


@router.get("/matches/{key}", dependencies=[Depends(public)])
def one_match(key: str, store: Store) -> dict[str, Any]:
    """One match (public): its seats, result, the seed's commitment, and the seed once its
    deal is finished."""
    return match_view(store, store.match(key))


@router.get("/matches/{key}/log", dependencies=[Depends(public)], response_model=None)
def match_log(key: str, store: Store) -> FileResponse:
    """The match's log (public), once every rotation of its deal is finished (404 before)."""
    m = store.match(key)
    if not (m.deal_done and m.status == "done" and m.log_path):
        raise NotFound(f"the log of match {key} is not public yet: every rotation of its deal must finish first")
    return FileResponse(Path(store.folder) / m.log_path, media_type="application/x-ndjson", filename=f"{key}.jsonl")


@router.get("/matches/{key}/output")
def match_output(found: OwnSeats, store: Store) -> dict[str, Any]:
    """What the caller's bots wrote (stdout and stderr) in this match (owner of a seat; 404 to others).

    It is kept when the match ends: a match still ``pending`` (or ``void``) has none yet, and
    its ``status`` says so."""
    m, seats = found
    folder = output_dir_of(store.folder, m.key)
    out = []
    for s in seats:
        v = store.version(m.seats[s])
        path = folder / output_file_name(s, v.label)
        text = ""
        if path.is_file():
            with open(path, "rb") as f:
                text = f.read(OUTPUT_BYTES).decode("utf-8", "replace")
            # Tracebacks name the server's folders: shown relative to the bot's own.
            text = as_owner_sees(text, store.folder / v.files, store.folder)
        out.append({"seat": s, "version": v.id, "label": v.label, "output": text})
    return {"key": m.key, "status": m.status, "seats": out}
