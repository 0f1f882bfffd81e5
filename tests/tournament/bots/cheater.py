"""A cheating bot for the sandbox's end-to-end test (tests/tournament/test_cheater.py).

It plays like the ``threshold`` sample bot, except when it can read the log of its own match
in progress. Then it knows every hand and the stock's order, and plays on that knowledge:
it knocks only when no opponent can catch it on their last turn, never when one is ahead,
and draws from whichever pile actually improves its hand more.

To find the log it searches everything it can see, once per match (``on_match_start``):

1. the files its ancestor processes hold open (the referee writes the log as it plays);
2. folders where it found logs before (the process plays many matches);
3. likely places: its working folder, its ancestors' working folders and the folders named
   on their command lines, ``$TMPDIR``, ``/tmp``, ``$HOME``;
4. once per process, the whole file system it can see (not ``/proc``, ``/sys``, ``/dev``).

With ``--search-root DIR`` steps 2 to 4 stay inside ``DIR`` (its whole tree instead of the
whole file system): unsandboxed, the test gives it the tournaments' own folder, so that what
other programs leave in ``/tmp`` or elsewhere on the machine plays no part. A file it cannot
read as a log is skipped, whatever is wrong with it.

A log is its match's when the header's match id is its match id. At each decision it re-reads
that file and re-plays it through the game model (:func:`referee.log.walk_log`), waiting a
little for the referee to flush the last lines, and uses the result only if it agrees with
what the referee shows it (hand, discard pile, stock size, round, turn).

``--honest`` turns the search off: it then plays exactly like ``threshold``.
Each match prints one line to stderr: ``CHEATER found=<path or none>``.

Run it as ``python tests/tournament/bots/cheater.py [--honest] [--search-root DIR]`` (an SDK bot: ``--address``
etc. as for every SDK bot).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sdk
from referee.faults import LogError
from referee.game import Card, Match, best_discard, hand_value
from referee.log import LogWatcher, Position, walk_log
from sample_bots.threshold import ThresholdBot

#: Folders never searched (kernel file systems: endless and never hold a log).
SKIP_ROOTS = frozenset({"/proc", "/sys", "/dev"})
#: Folder names never searched (large, and no referee writes its logs there).
SKIP_NAMES = frozenset({".git", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"})
#: Seconds the search of one match may take; the first match of a process also walks "/".
SEARCH_S = 0.3
FIRST_SEARCH_S = 2.0
#: Seconds a decision waits for the referee to flush the log up to the current decision.
CATCH_UP_S = 0.08

#: Per process: file -> its header's match id ("" for no readable header), and where logs were.
_headers: dict[str, str] = {}
_log_roots: list[str] = []
_walked_root = False
#: Set by ``--search-root``: the one folder searched (besides the ancestors' open files).
_search_root: str | None = None


# ---------------------------------------------------------------- finding the log


def header_match_id(path: str) -> str:
    """The match id in a file's first line if it is a match log header, else ``""`` (cached)."""
    if path in _headers:
        return _headers[path]
    mid = ""
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline(65536)
        header = json.loads(first).get("header")
        if isinstance(header, dict):
            mid = str(header.get("matchId", header.get("match_id", "")))
    except (OSError, ValueError, AttributeError):
        mid = ""
    if mid:  # an empty file may become a log later: only cache real headers
        _headers[path] = mid
    return mid


