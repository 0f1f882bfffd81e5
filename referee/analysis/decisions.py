"""Decision analysis of a match log: what each decision cost against the best (docs/analysis.md).

:func:`analyse_log` walks a log through the game model (:func:`referee.log.walk_log`) and, at
every decision with a choice, values the legal actions with :func:`sdk.evaluate.evaluate`
in one or both views:

- ``"seat"``: from the seat's :class:`~referee.game.Observation` at that moment, and nothing
  else (the hidden cards are guessed as the seat could guess them); what the seat could
  have known;
- ``"deal"``: from the true position (every hand and the dummy; the stock's order is still
  chance's); what the deal shows.

Each :class:`Judgement` holds the best action, the expected loss of the action taken against
it with its standard error, a flag (``"mistake"`` or ``"blunder"``) when the loss passes a
threshold *and* is clear of its error (more than :data:`CLEAR` standard errors), and the
kind of loss (:func:`loss_kind`). :class:`SeatSummary` sums a seat's decisions.

Pure: the log is read through :mod:`referee.log`; nothing is printed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thirtyone.v1 import log_pb2

from referee.game import (
    Action,
    ActionKind,
    ActionRecord,
    Match,
    Phase,
    Rules,
)
from referee.game.position import position_of
from referee.log import LogWatcher, MatchLog, read_log, walk_log
from referee.log import Position as LogLine
from sdk.evaluate import REFERENCE_POLICY, SAMPLES, DecisionValues, View, derive_seed, evaluate
from sdk.sampler import SamplerError

#: A choice costing at least this many lives (playing for lives) is a mistake...
MISTAKE = 0.1
#: ... and at least this many a blunder. Playing for a pot both are in pots (times the
#: antes of the seats at the table): a blunder gives away a third of a pot.
BLUNDER = 0.3
#: A loss is flagged only when it is more than this many standard errors (clear of the error).
CLEAR = 2.0
VIEWS: tuple[View, ...] = ("seat", "deal")

_SUITS = {c: c & 3 for c in range(52)}


def thresholds(rules: Rules, players: int) -> tuple[float, float]:
    """The mistake and blunder thresholds in the unit of ``rules`` (lives, or chips)."""
    if rules.scoring == "pot":
        pot = rules.ante * players
        return MISTAKE * pot, BLUNDER * pot
    return MISTAKE, BLUNDER


def loss_kind(taken: Action, best: Action, phase: Phase) -> str:
    """What kind of loss choosing ``taken`` over ``best`` is, in a few words people search for."""
    t, b = taken.kind, best.kind
    if t is ActionKind.KNOCK:
        return "knocked too early"
    if b is ActionKind.KNOCK:
        return "did not knock"
    if t is ActionKind.CALL:
        return "called too early"
    if b is ActionKind.CALL:
        return "did not call"
    if phase is Phase.DEALER_OPTION:
        return "dealer's option"
    if t is ActionKind.DRAW_DISCARD and b is ActionKind.DRAW_STOCK:
        return "took the discard into a worse hand"
    if t is ActionKind.DRAW_STOCK and b is ActionKind.DRAW_DISCARD:
        return "passed up the discard"
    if t is ActionKind.SWAP_HAND:
        return "took the dummy"
    if b is ActionKind.SWAP_HAND:
        return "left the dummy"
    if t is ActionKind.DISCARD and b is ActionKind.DISCARD and taken.card is not None and best.card is not None:
        if _SUITS[taken.card] != _SUITS[best.card]:
            return "kept the wrong suit"
        return "threw the wrong card"
    if t is ActionKind.SWAP_WIDOW or b is ActionKind.SWAP_WIDOW:
        return "took the wrong widow card"
    if t is ActionKind.PASS:
        return "passed"
    return f"{taken.kind.name.lower().replace('_', ' ')} instead of {best.kind.name.lower().replace('_', ' ')}"


@dataclass(frozen=True, slots=True)
class Judgement:
    """One decision in one view: the best action and what the one taken cost."""

    view: View
    best: Action
    #: Expected loss of the action taken against the best (0 when it was the best).
    loss: float
    se: float
    #: ``"blunder"``, ``"mistake"`` or None.
    flag: str | None
    #: :func:`loss_kind` of the action taken, when it was not the best.
    kind: str | None
    values: DecisionValues

    @property
    def sound(self) -> bool:
        """The action taken is as good as the best, as far as the samples can tell."""
        return self.loss <= CLEAR * self.se or self.loss < 1e-12


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision of the match with a choice, judged in each view asked for."""

    line: int
    round_no: int
    turn: int
    seat: int
    phase: Phase
    taken: Action
    #: Played by the referee after a fault (judged all the same, but not counted to the bot).
    by_referee: bool
    #: By view: ``"seat"`` and/or ``"deal"``.
    judged: dict[str, Judgement] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SeatSummary:
    """A seat's decisions summed in one view."""

    seat: int
    label: str
    view: View
    decisions: int
    #: Expected loss summed over its decisions (lives, or chips).
    lost: float
    mistakes: int
    blunders: int
    #: Decisions whose action was as good as the best the evaluator found.
    sound: int
    kinds: Counter[str]

    @property
    def per_100(self) -> float:
        """Expected lives (chips) given away per 100 decisions."""
        return 100.0 * self.lost / self.decisions if self.decisions else 0.0

    @property
    def accuracy(self) -> float:
        """Per cent of its decisions that were as good as the best (100 with none)."""
        return 100.0 * self.sound / self.decisions if self.decisions else 100.0


