"""``thirtyone check-bot``: every sample bot keeps the contract, and a bot that breaks one rule
fails exactly that check, with the reason. Real bot processes, real gRPC, the real sandbox
where the machine has one."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from google.protobuf import json_format
from thirtyone.v1 import bot_pb2
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee import wire
from referee.bots import LocalLauncher
from referee.bots.compliance import DECISION_CASES, ComplianceReport, cases_for, check_bot
from referee.bots.sandbox import SandboxConfig, probe
from referee.cli.app import app
from referee.game import KNOCK, PASS, Phase, Pile, Rules
from referee.timecontrol import TimeControl
from tests.polling import poll_until, wait_for_path

from .conftest import hostile, pids_in, run, wait_gone

# Its module fixtures start bot processes: its tests share one test process, to start them once.
pytestmark = pytest.mark.xdist_group("test_check_bot")

NONCOMPLIANT = Path(__file__).resolve().parent / "bots" / "noncompliant.py"
SANDBOXED = probe().available
#: A short clock, so that a slow bot fails fast: 100 ms + 100 ms grace a decision.
SHORT_TC = TimeControl(budget_ms=100, bank_ms=1000, grace_ms=100)
#: Room enough for ten bots checked at once on a machine loaded many times over: 1.5 s + 100
#: ms grace a decision (and a 6 s bank for the first). The slow modes sleep past it (SLEEP_MS).
ROOMY_TC = TimeControl(budget_ms=1500, bank_ms=6000, grace_ms=100)
#: How long the slow modes sleep under ROOMY_TC: slow_pass past its 1.6 s deadline, however
#: quick the machine; warm_up past its budget and well inside budget and bank.
SLEEP_MS = {"slow_pass": 4000, "warm_up": 3000}
#: Ten Python bots starting at once on a loaded machine take longer than the default 10 s.
ROOMY_STARTUP_S = 60.0
ALL_KEYS = ["health", "identity", "match_start", *(f"decision:{c.key}" for c in DECISION_CASES),
            "two_streams", "match_end", "sigterm"]  # fmt: skip

runner = CliRunner()


def noncompliant(mode: str, *args: str) -> str:
    """The command of the test bot that breaks the rule ``mode`` names."""
    return shlex.join([sys.executable, str(NONCOMPLIANT), "--mode", mode, *args])


def check(bot: str, *, sandbox: bool = False, tc: TimeControl = SHORT_TC, **kw: object) -> ComplianceReport:
    """Check ``bot`` (sandboxed only if asked and the machine can)."""
    launcher = LocalLauncher(sandbox=SandboxConfig() if sandbox and SANDBOXED else None)
    return run(check_bot(bot, time_control=tc, launcher=launcher, **kw))  # type: ignore[arg-type]


def statuses(report: ComplianceReport) -> dict[str, str]:
    """Each check's status, by key."""
    return {r.key: r.status for r in report.results}


def reason(report: ComplianceReport, key: str) -> str:
    """The reason one check gives."""
    return next(r.reason for r in report.results if r.key == key)


# ---------------------------------------------------------------- the positions asked


def test_each_decision_case_reaches_a_real_position_of_its_kind() -> None:
    by_key = {c.key: c.position() for c in DECISION_CASES}
    assert list(by_key) == [
        "turn_start", "discard_after_stock", "discard_after_pile", "knock_lap", "empty_stock",
        "dealer_option", "call_first_turn", "swap_hand", "swap_widow",
    ]
    for pos in by_key.values():
        obs = pos.observation
        assert obs.to_move and obs.legal_actions and obs.seat == pos.match.current
        # Through the one wire module, as a match sends it, and back: nothing lost or added.
        request = wire.decision_request(obs, pos.decision_id, 250, 10_000)
        assert wire.decision_from_pb(request.decision_request).observation == obs
    assert by_key["turn_start"].decision_id == 1
    taken = by_key["discard_after_pile"].observation
    assert taken.phase is Phase.DISCARD and taken.drawn_from is Pile.DISCARD and taken.drawn_card is not None
    assert taken.drawn_card in taken.hand and len(taken.legal_actions) == 3
    assert all(a.card != taken.drawn_card for a in taken.legal_actions)
    lap = by_key["knock_lap"].observation
    assert lap.knocker is not None and lap.knocker != lap.seat and KNOCK not in lap.legal_actions
    empty = by_key["empty_stock"].observation
    assert empty.stock_size == 0 and empty.rules.empty_stock == "showdown" and PASS in empty.legal_actions
    # The id the match would have reached: one decision per action played before.
    assert by_key["empty_stock"].decision_id > 80