def is_finished(path: str) -> bool:
    """Whether a log ends with its footer (the match is over)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            lines = f.read().splitlines()
    except OSError:
        return False
    return bool(lines) and lines[-1].startswith(b'{"footer"')


def _ancestors() -> list[int]:
    """This process's ancestors' pids, nearest first (those visible in /proc)."""
    out: list[int] = []
    pid = os.getppid()
    while pid > 1 and pid not in out:
        out.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def _open_logs() -> Iterator[str]:
    """``*.jsonl`` files the ancestor processes hold open."""
    for pid in _ancestors():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.endswith(".jsonl") and os.path.isfile(target):
                yield target


def _likely_roots() -> list[str]:
    """Folders worth searching before the whole file system."""
    roots = [*_log_roots, os.getcwd()]
    for pid in _ancestors():
        try:
            roots.append(os.readlink(f"/proc/{pid}/cwd"))
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for w in words:
            word = w.decode(errors="replace")
            if word.startswith("/") and os.path.isdir(word) and word != "/":
                roots.append(word)
    roots += [os.environ.get("TMPDIR", ""), "/tmp", os.environ.get("HOME", "")]
    found = [r for r in dict.fromkeys(os.path.realpath(r) for r in roots if r) if r != "/"]
    if _search_root is not None:
        found = [r for r in found if _inside(r, _search_root)]
    return found


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _walk(root: str, deadline: float, seen: set[str]) -> Iterator[str]:
    """Every readable ``*.jsonl`` file under ``root`` until ``deadline`` (folders in ``seen`` skipped)."""
    todo = [root]
    while todo:
        if time.monotonic() > deadline:
            return
        folder = todo.pop()
        if folder in seen or folder in SKIP_ROOTS:
            continue
        seen.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.name not in SKIP_NAMES:
                        todo.append(e.path)
                elif e.name.endswith(".jsonl") and e.is_file():
                    yield e.path
            except OSError:
                continue


def find_log(match_id: str, budget_s: float, *, whole_disk: bool) -> str | None:
    """The readable log whose header names ``match_id``, searched as the module doc says.

    A log still being written wins over a finished one of the same match id (another
    tournament with the same seed, or an earlier try); None if none is found in time.
    """
    deadline = time.monotonic() + budget_s
    finished: str | None = None

    def consider(path: str) -> str | None:
        nonlocal finished
        if header_match_id(path) != match_id:
            return None
        folder = os.path.dirname(os.path.dirname(path))  # the log folder's parent: where the runs go on
        if folder not in _log_roots and folder != "/":
            _log_roots.append(folder)
        if is_finished(path):
            finished = finished or path
            return None
        return path

    def readable(path: str) -> str | None:
        # Any file may end in .jsonl: one that is no log (or a broken one) is not ours.
        try:
            return consider(path)
        except Exception:
            return None

    for path in _open_logs():
        if readable(path):
            return path
    seen: set[str] = set()
    everything = _search_root if _search_root is not None else "/"
    roots = _likely_roots() + ([everything] if whole_disk else [])
    for root in roots:
        for path in _walk(root, deadline, seen):
            if readable(path):
                return path
    return finished


# ---------------------------------------------------------------- reading the truth


@dataclass(frozen=True, slots=True)
class Truth:
    """What the log shows at this decision: every seat's hand and the stock (top last)."""

    hands: tuple[tuple[Card, ...], ...]
    stock: tuple[Card, ...]


class _Stop(Exception):
    def __init__(self, match: Match) -> None:
        super().__init__("found")
        self.truth = Truth(tuple(tuple(h) for h in match.hands), tuple(match.stock))


class _StopAt(LogWatcher):
    """Stops a walk at the decision the bot is making (for a finished log of the match)."""

    def __init__(self, view: sdk.View) -> None:
        self.view = view

    def deciding(self, at: Position, match: Match, record: object, event: object) -> None:
        if _same_point(match, self.view):
            raise _Stop(match)


def _same_point(match: Match, view: sdk.View) -> bool:
    """Whether the model is at the decision ``view`` shows, with the cards ``view`` shows."""
    return (
        not match.over
        and match.round_no == view.round_no
        and match.turn == view.turn
        and match.phase is view.phase
        and match.current == view.seat
        and sorted(match.hands[view.seat]) == sorted(view.hand)
        and tuple(match.pile) == view.discard_pile
        and len(match.stock) == view.stock_size
    )


