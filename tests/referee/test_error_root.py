"""One error root: every error the referee raises on purpose is a RefereeError, and the ones
that were a ValueError or a RuntimeError before still are (code catches them by that base)."""

from __future__ import annotations

import pytest

from referee.analysis.luck import LuckError
from referee.bots.sandbox import SandboxError
from referee.bots.seccomp import FilterError
from referee.faults import BotError, BotFault, LogError, RefereeError
from referee.ladder.errors import ArenaError
from referee.replay.verify import MatchNotFound
from referee.tournament.botfiles import BotFilesError
from referee.tournament.settings import SettingsError
from referee.tournament.sprt import SprtError
from referee.tournament.store import StoreError
from referee.tournament.submit import SubmissionError
from referee.wire import WireError


@pytest.mark.parametrize(
    ("error", "old_base"),
    [
        (StoreError, Exception),
        (SubmissionError, Exception),
        (ArenaError, Exception),
        (BotError, Exception),
        (BotFault, Exception),
        (SettingsError, ValueError),
        (BotFilesError, ValueError),
        (SprtError, ValueError),
        (WireError, ValueError),
        (LuckError, ValueError),
        (LogError, ValueError),
        (SandboxError, RuntimeError),
        (FilterError, RuntimeError),
        (MatchNotFound, LookupError),
    ],
)
def test_every_room_error_has_the_one_root_and_keeps_its_old_base(error: type[Exception], old_base: type[Exception]) -> None:
    assert issubclass(error, RefereeError)
    assert issubclass(error, old_base)
    # The message is the text given, as before (the CLI prints str(e)).
    assert str(error("why it failed")) == "why it failed"