@dataclass(frozen=True, slots=True)
class MatchAnalysis:
    """Every judged decision of a match, and the sums per seat and view."""

    path: str
    match_id: str
    players: int
    labels: tuple[str, ...]
    rules: Rules
    unit: str
    views: tuple[View, ...]
    samples: int
    seed: int
    policy: str
    decisions: tuple[Decision, ...]
    #: Notes for people (a log cut short, a divergence where the analysis stops).
    notes: tuple[str, ...] = ()

    def summary(self, seat: int, view: View) -> SeatSummary:
        """Seat ``seat``'s decisions summed in ``view`` (those the referee played excluded)."""
        ds = [d for d in self.decisions if d.seat == seat and not d.by_referee and view in d.judged]
        js = [d.judged[view] for d in ds]
        kinds: Counter[str] = Counter(j.kind for j in js if j.kind is not None and not j.sound)
        return SeatSummary(
            seat,
            self.labels[seat] if seat < len(self.labels) else f"seat {seat}",
            view,
            len(js),
            sum(j.loss for j in js),
            sum(1 for j in js if j.flag == "mistake"),
            sum(1 for j in js if j.flag == "blunder"),
            sum(1 for j in js if j.sound),
            kinds,
        )

    def summaries(self, view: View) -> list[SeatSummary]:
        """:meth:`summary` of every seat."""
        return [self.summary(s, view) for s in range(self.players)]


def judgements_for(analysis: MatchAnalysis, viewer: int | None) -> dict[int, dict[str, Judgement]]:
    """What a replay from ``viewer``'s point of view may show, by the log line of each
    decision: every decision in every view for the omniscient replay (``viewer`` None); for
    a seat's replay only that seat's own decisions, in the seat's view (another seat's view
    of its decision, or the deal's view, would tell of cards this seat never saw)."""
    out: dict[int, dict[str, Judgement]] = {}
    for d in analysis.decisions:
        if viewer is None:
            out[d.line] = dict(d.judged)
        elif d.seat == viewer and "seat" in d.judged:
            out[d.line] = {"seat": d.judged["seat"]}
    return out


def judge(values: DecisionValues, taken: Action, phase: Phase, rules: Rules, players: int) -> Judgement:
    """The :class:`Judgement` of choosing ``taken`` given the actions' ``values``."""
    best = values.best
    mine = values.of(taken)
    mistake_at, blunder_at = thresholds(rules, players)
    flag: str | None = None
    clear = mine.loss > CLEAR * mine.se
    if clear and mine.loss >= blunder_at:
        flag = "blunder"
    elif clear and mine.loss >= mistake_at:
        flag = "mistake"
    if mine.loss <= 0:
        # A tie with the best: the action taken is a best one.
        return Judgement(values.view, taken, 0.0, 0.0, None, None, values)
    kind = loss_kind(taken, best.action, phase)
    return Judgement(values.view, best.action, mine.loss, mine.se, flag, kind, values)