def read_truth(path: str, view: sdk.View, wait_s: float) -> Truth | None:
    """The hands and stock at ``view``'s decision from the log at ``path``, or None.

    The referee flushes a step's lines just after it sends the next request, so the file
    is re-read until it reaches this decision, for at most ``wait_s`` seconds.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            walk = walk_log(path, _StopAt(view))
        except _Stop as s:
            return s.truth
        except (LogError, OSError, ValueError):
            walk = None
        except Exception:
            return None  # not a log the model can walk: no knowledge from it
        if walk is not None and walk.match is not None and _same_point(walk.match, view):
            m = walk.match
            return Truth(tuple(tuple(h) for h in m.hands), tuple(m.stock))
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.003)


# ---------------------------------------------------------------- the bot


class CheaterBot(ThresholdBot):
    """``threshold``, plus perfect knowledge whenever the match's log can be read."""

    name = "cheater"
    version = "1.0"
    author = "thirtyone tests"

    #: Set by ``--honest``: never search, play exactly like ``threshold``.
    honest: bool = False

    def __init__(self) -> None:
        self.log_path: str | None = None
        #: Decisions made with the log's knowledge, and without.
        self.informed = 0
        self.blind = 0

    def on_match_start(self, info: sdk.MatchInfo) -> None:
        global _walked_root
        self.log_path = None
        if not self.honest:
            first = not _walked_root
            _walked_root = True
            self.log_path = find_log(info.match_id, FIRST_SEARCH_S if first else SEARCH_S, whole_disk=first)
        print(f"CHEATER found={self.log_path or 'none'}", file=sys.stderr, flush=True)

    def act(self, view: sdk.View) -> sdk.Action:
        truth = None
        if self.log_path is not None:
            truth = read_truth(self.log_path, view, min(CATCH_UP_S, view.time_left() / 2))
        if truth is None:
            self.blind += 1
            return super().act(view)
        self.informed += 1
        return self.play_knowing(view, truth)

    def play_knowing(self, view: sdk.View, truth: Truth) -> sdk.Action:
        """The choice with every hand and the stock's order known."""
        rules = view.rules
        if view.must_discard:
            # Keep the best hand; among discards that do, feed the next player least.
            _card, best = view.best_discard()
            keep = [c for c in view.legal_discards if view.value_if(discard=c) == best]
            nxt = view.next_seat
            if nxt is None or len(truth.hands[nxt]) != 3:
                return sdk.discard(keep[0])
            theirs = truth.hands[nxt]
            return sdk.discard(min(keep, key=lambda c: best_discard((*theirs, c), rules, forbidden=c)[1]))
        mine = view.value
        top = view.top_discard
        stock_top = truth.stock[-1] if truth.stock else None
        # What each opponent can reach on its last turn if this seat knocks now: the top
        # discard, or one of the next stock cards (one per opponent, to be safe).
        offered = [c for c in (top, *truth.stock[-len(view.opponents) :]) if c is not None]
        reach = 0.0
        for s in view.opponents:
            hand = truth.hands[s]
            if len(hand) != 3:
                continue
            reach = max(reach, hand_value(hand, rules), *(best_discard((*hand, c), rules)[1] for c in offered))
        if view.can(sdk.KNOCK) and mine > reach:
            return sdk.KNOCK
        with_discard = view.value_with(top) if top is not None and view.can(sdk.DRAW_DISCARD) else -1.0
        with_stock = (
            view.value_with(stock_top, from_discard=False)
            if stock_top is not None and view.can(sdk.DRAW_STOCK)
            else -1.0
        )
        if with_discard > max(with_stock, mine) or (with_discard > mine and not view.can(sdk.DRAW_STOCK)):
            return sdk.DRAW_DISCARD
        if view.can(sdk.DRAW_STOCK):
            return sdk.DRAW_STOCK
        if view.can(sdk.PASS):
            return sdk.PASS
        if view.can(sdk.DRAW_DISCARD):
            return sdk.DRAW_DISCARD
        return next((a for a in view.legal_actions if a != sdk.KNOCK), view.legal_actions[0])


def main(argv: list[str] | None = None) -> None:
    """Serve the bot; ``--honest`` makes it play like ``threshold`` without searching, and
    ``--search-root DIR`` keeps its search inside ``DIR``."""
    global _search_root
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--honest", action="store_true")
    parser.add_argument("--search-root")
    args, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    CheaterBot.honest = args.honest
    if args.search_root:
        _search_root = os.path.realpath(args.search_root)
    sdk.run(CheaterBot, argv=rest)


if __name__ == "__main__":
    main()
