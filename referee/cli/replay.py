"""``thirtyone replay``: step through a match log, from any seat's view, or verify logs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from referee.analysis.decisions import VIEWS, analyse_log
from referee.cli.app import app
from referee.cli.console import err, fail, out
from referee.game.errors import shown
from referee.log import read_log
from referee.replay.model import DealStep, build_replay
from referee.replay.render import Section, render
from referee.replay.verify import (
    EXIT_CODES,
    MatchNotFound,
    Verdict,
    Verification,
    exit_code,
    find_match_log,
    has_results,
    log_files,
    verify_folder,
    verify_log,
    verify_results,
)
from referee.text import plural, printable
from referee.tournament.schedule import key_of_log
from referee.tournament.store import StoreError
from sdk.evaluate import SAMPLES

#: What ``--verify`` checked of a log that replays: said on a line of its own.
REPLAY_CHECK = "every deal, action and score replayed through the game model; the result is the log's"
#: The width of a replay written to a pipe or a file.
REPLAY_PIPE_WIDTH = 80

_VERDICT_STYLE = {
    Verdict.OK: "bold green",
    Verdict.DIVERGED: "bold red",
    Verdict.UNREADABLE: "bold red",
    Verdict.INCOMPLETE: "bold yellow",
}


def _fail(message: str, code: int = 2) -> NoReturn:
    fail(message, code)


@app.command("replay")
def replay_command(
    target: Annotated[
        Path,
        typer.Argument(
            help="A match log (.jsonl), or a tournament folder (then name the MATCH, or --verify them all).",
            show_default=False,
        ),
    ],
    match: Annotated[
        str | None,
        typer.Argument(
            help="In a tournament folder: the match key, TABLE/dDEAL/rROTATION (e.g. greedy+random+threshold/d000/r1: "
            "the table's bots in name order joined by +, the deal from d000, the seat rotation from r0; in rotation rN "
            "seat 0 is the table's bot number N, counting from 0), its log's file name, or its match id.",
            show_default=False,
        ),
    ] = None,
    seat: Annotated[
        int | None,
        typer.Option("--seat", help="Show only what this seat saw: its own cards and the public table."),
    ] = None,
    round_no: Annotated[int | None, typer.Option("--round", help="Start at this round.")] = None,
    step: Annotated[
        bool, typer.Option("--step", help="Wait for Enter after each turn (q then Enter stops; only on a terminal).")
    ] = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Re-play the log (or every log in the folder) through the game model and check every recorded "
            "outcome. Exit 0 ok, 1 diverged, 2 unreadable, 3 incomplete (no footer). A folder exits with its most "
            "serious problem: 1 if any log (or database row) diverges, else 2 if any log is unreadable, else 3 if "
            "any is incomplete, else 0.",
        ),
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write the match as one self-contained web page (every view; works offline from disk) instead of printing it.",
            show_default=False,
        ),
    ] = None,
    analyse: Annotated[
        bool,
        typer.Option(
            "--analyse",
            help="Judge each decision with the position evaluator (as `thirtyone analyse`) and show it under the step: "
            "the best action and what the one taken cost. A seat's replay judges only its own decisions, from what it saw.",
        ),
    ] = False,
    samples: Annotated[int, typer.Option("--samples", help="With --analyse: rollouts per action.")] = SAMPLES,
    bot_output: Annotated[
        int | None,
        typer.Option(
            "--bot-output",
            help="Print what the bot in this seat wrote on stdout and stderr during the match (tournament "
            "matches keep it, up to 1 MiB per bot and match).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Replay a match log round by round and turn by turn, or verify logs against the game model."""
    if not target.exists():
        _fail(f"no such file or folder: {target}")
    if bot_output is not None:
        if verify or seat is not None or round_no is not None or step or html is not None:
            _fail("--bot-output prints one bot's output; it takes no --verify, --seat, --round, --step or --html")
        _show_bot_output(match_log_path(target, match), bot_output)
        return
    if verify:
        if seat is not None or round_no is not None or step or html is not None:
            _fail("--verify checks logs; it takes no --seat, --round, --step or --html")
        if target.is_dir() and match is None:
            _verify_many(target)
        else:
            _verify_one(match_log_path(target, match))
        return
    path = match_log_path(target, match)
    if html is not None:
        if seat is not None or round_no is not None or step:
            _fail("--html writes every view of the match; it takes no --seat, --round or --step")
        _write_html(path, html, analyse, samples)
        return
    log = read_log(path)
    if seat is not None and not 0 <= seat < log.header.players:
        _fail(f"--seat {shown(seat)}: the match has seats 0 to {log.header.players - 1}")
    replay = build_replay(log, seat)
    if round_no is not None:
        rounds = [s.at.round_no for s in replay.steps if isinstance(s, DealStep)]
        if round_no not in rounds:
            have = "no round" if not rounds else "round 1" if max(rounds) == 1 else f"rounds 1 to {max(rounds)}"
            who = f"seat {seat} saw" if seat is not None else "the log has"
            stop = f" (the replay stops at a divergence: {replay.divergence})" if replay.divergence else ""
            _fail(f"--round {shown(round_no)}: {who} {have}{stop}")
    # A replay is lines of cards and prose with rules across the page, not tables: on a pipe it
    # keeps 80 columns rather than the consoles' wide tables.
    console = out if out.is_terminal or "COLUMNS" in os.environ else Console(width=REPLAY_PIPE_WIDTH)
    analysis = None
    if analyse:
        if samples < 2:
            _fail(f"--samples {shown(samples)}: at least 2 (a standard error needs two)")
        analysis = analyse_log(log, seats=None if seat is None else [seat], views=VIEWS if seat is None else ("seat",), samples=samples)
    render(replay, console, from_round=round_no, pause=_pause if step and sys.stdin.isatty() else None, analysis=analysis)
    if replay.divergence is not None:
        _fail(f"{path}: the log diverges from the game model at {replay.divergence}", 1)