def test_the_requests_are_those_a_match_sends(tmp_path: Path) -> None:
    # The spy test bot records every DecisionRequest it gets, as JSON.
    record = tmp_path / "requests.jsonl"
    check(hostile("spy", "--record", str(record)))
    got = [json_format.Parse(line, bot_pb2.DecisionRequest()) for line in record.read_text().splitlines()]
    cases = [c.position() for c in DECISION_CASES]
    expected = [
        wire.decision_request(p.observation, p.decision_id, SHORT_TC.budget_ms, SHORT_TC.bank_ms if i == 0 else 0)
        for i, p in enumerate(cases)
    ]
    assert got[: len(cases)] == [e.decision_request for e in expected]
    # Then the two streams at once (in either order): the first two positions again.
    assert sorted(r.decision_id for r in got[len(cases) :]) == [1, 2]
    # Only the first decision is told of a time bank: every other must fit its budget.
    assert [r.time_bank_ms for r in got] == [SHORT_TC.bank_ms] + [0] * (len(got) - 1)


# ---------------------------------------------------------------- bots that keep the contract


SAMPLES = ("greedy", "random", "threshold", "montecarlo")


def check_all(bots: dict[str, str], *, sandbox: bool = False, tc: TimeControl = SHORT_TC) -> dict[str, ComplianceReport]:
    """Check several bots at once (the checks mostly wait on their bots, so together they take
    the time of the slowest): key -> report."""
    launcher = LocalLauncher(sandbox=SandboxConfig() if sandbox and SANDBOXED else None)

    async def all_bots() -> list[ComplianceReport]:
        return list(await asyncio.gather(*(check_bot(b, time_control=tc, launcher=launcher) for b in bots.values())))

    return dict(zip(bots, run(all_bots()), strict=True))


@pytest.fixture(scope="module")
def samples() -> dict[str, ComplianceReport]:
    """Every sample bot checked as ``thirtyone check-bot NAME`` does: sandboxed where the
    machine can, all at once, on a 1 s budget rather than the default 250 ms: on a busy
    machine a stall past the budget is a late answer, and lateness has tests of its own."""
    return check_all({b: b for b in SAMPLES}, sandbox=True, tc=TimeControl(budget_ms=1000))


#: Variant decisions a sample bot does not know yet (the sample bots learn the variants on
#: their own branch); the check reports them, this test only lets them fail.
NOT_YET = {"montecarlo": {"decision:swap_hand", "decision:swap_widow"}}


@pytest.mark.parametrize("bot", SAMPLES)
def test_every_sample_bot_keeps_the_contract(bot: str, samples: dict[str, ComplianceReport]) -> None:
    report = samples[bot]
    pending = NOT_YET.get(bot, set())
    if pending and {r.key for r in report.results if r.status != "pass"} <= pending:
        report = dataclasses.replace(report, results=tuple(
            dataclasses.replace(r, status="pass") if r.key in pending else r for r in report.results
        ))
    assert report.passed, [(r.key, r.status, r.reason) for r in report.results if r.status != "pass"]
    assert [r.key for r in report.results] == ALL_KEYS
    assert all(r.status == "pass" for r in report.results)
    assert report.identity is not None and report.identity.name == bot
    assert report.sandboxed is SANDBOXED
    assert "exited with code 0" in reason(report, "sigterm")  # the SDK stops cleanly


# ---------------------------------------------------------------- one broken rule, one failed check

