"""``thirtyone arena``: make, serve and administer an arena (a folder: the service's state)."""

from __future__ import annotations

import contextlib
import fcntl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from referee.cli.app import app
from referee.cli.console import err, fail, out
from referee.game import RulesError, parse_overrides, rules_from_mapping
from referee.ladder import accounts
from referee.ladder.errors import ArenaError
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, Version, create
from referee.timecontrol import TimeControl
from referee.tournament.settings import TournamentSettings

arena_app = typer.Typer(help="Run an arena: accounts, uploads and a ladder that never stops, over HTTP.", no_args_is_help=True)
user_app = typer.Typer(help="The arena's users and their API tokens.", no_args_is_help=True)
arena_app.add_typer(user_app, name="user")
app.add_typer(arena_app, name="arena")

SERVE_LOCK = "serve.lock"
Folder = Annotated[Path, typer.Argument(help="The arena's folder.")]


def _open(folder: Path) -> ArenaStore:
    return ArenaStore.open(folder)


@arena_app.command("init")
def init(
    folder: Folder,
    preset: Annotated[str, typer.Option(help="Rules preset: standard, pagat, family, cadillac or bicycle.")] = "standard",
    rule: Annotated[list[str] | None, typer.Option("--rule", help="A rule option on top, key=value (repeatable).")] = None,
    table_size: Annotated[int, typer.Option(help="Seats at each ladder table.")] = 2,
    budget_ms: Annotated[int, typer.Option(help="Milliseconds per decision.")] = 250,
    bank_ms: Annotated[int, typer.Option(help="A match's time bank per seat, in milliseconds.")] = 10_000,
    grace_ms: Annotated[int, typer.Option(help="Transport grace per decision, in milliseconds.")] = 100,
    sandbox: Annotated[str, typer.Option(help="auto, on or off (off runs bots unsandboxed: never for strangers' bots).")] = "auto",
) -> None:
    """Make a new arena folder (0700): settings, a secret for seeds (0600), the database.

    The rules and the table size are fixed for the arena's life.
    """
    try:
        rules = rules_from_mapping({"preset": preset, **parse_overrides(rule or [])})
        play = TournamentSettings(
            rules=rules, table_size=table_size, games=1, seed=0,
            time_control=TimeControl(budget_ms=budget_ms, bank_ms=bank_ms, grace_ms=grace_ms), sandbox=sandbox,
        )
        create(folder, ArenaSettings(play=play))
    except (RulesError, ValueError) as e:
        fail(str(e))
    out.print(f"arena made in {escape(str(folder))}")
    err.print(f"next: [bold]thirtyone arena user add {escape(str(folder))} NAME --admin[/], then [bold]thirtyone arena serve {escape(str(folder))}[/]")


@contextlib.contextmanager
def serve_lock(folder: Path) -> Iterator[None]:
    """One ``arena serve`` per folder: an ``flock`` the kernel releases when the holder dies."""
    try:
        f = open(folder / SERVE_LOCK, "a")  # noqa: SIM115  (held for the whole block)
    except OSError as e:
        fail(f"{folder}: cannot open {SERVE_LOCK} ({e.strerror})")
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fail(f"{folder} is already served by another 'thirtyone arena serve'; stop it first")
        yield


@arena_app.command("serve")
def serve(
    folder: Folder,
    host: Annotated[str, typer.Option(help="Address to listen on (put a TLS reverse proxy in front to serve beyond this machine).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8031,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Matches played at once (worker processes).")] = 1,
    ray: Annotated[str | None, typer.Option(help="Play the matches on a Ray cluster at this address ('local' starts one).")] = None,
    allowed_host: Annotated[list[str] | None, typer.Option(
        "--allowed-host", help="A host name the arena answers to beside localhost and --host, e.g. its public name (repeatable).",
    )] = None,
    proxy: Annotated[list[str] | None, typer.Option(
        "--proxy", help="Address of a reverse proxy in front, whose X-Forwarded-For is believed (repeatable; none by default).",
    )] = None,
    max_connections: Annotated[int | None, typer.Option(help="Connections open at once (default: half the descriptors the process may open, at most 4096).")] = None,
    max_connections_per_address: Annotated[int, typer.Option(help="Connections open at once from one address (a --proxy's are not counted).")] = 64,
    header_timeout: Annotated[float, typer.Option(help="Seconds a client has to send a request's headers.")] = 10.0,
) -> None:
    """Serve the arena's HTTP API and run its ladder, until Ctrl-C or SIGTERM."""
    import uvicorn

    from referee.service import ServiceConfig, create_app
    from referee.service.door import BODY_TIMEOUT_S, Door, default_max_connections, uvicorn_config

    if jobs < 1:
        fail(f"--jobs must be at least 1, got {jobs}")
    try:
        door = Door(
            bind=host, hosts=tuple(allowed_host or ()), proxies=tuple(proxy or ()),
            max_connections=max_connections or default_max_connections(), max_per_address=max_connections_per_address,
            header_timeout_s=header_timeout, body_timeout_s=max(header_timeout, BODY_TIMEOUT_S),
        )
    except ValueError as e:
        fail(str(e))
    _open(folder).close()
    with serve_lock(folder):
        application = create_app(ServiceConfig(folder, jobs, ray, door=door))
        # The pages' address first: it is what a person opens, and what 'remote login' takes.
        base = f"http://{_url_host(host)}:{port}/"
        err.print(f"arena {escape(str(folder))}: open {base} (the API is under /api/v1/, OpenAPI at /openapi.json); Ctrl-C stops",
                  highlight=False, soft_wrap=True)
        if host in ("0.0.0.0", "::") and not allowed_host:
            err.print("it answers to localhost names only: give each name or address clients use with --allowed-host")
        uvicorn.Server(uvicorn_config(application, port, door)).run()
    err.print("arena stopped")