def _write_html(path: Path, out_file: Path, analyse: bool = False, samples: int = SAMPLES) -> None:
    """``--html``: the match as one page, its script, style and data inline (with
    ``analyse``, each decision's judgement too)."""
    from referee.web.server import replay_html

    page = replay_html(path, analyse=analyse, samples=samples)
    try:
        out_file.write_text(page, encoding="utf-8")
    except OSError as e:
        _fail(f"cannot write {out_file}: {e.strerror or e}")
    out.print(f"wrote {out_file} ({len(page) // 1024} KiB): open it in a browser", highlight=False, markup=False)


def match_log_path(target: Path, match: str | None) -> Path:
    """The log to read: TARGET itself, or MATCH's log in the tournament folder TARGET."""
    if target.is_dir():
        if match is None:
            examples = ", ".join(key_of_log(p) for p in log_files(target)[:3]) or "no logs there yet"
            _fail(f"{target} is a folder: name the match to replay (thirtyone replay {target} MATCH; e.g. {examples})")
        try:
            return find_match_log(target, match)
        except MatchNotFound as e:
            _fail(str(e))
    if match is not None:
        _fail(f"MATCH ({match}) names a match in a tournament folder; {target} is a log file")
    return target


def _show_bot_output(path: Path, seat: int) -> None:
    """Print one seat's kept output: ``FOLDER/output/<log stem>/seat<N>-<bot>.txt``, next to
    the tournament's ``logs/``."""
    log = read_log(path)
    if not 0 <= seat < log.header.players:
        _fail(f"--bot-output {shown(seat)}: the match has seats 0 to {log.header.players - 1}")
    folder = path.resolve().parent.parent / "output" / path.stem
    files = sorted(folder.glob(f"seat{seat}-*.txt")) if path.resolve().parent.name == "logs" else []
    if not files:
        _fail(f"no output of seat {seat} is kept for {path} (bots' output is kept for tournament matches, in FOLDER/output/)")
    try:
        text = files[0].read_bytes().decode("utf-8", "replace")
    except OSError as e:
        _fail(f"cannot read {files[0]}: {e.strerror or e}")
    label = log.header.seats[seat].label if seat < len(log.header.seats) else ""
    err.print(f"output of seat {printable(f'{seat} ({label}) in {path.stem}')}: {len(text)} characters", markup=False, highlight=False)
    # The bot's own text: never markup, and its lines as they are but no terminal escape
    # (the file itself keeps every byte).
    sys.stdout.write(printable(text, keep="\n\t"))
    if text and not text.endswith("\n"):
        sys.stdout.write("\n")


def _pause(section: Section) -> bool:
    """Wait for Enter; False (stop) on q or at the end of input."""
    try:
        answer = err.input("[dim]Enter: next turn, q: quit[/] ")
    except (EOFError, KeyboardInterrupt):
        return False
    if err.is_terminal:
        # Take the prompt off the screen again, so that the turns read as one listing.
        err.file.write("\x1b[1A\x1b[2K")
        err.file.flush()
    return answer.strip().lower() not in ("q", "quit")


