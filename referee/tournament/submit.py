"""Submitting bots: copy, validate by a short match against the random bot, record."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from referee.bots import parse_bot_spec
from referee.faults import BotError
from referee.match import MatchConfig, run_match
from referee.tournament.settings import TournamentSettings, check_bot_name
from referee.tournament.store import BotEntry, StoreError, TournamentStore, now

#: Rounds of the validation match: enough to exercise every kind of decision.
VALIDATION_ROUNDS = 3
VALIDATION_SEED = 31


class SubmissionError(Exception):
    """A bot was refused; the message says why."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def validate(spec_text: str, cwd: str, settings: TournamentSettings) -> tuple[str, str, str]:
    """Play a short strict match against the random bot; return the bot's identity.

    Raises :class:`SubmissionError` if the bot does not start, speaks another protocol
    version, or commits any fault.
    """
    spec = parse_bot_spec(spec_text, cwd=cwd)
    # The tournament's own rules and time control, but only a few rounds, and strict:
    # any fault in a short match against the random bot refuses the submission.
    config = MatchConfig(
        rules=settings.rules.with_options({"max_rounds": VALIDATION_ROUNDS}),
        time_control=settings.time_control,
        fault_policy="strict",
    )
    try:
        outcome = run_match([spec, "random"], seed=VALIDATION_SEED, config=config)
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


def submit(store: TournamentStore, bot: str, name: str | None = None, cwd: Path | None = None) -> BotEntry:
    """Validate a bot and add it to the tournament under ``name`` (default: the bot's own).

    A Python file is copied into the tournament folder with its hash, so editing the
    original later does not change the tournament. Nothing is stored unless the bot passes.
    """
    cwd = (cwd or Path.cwd()).resolve()
    spec = parse_bot_spec(bot, cwd=cwd)
    if spec.label is not None:
        if name is not None and name != spec.label:
            raise SubmissionError(f"two names given: {spec.label!r} (in {bot!r}) and --name {name!r}")
        name = spec.label
        bot = bot.split("=", 1)[1]
    if name is not None:
        check_bot_name(name)
        if store.bot(name) is not None:
            raise StoreError(f"a bot named {name!r} is already submitted; choose another --name")
    folder = store.folder.resolve()
    copied: Path | None = None
    sha: str | None = None
    spec_text = bot
    run_cwd = str(cwd)
    try:
        if spec.kind == "file":
            source = Path(spec.argv[-1])
            staging = Path(tempfile.mkdtemp(prefix="submit-", dir=folder / "bots"))
            copied = staging / source.name
            shutil.copy2(source, copied)
            sha = _sha256(copied)
            spec_text = str(copied)
            run_cwd = str(folder)
        bot_name, version, author = validate(spec_text, run_cwd, store.settings)
        final = name or bot_name
        check_bot_name(final)
        if store.bot(final) is not None:
            raise StoreError(f"a bot named {final!r} is already submitted; choose another --name")
        if copied is not None:
            dest_dir = folder / "bots" / final
            if dest_dir.exists():
                raise StoreError(f"{dest_dir} already exists; choose another --name")
            copied.parent.rename(dest_dir)
            copied = dest_dir / copied.name
            spec_text = str(copied.relative_to(folder))
            if not spec_text.startswith(("/", ".")):
                spec_text = "./" + spec_text
        entry = BotEntry(
            name=final,
            kind=spec.kind,
            spec=spec_text,
            cwd="" if spec.kind == "file" else run_cwd,
            source=bot,
            sha256=sha,
            bot_name=bot_name,
            bot_version=version,
            author=author,
            added_at=now(),
        )
        store.add_bot(entry)
        return entry
    except BaseException:
        if copied is not None:
            shutil.rmtree(copied.parent, ignore_errors=True)
        raise
