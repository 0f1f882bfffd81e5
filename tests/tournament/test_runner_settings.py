"""``max_start_failures``: read from the [tournament] table, checked, stored, and obeyed."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.tournament.settings import SettingsError, TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.submit import submit

from ..referee.conftest import hostile
from .conftest import SANDBOX, fails, ok, stored_matches
from .test_runner_broken_bots import add_command_bot

CONFIG = """\
[tournament]
games = 2
seed = 9
max_start_failures = 1
sandbox = "off"

[rules]
max_rounds = 1

[time_control]
budget_ms = 50
bank_ms = 100
grace_ms = 50
"""


def test_max_start_failures_round_trips_and_defaults_to_3() -> None:
    assert TournamentSettings().max_start_failures == 3
    s = TournamentSettings.from_toml("[tournament]\nmax_start_failures = 7\n")
    assert s.max_start_failures == 7
    assert TournamentSettings.from_dict(s.to_dict()) == s


@pytest.mark.parametrize("bad", ["0", "1001", "true", '"3"', "2.5"])
def test_a_bad_max_start_failures_is_refused_by_name(bad: str) -> None:
    with pytest.raises(SettingsError, match="max_start_failures must be a whole number from 1 to 1000"):
        TournamentSettings.from_toml(f"[tournament]\nmax_start_failures = {bad}\n")


def test_a_bad_max_start_failures_in_a_config_file_creates_nothing(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[tournament]\nmax_start_failures = 0\n")
    fails("tournament", "new", tmp_path / "t", "--config", config, message="max_start_failures must be a whole number")
    assert not (tmp_path / "t").exists()


def test_one_start_failure_disqualifies_when_the_setting_says_so(tmp_path: Path) -> None:
    config = tmp_path / "league.toml"
    config.write_text(CONFIG)
    folder = tmp_path / "t"
    ok("tournament", "new", folder, "--config", config, "--sandbox", SANDBOX)
    with TournamentStore.open(folder) as store:
        assert store.settings.max_start_failures == 1
        submit(store, "random", cwd=folder)
        add_command_bot(store, "nostart", hostile("exit_at_start"))
    ok("tournament", "run", folder)
    rows = stored_matches(folder)
    assert len(rows) == 4
    absent = sorted(r.result["seats"][r.seats.index("nostart")]["absent"].split(":")[0] for r in rows)
    assert absent == ["could not start", "disqualified", "disqualified", "disqualified"]
    with TournamentStore.open(folder) as store:
        assert "failed to start 1 time in a row" in store.disqualified()["nostart"]
