"""Standings from finished matches: ratings with intervals, win rates with intervals.

The rating is :mod:`referee.ratings`' batch fit of the Plackett-Luce model over every match's
placings, with a 95% interval that treats the rotations of one deal as one draw of the cards
(they deal the same cards). It does not depend on the order the matches finished in. Win rates
and their Wilson score intervals (SciPy) come from the same matches as the rating beside them.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from referee.ratings import BASE, Outcome, fit, wilson
from referee.text import plural
from referee.tournament.schedule import DealProgress, schedule_for
from referee.tournament.store import MatchRow, TournamentStore

#: The fault kinds, as the referee names them on the wire, in the log and in the database
#: (lower case: a look-up in any other case finds nothing, and every count reads 0).
#: "start" is the runner's: a bot that could not be started for a match (it forfeits that match).
#: "late" is a fault only under the strict policy (see :attr:`BotStanding.late` for the count
#: of late answers under either).
FAULT_KINDS = ("timeout", "crash", "illegal", "malformed", "start", "late")


@dataclass(slots=True)
class BotStanding:
    """One bot's line in the standings."""

    name: str
    matches: int = 0
    #: Matches in which this bot alone was placed first (a shared first place is no win).
    wins: int = 0
    placing_sum: int = 0
    lives_lost: int = 0
    rounds: int = 0
    faults: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAULT_KINDS, 0))
    forfeits: int = 0
    #: Answers past the budget that the bank did not cover, inside the grace (a match's
    #: ``late`` count), whatever the fault policy.
    late: int = 0
    #: The official rating (:mod:`referee.ratings`: 1500 is the field's average, 400 points
    #: are odds of 10 to 1 of placing above the other), and its 95% interval and standard
    #: error; meaningless while ``matches`` is 0.
    rating: float = BASE
    rating_low: float = BASE
    rating_high: float = BASE
    rating_se: float = 0.0
    #: With the luck taken out (:attr:`Standings.luck`): the raw placings' rating and its
    #: interval, for comparison; None otherwise.
    raw_rating: tuple[float, float, float] | None = None
    win_low: float = 0.0
    win_high: float = 0.0
    #: Why the bot was disqualified; None if it was not.
    disqualified: str | None = None
    #: Under ``scoring="pot"``: net chips summed over its matches (a match it was absent
    #: from counts 0).
    chips: int = 0

    @property
    def rated(self) -> bool:
        """Whether any match informs the rating."""
        return self.matches > 0

    @property
    def win_rate(self) -> float:
        """Share of matches won (placed first, alone or shared)."""
        return self.wins / self.matches if self.matches else 0.0

    @property
    def mean_placing(self) -> float:
        """Average placing (1 = best)."""
        return self.placing_sum / self.matches if self.matches else 0.0

    @property
    def mean_chips(self) -> float:
        """Mean net chips per match (``scoring="pot"``)."""
        return self.chips / self.matches if self.matches else 0.0

    @property
    def lives_per_round(self) -> float:
        """Lives lost per round played."""
        return self.lives_lost / self.rounds if self.rounds else 0.0


@dataclass(slots=True)
class HeadToHead:
    """How one bot fared against another in the matches both played."""

    matches: int = 0
    better: int = 0
    equal: int = 0
    worse: int = 0

    @property
    def score(self) -> float:
        """Share of shared matches placed above the other (ties count half)."""
        return (self.better + 0.5 * self.equal) / self.matches if self.matches else 0.0


@dataclass(slots=True)
class Standings:
    """The standings table and the head-to-head matrix."""

    bots: list[BotStanding]
    head_to_head: dict[tuple[str, str], HeadToHead]
    #: Matches played (and counted here).
    matches: int
    #: Matches the schedule holds; None when not known (standings of loose results).
    scheduled: int | None = None
    #: Scheduled matches played (None when the schedule is not known).
    played: int | None = None
    #: Whether the bots ran without a sandbox (the tournament's ``sandbox = "off"``).
    unsandboxed: bool = False
    #: Why a schedule ended before its last match (an SPRT test's verdict), if it did.
    ended_early: str | None = None
    #: Whether the matches were played for a pot (``scoring="pot"``): the standings then
    #: also show each bot's mean net chips per match.
    pot: bool = False
    #: Whether the ratings have the luck of the cards taken out (:mod:`referee.analysis.luck`
    #: as a control variate); each bot's raw figure is then in :attr:`BotStanding.raw_rating`.
    luck: bool = False

    @property
    def complete(self) -> bool:
        """Whether every scheduled match has been played.

        False while the schedule is unknown or empty: a tournament short of bots has not
        even begun.
        """
        return self.ended_early is not None or (bool(self.scheduled) and self.played == self.scheduled)

    @property
    def progress(self) -> str:
        """``complete: all 480 scheduled matches played`` or ``incomplete: 412 of 480 matches played``."""
        if self.scheduled is None or self.played is None:
            return f"{plural(self.matches, 'match', 'matches')} played"
        if self.ended_early is not None:
            return f"complete: {self.ended_early}"
        if self.scheduled == 0:
            return "not started: no matches scheduled yet (too few bots for a table)"
        if self.complete:
            if self.scheduled == 1:
                return "complete: the one scheduled match played"
            return f"complete: all {self.scheduled} scheduled matches played"
        return f"incomplete: {self.played} of {plural(self.scheduled, 'match', 'matches')} played"