#: mode of the non-compliant test bot -> the one check it must fail, and words of the reason.
BROKEN = {
    # half_health (never ready, so nothing after the health step runs): test_newcomer.py.
    "chatty_start": ("match_start", "sent a PlayResponse (decision_id 0) when no decision was asked"),
    "take_back": ("decision:discard_after_pile", "was just taken from the discard pile and may not be discarded"),
    "knock_lap": ("decision:knock_lap", "illegal action knock: seat 1 has already knocked this round"),
    "slow_pass": ("decision:empty_stock", "no answer within 1600 ms (its budget of 1500 ms + 100 ms grace)"),
    # Which of the two streams it leaves waiting depends on which request reaches it first.
    "serial": ("two_streams", ": no answer within 1600 ms"),
    "end_error": ("match_end", "every stream: crash: the Play stream broke (INTERNAL: noncompliant bot: cannot read"),
    "sigterm_proof": ("sigterm", "still running 1 s after SIGTERM"),
}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[ComplianceReport, Path]]:
    """Each mode of :data:`BROKEN`, and ``good``, checked once, all at once (the checks mostly
    wait on their bots, so together they take the time of the slowest); with each mode's
    pid folder."""
    modes = [*sorted(BROKEN), "good", "warm_up"]
    pid_dirs = {m: tmp_path_factory.mktemp(f"pids-{m}") for m in modes}

    async def all_modes() -> list[ComplianceReport]:
        return list(
            await asyncio.gather(
                *(
                    check_bot(
                        noncompliant(m, "--sleep-ms", str(SLEEP_MS.get(m, 0)), "--pid-dir", str(pid_dirs[m])),
                        time_control=ROOMY_TC,
                        startup_timeout_s=ROOMY_STARTUP_S,
                    )
                    for m in modes
                )
            )
        )

    return {m: (r, pid_dirs[m]) for m, r in zip(modes, run(all_modes()), strict=True)}


@pytest.mark.parametrize("mode", sorted(BROKEN))
def test_a_bot_that_breaks_one_rule_fails_exactly_that_check(
    mode: str, broken: dict[str, tuple[ComplianceReport, Path]]
) -> None:
    key, words = BROKEN[mode]
    report, pid_dir = broken[mode]
    assert not report.passed
    failed = [r.key for r in report.results if r.status != "pass"]
    assert failed == [key], [(r.key, r.status, r.reason) for r in report.results]
    assert words in reason(report, key)
    if mode == "serial":
        assert reason(report, key).count("no answer within") == 1  # it served one of the two
    if mode in ("slow_pass", "serial"):
        # Still busy with the decision that timed out: that stream's end is not judged.
        assert "1 more, left on a decision that timed out, were dropped unjudged" in reason(report, "match_end")
    # Whatever it did, the bot is gone afterwards (one that ignores SIGTERM is SIGKILLed).
    assert pids_in(pid_dir) and wait_gone(pids_in(pid_dir)) == []


def test_the_well_behaved_test_bot_passes(broken: dict[str, tuple[ComplianceReport, Path]]) -> None:
    # The baseline of the table above: the same bot, breaking nothing.
    report, pid_dir = broken["good"]
    assert report.passed, [(r.key, r.reason) for r in report.results]
    assert "ended by SIGTERM" in reason(report, "sigterm")  # Python's default action counts
    assert wait_gone(pids_in(pid_dir)) == []


def test_the_first_decision_may_use_the_time_bank(broken: dict[str, tuple[ComplianceReport, Path]]) -> None:
    # A bot that warms up on its first move is not faulted for it in a match: nor here.
    report, _ = broken["warm_up"]
    assert report.passed, [(r.key, r.reason) for r in report.results]
    assert "over its budget: from its time bank" in reason(report, "decision:turn_start")


@pytest.mark.skipif(not SANDBOXED, reason="the machine cannot sandbox bots (see thirtyone doctor)")
def test_sigterm_reaches_the_bot_inside_its_sandbox() -> None:
    """Sandboxed, the referee's own SIGTERM kills bubblewrap, never the bot: the check signals
    the bot inside, so a bot that ignores SIGTERM fails there too, and one that obeys passes."""
    reports = check_all({"proof": noncompliant("sigterm_proof"), "good": noncompliant("good")}, sandbox=True, tc=ROOMY_TC)
    proof, good = reports["proof"], reports["good"]
    assert proof.sandboxed and statuses(proof)["sigterm"] == "fail"
    assert "still running 1 s after SIGTERM" in reason(proof, "sigterm")
    assert good.passed and "ended by SIGTERM" in reason(good, "sigterm")


