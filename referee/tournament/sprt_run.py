"""An SPRT test (``thirtyone sprt``) played as a tournament of format ``sprt``.

The test is a tournament folder like any other: the schedule
(:func:`~referee.tournament.schedule.build_sprt_schedule`) is in deal order, the runner plays it
with its workers, sandbox and logs, and each finished match is committed on its own. What is
particular is that the run stops at the test's verdict, at a deal boundary: a deal counts once
all its matches are stored, deals count in order, and the test is asked after each one.

The test's state is never stored: :meth:`SprtMonitor.from_store` recomputes it from the stored
results in deal order, so a run that was killed (or played matches past the verdict: a
worker plays ahead to matches whose deal its bots have not played, see
:class:`~referee.tournament.pool.Plan`) continues exactly the same test, and reaches
exactly the same verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from referee.tournament.runner import RunReport, run_pending
from referee.tournament.schedule import ScheduledMatch, build_sprt_schedule
from referee.tournament.settings import TournamentSettings
from referee.tournament.sprt import VARIANCE_PRIOR, Model, SequentialTest, SprtParams, SprtResult
from referee.tournament.store import TournamentStore
from referee.tournament.tasks import TaskResult, log_name

if TYPE_CHECKING:
    from referee.analysis.luck import LuckCache

class NotAnSprtTest(ValueError):
    """The tournament is not of format ``sprt``."""


def match_score(placings: Sequence[int], seat: int) -> float:
    """One seat's score in a match: the share of the other seats it placed above, ties half."""
    mine = placings[seat]
    others = [p for s, p in enumerate(placings) if s != seat]
    if not others:
        return 0.5
    beaten = sum(1 for p in others if p > mine)
    tied = sum(1 for p in others if p == mine)
    return (beaten + 0.5 * tied) / len(others)


def deal_score(new: str, old: str, matches: Sequence[tuple[Sequence[str], Sequence[int]]]) -> float:
    """NEW's score for one deal (see :mod:`referee.tournament.sprt`): 1/2 plus half the
    difference of NEW's and OLD's mean match scores over the deal's matches."""
    scores: dict[str, list[float]] = {new: [], old: []}
    for seats, placings in matches:
        for name in (new, old):
            if name in seats:
                scores[name].append(match_score(placings, list(seats).index(name)))
    if not scores[new] or not scores[old]:
        raise ValueError("a deal needs matches of both NEW and OLD")
    mean_new = sum(scores[new]) / len(scores[new])
    mean_old = sum(scores[old]) / len(scores[old])
    return 0.5 + (mean_new - mean_old) / 2


def deal_luck(new: str, old: str, matches: Sequence[tuple[Sequence[str], Sequence[float]]]) -> float:
    """A deal's luck as :func:`deal_score` scores it: half the difference of NEW's and OLD's
    mean luck over the deal's matches (each match: its seats' names and each seat's luck)."""
    luck: dict[str, list[float]] = {new: [], old: []}
    for seats, values in matches:
        for name in (new, old):
            if name in seats:
                luck[name].append(values[list(seats).index(name)])
    if not luck[new] or not luck[old]:
        raise ValueError("a deal needs matches of both NEW and OLD")
    return (sum(luck[new]) / len(luck[new]) - sum(luck[old]) / len(luck[old])) / 2