def judge_decision(
    m: Match, taken: Action, views: Iterable[View] = VIEWS, *, samples: int = SAMPLES, seed: int = 0
) -> dict[str, Judgement]:
    """Judge ``taken`` at the decision ``m`` waits on, in each of ``views``.

    The seat's view is valued from ``m.observation(m.current)`` alone, so it is the same for
    any two matches the seat cannot tell apart. The seed of each decision comes from
    ``seed`` and where the decision is (round, turn, seat, phase), so a decision's figures
    do not depend on which other decisions were analysed.
    """
    s = m.current
    dseed = derive_seed(seed, m.round_no, m.turn, s, int(m.phase), len(m.history))
    out: dict[str, Judgement] = {}
    n = m.players
    for v in views:
        source = m.observation(s) if v == "seat" else position_of(m)
        try:
            values = evaluate(source, samples=samples, seed=dseed)
        except SamplerError:
            # An observation the sampler cannot deal (none is known): this view is left out
            # of this decision rather than the whole analysis lost.
            continue
        out[v] = judge(values, taken, m.phase, m.rules, n)
    return out


class _Watcher(LogWatcher):
    def __init__(self, seats: Sequence[int] | None, views: tuple[View, ...], samples: int, seed: int) -> None:
        self.seats = None if seats is None else frozenset(seats)
        self.views = views
        self.samples = samples
        self.seed = seed
        self.decisions: list[Decision] = []
        self._pending: tuple[LogLine, int, int, int, Phase, Action, dict[str, Judgement]] | None = None

    def deciding(self, at: LogLine, match: Match, record: ActionRecord, event: log_pb2.ActionEvent) -> None:
        self._pending = None
        if self.seats is not None and record.seat not in self.seats:
            return
        if len(match.legal_actions()) < 2:
            return  # no choice, nothing to judge
        judged = judge_decision(match, record.action, self.views, samples=self.samples, seed=self.seed)
        self._pending = (at, match.round_no, match.turn, record.seat, match.phase, record.action, judged)

    def acted(self, at: LogLine, match: Match, record: ActionRecord, by_referee: bool) -> None:
        p = self._pending
        self._pending = None
        if p is None:
            return
        line, round_no, turn, seat, phase, action, judged = p
        self.decisions.append(Decision(line.line, round_no, turn, seat, phase, action, by_referee, judged))


def analyse_log(
    log: MatchLog | str | os.PathLike[str],
    *,
    seats: Sequence[int] | None = None,
    views: Sequence[View] = VIEWS,
    samples: int = SAMPLES,
    seed: int = 0,
) -> MatchAnalysis:
    """Judge every decision with a choice of ``seats`` (all by default) in ``views``.

    A log that diverges from the game model is analysed up to the divergence, which
    :attr:`MatchAnalysis.notes` names; one cut short, as far as it goes.
    """
    parsed = log if isinstance(log, MatchLog) else read_log(log)
    h = parsed.header
    for s in seats or ():
        if not 0 <= s < h.players:
            raise ValueError(f"seat {s}: the match has seats 0 to {h.players - 1}")
    vs = tuple(views)
    for v in vs:
        if v not in VIEWS:
            raise ValueError(f"view {v!r}: the views are {', '.join(VIEWS)}")
    w = _Watcher(seats, vs, samples, seed)
    walk = walk_log(parsed, w)
    notes = list(walk.notes)
    missing = sum(1 for d in w.decisions if set(d.judged) != set(vs))
    if missing:
        notes.append(f"{missing} decision(s) could not be valued in every view asked for")
    if walk.divergence is not None:
        notes.append(f"the log diverges from the game model at {walk.divergence}: analysed up to there")
    labels = tuple(si.label or si.identity.name for si in h.seats)
    return MatchAnalysis(
        str(parsed.path),
        h.match_id,
        h.players,
        labels,
        h.rules,
        "chips" if h.rules.scoring == "pot" else "lives",
        vs,
        samples,
        seed,
        REFERENCE_POLICY,
        tuple(w.decisions),
        tuple(notes),
    )


