"""``thirtyone remote``: a bot author's client of an arena service (HTTP JSON, httpx).

``remote login URL`` keeps the URL and the API token in ``$XDG_CONFIG_HOME/thirtyone/remote.json``
(``~/.config`` by default), readable by the user alone; every other command uses them.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.markup import escape
from rich.table import Table

from referee.cli.app import app
from referee.cli.console import err, fail, out
from referee.text import printable
from referee.tournament.botfiles import IGNORED

if TYPE_CHECKING:
    from referee.ladder.uploads import Unpacked

remote_app = typer.Typer(help="Use an arena service: log in, upload bots, read standings, matches and your bots' logs.", no_args_is_help=True)
app.add_typer(remote_app, name="remote")

CONFIG_NAME = "remote.json"
#: A download's side file: the match's commitment and seed, read by ``replay --verify``.
SIDE_SUFFIX = ".arena.json"
TIMEOUT_S = 60.0
#: Paths under an arena's address that people copy by mistake: the API's root and its docs.
API_TAILS = ("/api/v1", "/api/docs", "/api")


def config_path() -> Path:
    """Where the login is kept (``XDG_CONFIG_HOME`` honoured)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "thirtyone" / CONFIG_NAME


def _login() -> tuple[str, str]:
    path = config_path()
    try:
        data = json.loads(path.read_text())
        return str(data["url"]), str(data["token"])
    except FileNotFoundError:
        fail("not logged in to an arena: run 'thirtyone remote login URL' first")
    except (OSError, ValueError, KeyError) as e:
        fail(f"{path} cannot be read ({e}); run 'thirtyone remote login URL' again")


def _api_error(r: Any) -> NoReturn:
    try:
        message = r.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = r.text[:300] or r.reason_phrase
    fail(f"the arena says ({r.status_code}): {message}")


def _request(method: str, path: str, *, url: str | None = None, token: str | None = None, allow: tuple[int, ...] = (), **kw: Any) -> Any:
    import httpx

    if url is None or token is None:
        url, token = _login()
    try:
        r = httpx.request(method, url.rstrip("/") + path, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT_S, **kw)
    except httpx.HTTPError as e:
        fail(f"cannot reach the arena at {url}: {e}")
    if r.status_code >= 400 and r.status_code not in allow:
        _api_error(r)
    return r


def _json(method: str, path: str, **kw: Any) -> Any:
    return _request(method, path, **kw).json()


@remote_app.command("login")
def login(url: Annotated[str, typer.Argument(help="The arena's address, e.g. https://arena.example.org")]) -> None:
    """Log in with an API token: asked for, or read from standard input when that is not a terminal."""
    if not url.startswith(("http://", "https://")):
        fail(f"{url!r} is not an http:// or https:// address")
    url = base_url(url)
    if sys.stdin.isatty():
        token = typer.prompt("API token", hide_input=True)
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        fail("no token given")
    me = _json("GET", "/api/v1/me", url=url, token=token)
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"url": url.rstrip("/"), "token": token}, f)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    err.print(f"logged in to {escape(url)} as {escape(me['name'])} (kept in {escape(str(path))})")


def base_url(url: str) -> str:
    """The arena's base address: ``url`` without a trailing ``/api/v1`` (or ``/api/docs``),
    said on stderr when taken off. Every command adds ``/api/v1/...`` itself."""
    trimmed = url.rstrip("/")
    for tail in API_TAILS:
        if trimmed.endswith(tail):
            trimmed = trimmed.removesuffix(tail)
            err.print(f"using the arena's base address {escape(trimmed)}/ (not its API's {escape(url)})", highlight=False)
            break
    return trimmed