def _verify_one(path: Path) -> None:
    v = verify_log(path)
    if v.verdict is Verdict.UNREADABLE:
        _fail(v.detail)
    out.print(_verdict_line(v), highlight=False, soft_wrap=True)
    for note in v.notes:
        out.print(Text(f"  {note}", style="dim"), soft_wrap=True)
    code = EXIT_CODES[v.verdict]
    if code:
        raise typer.Exit(code)
    out.print(Text.assemble(("ok", "green"), f" replay: {REPLAY_CHECK}"), highlight=False, soft_wrap=True)
    _verify_commitment(path)


def _verify_commitment(path: Path) -> None:
    """A log downloaded from an arena (``remote download``) has its seed's commitment beside
    it: the seed must be the one committed to, and the deals that seed's."""
    import json

    from referee.ladder.fairness import check_commitment

    side = Path(str(path) + ".arena.json")
    if not side.is_file():
        # Said, not silent: a reader must not take a skipped check for a passed one.
        out.print(
            Text.assemble(
                ("skipped", "yellow"),
                f" commitment: no {printable(side.name)} beside the log, so the seed was not checked against a commitment "
                "(an arena's log has one when 'thirtyone remote download' fetched it; a tournament's logs have none)",
            ),
            highlight=False, soft_wrap=True,
        )
        return
    try:
        committed = str(json.loads(side.read_text())["commitment"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        _fail(f"{side}: not an arena side file with a commitment ({e})")
    check = check_commitment(path, committed)
    style = "green" if check.ok else "bold red"
    out.print(Text.assemble(("ok" if check.ok else "diverged", style), f" commitment: {check.detail}"), highlight=False, soft_wrap=True)
    if not check.ok:
        raise typer.Exit(EXIT_CODES[Verdict.DIVERGED])


def _verdict_line(v: Verification) -> Text:
    t = Text.assemble((v.verdict.value, _VERDICT_STYLE[v.verdict]), " ", printable(str(v.path)))
    t.append(f": {v.detail}")
    return t


def _verify_many(folder: Path) -> None:
    files = log_files(folder)
    tournament = has_results(folder)
    if not files and not tournament:
        _fail(f"no match logs in {folder} (looked for {folder / 'logs'}/*.jsonl and {folder}/*.jsonl)")
    results = verify_folder(folder)
    title = f"Verified {plural(len(results), 'match log')} in {folder}"
    table = Table(title=escape(title), title_justify="left", show_edge=False)
    table.add_column("file", overflow="fold")
    table.add_column("verdict")
    table.add_column("detail", overflow="fold")
    for v in results:
        table.add_row(Text(printable(v.path.name)), Text(v.verdict.value, style=_VERDICT_STYLE[v.verdict]), Text(v.detail))
    out.print(table)
    counts = {verdict: sum(1 for r in results if r.verdict is verdict) for verdict in Verdict}
    summary = ", ".join(f"{counts[verdict]} {verdict.value}" for verdict in Verdict)
    out.print(f"{plural(len(results), 'log')}: {summary}", highlight=False, markup=False)
    code = exit_code(results)
    if tournament:
        # A tournament's results are only as good as their agreement with the logs.
        try:
            check = verify_results(folder)
        except StoreError as e:
            _fail(str(e))
        if check.divergences:
            title = f"Database rows that disagree with their logs in {folder}"
            t = Table(title=escape(title), title_justify="left", show_edge=False)
            t.add_column("match", overflow="fold")
            t.add_column("field")
            t.add_column("detail", overflow="fold")
            for d in check.divergences:
                t.add_row(Text(printable(d.match)), Text(printable(d.field), style="bold red"), Text(d.detail))
            out.print(t)
            code = EXIT_CODES[Verdict.DIVERGED]
        if check.divergences:
            matches = len({d.match for d in check.divergences})
            n = len(check.divergences)
            verdict = Text(
                f"{plural(matches, 'match', 'matches')} {'disagrees' if matches == 1 else 'disagree'} "
                f"({plural(n, 'difference')})",
                style="bold red",
            )
        else:
            verdict = Text("all agree", style="bold green")
        out.print(Text(f"database: {plural(check.rows, 'row')} checked against their logs, ") + verdict)
    if code:
        raise typer.Exit(code)