def judgement_to_dict(j: Judgement) -> dict[str, Any]:
    """A JSON-ready form of a judgement, with every action's value."""
    return {
        "best": str(j.best),
        "loss": round(j.loss, 4),
        "se": round(j.se, 4),
        "flag": j.flag,
        "kind": j.kind,
        "sound": j.sound,
        "actions": [
            {"action": str(a.action), "value": round(a.value, 4), "loss": round(a.loss, 4), "se": round(a.se, 4)}
            for a in j.values.actions
        ],
    }


def decision_to_dict(d: Decision) -> dict[str, Any]:
    """A JSON-ready form of a decision."""
    return {
        "line": d.line,
        "round": d.round_no,
        "turn": d.turn,
        "seat": d.seat,
        "taken": str(d.taken),
        "by_referee": d.by_referee,
        "views": {v: judgement_to_dict(j) for v, j in d.judged.items()},
    }


def summary_to_dict(s: SeatSummary) -> dict[str, Any]:
    """A JSON-ready form of a seat's summary."""
    return {
        "seat": s.seat,
        "label": s.label,
        "view": s.view,
        "decisions": s.decisions,
        "lost": round(s.lost, 4),
        "per_100": round(s.per_100, 3),
        "accuracy": round(s.accuracy, 1),
        "mistakes": s.mistakes,
        "blunders": s.blunders,
        "kinds": dict(s.kinds.most_common()),
    }


def analysis_to_dict(a: MatchAnalysis) -> dict[str, Any]:
    """A JSON-ready form of a whole analysis (``thirtyone analyse --json``, the viewers)."""
    return {
        "match_id": a.match_id,
        "unit": a.unit,
        "policy": a.policy,
        "samples": a.samples,
        "seed": a.seed,
        "views": list(a.views),
        "thresholds": dict(zip(("mistake", "blunder"), thresholds(a.rules, a.players), strict=True)),
        "decisions": [decision_to_dict(d) for d in a.decisions],
        "summaries": {v: [summary_to_dict(s) for s in a.summaries(v)] for v in a.views},
        "notes": list(a.notes),
    }


def analysis_for_viewer(doc: dict[str, Any], viewer: int | None) -> dict[str, Any]:
    """:func:`analysis_to_dict`'s form cut to what ``viewer``'s replay may show, by the rule
    of :func:`judgements_for`: the summaries and decisions of the viewer's seat, in the
    seat's view, for a seat; everything for the omniscient view (``viewer`` None)."""
    if viewer is None:
        return doc
    decisions = []
    for d in doc.get("decisions", []):
        if d.get("seat") == viewer and "seat" in d.get("views", {}):
            decisions.append({**d, "views": {"seat": d["views"]["seat"]}})
    summaries = {"seat": [s for s in doc.get("summaries", {}).get("seat", []) if s.get("seat") == viewer]}
    return {**doc, "views": ["seat"] if "seat" in doc.get("views", []) else [], "decisions": decisions, "summaries": summaries}


#: Rollouts per action of the analyses the viewers show (half the command's: they are made
#: on demand, for whole matches, on a shared machine).
VIEWER_SAMPLES = 24
#: Beside a log, its analysis as the viewers show it: ``LOG.jsonl.analysis.json``.
CACHE_SUFFIX = ".analysis.json"


def cached_analysis(path: Path, *, samples: int = VIEWER_SAMPLES, seed: int = 0) -> dict[str, Any]:
    """:func:`analysis_to_dict` of the log at ``path`` in both views, kept beside the log
    (:data:`CACHE_SUFFIX`) so that a viewer analyses a match once. A kept analysis is used
    when it was made of this log (its size and time), with these samples and seed; a folder
    that cannot be written only loses the keeping."""
    side = path.with_name(path.name + CACHE_SUFFIX)
    st = path.stat()
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "samples": samples, "seed": seed, "policy": REFERENCE_POLICY}
    try:
        kept = json.loads(side.read_text(encoding="utf-8"))
        if isinstance(kept, dict) and kept.get("stamp") == stamp and isinstance(kept.get("analysis"), dict):
            return dict(kept["analysis"])
    except (OSError, ValueError):
        pass
    doc = analysis_to_dict(analyse_log(path, samples=samples, seed=seed))
    tmp = side.with_name(side.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({"stamp": stamp, "analysis": doc}), encoding="utf-8")
        os.replace(tmp, side)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return doc