def pack_folder(folder: Path) -> bytes:
    """A bot folder as a .tar.gz (version control and caches left out). Links go in as links:
    the arena takes one that points at a file inside the folder as a copy of that file, and
    refuses the others (:func:`~referee.ladder.uploads.resolve_links`)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for p in sorted(folder.rglob("*")):
            rel = p.relative_to(folder)
            if any(part in IGNORED for part in rel.parts):
                continue
            tf.add(p, arcname=str(rel), recursive=False)
    return buf.getvalue()


def _manifest_hint(folder: Path) -> str:
    """The two lines of a ``bot.toml`` for ``folder``, its command guessed from its files."""
    for candidate, runtime in (("bot.py", "python"), ("main.py", "python"), ("bot.js", "node"), ("index.js", "node"), ("main.js", "node")):
        if (folder / candidate).is_file():
            command = f"{runtime} {candidate}"
            break
    else:
        command = "python bot.py"
    return f'name = "{folder.resolve().name}"\ncommand = "{command}"'


def _preflight(path: Path, data: bytes, filename: str, name: str | None, work: Path) -> Unpacked:
    """The arena's checks that need no bot process (the archive, links, the manifest, the
    command, names that hide standard modules), made here before anything is sent."""
    from referee.ladder.errors import ArenaError
    from referee.ladder.settings import ArenaSettings
    from referee.ladder.uploads import MANIFEST, unpack_upload

    if path.is_dir() and not (path / MANIFEST).is_file():
        fail(
            f"{path} has no {MANIFEST}: the arena runs a folder by the command in it. Write {path / MANIFEST} with two lines, "
            f"e.g.\n\n{_manifest_hint(path)}\n\n(name: the bot's name on the ladder; command: run in the folder, "
            "starting with python, node or ./FILE)"
        )
    # The arena's own size limits decide there; here only the content is checked.
    roomy = ArenaSettings(max_archive_bytes=1 << 34, max_unpacked_bytes=1 << 36, max_files=1_000_000, max_ratio=1_000_000)
    try:
        return unpack_upload(filename, data, work / "files", roomy, name=name)
    except ArenaError as e:
        fail(f"{path}: {e.message}\n(nothing was uploaded)")


def _check_locally(unpacked: Unpacked, label: str) -> None:
    """Run the arena's validation on this machine: ``check-bot``'s compliance check and the
    validation match against the random bot, with the arena's rules and clock."""
    from referee.bots.compliance import result_text
    from referee.bots.sandbox import SandboxError, make_readable, probe
    from referee.faults import BotError
    from referee.ladder.paths import as_owner_sees
    from referee.ladder.settings import ArenaSettings
    from referee.tournament.submit import SubmissionError, check_compliance, folder_spec, validate

    config = _json("GET", "/api/v1/ladder").get("config")
    settings = ArenaSettings.from_dict(config) if config else ArenaSettings()
    sandboxed = probe().available
    play = dataclasses.replace(settings.play, sandbox="on" if sandboxed else "off")
    if not sandboxed:
        err.print("[yellow]warning:[/] this machine cannot sandbox bots: the checks run your bot unsandboxed (see 'thirtyone doctor')")
    root = unpacked.root
    make_readable(root)  # a sandboxed bot reads it as an unprivileged user

    def shown(text: str) -> str:
        return as_owner_sees(text, root)

    err.print(f"checking {escape(label)} here as the arena will ({escape(play.rules.describe())}; {escape(play.time_control.describe())})")
    try:
        sandbox = play.sandbox_config(root.parent)
        spec = folder_spec(f"{unpacked.manifest.name}={unpacked.manifest.command}", root)
        check_compliance(spec, play, sandbox, on_result=lambda r: err.print(escape(shown(result_text(r))), highlight=False))
        validate(spec, str(root), play, sandbox)
    except (SubmissionError, BotError, SandboxError) as e:
        fail(f"{label} would be rejected: {shown(str(e))}\n(nothing was uploaded)", 1)
    err.print("PASS  validation match against the random bot: no fault", highlight=False)


