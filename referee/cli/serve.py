"""``thirtyone serve``: a local web page of a tournament (or of a folder of match logs), or
the same pages exported as static files."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from referee.cli.app import app
from referee.cli.console import err, fail, out
from referee.cli.options import check_numbers
from referee.cli.standings_view import standings_json
from referee.cli.stopping import ctrl_c_interrupts
from referee.game.errors import shown
from referee.text import plural
from referee.tournament.schedule import HELD_BACK
from referee.tournament.store import StoreError
from referee.web.data import Source
from referee.web.server import ViewerServer, export_site


@app.command("serve")
def serve_command(
    folder: Annotated[
        Path,
        typer.Argument(help="A tournament folder, or a folder of match logs (.jsonl).", show_default=False),
    ],
    host: Annotated[str, typer.Option("--host", help="Address to listen on (only this machine by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free port).")] = 8031,
    no_open: Annotated[bool, typer.Option("--no-open", help="Do not open the page in a browser.")] = False,
    export: Annotated[
        Path | None,
        typer.Option(
            "--export",
            help="Write the whole site into this folder as static files that work from disk, offline, and exit.",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Print a line per request.")] = False,
) -> None:
    """Look at a tournament in a browser: standings, rating progress, the matches, and a replay viewer."""
    check_numbers({"--port": port})
    source = Source(folder, standings_json)
    skipped = source.skipped()
    for s in skipped:
        err.print(f"[yellow]not shown:[/] {escape(s['file'])}: {escape(s['reason'])}", highlight=False, soft_wrap=True)
    if export is not None:
        if export.exists() and not export.is_dir():
            fail(f"--export {export}: exists and is not a folder")
        if export.is_dir() and any(export.iterdir()) and not (export / "index.html").is_file():
            fail(f"--export {export}: the folder is not empty (and holds no earlier export); choose a new one")

        def progress(done: int, total: int) -> None:
            if done % 100 == 0 or done == total:
                err.print(f"  {done}/{total} matches", highlight=False)

        try:
            n = export_site(source, export, on_match=progress)
        except (StoreError, OSError) as e:
            fail(f"cannot export to {export}: {e}")
        held = sum(1 for m in source.all_matches() if m["held_back"])
        note = f" ({plural(held, 'replay')} {HELD_BACK}: left out)" if held else ""
        out.print(
            f"exported {plural(n, 'match', 'matches')} to {escape(str(export))}{note}; open {escape(str((export / 'index.html').resolve()))}",
            highlight=False,
        )
        return
    try:
        server = ViewerServer(source, host, port, verbose=verbose)
    except OSError as e:
        fail(f"cannot listen on {shown(host)}:{shown(port)}: {e.strerror or e}" + (" (try --port 0 for any free port)" if e.errno == 98 else ""))
    out.print(f"serving {escape(str(folder))} at [bold]{server.url}[/] (Ctrl-C stops)", highlight=False)
    if not no_open:
        webbrowser.open(server.url)
    try:
        with ctrl_c_interrupts():  # also where SIGINT was inherited ignored (a job started with &)
            server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    out.print("stopped", highlight=False)