def test_a_slow_bot_may_use_its_bank_when_asked() -> None:
    # As a submission checks: the time bank covers a slow answer, which is noted.
    tc = TimeControl(budget_ms=100, bank_ms=2000, grace_ms=100)
    report = check(noncompliant("slow_pass", "--sleep-ms", "400"), tc=tc, use_bank=True)
    assert report.passed, [(r.key, r.reason) for r in report.results]
    assert "over its budget: from its time bank" in reason(report, "decision:empty_stock")


# ---------------------------------------------------------------- bots that cannot go on


@pytest.fixture(scope="module")
def stopped() -> dict[str, ComplianceReport]:
    """Bots whose check stops early: one that cannot start, one the referee refuses, one that
    dies on its third decision (discard after taking the discard)."""
    return check_all(
        {"exit": hostile("exit_at_start"), "protocol": hostile("bad_protocol"), "die": hostile("die", "--from", 3)}
    )


def test_a_bot_that_cannot_start_fails_health_and_nothing_else_runs(stopped: dict[str, ComplianceReport]) -> None:
    report = stopped["exit"]
    assert statuses(report) == {"health": "fail", **{k: "not run" for k in ALL_KEYS[1:]}}
    assert "exited with code 3 before it was ready" in reason(report, "health")
    assert "cannot load my model weights" in reason(report, "health")
    assert reason(report, "sigterm") == "not run: the bot did not start"


def test_a_refused_identity_stops_the_check(stopped: dict[str, ComplianceReport]) -> None:
    report = stopped["protocol"]
    assert statuses(report)["identity"] == "fail"
    assert "speaks protocol version 2; this referee speaks version 1" in reason(report, "identity")
    assert all(s == "not run" for k, s in statuses(report).items() if k not in ("health", "identity"))


def test_a_bot_that_dies_fails_that_check_and_the_rest_do_not_run(stopped: dict[str, ComplianceReport]) -> None:
    report = stopped["die"]
    s = statuses(report)
    assert s["decision:discard_after_pile"] == "fail"
    assert "the bot process exited with code 1" in reason(report, "decision:discard_after_pile")
    after = ALL_KEYS[ALL_KEYS.index("decision:discard_after_pile") + 1 :]
    assert {s[k] for k in after} == {"not run"}
    assert reason(report, "sigterm") == "not run: the bot process exited with code 1"


