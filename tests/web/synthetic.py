"""A synthetic tournament store: many finished matches without playing them (and without
logs), for the match list's and the standings' speed (benchmarks/bench_web.py) and the
pagination tests."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

from referee.tournament.schedule import build_schedule, table_key
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import DB_NAME, BotEntry, TournamentStore, now
from referee.tournament.tasks import log_name


def synthetic_store(folder: Path, matches: int = 10_000, bots: int = 8, table_size: int = 4, seed: int = 1) -> Path:
    """A tournament folder whose database holds ``matches`` finished matches (random
    placings, a fault now and then), the first ones of a real schedule."""
    names = [f"bot{i:02d}" for i in range(bots)]
    tables = len(build_schedule(names, table_size, 1, seed)) // table_size
    games = -(-matches // (tables * table_size))
    settings = TournamentSettings(table_size=table_size, games=games, seed=seed, sandbox="off")
    with TournamentStore.create(folder, settings) as store:
        for n in names:
            store.add_bot(BotEntry(n, "sample", n, ".", n, None, n, "1.0", "synthetic", now()))
    rng = random.Random(seed)
    rows = []
    for m in build_schedule(names, table_size, games, seed)[:matches]:
        placings = list(range(1, table_size + 1))
        rng.shuffle(placings)
        seats = []
        for s, name in enumerate(m.seats):
            faults = {"timeout": 1} if rng.random() < 0.02 else {}
            seats.append({"bot": name, "placing": placings[s], "lives_lost": rng.randint(1, 4), "rounds": 8,
                          "faults": faults, "forfeited": False, "decisions": 60, "total_latency_us": 90_000,
                          "max_latency_us": 4_000})
        winner = placings.index(1)
        result = {"placings": placings, "winner": winner, "reason": "last_player", "rounds": rng.randint(4, 14), "seats": seats}
        rows.append((m.key, table_key(m.table), m.deal, m.rotation, str(m.seed), json.dumps(list(m.seats)), json.dumps(result),
                     f"logs/{log_name(m.key)}", now(), round(rng.uniform(0.5, 3.0), 3)))
    conn = sqlite3.connect(folder / DB_NAME, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO matches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return folder