@remote_app.command("submit")
def submit(
    path: Annotated[Path, typer.Argument(help="A bot folder (with bot.toml), an archive of one, or one Python file (.py).")],
    name: Annotated[str | None, typer.Option(help="The bot's name (default: the manifest's, or the file's).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the validation's verdict.")] = False,
    check: Annotated[bool, typer.Option("--check", help="First run the arena's validation here (check-bot and a match against "
                                        "the random bot, with the arena's rules and clock); upload only if it passes.")] = False,
) -> None:
    """Upload a new version of your bot; it is validated in the background.

    The archive, its links, bot.toml and the command are checked here first. Prints the new
    version's id on stdout (for scripts: 'thirtyone remote delete ID', 'withdraw ID'); the rest
    goes to stderr.
    """
    if path.is_dir():
        data, filename = pack_folder(path), path.resolve().name + ".tar.gz"
    elif path.is_file():
        data, filename = path.read_bytes(), path.name
    else:
        fail(f"no such file or folder: {path}")
    with tempfile.TemporaryDirectory(prefix="thirtyone-submit-") as work:
        unpacked = _preflight(path, data, filename, name, Path(work))
        if check:
            _check_locally(unpacked, name or unpacked.manifest.name)
    params = {"filename": filename, **({"name": name} if name else {})}
    v = _json("POST", "/api/v1/versions", params=params, content=data)
    err.print(f"uploaded {escape(v['label'])} (version {v['id']}): {v['status']}")
    if wait:
        while v["status"] in ("queued", "validating"):
            time.sleep(1.0)
            v = _json("GET", f"/api/v1/versions/{v['id']}")
        err.print(f"{escape(v['label'])}: {v['status']}" + (f"\n{escape(v['reason'])}" if v["reason"] else ""))
        if v["status"] == "rejected":
            raise typer.Exit(1)
    out.print(v["id"], highlight=False)


@remote_app.command("status")
def status() -> None:
    """Your versions: their validation, rank and rating (95% interval)."""
    table = Table("id", "version", "status", "#", "rating", "95% interval", "matches", "uploaded", "reason")
    for v in _json("GET", "/api/v1/versions"):
        reason = v["reason"].splitlines()[0] if v["reason"] else ""
        rating, interval = _figure(v)
        table.add_row(str(v["id"]), escape(v["label"]), v["status"], str(v["rank"] or "-"), rating, interval, str(v["matches"]),
                      v["uploaded_at"], escape(reason))
    out.print(table)
    err.print(RATING_NOTE)


#: What the rating is, said once under every table that shows it.
RATING_NOTE = (
    "rating: the official batch fit of all finished matches (1500 = the board's average; 400 points = 10:1 odds of "
    "placing above), with its 95% interval; * provisional: the live figure, until a refit includes the version"
)


def _figure(v: dict[str, Any]) -> tuple[str, str]:
    """A version's rating and interval as the tables show them (* marks a provisional one)."""
    if not v["matches"]:
        return "-", "-"
    star = "*" if v["provisional"] else ""
    return f"{v['rating']:.0f}{star}", f"{v['low']:.0f}-{v['high']:.0f}"


def _win(v: dict[str, Any]) -> tuple[str, str]:
    if v["win_rate"] is None:
        return "-", "-"
    return f"{v['win_rate']:.0%}", f"{v['win_low']:.0%}-{v['win_high']:.0%}"


@remote_app.command("standings")
def standings(as_json: Annotated[bool, typer.Option("--json", help="Print the JSON the arena sends.")] = False) -> None:
    """The leaderboard: ranked versions (active, refitted) by rating, then provisional ones,
    then those that left the ladder, apart."""
    data = _json("GET", "/api/v1/standings")
    if as_json:
        out.print_json(data=data)
        return
    table = Table("#", "version", "owner", "rating", "95% interval", "matches", "win rate", "95% interval", "status")
    section = "ranked"
    for row in data["standings"]:
        if row["section"] != section:
            table.add_section()
            section = row["section"]
        rating, interval = _figure(row)
        win, win_interval = _win(row)
        status = row["status"] + (" (reference)" if row["reference"] else "")
        table.add_row(str(row["rank"] or "-"), escape(row["label"]), escape(row["owner"]), rating, interval, str(row["matches"]),
                      win, win_interval, status)
    out.print(table)
    err.print(RATING_NOTE)
    if data["official_at"]:
        err.print(f"refitted at {data['official_at']} over {data['official_matches']} matches; only active versions are ranked")
    else:
        err.print("no refit yet: every figure is provisional")


@remote_app.command("matches")
def matches(
    bot: Annotated[str | None, typer.Option(help="Only this bot's matches.")] = None,
    limit: Annotated[int, typer.Option(help="How many, newest first.")] = 20,
) -> None:
    """Recent matches."""
    params: dict[str, Any] = {"limit": limit, **({"bot": bot} if bot else {})}
    table = Table("match", "status", "seats", "placings", "log")
    for m in _json("GET", "/api/v1/matches", params=params):
        seats = ", ".join(s["label"] for s in m["seats"])
        table.add_row(m["key"], m["status"], escape(seats), " ".join(map(str, m.get("placings", []))), "yes" if "log" in m else "")
    out.print(table)


