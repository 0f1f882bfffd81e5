"""Settings: from options and from a TOML file, stored in the database, shown by the commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.timecontrol import TimeControl
from referee.tournament.settings import SettingsError, TournamentSettings
from referee.tournament.store import TournamentStore

from .conftest import flat, ok

CONFIG = """\
[tournament]
table_size = 3
games = 4
seed = 424242
fault_policy = "strict"
max_strikes = 5

[rules]
preset = "pagat"
lives = 2

[time_control]
budget_ms = 400
bank_ms = 5000
grace_ms = 50
"""


def test_settings_from_a_toml_file_are_stored_and_shown(tmp_path: Path) -> None:
    config = tmp_path / "league.toml"
    config.write_text(CONFIG)
    folder = tmp_path / "t"
    created = flat(ok("tournament", "new", folder, "--config", config).stdout)
    described = "rules pagat + lives=2 · 3 seats/table · 4 deals/table \N{MULTIPLICATION SIGN} 3 rotations · 400 ms/decision + 5 s bank (grace 50 ms) · faults strict"
    assert described in created

    with TournamentStore.open(folder) as store:
        s = store.settings
    assert s == TournamentSettings.from_toml(CONFIG)
    assert (s.table_size, s.games, s.seed, s.fault_policy, s.max_strikes) == (3, 4, 424242, "strict", 5)
    assert (s.rules.preset_name, s.rules.lives) == ("pagat", 2)
    assert s.time_control == TimeControl(budget_ms=400, bank_ms=5000, grace_ms=50)

    data = json.loads(ok("standings", folder, "--json").stdout)
    # Nothing is played yet: the seed stays hidden until every scheduled match is.
    assert data["settings"] == {**s.to_dict(), "seed": None}
    assert data["settings"]["rules"]["preset"] == "pagat" and data["settings"]["time_control"]["bank_ms"] == 5000
    assert data["matches"] == 0 and data["standings"] == []
    assert described in flat(ok("standings", folder).stdout)


def test_options_override_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "league.toml"
    config.write_text(CONFIG)
    folder = tmp_path / "t"
    ok("tournament", "new", folder, "--config", config, "--games", "2", "--rule", "lives=4", "--budget-ms", "300",
       "--fault-policy", "lenient", "--preset", "standard")
    with TournamentStore.open(folder) as store:
        s = store.settings
    assert (s.table_size, s.games, s.seed, s.fault_policy) == (3, 2, 424242, "lenient")
    assert (s.rules.preset_name, s.rules.lives) == ("standard", 4)
    assert (s.time_control.budget_ms, s.time_control.bank_ms) == (300, 5000)


def test_defaults_and_a_random_seed(tmp_path: Path) -> None:
    ok("tournament", "new", tmp_path / "a")
    ok("tournament", "new", tmp_path / "b")
    with TournamentStore.open(tmp_path / "a") as a, TournamentStore.open(tmp_path / "b") as b:
        sa, sb = a.settings, b.settings
    assert (sa.table_size, sa.games, sa.fault_policy, sa.max_strikes) == (2, 10, "lenient", 3)
    assert sa.rules.preset_name == "standard" and sa.time_control == TimeControl()
    assert sa.seed != sb.seed  # fresh, and kept: the schedule is fixed from now on


def test_settings_round_trip_and_refuse_wrong_types() -> None:
    s = TournamentSettings.from_toml(CONFIG)
    assert TournamentSettings.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    for bad in ({"table_size": True}, {"games": 1.5}, {"seed": 2**64}, {"max_strikes": "3"}):
        with pytest.raises(SettingsError):
            TournamentSettings.from_dict({"tournament": bad})
