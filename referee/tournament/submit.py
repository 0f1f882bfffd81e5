"""Submitting bots: name, copy, check, validate by a short match against the random bot, record.

In that order, so that the cheap refusals come first:

1. the name: a name given (``--name`` or ``NAME=``) is checked (characters, not taken) before
   anything is copied or started; the bot's own name, when no name is given, as soon as the
   bot has said it (GetIdentity), before any match;
2. the copy: a Python file is copied into ``bots/NAME/``; a bot submitted with ``--dir
   FOLDER`` (a folder plus a command) has its whole folder copied there, and runs with the
   copy as its working folder. Either copy is hashed (:mod:`referee.tournament.botfiles`)
   and checked again at every launch;
3. the compliance check of ``thirtyone check-bot`` (:mod:`referee.bots.compliance`), with the
   tournament's clock: a failed check names the step and the reason;
4. a short strict match against the random bot under the tournament's own rules, which the
   compliance check's fixed positions do not cover (a variant, a long sequence of decisions).

Both run in the sandbox the tournament's matches will use. Error text names the user's own
files, never the temporary copy the bot ran from.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeAlias

from referee import wire
from referee.bots import BotSpec, LocalLauncher, parse_bot_spec
from referee.bots.compliance import CheckResult, cases_for, check_bot, is_soft_failure
from referee.bots.sandbox import SandboxConfig, make_readable, outside_paths
from referee.faults import BotError, BotStartError, RefereeError
from referee.match import MatchConfig, run_match
from referee.tournament.botfiles import BotFilesError, check_unchanged, copy_folder, file_sha256
from referee.tournament.settings import SettingsError, TournamentSettings, check_bot_name
from referee.tournament.store import BotEntry, StoreError, TournamentStore, now

#: Rounds of the validation match: enough to exercise every kind of decision.
VALIDATION_ROUNDS = 3
VALIDATION_SEED = 31
_RECORDING = threading.Lock()


class SubmissionError(RefereeError):
    """A bot was refused; the message says why."""


def folder_spec(spec_text: str, folder: Path) -> BotSpec:
    """The bot of a bot folder: ``spec_text`` read from inside ``folder``, run there.

    A Python file named by the command becomes a command run in the folder, so that the
    whole folder (not only the file's own subfolder) is the bot's in its sandbox.
    """
    spec = parse_bot_spec(spec_text, cwd=folder)
    if spec.kind in ("sample", "address"):
        raise SubmissionError(f"--dir goes with a command or a file of the bot's, not a {spec.kind} bot like {spec_text!r}")
    return dataclasses.replace(spec, kind="command", cwd=str(folder))


def launch_spec(text: str, cwd: str, *, kind: str, files: str | None, sha256: str | None, name: str) -> BotSpec:
    """The bot to start for a tournament match, after checking that its copied files are unchanged.

    Raises :class:`~referee.faults.BotStartError` naming the bot if its files changed.
    """
    if files and sha256:
        try:
            check_unchanged(Path(files), sha256, name=name)
        except BotFilesError as e:
            raise BotStartError(str(e)) from None
    if kind == "folder":
        return folder_spec(text, Path(cwd))
    return parse_bot_spec(text, cwd=cwd)


#: What a failed submission raises (the others are bugs, and are raised as they are).
Refusal: TypeAlias = SubmissionError | StoreError | SettingsError | BotError


def submit_many(folder: Path, bots: Sequence[str]) -> list[BotEntry | Refusal]:
    """Submit ``bots`` to the tournament in ``folder`` at once: :func:`submit` for each, in a
    thread of its own with a connection of its own to the store. Each submission spends
    most of its second waiting on its bot, so together they take little more than the
    longest. What each gave, in the order given: its entry, or why it was refused (a
    refusal stores nothing of that bot, and stops none of the others).
    """

    def one(bot: str) -> BotEntry:
        with TournamentStore.open(folder) as store:
            return submit(store, bot)

    with ThreadPoolExecutor(max_workers=max(1, len(bots)), thread_name_prefix="submit") as pool:
        futures = [pool.submit(one, b) for b in bots]
        out: list[BotEntry | Refusal] = []
        for f in futures:
            e = f.exception()
            if e is None:
                out.append(f.result())
            elif isinstance(e, Refusal):
                out.append(e)
            else:
                raise e
    return out


def check_compliance(
    spec: BotSpec,
    settings: TournamentSettings,
    sandbox: SandboxConfig | None = None,
    *,
    on_identity: Callable[[wire.BotIdentity], None] | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> wire.BotIdentity:
    """Run ``thirtyone check-bot``'s compliance check with the tournament's clock; return the
    bot's identity.

    A decision may use the time bank here, as at a match's first decision: a bot that warms
    up on its first move is not refused for it, nor for a late answer or for outliving
    SIGTERM (the validation match then shows whether it keeps to its budget, and the referee
    kills what outlives its grace). Raises :class:`SubmissionError` naming every failed check, or why
    the bot could not be used; whatever ``on_identity`` raises propagates (see
    :func:`~referee.bots.compliance.check_bot`).
    """
    report = asyncio.run(
        check_bot(
            spec,
            time_control=settings.time_control,
            launcher=LocalLauncher(sandbox=sandbox),
            on_identity=on_identity,
            on_result=on_result,
            use_bank=True,
            cases=cases_for(settings.rules),
        )
    )
    # Late answers and a bot that outlives SIGTERM are the validation match's and the
    # referee's to handle (see is_soft_failure); anything else refuses the bot.
    failed = tuple(r for r in report.failures if not is_soft_failure(r))
    if report.identity is not None and not failed and all(r.status != "not run" for r in report.results):
        return report.identity
    not_run = [r for r in report.results if r.status == "not run"]
    if report.identity is None or (len(failed) == 1 and failed[0].key == "identity"):
        # It did not start, or the referee refuses its identity: nothing else could be checked.
        raise SubmissionError(f"the bot could not be used: {failed[0].reason}")
    lines = [f"  {r.title}: {r.reason}" for r in failed]
    if not_run:
        lines.append(f"  (the last {len(not_run)} checks did not run: {not_run[0].reason.removeprefix('not run: ')})")
    raise SubmissionError(
        "the bot failed its compliance check (run 'thirtyone check-bot' on it for every step):\n" + "\n".join(lines)
    )


def validate(
    spec: BotSpec | str, cwd: str, settings: TournamentSettings, sandbox: SandboxConfig | None = None
) -> tuple[str, str, str]:
    """Play a short match against the random bot; return the bot's identity.

    Raises :class:`SubmissionError` if the bot does not start, speaks another protocol
    version, answers anything illegal or malformed, crashes, or is late often enough to
    forfeit under the tournament's own fault policy. ``sandbox`` is the one the tournament's
    matches use.
    """
    if isinstance(spec, str):
        spec = parse_bot_spec(spec, cwd=cwd)
    # The tournament's own rules, clock and fault policy, but only a few rounds. Any fault
    # but a late answer refuses the bot; late answers refuse it only when they make it forfeit
    # as they would in the tournament: on a busy machine one late answer is not a broken bot.
    config = MatchConfig(
        rules=settings.rules.with_options({"max_rounds": VALIDATION_ROUNDS}),
        time_control=settings.time_control,
        fault_policy="strict" if settings.fault_policy == "strict" else "lenient",
        max_strikes=settings.max_strikes,
    )
    try:
        outcome = run_match([spec, "random"], seed=VALIDATION_SEED, config=config, launcher=LocalLauncher(sandbox=sandbox))
    except BotError as e:
        raise SubmissionError(f"the bot could not be used: {e}") from None
    seat = outcome.seats[0]
    hard = [f for f in seat.faults if f.kind not in ("timeout", "late")]
    if hard or (seat.faults and seat.forfeited):
        f = (hard or seat.faults)[0]
        raise SubmissionError(
            f"the bot faulted in its validation match against the random bot: {f.kind} in round {f.round_no}, "
            f"turn {f.turn}: {f.message}"
        )
    ident = outcome.seats[0].identity
    return ident.name, ident.version, ident.author


def _refuse_outside_paths(spec: BotSpec, folder: Path) -> None:
    """Refuse a command that names files on this machine outside the bot's folder.

    In its sandbox a tournament's bot sees its own folder (the ``--dir`` copy, or the folder
    a command runs in), the system's and the runtime's files and its scratch, whatever its
    command says: so a file named elsewhere would not be there when it runs.
    """
    outside = outside_paths(spec.argv, str(folder))
    if outside:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
        raise SubmissionError(
            f"the command names {shown}, outside the bot's folder {folder}: in the tournament a bot sees "
            "only its own folder (and the system's and the runtime's files), whatever its command says, "
            "so it could not read that. Put what the bot needs in one folder and submit it with "
            "--dir FOLDER, naming the files relative to it (e.g. 'python main.py --dir ./my_bot')"
        )


def _check_name(store: TournamentStore, folder: Path, name: str, *, own: bool = False) -> None:
    """Refuse a tournament name that is malformed or taken (``own``: the bot's own name)."""
    try:
        check_bot_name(name)
    except SettingsError as e:
        if own:
            raise SettingsError(f"{e}; that is the name the bot gives itself: choose one with --name") from None
        raise
    if store.bot(name) is not None:
        raise StoreError(f"a bot named {name!r} is already submitted; choose another --name")
    dest = folder / "bots" / name
    if dest.exists():
        raise StoreError(f"{dest} already exists; choose another --name")


def unstage(text: str, copies: dict[Path, Path]) -> str:
    """``text`` with every path of a temporary copy replaced by the user's original.

    A bot runs from its copy in the tournament folder, so a syntax error or a failed start
    names the copy's files; the user knows their own. Longer paths are replaced first (the
    copied file before its folder).
    """
    for copy in sorted(copies, key=lambda p: len(str(p)), reverse=True):
        text = text.replace(str(copy), str(copies[copy]))
    return text


def submit(
    store: TournamentStore,
    bot: str,
    name: str | None = None,
    cwd: Path | None = None,
    bot_dir: Path | None = None,
) -> BotEntry:
    """Check a bot and add it to the tournament under ``name`` (default: the bot's own).

    The steps are in the module doc: the name first, then the copy, the compliance check and
    the validation match, both in the tournament's sandbox. A Python file is copied into the
    tournament folder with its hash, so editing the original later does not change the
    tournament; with ``bot_dir`` the whole folder is copied and ``bot`` is a command run
    inside the copy. Nothing is stored unless every step passes.
    """
    cwd = (cwd or Path.cwd()).resolve()
    if bot_dir is not None:
        bot_dir = (cwd / bot_dir).resolve()
        if not bot_dir.is_dir():
            raise SubmissionError(f"--dir {bot_dir}: no such folder")
    spec = parse_bot_spec(bot, cwd=bot_dir or cwd)
    if spec.label is not None:
        if name is not None and name != spec.label:
            raise SubmissionError(f"two names given: {spec.label!r} (in {bot!r}) and --name {name!r}")
        name = spec.label
        bot = bot.split("=", 1)[1].strip()
    settings = store.settings
    folder = store.folder.resolve()
    if settings.sandbox != "off" and (bot_dir is not None or spec.kind == "command"):
        _refuse_outside_paths(spec, bot_dir or cwd)
    if name is not None:
        _check_name(store, folder, name)
    sandbox = settings.sandbox_config(folder)
    staging: Path | None = None
    copies: dict[Path, Path] = {}
    sha: str | None = None
    spec_text = bot
    run_cwd = str(cwd)
    kind: str = spec.kind

    def own_name(identity: wire.BotIdentity) -> None:
        # Known only once the bot runs: checked before it plays anything.
        if name is None:
            _check_name(store, folder, identity.name, own=True)

    try:
        if bot_dir is not None:
            staging = Path(tempfile.mkdtemp(prefix="submit-", dir=folder / "bots"))
            staging.rmdir()
            try:
                sha = copy_folder(bot_dir, staging, skip=(folder,))
            except BotFilesError as e:
                raise SubmissionError(str(e)) from None
            copies[staging] = bot_dir
            run_spec = folder_spec(bot, staging)
            kind = "folder"
        elif spec.kind == "file":
            source = Path(spec.argv[-1])
            staging = Path(tempfile.mkdtemp(prefix="submit-", dir=folder / "bots"))
            copied = staging / source.name
            shutil.copy2(source, copied)
            make_readable(staging)  # the bot reads it as an unprivileged user (as root: nobody)
            copies[copied] = source
            copies[staging] = source.parent
            sha = file_sha256(copied)
            run_spec = parse_bot_spec(str(copied), cwd=folder)
        else:
            run_spec = spec
        try:
            check_compliance(run_spec, settings, sandbox, on_identity=own_name)
            bot_name, version, author = validate(run_spec, run_cwd, settings, sandbox)
        except SubmissionError as e:
            raise SubmissionError(unstage(str(e), copies)) from None
        final = name or bot_name
        # One submission of this process at a time from the last check of the name to the
        # record (submit_many runs several): the folder's rename and the row go together.
        with _RECORDING:
            # Again: the bot may name itself otherwise now, or another submission took the name.
            _check_name(store, folder, final, own=name is None)
            if staging is not None:
                dest_dir = folder / "bots" / final
                staging.rename(dest_dir)
                staging = dest_dir
                if kind == "folder":
                    run_cwd = str(dest_dir.relative_to(folder))
                else:
                    spec_text = "./" + str((dest_dir / Path(spec.argv[-1]).name).relative_to(folder))
            entry = BotEntry(
                name=final,
                kind=kind,
                spec=spec_text,
                cwd="" if kind == "file" else run_cwd,
                source=bot if bot_dir is None else f"{bot} (in {bot_dir})",
                sha256=sha,
                bot_name=bot_name,
                bot_version=version,
                author=author,
                added_at=now(),
            )
            store.add_bot(entry)
        return entry
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        raise
