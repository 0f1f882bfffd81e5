"""Late answers (past the budget with no bank left, inside the grace) over real bot processes:
the wiring from the Play stream to the log, the stored result, the standings and check-bot.

The arithmetic is tested exactly through in-memory seats in ``test_match.py``; here the
grace is wide (seconds) so that a busy machine cannot turn a late answer into a timeout, and
the bot sleeps far past its budget so that it cannot be on time either.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from referee.bots.compliance import LATE_PREFIX, is_soft_failure
from referee.cli.check import summary_line
from referee.cli.standings_view import standings_rows, standings_table
from referee.game import Rules
from referee.log import read_log, replay_log
from referee.match import MatchConfig, run_match
from referee.replay.verify import stored_result_of
from referee.timecontrol import TimeControl
from referee.tournament.settings import TournamentSettings
from referee.tournament.standings import compute_standings
from referee.tournament.store import MatchRow
from referee.tournament.tasks import outcome_to_result

from .conftest import hostile
from .test_check_bot import check, noncompliant

#: A 10 ms budget, no bank, and a grace of 3 s: a bot that sleeps 60 ms is late every time.
WIDE_GRACE = TimeControl(budget_ms=10, bank_ms=0, grace_ms=3000)


def test_a_bot_past_its_budget_inside_the_grace_is_late_in_the_log_the_result_and_the_standings(tmp_path: Path) -> None:
    log_path = tmp_path / "late.jsonl"
    config = MatchConfig(rules=Rules().with_options({"max_rounds": 1}), time_control=WIDE_GRACE)
    out = run_match([hostile("sleepy", "--sleep-ms", 60, name="dawdler"), hostile("first")], seed=3, config=config, log_path=log_path)
    seat = out.seats[0]
    assert seat.faults == () and not seat.forfeited  # lenient: counted, not a fault
    assert seat.stats.decisions > 0 and seat.late == seat.stats.decisions
    log = read_log(log_path)
    answers = [e.event.action for e in log.events if e.event.HasField("action") and e.event.action.seat == 0]
    assert answers and all(a.late and a.latency_us >= 60_000 for a in answers)
    assert log.footer is not None and log.footer.stats[0].late == seat.late
    replay_log(log)
    # The runner stores the count, and verify rebuilds the same row from the log alone.
    result = outcome_to_result(out)
    assert result["seats"][0]["late"] == seat.late
    assert stored_result_of(log) == result
    # The standings count it.
    row = MatchRow("m0", "t0", 0, 0, 3, ("dawdler", "hostile-first"), result, str(log_path), "", out.duration_s)
    st = compute_standings([row], ["dawdler", "hostile-first"])
    rows = {r["bot"]: r for r in standings_rows(st)}
    assert rows["dawdler"]["late_answers"] == seat.late and rows["dawdler"]["faults_late"] == 0
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(standings_table(st, TournamentSettings()))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "late" in text
    dawdler_line = next(line for line in text.splitlines() if "dawdler" in line and "%" in line)
    assert dawdler_line.rstrip().rstrip("│ ").endswith(str(seat.late))


def test_a_late_fault_under_strict_over_grpc(tmp_path: Path) -> None:
    # A bank of 200 ms, so that the quick bot cannot be late on a busy machine; the sleepy
    # one uses 50 ms or more of it a decision, and its first answer past it forfeits.
    tc = TimeControl(budget_ms=10, bank_ms=200, grace_ms=3000)
    config = MatchConfig(time_control=tc, fault_policy="strict")
    out = run_match([hostile("sleepy", "--sleep-ms", 60), hostile("first")], seed=3, config=config, log_path=tmp_path / "s.jsonl")
    seat = out.seats[0]
    assert [f.kind for f in seat.faults] == ["late"] and seat.forfeited and seat.late == 1
    assert "past its 10 ms budget " in seat.faults[0].message
    assert seat.bank_left_ms == 0 and seat.stats.decisions <= 5
    assert outcome_to_result(out)["seats"][0]["faults"] == {"late": 1}
    replay_log(tmp_path / "s.jsonl")


def test_check_bot_counts_a_late_answer() -> None:
    # The empty-stock decision is told no bank; 400 ms is past its 100 ms budget, inside 3 s.
    tc = TimeControl(budget_ms=100, bank_ms=1000, grace_ms=3000)
    report = check(noncompliant("slow_pass", "--sleep-ms", "400"), tc=tc)
    late = [r for r in report.results if r.late]
    assert [r.key for r in late] == ["decision:empty_stock"]
    result = late[0]
    assert result.status == "fail" and result.reason.startswith(LATE_PREFIX)
    assert "past its budget of 100 ms with no time bank left, inside the 3000 ms grace" in result.reason
    assert is_soft_failure(result)  # submit leaves it to the validation match
    assert [r.key for r in report.failures] == ["decision:empty_stock"]
    assert report.late == 1 and report.to_dict()["late"] == 1
    assert "1 late answer" in summary_line(report).plain
