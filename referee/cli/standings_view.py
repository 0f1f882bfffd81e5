"""Rendering standings as a rich table, JSON or CSV (CLI layer only).

All three say whether the tournament is complete, mark disqualified bots with the reason,
say when the bots ran unsandboxed, and show the tournament seed only once every scheduled
match is played (until then it would let anyone work out the deals still to come).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from referee.tournament.settings import TournamentSettings
from referee.tournament.standings import FAULT_KINDS, Standings


def standings_rows(st: Standings) -> list[dict[str, Any]]:
    """One plain dict per bot, in table order (for JSON and CSV)."""
    rows = []
    for rank, b in enumerate(st.bots, 1):
        rows.append(
            {
                "rank": rank,
                "bot": b.name,
                # The official rating and its 95% interval (None before a bot's first match), in
                # whole points as every view shows them: rounded once, here, so that a page
                # rounding a tenth again cannot show a point more than the table.
                "rating": round(b.rating) if b.rated else None,
                "rating_low95": round(b.rating_low) if b.rated else None,
                "rating_high95": round(b.rating_high) if b.rated else None,
                "rating_se": round(b.rating_se, 2) if b.rated else None,
                # With --luck the rating above has the luck of the cards taken out; these are
                # the raw placings' figures.
                **(
                    {
                        "rating_raw": round(b.raw_rating[0]) if b.rated else None,
                        "rating_raw_low95": round(b.raw_rating[1]) if b.rated else None,
                        "rating_raw_high95": round(b.raw_rating[2]) if b.rated else None,
                    }
                    if b.raw_rating is not None
                    else {}
                ),
                "matches": b.matches,
                "wins": b.wins,
                "win_rate": round(b.win_rate, 4),
                "win_rate_low95": round(b.win_low, 4),
                "win_rate_high95": round(b.win_high, 4),
                "mean_placing": round(b.mean_placing, 3),
                "lives_lost_per_round": round(b.lives_per_round, 4),
                # Only when the rules score a pot (docs/rules.md, "Playing for a pot").
                **({"mean_net_chips": round(b.mean_chips, 3)} if st.pot else {}),
                "rounds": b.rounds,
                "forfeits": b.forfeits,
                **{f"faults_{k.lower()}": b.faults.get(k, 0) for k in FAULT_KINDS},
                # Late answers under either policy (under strict each is also a late fault).
                "late_answers": b.late,
                "disqualified": b.disqualified,
            }
        )
    return rows


def shown_settings(st: Standings, settings: TournamentSettings) -> dict[str, Any]:
    """The settings as the standings show them: the seed is None until the tournament is complete."""
    data = settings.to_dict()
    if not st.complete:
        data["seed"] = None
    return data


def standings_json(st: Standings, settings: TournamentSettings) -> str:
    """Standings and head-to-head as JSON."""
    h2h = [
        {"bot": a, "opponent": b, "matches": h.matches, "better": h.better, "equal": h.equal, "worse": h.worse,
         "score": round(h.score, 4)}
        for (a, b), h in sorted(st.head_to_head.items())
    ]
    return json.dumps(
        {
            "settings": shown_settings(st, settings),
            # In words, as `thirtyone match` prints them: the preset and any option on top.
            "rules": settings.rules.describe(),
            "seed_hidden": not st.complete,
            "matches": st.matches,
            "progress": {"played": st.played, "scheduled": st.scheduled, "complete": st.complete},
            "unsandboxed": st.unsandboxed,
            # Whether the ratings have the luck of the cards taken out (standings --luck).
            "luck": st.luck,
            "disqualified": {b.name: b.disqualified for b in st.bots if b.disqualified is not None},
            "standings": standings_rows(st),
            "head_to_head": h2h,
        },
        indent=2,
    )


def standings_csv(st: Standings) -> str:
    """The standings table as CSV; every row also says how far the tournament is played."""
    rows = [
        {**r, "disqualified": r["disqualified"] or "", "tournament_played": st.played, "tournament_scheduled": st.scheduled}
        for r in standings_rows(st)
    ]
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def standings_table(st: Standings, settings: TournamentSettings, title: str = "Standings") -> Group:
    """The rich standings table plus the head-to-head matrix."""
    caption = Text(st.progress + "\n", style="bold" if st.complete else "bold yellow")
    if st.unsandboxed:
        caption.append("bots ran unsandboxed (sandbox = off)\n", style="bold red")
    caption.append(settings.describe())
    if st.complete:
        caption.append(f" · seed {settings.seed}")
    elif st.scheduled is not None:  # unknown for loose results: nothing to promise
        caption.append(" · seed hidden until every scheduled match is played")
    caption.append(
        "\nrating (95% CI): Plackett-Luce fit of all placings; 1500 = the field's average, +400 = odds of 10 to 1"
        + ("\nluck out: the luck of the cards taken out of it (docs/analysis.md) · raw: the placings as they fell" if st.luck else "")
        + "\nn: matches · place: mean placing · "
        + ("chips/m: mean net chips per match" if st.pot else "lives/rd: lives lost per round")
        + "\nT/C/I/M/S/L: timeouts/crashes/illegal/malformed/failed starts/late faults (strict) · "
        + "late: answers past the budget and bank, inside the grace"
    )
    for b in st.bots:
        if b.disqualified is not None:
            # The reason is the organiser's text: a Text, never markup.
            caption.append(f"\nDQ {b.name}: disqualified: {b.disqualified}", style="red")
    t = Table(title=title, caption=caption, caption_justify="left")
    t.add_column("#", justify="right")
    t.add_column("bot", style="bold", no_wrap=True)
    t.add_column("rating (95% CI)" + (", luck out" if st.luck else ""), justify="right", no_wrap=True)
    if st.luck:
        t.add_column("raw (95% CI)", justify="right", no_wrap=True)
    t.add_column("n", justify="right")
    t.add_column("win (95% CI)", justify="right", no_wrap=True)
    t.add_column("place", justify="right")
    if st.pot:
        t.add_column("chips/m", justify="right")
    else:
        t.add_column("lives/rd", justify="right")
    t.add_column("T/C/I/M/S/L", justify="right", no_wrap=True)
    t.add_column("late", justify="right")
    for rank, b in enumerate(st.bots, 1):
        faults = "/".join(str(b.faults.get(k, 0)) for k in FAULT_KINDS)
        fault_style = "red" if any(b.faults.values()) else "dim"
        t.add_row(
            str(rank),
            Text(b.name) + Text(" DQ", style="bold red") if b.disqualified is not None else Text(b.name),
            f"{b.rating:.0f} ({b.rating_low:.0f}–{b.rating_high:.0f})" if b.rated else "–",  # noqa: RUF001
            *(
                [f"{b.raw_rating[0]:.0f} ({b.raw_rating[1]:.0f}–{b.raw_rating[2]:.0f})" if b.rated else "–"]  # noqa: RUF001
                if st.luck and b.raw_rating is not None
                else []
            ),
            str(b.matches),
            f"{b.win_rate:.0%} ({b.win_low:.0%}–{b.win_high:.0%})" if b.matches else "–",  # noqa: RUF001
            f"{b.mean_placing:.2f}" if b.matches else "–",  # noqa: RUF001
            (f"{b.mean_chips:+.2f}" if b.matches else "–")  # noqa: RUF001
            if st.pot
            else (f"{b.lives_per_round:.3f}" if b.rounds else "–"),  # noqa: RUF001
            Text(faults + (f" {b.forfeits} out" if b.forfeits else ""), style=fault_style),
            Text(str(b.late), style="yellow" if b.late else "dim"),
        )
    if st.matches == 0:
        # An empty matrix of dots says nothing; and with no columns to span, its title would
        # stand one word per line.
        why = "" if st.scheduled != 0 else f": tables of {settings.table_size} need at least {settings.table_size} bots"
        return Group(t, Text(f"no matches yet{why}", style="bold yellow"))
    names = [b.name for b in st.bots]
    # The heading is a line of its own, not the table's title: a title wraps to the table's
    # width, which a few short bot names make narrow.
    heading = Text("Head to head: how often the row's bot placed above the column's (ties ½)", style="italic")
    h = Table()
    h.add_column("")
    for n in names:
        h.add_column(n, justify="right")
    for row in names:
        cells = []
        for col in names:
            hh = st.head_to_head.get((row, col))
            if row == col or hh is None or hh.matches == 0:
                cells.append("·")
            else:
                cells.append(f"{hh.score:.0%} ({hh.matches})")
        h.add_row(row, *cells)
    return Group(t, heading, h)