def _url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@user_app.command("add")
def user_add(
    folder: Folder,
    name: Annotated[str, typer.Argument(help="The user's name.")],
    admin: Annotated[bool, typer.Option("--admin", help="Make the user an admin.")] = False,
) -> None:
    """Add a user and print their API token (shown this once; it is stored hashed)."""
    with _open(folder) as store:
        user, token = accounts.add_user(store, name, admin=admin)
    err.print(f"user {escape(user.name)} added{' (admin)' if admin else ''}; their token, shown this once:")
    out.print(token, highlight=False)


@user_app.command("token")
def user_token(folder: Folder, name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Print a new API token for a user (their other tokens keep working)."""
    with _open(folder) as store:
        token = accounts.new_token(store, store.user_named(name))
    out.print(token, highlight=False)


@user_app.command("password")
def user_password(folder: Folder, name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Set a user's password for the web pages: asked for twice on a terminal, or read as one
    line from standard input when that is not a terminal (a pipe or a file)."""
    if sys.stdin.isatty():
        password = typer.prompt("password", hide_input=True, confirmation_prompt=True, err=True)
    else:
        # As 'remote login' reads a token: one line, its line ending dropped.
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
        if not password:
            fail("no password given on standard input (one line)")
    with _open(folder) as store:
        user = store.user_named(name)
        problem = accounts.password_problem(password, user.name)
        if problem:
            fail(f"{problem} (a password needs {accounts.PASSWORD_RULES})")
        accounts.set_password(store, user, password)
    err.print(f"password of {escape(name)} set; sign in on the arena's page")


@user_app.command("revoke")
def user_revoke(folder: Folder, name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Revoke every API token and session of a user."""
    with _open(folder) as store:
        n = store.revoke_tokens(store.user_named(name).id)
    err.print(f"{n} token{'' if n == 1 else 's'} of {escape(name)} revoked")


@user_app.command("list")
def user_list(folder: Folder) -> None:
    """List the users."""
    with _open(folder) as store:
        table = Table("name", "admin", "disabled", "since")
        for u in store.users():
            table.add_row(escape(u.name), "yes" if u.admin else "", "yes" if u.disabled else "", u.created_at)
    out.print(table)


@arena_app.command("invite")
def invite(folder: Folder) -> None:
    """Print an invite code for the web sign-up (good once)."""
    with _open(folder) as store:
        out.print(accounts.new_invite(store), highlight=False)


@arena_app.command("settings")
def show_settings(folder: Folder) -> None:
    """Show the arena's settings (edit arena.toml in its folder; rules and table size are fixed)."""
    with _open(folder) as store:
        table = Table("setting", "value")
        for k, v in store.settings.describe():
            table.add_row(k, escape(v))
    out.print(table)


@arena_app.command("reference")
def reference(
    folder: Folder,
    target: Annotated[str, typer.Argument(help="A version's label (random.v1) or id, or a bot's name (all its versions).")],
    off: Annotated[bool, typer.Option("--off", help="Unmark it: an ordinary version again.")] = False,
) -> None:
    """Mark a reference bot (a house bot to measure against): the ladder caps its share of
    tables at the arena's reference_share_pct of a fair share."""
    with _open(folder) as store:
        versions = reference_targets(store, target)
        for v in versions:
            store.set_reference(v.id, not off)
    labels = ", ".join(escape(v.label) for v in versions)
    err.print(f"{labels}: {'no longer a reference' if off else 'a reference'} (the ladder's next table follows)")


def reference_targets(store: ArenaStore, target: str) -> list[Version]:
    """The versions ``target`` names: a label (``random.v1``), an id, or a bot's name (all of its)."""
    from referee.ladder.errors import NotFound

    if target.isdigit():
        try:
            return [store.version(int(target))]
        except NotFound:
            raise ArenaError(f"no version {target}") from None
    bot, dot, number = target.rpartition(".v")
    if dot and number.isdigit():
        found = [v for v in store.versions(bot=bot) if v.number == int(number)]
        if found:
            return found
    versions = store.versions(bot=target)
    if not versions:
        raise ArenaError(f"no version or bot named {target!r}")
    return versions
