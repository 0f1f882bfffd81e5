"""``thirtyone analyse``: what each decision of a match cost, and the luck of its cards."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from referee.analysis.decisions import (
    VIEWS,
    MatchAnalysis,
    SeatSummary,
    analyse_log,
    analysis_to_dict,
    thresholds,
)
from referee.analysis.luck import MatchLuck, match_luck
from referee.cli.app import app
from referee.cli.console import err, fail, out
from referee.cli.replay import match_log_path
from referee.faults import LogError
from referee.game.errors import shown
from referee.log import read_log
from referee.replay.verify import log_files
from referee.text import plural, printable
from sdk.evaluate import SAMPLES, View

_VIEW_NAME = {"seat": "seat's view", "deal": "deal's view"}
_FLAG_STYLE = {"blunder": "bold red", "mistake": "yellow"}


@app.command("analyse")
def analyse_command(
    target: Annotated[
        Path,
        typer.Argument(
            help="A match log (.jsonl, e.g. one `thirtyone remote download` fetched from an arena), or a tournament "
            "folder: then name the MATCH, or leave it out for the habits of each bot over the folder's matches.",
            show_default=False,
        ),
    ],
    match: Annotated[
        str | None,
        typer.Argument(
            help="In a tournament folder: the match key, its log's file name or its match id (as `thirtyone replay`).",
            show_default=False,
        ),
    ] = None,
    seat: Annotated[int | None, typer.Option("--seat", help="Judge only this seat's decisions.")] = None,
    view: Annotated[
        str,
        typer.Option(
            "--view",
            help="seat: judge each decision from what the seat could see (its hidden cards guessed); deal: from the "
            "true deal; both.",
        ),
    ] = "both",
    samples: Annotated[int, typer.Option("--samples", help="Rollouts per decision (more: smaller errors, slower).")] = SAMPLES,
    seed: Annotated[int, typer.Option("--seed", help="The analysis's seed: the same seed, the same figures.")] = 0,
    flagged: Annotated[bool, typer.Option("--flagged", help="List only the mistakes and blunders.")] = False,
    luck: Annotated[
        bool, typer.Option("--luck", help="Also measure the luck of the cards: each seat's result raw, its luck, and adjusted.")
    ] = False,
    matches: Annotated[
        int,
        typer.Option("--matches", help="A folder without MATCH: analyse at most this many of its matches (in name order)."),
    ] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the analysis as JSON.")] = False,
) -> None:
    """Judge every decision of a match against the best the position evaluator finds.

    Each decision with a choice is valued by rollouts under a fixed reference policy: the
    action taken, the best action, and the expected lives (chips, playing for a pot) the
    choice gave away with its standard error. Mistakes and blunders are flagged only when the
    loss is clear of its error. See docs/analysis.md.
    """
    if not target.exists():
        fail(f"no such file or folder: {target}")
    views = _views(view)
    if samples < 2:
        fail(f"--samples {shown(samples)}: at least 2 (a standard error needs two)")
    if matches < 1:
        fail(f"--matches {shown(matches)}: at least 1")
    if target.is_dir() and match is None:
        _habits(target, views, samples, seed, matches, as_json)
        return
    path = match_log_path(target, match)
    log = read_log(path)
    if seat is not None and not 0 <= seat < log.header.players:
        fail(f"--seat {shown(seat)}: the match has seats 0 to {log.header.players - 1}")
    t0 = time.perf_counter()
    analysis = analyse_log(log, seats=None if seat is None else [seat], views=views, samples=samples, seed=seed)
    took = time.perf_counter() - t0
    measured: MatchLuck | None = None
    if luck:
        measured = match_luck(log, seed=seed)
    if as_json:
        doc: dict[str, Any] = analysis_to_dict(analysis)
        if measured is not None:
            doc["luck"] = measured.to_dict()
        out.print_json(json.dumps(doc))
        return
    _print_decisions(analysis, flagged)
    _print_summaries(analysis, seat)
    if measured is not None:
        _print_luck(analysis, measured)
    for note in analysis.notes:
        out.print(Text(note, style="dim"), soft_wrap=True)
    n = len(analysis.decisions)
    err.print(
        f"analysed {plural(n, 'decision')} in {took:.1f} s ({samples} rollouts per action, policy "
        f"{analysis.policy}, seed {seed})",
        style="dim",
        highlight=False,
    )


def _views(text: str) -> tuple[View, ...]:
    if text == "both":
        return VIEWS
    if text in VIEWS:
        v: Literal["seat", "deal"] = "seat" if text == "seat" else "deal"
        return (v,)
    fail(f"--view {shown(text)}: seat, deal or both")


def _print_decisions(a: MatchAnalysis, flagged: bool) -> None:
    mistake, blunder = thresholds(a.rules, a.players)
    title = (
        f"Decisions of {printable(a.match_id)}: expected {a.unit} lost against the best "
        f"(mistake from {mistake:g}, blunder from {blunder:g}, when clear of 2 standard errors)"
    )
    t = Table(title=escape(title), title_justify="left", show_edge=False)
    t.add_column("round.turn", justify="right")
    t.add_column("seat")
    t.add_column("played")
    for v in a.views:
        t.add_column(f"best ({_VIEW_NAME[v]})")
        t.add_column(f"loss ± se ({v})", justify="right")
        t.add_column(f"flag ({v})")
    rows = 0
    for d in a.decisions:
        js = [d.judged.get(v) for v in a.views]
        if flagged and not any(j is not None and j.flag for j in js):
            continue
        rows += 1
        cells: list[Text] = [
            Text(f"{d.round_no}.{d.turn}"),
            Text(printable(a.labels[d.seat]) + f" ({d.seat})"),
            Text(str(d.taken) + (" (referee)" if d.by_referee else "")),
        ]
        for j in js:
            if j is None:  # not valued in this view (see the notes)
                cells += [Text("-", style="dim"), Text(""), Text("")]
                continue
            same = j.loss == 0
            cells.append(Text("=" if same else str(j.best), style="dim" if same else ""))
            cells.append(Text("" if same else f"{j.loss:.2f} ± {j.se:.2f}"))
            label = f"{j.flag}: {j.kind}" if j.flag else ""
            cells.append(Text(label, style=_FLAG_STYLE.get(j.flag or "", "")))
        t.add_row(*cells)
    if rows:
        out.print(t)
    else:
        out.print("no mistakes or blunders" if flagged else "no decisions with a choice", highlight=False)


def _kinds(s: SeatSummary, k: int = 3) -> str:
    return ", ".join(f"{kind} ({n})" for kind, n in s.kinds.most_common(k)) or "-"


def _print_summaries(a: MatchAnalysis, only: int | None) -> None:
    t = Table(title=f"Per seat: expected {a.unit} given away", title_justify="left", show_edge=False)
    for col in ("seat", "view", "decisions", f"{a.unit} per 100", "accuracy", "mistakes", "blunders", "commonest losses"):
        t.add_column(col, justify="right" if col not in ("seat", "view", "commonest losses") else "left")
    for v in a.views:
        for s in a.summaries(v):
            if only is not None and s.seat != only:
                continue
            t.add_row(
                Text(printable(s.label) + f" ({s.seat})"),
                v,
                str(s.decisions),
                f"{s.per_100:.1f}",
                f"{s.accuracy:.0f}%",
                str(s.mistakes),
                str(s.blunders),
                Text(_kinds(s)),
            )
    out.print(t)


def _print_luck(a: MatchAnalysis, m: MatchLuck) -> None:
    unit = "-lives" if m.unit == "lives" else "chips"
    t = Table(
        title=f"Luck of the cards ({plural(len(m.terms), 'chance event')}): result {unit}, raw and with the luck taken out",
        title_justify="left",
        show_edge=False,
    )
    for col in ("seat", "raw", "luck", "adjusted"):
        t.add_column(col, justify="left" if col == "seat" else "right")
    for s in range(m.players):
        t.add_row(Text(printable(a.labels[s]) + f" ({s})"), f"{m.raw[s]:+.2f}", f"{m.luck[s]:+.2f}", f"{m.adjusted[s]:+.2f}")
    out.print(t)


def _habits(folder: Path, views: tuple[View, ...], samples: int, seed: int, limit: int, as_json: bool) -> None:
    """Per bot over a folder's matches: its losses summed, and the commonest kinds."""
    files = log_files(folder)
    if not files:
        fail(f"no match logs in {folder} (looked for {folder / 'logs'}/*.jsonl and {folder}/*.jsonl)")
    chosen = files[:limit]
    totals: dict[tuple[str, str], list[float]] = {}
    kinds: dict[tuple[str, str], Counter[str]] = {}
    skipped: list[str] = []
    for i, p in enumerate(chosen, 1):
        err.print(f"[{i}/{len(chosen)}] {printable(p.name)}", style="dim", highlight=False)
        try:
            a = analyse_log(p, views=views, samples=samples, seed=seed)
        except (LogError, ValueError) as e:
            skipped.append(f"{p.name}: {e}")
            continue
        for v in views:
            for s in a.summaries(v):
                key = (s.label, v)
                row = totals.setdefault(key, [0, 0.0, 0, 0, 0, 0])
                row[0] += s.decisions
                row[1] += s.lost
                row[2] += s.mistakes
                row[3] += s.blunders
                row[4] += s.sound
                row[5] += 1
                kinds.setdefault(key, Counter()).update(s.kinds)
    if as_json:
        doc = [
            {
                "bot": bot,
                "view": v,
                "seats": int(r[5]),
                "decisions": int(r[0]),
                "per_100": round(100 * r[1] / r[0], 3) if r[0] else 0.0,
                "accuracy": round(100 * r[4] / r[0], 1) if r[0] else 100.0,
                "mistakes": int(r[2]),
                "blunders": int(r[3]),
                "kinds": dict(kinds[(bot, v)].most_common()),
            }
            for (bot, v), r in sorted(totals.items())
        ]
        out.print_json(json.dumps({"matches": len(chosen), "bots": doc, "skipped": skipped}))
        return
    title = f"Habits over {plural(len(chosen), 'match', 'matches')} of {folder}: where each bot gives lives (chips) away"
    t = Table(title=escape(title), title_justify="left", show_edge=False)
    for col in ("bot", "view", "decisions", "per 100", "accuracy", "mistakes", "blunders", "commonest losses"):
        t.add_column(col, justify="right" if col not in ("bot", "view", "commonest losses") else "left")
    for (bot, vn), r in sorted(totals.items()):
        common = ", ".join(f"{k} ({n})" for k, n in kinds[(bot, vn)].most_common(4)) or "-"
        t.add_row(
            Text(printable(bot)),
            vn,
            str(int(r[0])),
            f"{100 * r[1] / r[0]:.1f}" if r[0] else "-",
            f"{100 * r[4] / r[0]:.0f}%" if r[0] else "-",
            str(int(r[2])),
            str(int(r[3])),
            Text(common),
        )
    out.print(t)
    if len(files) > len(chosen):
        out.print(Text(f"({len(files) - len(chosen)} more matches not analysed: --matches N for more)", style="dim"))
    for note in skipped:
        out.print(Text(f"skipped {printable(note)}", style="dim"), soft_wrap=True)
