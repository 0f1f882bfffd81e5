"""Submitting bots: copy, validate by a short match against the random bot, record.

A Python file is copied into ``bots/NAME/``; a bot submitted with ``--dir FOLDER`` (a folder
plus a command) has its whole folder copied there, and runs with the copy as its working
folder. Either copy is hashed (:mod:`referee.tournament.botfiles`) and checked again at every
launch. The validation match runs in the sandbox the tournament's matches will use.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

from referee.bots import BotSpec, LocalLauncher, parse_bot_spec
from referee.bots.sandbox import SandboxConfig
from referee.faults import BotError, BotStartError
from referee.match import MatchConfig, run_match
from referee.tournament.botfiles import BotFilesError, check_unchanged, copy_folder, file_sha256
from referee.tournament.settings import TournamentSettings, check_bot_name
from referee.tournament.store import BotEntry, StoreError, TournamentStore, now

#: Rounds of the validation match: enough to exercise every kind of decision.
VALIDATION_ROUNDS = 3
VALIDATION_SEED = 31


class SubmissionError(Exception):
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


def validate(
    spec: BotSpec | str, cwd: str, settings: TournamentSettings, sandbox: SandboxConfig | None = None
) -> tuple[str, str, str]:
    """Play a short strict match against the random bot; return the bot's identity.

    Raises :class:`SubmissionError` if the bot does not start, speaks another protocol
    version, or commits any fault. ``sandbox`` is the one the tournament's matches use.
    """
    if isinstance(spec, str):
        spec = parse_bot_spec(spec, cwd=cwd)
    # The tournament's own rules and time control, but only a few rounds, and strict:
    # any fault in a short match against the random bot refuses the submission.
    config = MatchConfig(
        rules=settings.rules.with_options({"max_rounds": VALIDATION_ROUNDS}),
        time_control=settings.time_control,
        fault_policy="strict",
    )
    try:
        outcome = run_match([spec, "random"], seed=VALIDATION_SEED, config=config, launcher=LocalLauncher(sandbox=sandbox))
    except BotError as e:
        raise SubmissionError(f"the bot could not be used: {e}") from None
    faults = outcome.seats[0].faults
    if faults:
        f = faults[0]
        raise SubmissionError(
            f"the bot faulted in its validation match against the random bot: {f.kind} in round {f.round_no}, "
            f"turn {f.turn}: {f.message}"
        )
    ident = outcome.seats[0].identity
    return ident.name, ident.version, ident.author


def submit(
    store: TournamentStore,
    bot: str,
    name: str | None = None,
    cwd: Path | None = None,
    bot_dir: Path | None = None,
) -> BotEntry:
    """Validate a bot and add it to the tournament under ``name`` (default: the bot's own).

    A Python file is copied into the tournament folder with its hash, so editing the
    original later does not change the tournament; with ``bot_dir`` the whole folder is
    copied and ``bot`` is a command run inside the copy. Nothing is stored unless the bot
    passes its validation match, played in the tournament's sandbox.
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
    if name is not None:
        check_bot_name(name)
        if store.bot(name) is not None:
            raise StoreError(f"a bot named {name!r} is already submitted; choose another --name")
    settings = store.settings
    folder = store.folder.resolve()
    sandbox = settings.sandbox_config(folder)
    staging: Path | None = None
    sha: str | None = None
    spec_text = bot
    run_cwd = str(cwd)
    kind: str = spec.kind
    try:
        if bot_dir is not None:
            staging = Path(tempfile.mkdtemp(prefix="submit-", dir=folder / "bots"))
            staging.rmdir()
            try:
                sha = copy_folder(bot_dir, staging, skip=(folder,))
            except BotFilesError as e:
                raise SubmissionError(str(e)) from None
            run_spec = folder_spec(bot, staging)
            kind = "folder"
        elif spec.kind == "file":
            source = Path(spec.argv[-1])
            staging = Path(tempfile.mkdtemp(prefix="submit-", dir=folder / "bots"))
            copied = staging / source.name
            shutil.copy2(source, copied)
            sha = file_sha256(copied)
            run_spec = parse_bot_spec(str(copied), cwd=folder)
        else:
            run_spec = spec
        bot_name, version, author = validate(run_spec, run_cwd, settings, sandbox)
        final = name or bot_name
        check_bot_name(final)
        if store.bot(final) is not None:
            raise StoreError(f"a bot named {final!r} is already submitted; choose another --name")
        if staging is not None:
            dest_dir = folder / "bots" / final
            if dest_dir.exists():
                raise StoreError(f"{dest_dir} already exists; choose another --name")
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