class SprtMonitor:
    """Follows a test's matches as they are stored and feeds complete deals, in order, to
    the :class:`~referee.tournament.sprt.SequentialTest`."""

    def __init__(self, settings: TournamentSettings, folder: Path | None = None) -> None:
        s = settings.sprt
        if settings.format != "sprt" or s is None:
            raise NotAnSprtTest(f"this tournament is a {settings.format}, not an SPRT test")
        self.new, self.old, self.field = s.new, s.old, s.field
        params = SprtParams(s.elo0, s.elo1, s.alpha, s.beta)
        #: The luck of the cards is taken out of each deal (a control variate: the normal model).
        self.luck = s.luck
        self.seed = settings.seed
        self.folder = folder
        model: Model = "normal" if s.field or s.luck else "pentanomial"
        # The two-seat prior of a test with a control is for two-seat deals (see sprt.py).
        prior = VARIANCE_PRIOR if s.field else None
        self.test = SequentialTest(params, model, max_deals=settings.games, control=s.luck, prior=prior)
        # Built at the first match: the analysis imports the SDK's rollouts.
        self._lucks: LuckCache | None = None
        schedule = build_sprt_schedule(s.new, s.old, s.field, settings.games, settings.seed)
        self._deals: list[list[ScheduledMatch]] = [[] for _ in range(settings.games)]
        self._scheduled = {m.key: m for m in schedule}
        for m in schedule:
            self._deals[m.deal].append(m)
        self._matches: dict[str, tuple[tuple[str, ...], tuple[int, ...], tuple[float, ...]]] = {}
        self.matches_per_deal = len(self._deals[0])
        #: A match of the next deal could not be played in this run: the test cannot go on.
        self.blocked = False

    @staticmethod
    def from_store(store: TournamentStore) -> SprtMonitor:
        """The test as the stored results make it."""
        monitor = SprtMonitor(store.settings, store.folder)
        for row in store.matches():
            monitor.add(row.key, row.seats, row.placings, store.folder / row.log_path if row.log_path else None)
        return monitor

    def luck_of(self, key: str, log: Path | None, seats: int) -> tuple[float, ...]:
        """Each seat's luck in match ``key`` (:class:`referee.analysis.luck.LuckCache`)."""
        if self._lucks is None:
            from referee.analysis.luck import LuckCache

            self._lucks = LuckCache(self.folder, self.seed)
        return self._lucks.get(key, log, seats)

    @property
    def finished(self) -> bool:
        """Whether the test has its verdict (or is out of deals)."""
        return self.test.finished

    @property
    def stored(self) -> int:
        """Matches stored, counted or not (a run with ``-j`` may have played past the verdict)."""
        return len(self._matches)

    @property
    def matches(self) -> int:
        """Matches the test has counted: those of its deals."""
        return self.test.n * self.matches_per_deal

    def add(self, key: str, seats: Sequence[str], placings: Sequence[int], log: Path | None = None) -> None:
        """Take one stored match (with its ``log``, for its luck); count every deal that is
        now complete, in order.

        A match outside the schedule (none should be) is not counted.
        """
        if key not in self._scheduled:
            return
        luck = self.luck_of(key, log, len(seats)) if self.luck else ()
        self._matches[key] = (tuple(seats), tuple(int(p) for p in placings), luck)
        while not self.test.finished:
            deal = self._deals[self.test.n]
            if not all(m.key in self._matches for m in deal):
                return
            rows = [self._matches[m.key] for m in deal]
            x = deal_score(self.new, self.old, [(seats_, placings_) for seats_, placings_, _ in rows])
            if self.luck:
                self.test.add(x, deal_luck(self.new, self.old, [(seats_, luck_) for seats_, _, luck_ in rows]))
            else:
                self.test.add(x)

    def on_result(self, r: TaskResult) -> None:
        """Take a runner's result (a match stored, or one that could not be played)."""
        if r.ok:
            m = self._scheduled.get(r.key)
            if m is not None:
                log = self.folder / "logs" / log_name(r.key) if self.folder is not None and r.has_log else None
                self.add(r.key, m.seats, list(r.record.placings), log)
        elif not r.retrying:
            self.blocked = True

    def result(self) -> SprtResult:
        """The test's state, with the counts of matches."""
        return self.test.result(
            new=self.new, old=self.old, field=list(self.field), matches=self.matches, matches_stored=self.stored,
            max_deals=self.test.max_deals,
        )


def run_test(
    store: TournamentStore,
    jobs: int = 1,
    *,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[TaskResult, SprtMonitor], None] | None = None,
) -> tuple[SprtMonitor, RunReport | None]:
    """Continue the test in ``store`` until its verdict (or its last deal); the monitor and
    the run's report (None when the stored results had already finished the test)."""
    monitor = SprtMonitor.from_store(store)
    if monitor.finished:
        return monitor, None

    def seen(r: TaskResult) -> None:
        monitor.on_result(r)
        if on_result is not None:
            on_result(r, monitor)

    report = run_pending(store, jobs, on_start=on_start, on_result=seen, stop=lambda: monitor.finished or monitor.blocked)
    return monitor, report