def match_cluster(row: MatchRow) -> str:
    """What a match shares its luck with: its table's deal, whose rotations deal the same cards."""
    return f"{row.table_key}/{row.deal}"


def outcomes(rows: Iterable[MatchRow], luck: Mapping[str, tuple[float, ...]] | None = None) -> list[Outcome[str]]:
    """The matches as the rating fit takes them, each with its seats' luck where ``luck``
    (by match key) has it."""
    lucks = luck or {}
    return [Outcome(tuple(r.seats), tuple(r.placings), match_cluster(r), lucks.get(r.key)) for r in rows]


def compute_standings(
    rows: Iterable[MatchRow],
    names: Iterable[str] = (),
    *,
    scheduled: int | None = None,
    played: int | None = None,
    disqualified: dict[str, str] | None = None,
    unsandboxed: bool = False,
    pot: bool = False,
    luck: Mapping[str, tuple[float, ...]] | None = None,
) -> Standings:
    """Standings from finished matches (``names`` adds bots that have not played yet).

    ``scheduled`` is the schedule's size and ``played`` how many of its matches ``rows``
    hold; ``disqualified`` maps a bot to the reason it was
    disqualified, and ``unsandboxed`` says the bots ran without a sandbox. ``pot`` says the
    rules score a pot (the ranking is by placings all the same; net chips are shown beside).
    ``luck`` (each match's luck per seat, by key) takes the luck of the cards out of the
    ratings; the raw ones are kept beside.
    """
    rows = sorted(rows, key=lambda r: r.key)
    table: dict[str, BotStanding] = {n: BotStanding(n) for n in names}
    h2h: dict[tuple[str, str], HeadToHead] = defaultdict(HeadToHead)
    for row in rows:
        record = row.record
        placings = list(record.placings)
        seats = row.seats
        for s, name in enumerate(seats):
            st = table.setdefault(name, BotStanding(name))
            st.matches += 1
            # A win is first place alone: nobody wins a shared first place (docs/rules.md,
            # "Playing for a pot", and a simultaneous elimination), so wins add up to at
            # most the number of matches.
            st.wins += placings[s] == 1 and list(placings).count(1) == 1
            st.placing_sum += placings[s]
            info = record.seat(s)
            st.lives_lost += info.lives_lost
            st.rounds += info.rounds
            st.chips += info.chips
            st.forfeits += info.forfeited
            st.late += info.late
            for kind, n in info.faults.items():
                # Lower case whatever the writer used: the kinds are the wire's names.
                kind = kind.lower()
                st.faults[kind] = st.faults.get(kind, 0) + n
            for t, other in enumerate(seats):
                if t == s:
                    continue
                h = h2h[(name, other)]
                h.matches += 1
                if placings[s] < placings[t]:
                    h.better += 1
                elif placings[s] == placings[t]:
                    h.equal += 1
                else:
                    h.worse += 1
    for name, reason in (disqualified or {}).items():
        table.setdefault(name, BotStanding(name)).disqualified = reason
    fitted = fit(outcomes(rows, luck), list(table)).ratings
    raw = fit(outcomes(rows), list(table)).ratings if luck is not None else None
    for name, st in table.items():
        r = fitted[name]
        st.rating, st.rating_low, st.rating_high, st.rating_se = r.rating, r.low, r.high, r.se
        if raw is not None:
            st.raw_rating = (raw[name].rating, raw[name].low, raw[name].high)
        if st.matches:
            st.win_low, st.win_high = wilson(st.wins, st.matches)
    # Unrated bots last; then the best estimate first (its interval is shown beside it).
    ordered = sorted(table.values(), key=lambda b: (not b.rated, -b.rating, b.mean_placing, b.name))
    return Standings(ordered, dict(h2h), len(rows), scheduled, played, unsandboxed, pot=pot, luck=luck is not None)


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A bot's rating as the fit over the first ``match`` matches gives it, with its interval."""

    match: int
    rating: float
    low: float
    high: float


