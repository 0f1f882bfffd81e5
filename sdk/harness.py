"""Play matches between bots in-process: no gRPC, no processes, the referee's exact rules.

The harness drives the same :class:`referee.game.Match` as the referee, and each bot gets the
same :class:`~referee.game.Observation` the referee would send it (built by
``Match.observation``; the wire only converts it). Use it to develop and test a bot::

    from sdk.harness import play_match, play_matches
    from sample_bots import load  # the examples, by name (the harness imports none of them)

    outcome = play_match([MyBot, load("greedy")], seed=1)
    print(outcome.placings)
    print(play_matches([MyBot, load("greedy"), load("random")], n=200))

Time is reported to bots (``view.budget_ms``, ``view.bank_ms``) but not enforced here.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from referee.game import (
    Action,
    IllegalActionError,
    Match,
    MatchEnd,
    Observation,
    RoundResult,
    Rules,
    format_cards,
)
from referee.timecontrol import TimeControl
from referee.wire import MatchEndReasonName, MatchInfo, MatchResult
from sdk.bot import BotSource, make_bot
from sdk.view import SeatMemory


class IllegalMoveError(IllegalActionError):
    """A bot answered with an action the rules forbid (or with something not an action).

    Carries the bot's name, the seat, the action, the game model's reason and the observation
    the bot was given, so a failing test says exactly what went wrong.
    """

    def __init__(self, bot: str, seat: int, action: object, reason: str, observation: Observation) -> None:
        super().__init__(action, seat, reason)
        self.bot = bot
        self.observation = observation
        legal = ", ".join(map(str, observation.legal_actions))
        self.args = (
            f"bot {bot!r} (seat {seat}) played {action!s} in round {observation.round_no}, "
            f"turn {observation.turn}: {reason}. Hand {format_cards(observation.hand)}; legal: {legal}",
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one local match."""

    seed: int
    rules: Rules
    #: The bots' names, by seat.
    names: tuple[str, ...]
    #: Per seat: 1 is best; shared placings ranked 1, 2, 2, 4.
    placings: tuple[int, ...]
    #: The last seat standing (under the pot: the single seat placed first), or None when
    #: ``max_rounds`` stopped the match (or a pot match ended tied for first).
    winner: int | None
    end: MatchEnd
    #: Number of rounds played.
    rounds: int
    #: Every round's result, in order (hands, values, lives lost, eliminations).
    round_results: tuple[RoundResult, ...]
    #: Decisions asked of each seat.
    decisions: tuple[int, ...]
    #: Seconds each seat spent in ``act``.
    think_time: tuple[float, ...]


def _resolve_rules(rules: Rules | str | None) -> Rules:
    if rules is None:
        return Rules()
    if isinstance(rules, str):
        return Rules.preset(rules)
    return rules


def play_match(
    bots: Sequence[BotSource],
    *,
    seed: int = 0,
    rules: Rules | str | None = None,
    time_control: TimeControl | None = None,
    match_id: str | None = None,
) -> Outcome:
    """Play one match, ``bots[i]`` in seat ``i``, and return its :class:`Outcome`.

    ``bots`` holds bot classes (or factories; a new instance per seat) or instances (reused
    as they are, so an instance in two seats plays both). ``rules`` is a :class:`Rules` or a
    preset name. Calls each bot's ``on_match_start`` and ``on_match_end`` hooks. Raises
    :class:`IllegalMoveError` if a bot answers with an illegal action; an exception raised
    by a bot propagates, with a note saying where it happened.
    """
    r = _resolve_rules(rules)
    tc = time_control or TimeControl()
    players = len(bots)
    m = Match(players, r, seed=seed, record=False)
    mid = match_id if match_id is not None else f"local-{seed}"
    seats = [make_bot(b) for b in bots]
    names = tuple(b.identity().name for b in seats)
    memories = [SeatMemory() for _ in seats]
    decisions = [0] * players
    think = [0.0] * players
    bank = [tc.bank_ms] * players

    for s, bot in enumerate(seats):
        bot.on_match_start(MatchInfo(mid, s, players, r, tc))
    while not m.over:
        s = m.current
        obs = m.observation(s)
        view = memories[s].view(obs, budget_ms=tc.budget_ms, bank_ms=bank[s])
        t0 = time.perf_counter()
        try:
            action = seats[s].act(view)
        except Exception as e:
            e.add_note(f"raised by bot {names[s]!r} (seat {s}) in round {obs.round_no}, turn {obs.turn}: {view!r}")
            raise
        spent = time.perf_counter() - t0
        think[s] += spent
        decisions[s] += 1
        # Like the referee, charge time beyond the budget to the bank (never below zero).
        bank[s] = max(0, bank[s] - max(0, int(spent * 1000) - tc.budget_ms))
        reason = m.why_illegal(action) if isinstance(action, Action) else f"{action!r} is not an sdk.Action"
        if reason is not None:
            raise IllegalMoveError(names[s], s, action, reason, obs)
        m.apply_unchecked(action)

    placings = m.placings
    end = m.end or MatchEnd.LAST_PLAYER
    why = _end_reason(end)
    for s, bot in enumerate(seats):
        bot.on_match_end(MatchResult(mid, placings, placings[s], why))
    return Outcome(
        seed=seed,
        rules=r,
        names=names,
        placings=placings,
        winner=m.winner,
        end=end,
        rounds=m.round_no,
        round_results=tuple(m.rounds),
        decisions=tuple(decisions),
        think_time=tuple(think),
    )


