"""Web viewer benchmark: the match list and the standings over a store of 10,000 matches.

Run ``python benchmarks/bench_web.py`` (about a minute on two cores). It writes a synthetic
tournament (``tests/web/synthetic.py``: 8 bots, tables of 4, the first 10,000 matches of a
real schedule, random placings; no logs) and times, through a running ``thirtyone serve``
server over HTTP (``--matches`` to change the size):

- ``/api/matches`` pages: the first, a middle and the last page; filtered by a bot; sorted by
  rounds (a JSON field) descending; each the median of ``--reps`` requests;
- ``/api/standings``: the first request (ratings over every match, eight passes, plus the
  rating history) and a repeated one (cached until the results change: what the page's
  polling costs);
- the static export's data for the match list (every row once).

It prints a table and never asserts: the aim is a page in well under 100 ms at 10,000 matches.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.cli.standings_view import standings_json
from referee.tournament.standings import tournament_rating_history, tournament_standings
from referee.tournament.store import TournamentStore
from referee.web.data import Page, Source
from referee.web.server import ViewerServer
from tests.web.synthetic import synthetic_store


def _get(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        body = r.read()
    return time.perf_counter() - started, len(body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--matches", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "t"
        t0 = time.perf_counter()
        synthetic_store(folder, args.matches)
        print(f"synthetic store of {args.matches} matches written in {time.perf_counter() - t0:.1f} s "
              f"({(folder / 'tournament.db').stat().st_size / 1e6:.1f} MB)")
        source = Source(folder, standings_json)
        server = ViewerServer(source, "127.0.0.1", 0)
        server.serve_in_thread()
        base = server.url
        try:
            rows: list[tuple[str, float, int]] = []
            first, size = _get(base + "api/standings")
            rows.append(("standings, first request (ratings + history)", first, size))
            again = [_get(base + "api/standings") for _ in range(args.reps)]
            rows.append(("standings, repeated (cached; the page's poll)", statistics.median(t for t, _ in again), again[0][1]))
            pages = -(-args.matches // 50)
            queries = {
                "matches, page 1 (50 a page)": "api/matches?page=1&per=50",
                f"matches, page {pages // 2} (middle)": f"api/matches?page={pages // 2}&per=50",
                f"matches, page {pages} (last)": f"api/matches?page={pages}&per=50",
                "matches, filtered by one bot": "api/matches?bot=bot03&page=3&per=50",
                "matches, sorted by rounds, descending": "api/matches?sort=rounds&desc=1&page=1&per=50",
                "matches, filtered + sorted, last page": "api/matches?bot=bot05&sort=duration&desc=1&page=100&per=50",
            }
            for label, q in queries.items():
                times = [_get(base + q) for _ in range(args.reps)]
                rows.append((label, statistics.median(t for t, _ in times), times[0][1]))
            with TournamentStore.open(folder, readonly=True) as store:
                t0 = time.perf_counter()
                tournament_standings(store)
                rows.append(("  of which tournament_standings (8 rating passes)", time.perf_counter() - t0, 0))
                t0 = time.perf_counter()
                tournament_rating_history(store)
                rows.append(("  of which tournament_rating_history (1 pass)", time.perf_counter() - t0, 0))
            t0 = time.perf_counter()
            every = source.all_matches()
            rows.append((f"every match once, for the export ({len(every)} rows)", time.perf_counter() - t0, 0))
            t0 = time.perf_counter()
            source.matches(Page(per=50))
            rows.append(("matches page 1, in process (no HTTP)", time.perf_counter() - t0, 0))
        finally:
            server.shutdown()
            server.server_close()
    width = max(len(r[0]) for r in rows)
    print(f"{'request':<{width}}  {'time':>10}  {'bytes':>9}")
    for label, t, size in rows:
        print(f"{label:<{width}}  {t * 1000:>8.1f} ms  {size if size else '':>9}")


if __name__ == "__main__":
    main()
