"""A replay as rich renderables: the match round by round and turn by turn.

Presentation only: everything shown comes from the steps of a
:class:`~referee.replay.model.Replay`, which already hold only what its point of view may
see. :func:`sections` cuts the match into pieces (the header, each deal, each turn, each
round's end, the result) so that a caller can pause between turns; :func:`render` prints
them.

Cards are printed with suit symbols, red for diamonds and hearts, when the console's
encoding can show the symbols, and as ``Ah`` otherwise; rich drops the colour by itself
when the output is not a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from referee.analysis.decisions import Judgement, MatchAnalysis, judgements_for
from referee.game import Action, ActionKind, Card, RoundEnd
from referee.replay.model import (
    ActionStep,
    DealStep,
    FaultStep,
    ForfeitStep,
    LifeLoss,
    LossReason,
    Replay,
    RestockStep,
    ResultStep,
    RoundEndStep,
    SeatHand,
    Step,
    ThirtyOneStep,
)
from referee.text import plural, printable

SectionKind = Literal["header", "deal", "turn", "round_end", "result", "notice"]

_RED = "red"
_MARGIN = 9  # width of the left column: "turn 12", "showdown", "lives", ...
_NAME_MAX = 14  # bot names longer than this are cut, to keep the columns readable
_PHRASE = 44  # the action phrases' column, at most; hands line up after it
_HAND = 18  # room kept for " → K♠ A♠ 6♥  30.5" after the phrases


@dataclass(frozen=True, slots=True)
class Section:
    """One piece of a replay: the header, a deal, a turn, a round's end, the result."""

    kind: SectionKind
    round_no: int
    turn: int
    renderable: RenderableType