def _end_reason(end: MatchEnd) -> MatchEndReasonName:
    """The wire's name for how a match ended (a pot match played to its last round: ``pot_rounds``)."""
    if end is MatchEnd.LAST_PLAYER:
        return "last_player"
    if end is MatchEnd.POT_ROUNDS:
        return "pot_rounds"
    return "max_rounds"


@dataclass(slots=True)
class Series:
    """The results of :func:`play_matches`, per bot (indexed as the ``bots`` given)."""

    names: tuple[str, ...]
    outcomes: list[Outcome] = field(default_factory=list)
    #: Per bot: the seat it had in each match (seats rotate).
    seats: list[tuple[int, ...]] = field(default_factory=list)

    def placings(self, bot: int) -> list[int]:
        """Bot ``bot``'s placing in every match."""
        return [o.placings[seats[bot]] for o, seats in zip(self.outcomes, self.seats, strict=True)]

    def wins(self, bot: int) -> int:
        """Matches bot ``bot`` won outright (last player standing)."""
        return sum(1 for o, seats in zip(self.outcomes, self.seats, strict=True) if o.winner == seats[bot])

    def win_rate(self, bot: int) -> float:
        """Fraction of matches bot ``bot`` won."""
        return self.wins(bot) / len(self.outcomes) if self.outcomes else 0.0

    def mean_placing(self, bot: int) -> float:
        """Bot ``bot``'s average placing (1 is best)."""
        p = self.placings(bot)
        return sum(p) / len(p) if p else 0.0

    def __str__(self) -> str:
        lines = [f"{len(self.outcomes)} matches"]
        width = max((len(n) for n in self.names), default=4)
        for i, name in enumerate(self.names):
            lines.append(
                f"  {name:<{width}}  wins {self.wins(i):>5} ({self.win_rate(i):6.1%})"
                f"  mean placing {self.mean_placing(i):.2f}"
            )
        return "\n".join(lines)


def play_matches(
    bots: Sequence[BotSource],
    *,
    n: int = 100,
    seeds: Iterable[int] | None = None,
    rules: Rules | str | None = None,
    time_control: TimeControl | None = None,
    rotate: bool = True,
) -> Series:
    """Play many matches between the same bots and tally them.

    Seeds are ``seeds`` if given, else ``0 .. n-1``. With ``rotate`` the seats turn by one each
    match, so that every bot plays every seat equally often over a multiple of ``len(bots)``
    matches. Bot classes get fresh instances every match; instances are reused.
    """
    k = len(bots)
    names = tuple(make_bot(b).identity().name for b in bots)
    series = Series(names)
    for i, seed in enumerate(seeds if seeds is not None else range(n)):
        shift = i % k if rotate else 0
        # Seat j is played by bot (j + shift) % k, so bot b sits in seat (b - shift) % k.
        order = [bots[(j + shift) % k] for j in range(k)]
        outcome = play_match(order, seed=seed, rules=rules, time_control=time_control, match_id=f"local-{seed}")
        series.outcomes.append(outcome)
        series.seats.append(tuple((b - shift) % k for b in range(k)))
    return series