def test_a_bot_at_an_address_skips_sigterm() -> None:
    sock = Path(tempfile.mkdtemp(prefix="cb-")) / "bot.sock"
    proc = subprocess.Popen(
        [sys.executable, str(NONCOMPLIANT), "--mode", "good", "--address", f"unix://{sock}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # The bot binds its socket in its own time (later on a busy machine): the check begins
        # once it listens, as it would for a bot someone started and then submitted.
        wait_for_path(sock, while_=lambda: proc.poll() is None)
        report = check(f"unix://{sock}", tc=ROOMY_TC)
        assert not report.launched and report.passed, [(r.key, r.reason) for r in report.results]
        assert statuses(report)["sigterm"] == "skipped"
        assert reason(report, "sigterm") == "skipped: not started by us (a bot at an address)"
        assert proc.poll() is None  # not ours to stop
    finally:
        proc.kill()
        proc.wait()
        sock.unlink(missing_ok=True)
        sock.parent.rmdir()


def test_a_refusal_by_the_caller_ends_the_check_and_stops_the_bot(pid_dir: Path) -> None:
    # What a submission does with a taken name: it refuses as soon as the bot says its name.
    seen: list[str] = []

    def refuse(identity: wire.BotIdentity) -> None:
        raise LookupError(f"{identity.name} is taken")

    with pytest.raises(LookupError, match="hostile-first is taken"):
        check(hostile("first", "--pid-dir", str(pid_dir)), on_identity=refuse, on_result=lambda r: seen.append(r.key))
    assert seen == ["health"]
    assert pids_in(pid_dir) and wait_gone(pids_in(pid_dir)) == []


# ---------------------------------------------------------------- the command


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


#: The command's clock where a test is not about lateness: a busy machine must not make a
#: decision of a sample bot late (the default is 250 ms).
ROOMY = ["--budget-ms", "2000"]


def test_check_bot_prints_a_line_per_check_and_exits_0() -> None:
    result = runner.invoke(app, ["check-bot", "greedy", *ROOMY])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert sum(1 for ln in lines if ln.startswith("PASS")) == len(ALL_KEYS)
    assert any(ln.startswith("PASS  decision: knock lap") for ln in lines)
    assert "the bot keeps the contract: 15 of 15 checks passed" in result.stdout
    assert "checking greedy" in result.stderr


def test_check_bot_exits_1_with_the_failed_check_and_json() -> None:
    result = runner.invoke(app, ["check-bot", noncompliant("take_back"), "--sandbox", "off", *ROOMY, "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is False and data["sandboxed"] is False
    assert data["identity"]["name"] == "noncompliant-take_back"
    assert data["time_control"]["budget_ms"] == 2000
    failed = [c for c in data["checks"] if c["status"] != "pass"]
    assert [c["key"] for c in failed] == ["decision:discard_after_pile"]
    assert "may not be discarded this turn" in failed[0]["reason"]


def test_check_bot_text_output_of_a_failure() -> None:
    result = runner.invoke(app, ["check-bot", noncompliant("knock_lap"), "--sandbox", "off", *ROOMY])
    assert result.exit_code == 1, result.output
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("FAIL"))
    assert line.startswith("FAIL  decision: knock lap") and "illegal action knock" in line
    assert "the bot does not keep the contract: 14 of 15 checks passed, 1 failed" in result.stdout


def test_the_decisions_checked_are_those_the_rules_can_ask() -> None:
    """A standard tournament asks no variant decision; a bicycle one asks only the widow's."""
    base = ["turn_start", "discard_after_stock", "discard_after_pile", "knock_lap", "empty_stock"]
    assert [c.key for c in cases_for(Rules())] == base
    assert [c.key for c in cases_for(Rules.preset("pagat"))] == base
    assert [c.key for c in cases_for(Rules.preset("bicycle"))] == ["swap_widow"]
    both = Rules.build("standard", {"dummy": True, "under_the_gun": True})
    assert [c.key for c in cases_for(both)] == [*base, "call_first_turn", "swap_hand"]
    assert cases_for(None) == DECISION_CASES


def test_check_bot_with_a_preset_asks_only_its_decisions() -> None:
    result = runner.invoke(app, ["check-bot", "random", "--preset", "bicycle", *ROOMY, "--json"])
    assert result.exit_code == 0, result.output
    keys = [c["key"] for c in json.loads(result.stdout)["checks"]]
    assert [k for k in keys if k.startswith("decision:")] == ["decision:swap_widow"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["greedy", "--rule", "dummy=maybe"], "dummy"),
        (["nosuchbot"], "unknown bot 'nosuchbot'"),
        (["greedy", "--budget-ms", "0"], "budget_ms must be at least 1 ms"),
        (["greedy", "--sandbox", "maybe"], "--sandbox must be auto, on or off"),
        (["greedy", "--startup-timeout", "0"], "--startup-timeout must be positive"),
    ],
)
def test_check_bot_refuses_bad_input(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["check-bot", *args])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split())


def test_ctrl_c_stops_the_check_even_where_sigint_was_inherited_ignored(tmp_path: Path, pid_dir: Path) -> None:
    # A check started with SIGINT ignored (a script's `&`, a CI job) where asyncio.Runner alone
    # would drop Ctrl-C and check on: the signal comes once the first check is printed, while
    # the slow bot thinks over a decision.
    out = tmp_path / "out.txt"
    bot = hostile("sleepy", "--sleep-ms", 1000, "--pid-dir", pid_dir)
    code = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); from referee.cli import main; main()"
    with open(out, "w") as f:
        proc = subprocess.Popen([sys.executable, "-c", code, "check-bot", bot, "--sandbox", "off", "--budget-ms", "5000"],
                                stdout=f, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        poll_until("the first check's line", lambda: out.read_text().strip(), timeout_s=300, while_=lambda: proc.poll() is None)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, f"{out.read_text()}\n{stderr}"
        assert "interrupted; the bot is stopped" in stderr and "Traceback" not in stderr
        assert wait_gone(pids_in(pid_dir)) == []
    finally:
        if proc.poll() is None:
            proc.kill()