@remote_app.command("logs")
def logs(match: Annotated[str, typer.Argument(help="The match's key.")]) -> None:
    """What your bot wrote (stdout and stderr) in a match: on stdout as the bot wrote it, a header
    per seat on stderr. On a terminal, control characters are shown escaped."""
    data = _json("GET", f"/api/v1/matches/{match}/output")
    terminal = sys.stdout.isatty()
    for seat in data["seats"]:
        err.print(f"--- seat {seat['seat']}: {escape(seat['label'])} ---", highlight=False, soft_wrap=True)
        text = seat["output"]
        if not text:
            err.print("(nothing)", highlight=False)
            continue
        # Never through rich: it would wrap lines at the terminal's width even into a file.
        if terminal:
            text = printable(text, keep="\n\t")
            if not text.endswith("\n"):
                text += "\n"  # the next header starts on a line of its own
        sys.stdout.write(text)
        sys.stdout.flush()


@remote_app.command("withdraw")
def withdraw(version: Annotated[int, typer.Argument(help="The version's id (see 'thirtyone remote status').")]) -> None:
    """Take one of your versions off the ladder; its matches and ratings stay ('reactivate' brings it back)."""
    v = _json("POST", f"/api/v1/versions/{version}/withdraw")
    err.print(f"{escape(v['label'])} (version {v['id']}): {v['status']}", highlight=False)


@remote_app.command("reactivate")
def reactivate(version: Annotated[int, typer.Argument(help="The retired or withdrawn version's id (see 'thirtyone remote status').")]) -> None:
    """Bring one of your retired or withdrawn versions back onto the ladder; the bot's active
    version retires, as after an upload. Rejected and disqualified versions cannot come back."""
    v = _json("POST", f"/api/v1/versions/{version}/reactivate")
    err.print(f"{escape(v['label'])} (version {v['id']}): {v['status']}", highlight=False)


@remote_app.command("delete")
def delete(version: Annotated[int, typer.Argument(help="The rejected version's id (see 'thirtyone remote status').")]) -> None:
    """Delete one of your rejected versions: its files and its entry go (it never played)."""
    v = _json("DELETE", f"/api/v1/versions/{version}")
    err.print(f"{escape(v['label'])} (version {v['id']}) deleted", highlight=False)


@remote_app.command("logout")
def logout(
    keep_token: Annotated[bool, typer.Option("--keep-token", help="Only forget the login here; the token keeps working.")] = False,
) -> None:
    """Forget the arena's address and token on this machine, and revoke the token at the arena."""
    path = config_path()
    if not path.exists():
        err.print("not logged in to an arena; nothing to do", highlight=False)
        return
    said = ""
    if not keep_token:
        url, token = _login()
        # A token already revoked (401) is what logging out wants: forget it all the same.
        r = _request("DELETE", "/api/v1/me/token", url=url, token=token, allow=(401,))
        said = " (the token is revoked)" if r.status_code < 400 else " (the arena no longer took the token)"
    path.unlink()
    err.print(f"logged out{said}: {escape(str(path))} removed", highlight=False)


@remote_app.command("download")
def download(
    match: Annotated[str, typer.Argument(help="The match's key.")],
    dest: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the log into.", show_default="the current folder")] = Path("."),
) -> None:
    """Download a match's log (and its seed commitment beside it, for 'thirtyone replay --verify')."""
    info = _json("GET", f"/api/v1/matches/{match}")
    if "log" not in info:
        fail(f"match {match}'s log is not public yet: every rotation of its deal must finish first")
    r = _request("GET", f"/api/v1/matches/{match}/log")
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{match}.jsonl"
    path.write_bytes(r.content)
    side = {"match": match, "commitment": info["commitment"], "seed": info["seed"]}
    Path(str(path) + SIDE_SUFFIX).write_text(json.dumps(side, indent=1) + "\n")
    err.print(f"verify it with: thirtyone replay {escape(str(path))} --verify")
    out.print(str(path), highlight=False)