#: The rules presets :func:`check_bot` plays by default: the three of the plain game and
#: the variants' two (docs/rules.md, "Presets" and "Variants").
CHECK_PRESETS: tuple[str, ...] = ("standard", "pagat", "family", "cadillac", "bicycle")
#: Each variant option on its own, on top of ``standard``, that :func:`check_bot` plays by
#: default (the presets above play them in combination: ``bicycle`` is the widow for a pot).
CHECK_VARIANTS: dict[str, Rules] = {
    "dealer_option": Rules(dealer_option=True),
    "under_the_gun": Rules(under_the_gun=True),
    "dummy": Rules(dummy=True),
    "widow": Rules(draw="widow"),
    "pot": Rules(scoring="pot"),
}
#: The table sizes :func:`check_bot` plays by default.
CHECK_TABLE_SIZES: tuple[int, ...] = (2, 4, 6)


def check_cases(
    presets: Sequence[str] = CHECK_PRESETS, variants: Mapping[str, Rules] = CHECK_VARIANTS
) -> list[tuple[str, Rules]]:
    """The rules :func:`check_bot` plays, each with the label its report and notes use: a
    preset's name, or a variant's rules described (``standard + dummy=true``)."""
    cases = [(p, Rules.preset(p)) for p in presets]
    cases += [(r.describe(), r) for r in variants.values()]
    return cases


def check_bot(
    bot: BotSource,
    *,
    opponents: Sequence[BotSource] | None = None,
    presets: Sequence[str] = CHECK_PRESETS,
    variants: Mapping[str, Rules] = CHECK_VARIANTS,
    table_sizes: Sequence[int] = CHECK_TABLE_SIZES,
    matches: int = 5,
    report: Callable[[str], object] | None = None,
) -> list[Series]:
    """Play ``bot`` against ``opponents`` under every preset, every variant and table size;
    raise on a fault.

    The checks of a scaffolded bot's test (``thirtyone bot new``), runnable without pytest
    (``thirtyone bot test my_bot.py``): for each preset (:data:`CHECK_PRESETS`) and each
    variant option on its own (:data:`CHECK_VARIANTS`), at each size, ``matches`` matches
    with the seats rotating and the other seats filled from ``opponents`` in turn. An
    illegal move raises :class:`IllegalMoveError`; an exception from the bot comes out as it
    was raised. Either carries a note naming the rules and the table size. ``report`` gets a
    line per rules and size played. Returns the series.

    ``sample_bots.check_bot`` is this with the sample bots as opponents (the harness itself
    knows no bots by name). Without ``opponents`` (deprecated: what older scaffolded tests
    call) it warns and seats the sample bots.
    """
    if matches < 1:
        raise ValueError(f"matches must be at least 1, got {matches}")
    if opponents is None:
        # The tests that `thirtyone bot new` wrote before opponents were the caller's call this
        # without them: they keep working, with a warning, until the next minor version.
        warnings.warn(
            "sdk.harness.check_bot without opponents= is deprecated: use sample_bots.check_bot "
            "(the sample bots as opponents) or pass opponents=[...]",
            DeprecationWarning,
            stacklevel=2,
        )
        from sample_bots import CHECK_OPPONENTS, load

        opponents = [load(name) for name in CHECK_OPPONENTS]
    if not opponents:
        raise ValueError("opponents: at least one bot to seat against the one checked")
    played: list[Series] = []
    for label, rules in check_cases(presets, variants):
        what = f"preset {label!r}" if label in presets else f"rules {label!r}"
        for players in table_sizes:
            bots: list[BotSource] = [bot] + [opponents[i % len(opponents)] for i in range(players - 1)]
            try:
                series = play_matches(bots, n=matches, rules=rules)
            except Exception as e:
                e.add_note(f"while checking: {what}, {players} players")
                raise
            played.append(series)
            if report is not None:
                report(
                    f"{label}, {players} players: {matches} matches, "
                    f"{series.wins(0)} won, mean placing {series.mean_placing(0):.2f}"
                )
    return played