def supports_symbols(console: Console) -> bool:
    """Whether the console's encoding can print the suit symbols (and arrows, dots)."""
    try:
        "♣♦♥♠→·".encode(console.encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _Glyphs:
    """The few non-ASCII characters used, with ASCII stand-ins."""

    def __init__(self, symbols: bool) -> None:
        self.symbols = symbols
        self.arrow = "→" if symbols else "->"
        self.dot = " · " if symbols else " | "


class _Painter:
    """Formats seats, cards and hands for one replay."""

    def __init__(self, replay: Replay, symbols: bool, width: int, analysis: MatchAnalysis | None = None) -> None:
        self.replay = replay
        #: The decisions' judgements this view may show, by log line (none without an analysis).
        self.judged = judgements_for(analysis, replay.viewer) if analysis is not None else {}
        self.unit = analysis.unit if analysis is not None else "lives"
        self.g = _Glyphs(symbols)
        seats = replay.header.seats
        # Every text from the log is shown through printable(): a name holding terminal
        # escapes (ESC]0;..., ESC[2J) is shown, never obeyed, on a terminal or in a pipe.
        self.labels = [f"#{s.seat} {_cut(printable(s.label or s.identity.name))}" for s in seats]
        self.width = max(len(label) for label in self.labels)
        self.rules = replay.header.rules
        # On a narrow console the phrases wrap sooner, so that the hands still fit.
        self.phrase = max(16, min(_PHRASE, width - _MARGIN - self.width - 2 - _HAND))

    def seat(self, seat: int) -> Text:
        label = self.labels[seat] if 0 <= seat < len(self.labels) else f"#{seat}"
        return Text(label, style="bold")

    def card(self, c: Card) -> Text:
        return Text(c.symbol if self.g.symbols else c.text, style=_RED if c.is_red else "")

    def cards(self, cs: Iterable[Card]) -> Text:
        return Text(" ").join(self.card(c) for c in cs)

    def hand(self, h: SeatHand) -> Text:
        t = self.cards(h.cards)
        if h.value is not None:
            t.append("  " + _num(h.value), style="bold")
        return t

    def margin(self, label: str = "", style: str = "dim") -> Text:
        return Text(label, style=style)

    def tokens(self, tokens: Sequence[int], in_game: Sequence[bool]) -> Text:
        parts = [f"#{s} {tokens[s]}" if in_game[s] else f"#{s} out" for s in range(len(tokens))]
        return Text(self.g.dot.join(parts))

    def chips(self, chips: Sequence[int], in_game: Sequence[bool] | None = None) -> Text:
        """Net chips per seat (playing for a pot), ``#0 +3 · #1 -2``; a seat out is marked."""
        parts = [f"#{s} {_signed(c)}" + ("" if in_game is None or in_game[s] else " (out)") for s, c in enumerate(chips)]
        return Text(self.g.dot.join(parts))

    def seats(self, seats: Iterable[int]) -> str:
        return " and ".join(self.labels[s] for s in seats)


    def row(self, margin: Text, seat: Text | None, content: Text | str, hand: Text | None = None) -> Table:
        """One line in the replay's columns: a label, a seat, what happened (wrapping in its
        own column), and, for a turn, the hand after it (lined up from turn to turn)."""
        grid = Table.grid()
        grid.add_column(width=_MARGIN, no_wrap=True)
        grid.add_column(width=self.width + 2, no_wrap=True)
        if hand is None:
            grid.add_column()
            grid.add_row(margin, seat or "", content)
        else:
            grid.add_column(width=self.phrase)
            grid.add_column(no_wrap=True)
            grid.add_row(margin, seat or "", content, hand)
        return grid


def _cut(name: str) -> str:
    return name if len(name) <= _NAME_MAX else name[: _NAME_MAX - 1] + "~"


def _num(v: float) -> str:
    return f"{v:g}"


def _signed(n: int) -> str:
    """Net chips: ``+3``, ``-2``, ``0``."""
    return f"{n:+d}" if n else "0"


# ---------------------------------------------------------------- sections


def _group_key(step: Step) -> tuple[SectionKind, int, int, int]:
    at = step.at
    if isinstance(step, DealStep):
        return ("deal", at.round_no, at.line, 0)  # every deal is its own section
    if isinstance(step, ThirtyOneStep | RoundEndStep):
        return ("round_end", at.round_no, 0, 0)
    if isinstance(step, ResultStep):
        return ("result", 0, 0, 0)
    # A turn is one seat's: a forfeit does not end the turn count, so the next seat's
    # actions can share the forfeiting seat's turn number.
    seat = step.fault.seat if isinstance(step, FaultStep) else step.seat
    return ("turn", at.round_no, at.turn, seat)


def _groups(steps: Sequence[Step]) -> Iterator[tuple[SectionKind, list[Step]]]:
    """Consecutive steps of one deal, one turn or one round's end."""
    current: list[Step] = []
    key: tuple[SectionKind, int, int, int] | None = None
    for step in steps:
        k = _group_key(step)
        if current and k != key:
            assert key is not None
            yield key[0], current
            current = []
        key = k
        current.append(step)
    if current:
        assert key is not None
        yield key[0], current


def sections(
    replay: Replay,
    *,
    symbols: bool = True,
    width: int = 100,
    from_round: int | None = None,
    analysis: MatchAnalysis | None = None,
) -> Iterator[Section]:
    """The replay cut into sections, in order, laid out for a console ``width`` wide;
    ``from_round`` skips the rounds before it. With ``analysis`` (of the same log), each
    decision this view may judge (:func:`~referee.analysis.decisions.judgements_for`) gets a
    line under it: the best action and what the one taken cost."""
    p = _Painter(replay, symbols, width, analysis)
    yield Section("header", 0, 0, _header(p))
    viewer = replay.viewer
    for kind, steps in _groups(replay.steps):
        first = steps[0]
        round_no, turn = first.at.round_no, first.at.turn
        if from_round is not None and kind != "result" and round_no < from_round:
            continue
        if kind == "deal":
            assert isinstance(first, DealStep)
            yield Section(kind, round_no, turn, _deal(p, first))
        elif kind == "turn":
            yield Section(kind, round_no, turn, _turn(p, steps))
        elif kind == "round_end":
            yield Section(kind, round_no, turn, _round_end(p, steps))
            end = steps[-1]
            if viewer is not None and isinstance(end, RoundEndStep) and viewer in end.eliminated:
                yield Section("notice", round_no, turn, _viewer_out(p, viewer))
        else:
            assert isinstance(first, ResultStep)
            yield Section(kind, 0, 0, _result(p, first))
        if viewer is not None and kind == "turn" and any(isinstance(s, ForfeitStep) and s.seat == viewer for s in steps):
            yield Section("notice", round_no, turn, _viewer_out(p, viewer))
    if not replay.complete and replay.divergence is None:
        text = Text(f"incomplete: the log {replay.stop_description()}; it has no result", style="bold yellow")
        yield Section("notice", replay.last.round_no, replay.last.turn, text)


def render(
    replay: Replay,
    console: Console,
    *,
    from_round: int | None = None,
    pause: Callable[[Section], bool] | None = None,
    analysis: MatchAnalysis | None = None,
) -> None:
    """Print the replay (with ``analysis``, each decision's judgement under it); after each
    turn, ``pause(section)`` may wait, and stop it by returning False."""
    symbols = supports_symbols(console)
    for section in sections(replay, symbols=symbols, width=console.width, from_round=from_round, analysis=analysis):
        console.print(section.renderable, highlight=False)
        if pause is not None and section.kind == "turn" and not pause(section):
            return


# ---------------------------------------------------------------- the pieces


def _header(p: _Painter) -> RenderableType:
    r = p.replay
    h = r.header
    g = p.g
    title = Text(f"Match {printable(h.match_id)}", style="bold")
    title.append(f"{g.dot}{h.players} players{g.dot}{h.rules.describe()} rules")
    if r.viewer is None:
        title.append(f"{g.dot}seed {h.seed}")
    else:
        title.append(f"{g.dot}as seen by {p.labels[r.viewer]}", style="bold cyan")
    seats = Table.grid(padding=(0, 2))
    seats.add_column()
    seats.add_column()
    seats.add_column(style="dim")
    for s in h.seats:
        ident = s.identity
        bot = ident.name + (f" {ident.version}" if ident.version else "") + (f" by {ident.author}" if ident.author else "")
        seats.add_row(Text("  " + p.labels[s.seat], style="bold"), Text(printable(bot)), Text(printable(s.source)))
    policy = h.fault_policy + (f" (a seat forfeits at {plural(h.max_strikes, 'strike')})" if h.fault_policy == "lenient" else " (the first fault forfeits)")
    parts: list[RenderableType] = [
        title,
        seats,
        Text(f"  time: {h.time_control.describe()}", style="dim"),
        Text(f"  faults: {policy}", style="dim"),
    ]
    if r.viewer is not None:
        parts.append(Text("  only what this seat saw: its own cards, and the public table", style="dim"))
    return Group(*parts)


def _deal(p: _Painter, d: DealStep) -> RenderableType:
    g = p.g
    r = p.rules
    # Playing for a pot, a match is a fixed number of rounds (0: three per seat).
    of = f" of {r.pot_rounds or 3 * p.replay.header.players}" if r.scoring == "pot" else ""
    title = f"Round {d.at.round_no}{of}{g.dot}dealer {p.labels[d.dealer]}"
    lines: list[RenderableType] = [Rule(title, style="dim")]
    for i, h in enumerate(d.hands):
        lines.append(p.row(p.margin("deal" if i == 0 else ""), p.seat(h.seat), p.hand(h)))
    if d.widow:
        # The widow game: three cards face up, no up-card and no stock.
        widow = p.cards(d.widow).append("  face up; no stock, no discard pile", style="dim")
        lines.append(p.row(p.margin("widow"), None, widow))
    else:
        up = Text("up-card ")
        if d.upcard is not None:
            up.append_text(p.card(d.upcard))
        up.append(f"{g.dot}{plural(d.stock_size, 'card')} in the stock")
        lines.append(p.row(p.margin("" if d.hands else "deal"), None, up))
    if d.dummy_size:
        dummy = p.cards(d.dummy) if d.dummy else Text("")
        dummy.append(f"{'  ' if d.dummy else ''}{plural(d.dummy_size, 'card')} face down", style="dim")
        lines.append(p.row(p.margin("dummy"), None, dummy))
    if d.antes:
        paid = [f"#{s} {a}" for s, a in enumerate(d.antes) if a]
        ante = Text(g.dot.join(paid) + f" {g.arrow} ")
        ante.append(f"pot {d.pot}", style="bold")
        if d.pot_carried:
            ante.append(f" ({d.pot_carried} carried from the round before)")
        lines.append(p.row(p.margin("antes"), None, ante))
        lines.append(p.row(p.margin("chips"), None, p.chips(d.chips, d.in_game)))
    else:
        lines.append(p.row(p.margin("tokens"), None, p.tokens(d.tokens, d.in_game)))
    return Group(*lines)


def _action(p: _Painter, a: Action) -> Text:
    """An action as its text form, its cards (if any) printed like every other card."""
    if a.card is None:
        return Text(str(a), style="red")
    name = str(a).split(f" {a.card}")[0]
    t = Text(name + " ", style="red").append_text(p.card(a.card))
    if a.widow_card is not None:
        t.append(" ").append_text(p.card(a.widow_card))
    return t


def _phrase(p: _Painter, a: ActionStep) -> Text:
    kind = a.action.kind
    t = Text()
    if kind is ActionKind.DRAW_STOCK:
        t.append("draws ")
        if a.card is not None:
            t.append_text(p.card(a.card))
            t.append(" ")
        t.append("from the stock")
    elif kind is ActionKind.DRAW_DISCARD:
        t.append("takes ")
        assert a.card is not None
        t.append_text(p.card(a.card))
        t.append(" from the discard pile")
    elif kind is ActionKind.DISCARD:
        t.append("discards ")
        assert a.card is not None
        t.append_text(p.card(a.card))
    elif kind is ActionKind.KNOCK:
        t.append("knocks", style="bold yellow")
    elif kind is ActionKind.PASS and a.dealer_option:
        t.append("keeps the hand")
    elif kind is ActionKind.SWAP_UPCARD:
        assert a.card is not None
        t.append("takes the up-card ")
        t.append_text(p.cards(a.taken or ()))
        t.append(", turns ")
        t.append_text(p.card(a.card))
        t.append(" face up")
    elif kind is ActionKind.CALL:
        t.append("calls under the gun: showdown at once", style="bold yellow")
    elif kind is ActionKind.SWAP_HAND:
        t.append("takes the dummy")
        if a.taken:
            t.append(" ")
            t.append_text(p.cards(a.taken))
        if a.face_up:
            t.append("; the old hand ")
            t.append_text(p.cards(a.face_up))
            t.append(" lies face up")
    elif kind is ActionKind.SWAP_WIDOW:
        assert a.card is not None
        t.append("gives ")
        t.append_text(p.card(a.card))
        t.append(" to the widow, takes ")
        t.append_text(p.cards(a.taken or ()))
    else:
        t.append("passes on the empty stock", style="bold yellow")
    if a.by_referee:
        t.append(" (played by the referee)", style="red")
    return t


def _turn(p: _Painter, steps: Sequence[Step]) -> RenderableType:
    g = p.g
    lines: list[RenderableType] = []
    label_used = False

    def margin() -> Text:
        nonlocal label_used
        if label_used:
            return p.margin()
        label_used = True
        first = steps[0]
        if isinstance(first, ActionStep) and first.dealer_option:
            return p.margin("option")  # the dealer's option: before the first turn, not a turn
        return p.margin(f"turn {first.at.turn}")

    i = 0
    while i < len(steps):
        step = steps[i]
        if isinstance(step, ActionStep):
            run = [step]
            while i + 1 < len(steps) and isinstance(steps[i + 1], ActionStep) and steps[i + 1].seat == step.seat:  # type: ignore[union-attr]
                i += 1
                nxt = steps[i]
                assert isinstance(nxt, ActionStep)
                run.append(nxt)
            phrase = Text(", ").join(_phrase(p, a) for a in run)
            hand = run[-1].hand
            after = Text(f" {g.arrow} ").append_text(p.hand(hand)) if hand is not None else Text()
            lines.append(p.row(margin(), p.seat(step.seat), phrase, after))
            for a in run:
                judged = p.judged.get(a.at.line)
                if judged:
                    lines.append(p.row(p.margin(), None, _judgement(p, a, judged)))
            if run[-1].action.kind is ActionKind.SWAP_WIDOW:
                lines.append(p.row(p.margin("widow"), None, p.cards(run[-1].widow)))
        elif isinstance(step, RestockStep):
            t = Text(f"the stock is empty: the discard pile becomes a new stock of {plural(step.stock_size, 'card')}")
            if step.top_discard is not None:
                t.append(f"{g.dot}")
                t.append_text(p.card(step.top_discard))
                t.append(" stays face up")
            lines.append(p.row(margin(), None, t))
        elif isinstance(step, FaultStep):
            f = step.fault
            t = Text()
            t.append(f"FAULT {f.kind}", style="bold red")
            t.append(f", strike {f.strike} of {step.max_strikes}: {printable(f.message)}")
            if f.default_action is not None:
                t.append(f" {g.arrow} the referee plays ", style="red")
                t.append_text(_action(p, f.default_action))
            elif f.forfeited:
                t.append(f" {g.arrow} the seat forfeits", style="bold red")
            lines.append(p.row(margin(), p.seat(f.seat), t))
        elif isinstance(step, ForfeitStep):
            t = Text()
            t.append("forfeits the match", style="bold red")
            if step.reason:
                t.append(f" ({printable(step.reason)})")
            if step.dead_hand:
                t.append("; its hand ")
                t.append_text(p.cards(step.dead_hand))
                t.append(" is out of play")
            lines.append(p.row(margin(), p.seat(step.seat), t))
        i += 1
    return Group(*lines)


_VIEW_WORD = {"seat": "seat's view", "deal": "deal's view"}
_FLAG_STYLE = {"blunder": "bold red", "mistake": "yellow"}


def _judgement(p: _Painter, a: ActionStep, judged: dict[str, Judgement]) -> Text:
    """``→ discard: seat's view: best · deal's view: best discard 6♦, -0.38 ± 0.18 lives
    (blunder: kept the wrong suit)``: under a step, one line per decision judged."""
    t = Text(f"{p.g.arrow} {a.action.kind.name.lower().replace('_', ' ')}: ", style="dim")
    for i, (view, j) in enumerate(judged.items()):
        if i:
            t.append(p.g.dot, style="dim")
        t.append(f"{_VIEW_WORD.get(view, view)}: ", style="dim")
        if j.loss == 0:
            t.append("best", style="green")
            continue
        t.append("best ", style="dim")
        best = j.best
        t.append(str(best).split(f" {best.card}")[0] if best.card is not None else str(best))
        if best.card is not None:
            t.append(" ").append_text(p.card(best.card))
            if best.widow_card is not None:
                t.append(" ").append_text(p.card(best.widow_card))
        style = _FLAG_STYLE.get(j.flag or "", "dim")
        t.append(f", -{j.loss:.2f} ± {j.se:.2f} {p.unit}", style=style)
        if j.flag:
            t.append(f" ({j.flag}: {j.kind})", style=style)
    return t


def _end_title(p: _Painter, e: RoundEndStep) -> Text | None:
    """Why the round ended, unless a 31 line has said it."""
    knocked = f"{p.labels[e.knocker]} knocked" if e.knocker is not None else ""
    if e.end is RoundEnd.KNOCK:
        return Text(f"after {p.labels[e.knocker]}'s knock" if e.knocker is not None else "after a knock")
    if e.end is RoundEnd.EMPTY_STOCK:
        who = p.labels[e.ended_by] if e.ended_by is not None else "a seat"
        return Text(f"{who} passed on the empty stock" + (f"; {knocked} earlier" if knocked else ""))
    if e.end is RoundEnd.MAX_TURNS:
        return Text(f"the turn limit ({plural(e.turns, 'turn')}) was reached" + (f"; {knocked}" if knocked else ""))
    if e.end is RoundEnd.CALL:
        return Text(f"after {p.labels[e.knocker]}'s call under the gun" if e.knocker is not None else "after a call under the gun")
    if e.end is RoundEnd.ABANDONED:
        nobody = "nobody wins the pot" if p.rules.scoring == "pot" else "nobody loses a life"
        return Text(f"round abandoned: fewer than two seats are left in it; {nobody}", style="yellow")
    return None


def _why(p: _Painter, e: RoundEndStep, loss: LifeLoss) -> Text:
    g = p.g
    r = p.rules
    low = _num(e.lowest) if e.lowest is not None else "?"
    if loss.reason is LossReason.OTHER_31:
        who = " and ".join(p.labels[s] for s in e.thirty_one)
        why = f"{who} {'has' if len(e.thirty_one) == 1 else 'have'} 31"
        if len(e.thirty_one) > 1:
            why += " (simultaneous_31_loss)"
    elif loss.reason is LossReason.LOWEST:
        why = f"lowest at {low}"
    elif loss.reason is LossReason.KNOCKER_ALONE:
        why = f"knocker, alone lowest at {low}"
    else:
        why = f"knocker, tied lowest at {low} (knocker_tied={r.knocker_tied})"
    t = Text(f"{why} {g.arrow} ")
    t.append(f"loses {loss.lives}", style="bold red")
    t.append(f"{g.dot}tokens {loss.tokens_before} {g.arrow} ")
    if loss.eliminated:
        t.append("out of the match", style="bold red")
    elif loss.tokens_after == 0 and r.bus:
        t.append("0, on the bus")
    else:
        t.append(str(loss.tokens_after))
    return t


#: How a blitz was made, by the kind of the action that made it.
_BLITZ: dict[ActionKind | None, str] = {
    ActionKind.SWAP_UPCARD: "swaps the up-card in to 31: blitz",
    ActionKind.SWAP_HAND: "takes the dummy at 31: blitz",
    ActionKind.SWAP_WIDOW: "swaps with the widow to 31: blitz",
}


def _round_end(p: _Painter, steps: Sequence[Step]) -> RenderableType:
    lines: list[RenderableType] = []
    for step in steps:
        if isinstance(step, ThirtyOneStep):
            for i, h in enumerate(step.hands):
                how = "dealt 31" if step.natural else _BLITZ.get(step.by, "discards to 31: blitz")
                t = p.hand(h).append("  ").append(how, style="bold green")
                lines.append(p.row(p.margin("31" if i == 0 else "", style="bold green"), p.seat(h.seat), t))
        elif isinstance(step, RoundEndStep):
            lines.extend(_round_result(p, step))
    return Group(*lines)


def _round_result(p: _Painter, e: RoundEndStep) -> list[RenderableType]:
    lines: list[RenderableType] = []
    title = _end_title(p, e)
    label = "showdown" if e.showdown else "end"
    if title is not None:
        lines.append(p.row(p.margin(label), None, title))
        label = ""
    elif not e.showdown:
        label = "hands"
    # After a 31 the omniscient view still shows every hand; the 31 line above has shown
    # the 31 itself, so only the others are listed here.
    shown = [h for h in e.shown if e.showdown or h.seat not in e.thirty_one]
    lost = {loss.seat for loss in e.losses}
    pot_game = p.rules.scoring == "pot"
    for h in shown:
        t = p.hand(h)
        marks = []
        if h.seat == e.knocker:
            marks.append("caller" if e.end is RoundEnd.CALL else "knocker")
        if h.seat == e.dummy_taker:
            marks.append("took the dummy")
        if pot_game:
            if e.showdown and h.seat in e.winners:
                marks.append("highest")
        elif e.showdown and h.value == e.lowest:
            marks.append("lowest")
        if marks:
            t.append("  " + ", ".join(marks), style="red" if h.seat in lost else "yellow")
        lines.append(p.row(p.margin(label), p.seat(h.seat), t))
        label = ""
    if e.widow:
        lines.append(p.row(p.margin("widow"), None, p.cards(e.widow)))
    if e.face_up:
        who = p.labels[e.dummy_taker] if e.dummy_taker is not None else "the dummy-taker"
        lines.append(p.row(p.margin("face up"), None, p.cards(e.face_up).append(f"  {who}'s old hand", style="dim")))
    if e.dummy:
        lines.append(p.row(p.margin("dummy"), None, p.cards(e.dummy).append("  never taken", style="dim")))
    if pot_game:
        lines.extend(_pot_award(p, e))
        return lines
    for i, loss in enumerate(e.losses):
        lines.append(p.row(p.margin("lives" if i == 0 else ""), p.seat(loss.seat), _why(p, e, loss)))
    if e.knocker_safe and e.knocker is not None:
        low = _num(e.lowest) if e.lowest is not None else "?"
        safe = f"knocker, tied lowest at {low} {p.g.arrow} loses nothing (knocker_tied=safe)"
        lines.append(p.row(p.margin("" if e.losses else "lives"), p.seat(e.knocker), safe))
    if e.sudden_death:
        sudden = Text("sudden death: the round would put out everyone still in, so all stay in at 0 tokens", style="yellow")
        lines.append(p.row(p.margin(), None, sudden))
    if e.eliminated:
        out = Text(", ".join(p.labels[s] for s in e.eliminated), style="bold red")
        lines.append(p.row(p.margin("out"), None, out))
    lines.append(p.row(p.margin("tokens"), None, p.tokens(e.tokens_after, e.in_game_after)))
    return lines


def _pot_award(p: _Painter, e: RoundEndStep) -> list[RenderableType]:
    """Who won the pot, the chips each, what is carried, and the chips after the round."""
    g = p.g
    t = Text(f"pot {e.pot} {g.arrow} ")
    if not e.winners:
        t.append("nobody wins it", style="yellow")
    else:
        each = e.chips_won[e.winners[0]] if e.chips_won else 0
        verb = "wins" if len(e.winners) == 1 else "share it:"
        t.append(f"{p.seats(e.winners)} {verb} ", style="bold green")
        t.append(f"{each} chip{'' if each == 1 else 's'}" + (" each" if len(e.winners) > 1 else ""))
        if e.high_card_tie_break:
            t.append(f"{g.dot}a tie on value, broken by card rank")
    if e.carried:
        t.append(f"{g.dot}{e.carried} carried to the next round")
    lines: list[RenderableType] = [p.row(p.margin("pot"), None, t)]
    if e.chips_after:
        lines.append(p.row(p.margin("chips"), None, p.chips(e.chips_after, e.in_game_after)))
    return lines


def _viewer_out(p: _Painter, viewer: int) -> RenderableType:
    return Text(f"{p.labels[viewer]} is out of the match: it saw nothing more until the result", style="bold yellow")


def _result(p: _Painter, r: ResultStep) -> RenderableType:
    reason: str = r.reason  # "pot_rounds": playing for a pot (docs/rules.md, "Variants")
    if r.winner is not None:
        head = Text(f"{p.labels[r.winner]} wins", style="bold green")
        if reason == "pot_rounds":
            head.append(f": the most chips after {plural(r.rounds, 'round')}", style="")
        else:
            head.append(f": the last player standing after {r.rounds} round" + ("" if r.rounds == 1 else "s"), style="")
    elif r.reason == "max_rounds":
        head = Text(f"No winner: the round limit ({p.rules.max_rounds}) was reached", style="bold yellow")
    elif reason == "pot_rounds":
        head = Text(f"No winner: a tie for the most chips after {plural(r.rounds, 'round')}", style="bold yellow")
    else:
        head = Text(f"No winner: the referee aborted the match in round {r.rounds}", style="bold yellow")
    table = Table(show_edge=False, box=None, padding=(0, 2), pad_edge=False, header_style="bold")
    table.add_column("place", justify="right")
    table.add_column("seat")
    if r.chips:
        table.add_column("chips", justify="right")
    if r.stats is not None:
        for col in ("decisions", "faults", "mean ms", "max ms"):
            table.add_column(col, justify="right")
    table.add_column("")
    order = sorted(range(len(r.placings)), key=lambda s: (r.placings[s], s))
    for s in order:
        if s == r.winner:
            note = Text("winner", style="bold green")
        elif r.forfeited[s]:
            note = Text(f"forfeited in round {r.out_round[s]}", style="red")
        elif r.out_round[s] is not None:
            note = Text(f"out in round {r.out_round[s]}")
        else:
            note = Text("" if r.chips else "still in")
        row: list[RenderableType] = [str(r.placings[s]), p.seat(s)]
        if r.chips:
            row.append(_signed(r.chips[s]))
        if r.stats is not None:
            st = r.stats[s]
            row += [str(st.decisions), str(st.faults), f"{st.mean_latency_us / 1000:.2f}", f"{st.max_latency_us / 1000:.2f}"]
        row.append(note)
        table.add_row(*row)
    notes = [Text(printable(n), style="dim") for n in p.replay.notes]
    if r.pot_left:
        notes.insert(0, Text(f"{plural(r.pot_left, 'chip')} left in the pot after the last round: nobody's", style="dim"))
    return Group(Rule("Result", style="dim"), head, table, *notes)


__all__ = ["Section", "SectionKind", "render", "sections", "supports_symbols"]