#: Points of a rating history at most: each is a fit over the matches so far.
HISTORY_FITS = 24


def rating_history(
    rows: Iterable[MatchRow], names: Iterable[str] = (), order: Sequence[str] | None = None
) -> dict[str, list[RatingPoint]]:
    """Each bot's rating as it stood after the first n matches, at up to :data:`HISTORY_FITS`
    evenly spaced n, the matches taken in ``order``.

    ``order`` lists match keys (the schedule's order); rows not in it come after, by key.
    Without it the key order is used. Each point is the official fit over the matches up to it,
    so the last point is the standings' rating. A bot's first point is at its first match.
    Pure.
    """
    rank = {k: i for i, k in enumerate(order or ())}
    ordered = sorted(rows, key=lambda r: (rank.get(r.key, len(rank)), r.key))
    history: dict[str, list[RatingPoint]] = {n: [] for n in names}
    for row in ordered:
        for n in row.seats:
            history.setdefault(n, [])
    total = len(ordered)
    if not total:
        return history
    ends = sorted({max(1, round(total * i / HISTORY_FITS)) for i in range(1, HISTORY_FITS + 1)})
    played = outcomes(ordered)
    for end in ends:
        for name, r in fit(played[:end]).ratings.items():
            history[name].append(RatingPoint(end, r.rating, r.low, r.high))
    return history


def tournament_rating_history(store: TournamentStore) -> dict[str, list[RatingPoint]]:
    """:func:`rating_history` of a tournament's stored results, in its schedule's order."""
    settings = store.settings
    names = [b.name for b in store.bots()]
    order = [m.key for m in schedule_for(settings, names)]
    return rating_history(store.matches(), names, order)


def match_lucks(store: TournamentStore, rows: Sequence[MatchRow]) -> dict[str, tuple[float, ...]]:
    """Each match's luck per seat, measured from its log once and kept in the tournament's
    ``luck.jsonl`` (shared with ``thirtyone sprt``); measured afresh each time where the
    folder cannot be written. About half a second of CPU per match the first time."""
    from referee.analysis.luck import LUCK_FILE, LuckCache

    kept = store.folder / LUCK_FILE
    writable = os.access(kept if kept.exists() else store.folder, os.W_OK)
    cache = LuckCache(store.folder if writable else None, store.settings.seed)
    return {r.key: cache.get(r.key, store.folder / r.log_path if r.log_path else None, len(r.seats)) for r in rows}


def tournament_standings(store: TournamentStore, *, luck: bool = False) -> Standings:
    """The standings of a tournament as its store holds it: results, schedule size,
    disqualifications, and whether its bots ran unsandboxed; ``luck`` takes the luck of the
    cards out of the ratings (:func:`match_lucks`).

    Raises :class:`~referee.tournament.store.StoreError` for a database that cannot be read.
    """
    settings = store.settings
    names = [b.name for b in store.bots()]
    rows = store.matches()
    schedule = {m.key for m in schedule_for(settings, names)}
    # Only scheduled matches count toward "played": a row of a withdrawn bot's match is not
    # a step toward this schedule's end.
    standings = compute_standings(
        rows,
        names,
        scheduled=len(schedule),
        played=sum(1 for r in rows if r.key in schedule),
        disqualified=store.disqualified(),
        unsandboxed=settings.sandbox == "off",
        pot=settings.rules.scoring == "pot",
        luck=match_lucks(store, rows) if luck else None,
    )
    if settings.format == "sprt":
        # A sequential test is over at its verdict, long before its last scheduled deal; its
        # standings (and its seed) are then final. Imported here: sprt_run imports the runner.
        from referee.tournament.sprt_run import SprtMonitor

        monitor = SprtMonitor.from_store(store)
        if monitor.finished:
            result = monitor.result()
            standings.ended_early = (
                f"the sequential test ended ({result.verdict}) after {plural(result.deals, 'deal')}"
            )
    return standings


def deal_progress(store: TournamentStore) -> DealProgress:
    """Which of a tournament's deals are complete, as its store holds them (whose replays may
    be shown: :meth:`DealProgress.replay_public`).

    The tournament counts as finished when every scheduled match is played, or when an SPRT
    test has its verdict.
    """
    settings = store.settings
    schedule = schedule_for(settings, [b.name for b in store.bots()])
    done = store.done_keys()
    finished = bool(schedule) and all(m.key in done for m in schedule)
    if not finished and settings.format == "sprt":
        from referee.tournament.sprt_run import SprtMonitor  # sprt_run imports the runner

        finished = SprtMonitor.from_store(store).finished
    return DealProgress.of(schedule, done, tournament_finished=finished)
