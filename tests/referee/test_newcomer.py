"""What a new user trips over (issue 24): ``match --log``, the health check that ``match``,
``check-bot`` and ``submit`` judge alike, the log line, and ``--help``. Real bot processes,
real gRPC, real files."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.bots import LocalLauncher
from referee.bots.compliance import check_bot
from referee.cli.app import app
from tests.polling import poll_until

from .conftest import run
from .test_check_bot import ROOMY_TC, noncompliant

runner = CliRunner()
#: One short round, so that each match here takes a moment.
QUICK = ["greedy", "random", "--rule", "max_rounds=1", "--sandbox", "off"]


def match(*args: str) -> object:
    return runner.invoke(app, ["match", *QUICK, *args])


# ---------------------------------------------------------------- 1. --log keeps every log


def test_log_with_a_trailing_slash_is_a_new_folder_that_keeps_every_log(tmp_path: Path) -> None:
    folder = tmp_path / "some" / "dir"
    for seed in ("1", "2", "1"):  # the same seed twice: the same match id, a second name
        result = match("--log", f"{folder}/", "--seed", seed)
        assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert folder.is_dir()
    logs = sorted(p.name for p in folder.iterdir())
    assert len(logs) == 3 and all(n.startswith("thirtyone-match-") and n.endswith(".jsonl") for n in logs), logs
    assert sum(n.endswith("-2.jsonl") for n in logs) == 1


def test_log_naming_an_existing_folder_gets_the_default_name(tmp_path: Path) -> None:
    for _ in range(2):
        assert match("--log", str(tmp_path), "--seed", "5").exit_code == 0  # type: ignore[attr-defined]
    assert len(list(tmp_path.glob("thirtyone-match-*.jsonl"))) == 2


def test_an_existing_log_is_overwritten_only_with_force(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    assert match("--log", str(log), "--seed", "1").exit_code == 0  # type: ignore[attr-defined]
    first = log.read_bytes()
    again = match("--log", str(log), "--seed", "2")
    assert again.exit_code == 2  # type: ignore[attr-defined]
    message = " ".join(again.stderr.split())  # type: ignore[attr-defined]
    assert f"the match log {log} exists; give --force to overwrite it" in message
    assert log.read_bytes() == first  # nothing lost
    forced = match("--log", str(log), "--seed", "2", "--force")
    assert forced.exit_code == 0, forced.output  # type: ignore[attr-defined]
    assert log.read_bytes() != first
    assert "--force" not in forced.stderr.split("play the same match again:")[1].split("\n")[0]  # type: ignore[attr-defined]


# ---------------------------------------------------------------- 5. the log line


def test_a_match_whose_bot_cannot_start_prints_no_log_path(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import sdk\nthis is not python\n")
    result = runner.invoke(app, ["match", str(broken), "greedy", "--log", f"{tmp_path}/", "--sandbox", "off"])
    assert result.exit_code == 1
    assert "log:" not in result.stderr and "jsonl" not in result.stderr
    assert list(tmp_path.glob("*.jsonl")) == []
    played = match("--log", str(tmp_path / "m.jsonl"))
    assert played.exit_code == 0
    assert played.stderr.count(f"log: {tmp_path / 'm.jsonl'}") == 1  # type: ignore[attr-defined]


# ---------------------------------------------------------------- 2. health, judged alike


def test_a_bot_with_only_the_default_health_name_is_accepted_everywhere(tmp_path: Path) -> None:
    """C++'s ``EnableDefaultHealthCheckService(true)`` alone says SERVING for "" and knows
    nothing of "thirtyone.v1.BotService" (NOT_FOUND): match plays it, so check-bot passes it."""
    bot = noncompliant("empty_name")
    played = runner.invoke(app, ["match", bot, "random", "--rule", "max_rounds=1", "--sandbox", "off",
                                 "--log", str(tmp_path / "m.jsonl")])  # fmt: skip
    assert played.exit_code == 0, played.output
    report = run(check_bot(bot, time_control=ROOMY_TC, launcher=LocalLauncher()))
    assert report.passed, [(r.key, r.status, r.reason) for r in report.results]
    health = next(r for r in report.results if r.key == "health")
    assert "service 'thirtyone.v1.BotService': NOT_FOUND" in health.reason


def _health_of_bot_service(address: str) -> str | None:
    """What the health service at ``address`` answers for the BotService's name (None: no answer)."""
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="thirtyone.v1.BotService"), timeout=5
            )
        except grpc.RpcError:
            return None
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def test_a_bot_that_says_not_serving_is_refused_everywhere(tmp_path: Path) -> None:
    """NOT_SERVING for the BotService (a bot still loading) means not ready, to match and to
    check-bot alike, with what the health service said."""
    words = "service 'thirtyone.v1.BotService': NOT_SERVING"
    address = f"unix://{tmp_path / 'bot.sock'}"
    # The bot is started here and waited for until it says NOT_SERVING, so that the referee's
    # start-up limit runs out while the bot answers however long a busy machine takes to start
    # it (a launched bot could still be loading its interpreter when the limit ran out). The
    # match (a process of its own) and the check wait out their limits at the same time.
    bot = subprocess.Popen([*shlex.split(noncompliant("half_health")), "--address", address])
    try:
        poll_until(
            "the bot to say NOT_SERVING", lambda: _health_of_bot_service(address) == "NOT_SERVING", while_=lambda: bot.poll() is None
        )
        cmd = [sys.executable, "-c", "from referee.cli import main; main()", "match", address, "random", "--startup-timeout", "3",
               "--sandbox", "off", "--log", str(tmp_path / "m.jsonl")]  # fmt: skip
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as played:
            report = run(check_bot(address, time_control=ROOMY_TC, launcher=LocalLauncher(), startup_timeout_s=3.0))
            _, stderr = played.communicate(timeout=300)
    finally:
        bot.terminate()
        bot.wait(30)
    assert played.returncode == 1, stderr
    assert words in " ".join(stderr.split())
    assert not report.passed
    health = next(r for r in report.results if r.key == "health")
    assert health.status == "fail" and words in health.reason


def test_a_health_answer_is_not_hidden_by_a_later_check_that_timed_out(tmp_path: Path) -> None:
    # The bot answers NOT_SERVING, then answers no more checks: the refusal still says what it
    # answered, besides the timeout (on a busy machine the last check, with a moment left
    # before the limit, often times out).
    from referee.bots import start_bot
    from referee.faults import BotStartError

    address = f"unix://{tmp_path / 'bot.sock'}"
    bot = subprocess.Popen([*shlex.split(noncompliant("stalled_health")), "--address", address])
    try:
        poll_until("the bot's socket", lambda: (tmp_path / "bot.sock").exists(), while_=lambda: bot.poll() is None)
        with pytest.raises(BotStartError) as refused:
            run(start_bot(address, startup_timeout_s=3.0))
    finally:
        bot.terminate()
        bot.wait(30)
    text = " ".join(str(refused.value).split())
    assert "last health check: DEADLINE_EXCEEDED; the one before: service 'thirtyone.v1.BotService': NOT_SERVING" in text, text


def test_submit_accepts_a_bot_with_only_the_default_health_name(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    new = runner.invoke(app, ["tournament", "new", str(folder), "--sandbox", "off", "--games", "1"])
    assert new.exit_code == 0, new.output
    bot = Path(__file__).resolve().parent / "bots" / "noncompliant.py"
    # A Python file runs with the referee's interpreter; the mode comes from the environment.
    source = bot.read_text().replace('p.add_argument("--mode", default="good")', 'p.add_argument("--mode", default="empty_name")')
    mine = tmp_path / "cpp_like.py"
    mine.write_text(source)
    result = runner.invoke(app, ["submit", str(folder), str(mine)])
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------- 7. --help


@pytest.mark.parametrize("command", [["serve"], ["check-bot"], ["match"], ["tournament", "run"], []])
def test_help_shows_no_type_beside_a_flag(command: list[str]) -> None:
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    text = subprocess.run(
        [sys.executable, "-c", "from referee.cli import main; main()", *command, "--help"],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    ).stdout  # fmt: skip
    assert "--help" in text
    assert "<bool>" not in text


def test_long_help_wraps_at_the_terminal_width() -> None:
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    text = subprocess.run(
        [sys.executable, "-c", "from referee.cli import main; main()", "check-bot", "--help"],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    ).stdout  # fmt: skip
    prose = "\n".join(line.strip() for line in text.split("╭")[0].splitlines()[3:])
    paragraphs = [p.splitlines() for p in prose.strip().split("\n\n")]
    assert len(paragraphs) >= 3 and max(len(p) for p in paragraphs) >= 3, paragraphs
    # Wrapped by the terminal, each line of a paragraph but its last is nearly full.
    for lines in paragraphs:
        assert all(len(line) > 60 for line in lines[:-1]), lines


# ---------------------------------------------------------------- 6. a bot file that does not parse


def test_bot_test_of_a_syntax_error_shows_the_message_and_the_line(tmp_path: Path) -> None:
    bot = tmp_path / "syntax_error.py"
    bot.write_text("import sdk\n\n\nclass B(sdk.Bot):\n    def act(self, view)\n        return sdk.PASS\n")
    result = runner.invoke(app, ["bot", "test", str(bot)])
    assert result.exit_code == 1
    text = result.stderr
    assert "Traceback" not in text and "importlib" not in text, text
    assert "    def act(self, view)" in text
    assert f"{bot}, line 5: SyntaxError: expected ':'" in " ".join(text.split())
    assert len(text.strip().splitlines()) <= 6, text


def test_bot_test_of_an_import_error_shows_only_the_bots_frames(tmp_path: Path) -> None:
    bot = tmp_path / "zero_bot.py"
    bot.write_text("import sdk\n\nx = 1 / 0\n")
    result = runner.invoke(app, ["bot", "test", str(bot)])
    assert result.exit_code == 1
    assert "x = 1 / 0" in result.stderr and "ZeroDivisionError" in result.stderr
    assert "importlib" not in result.stderr and "referee/cli" not in result.stderr, result.stderr


# ---------------------------------------------------------------- 10. did you mean


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--preset", "pagta"], "unknown preset 'pagta' (did you mean 'pagat'?); presets are:"),
        (["--rule", "empty_stok=pass"], "unknown rule option 'empty_stok' (did you mean 'empty_stock'?)"),
        (["--rule", "draw=widw"], "rule option 'draw' got 'widw' (did you mean 'widow'?)"),
    ],
)
def test_a_typo_in_the_rules_suggests_the_nearest_name(args: list[str], hint: str) -> None:
    result = runner.invoke(app, ["match", "greedy", "random", *args])
    assert result.exit_code == 2
    assert hint in " ".join(result.stderr.split())


def test_a_name_far_from_any_gets_no_guess() -> None:
    result = runner.invoke(app, ["match", "greedy", "random", "--preset", "zzzzzz"])
    assert result.exit_code == 2 and "did you mean" not in result.stderr


# ---------------------------------------------------------------- 8. one spelling everywhere

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_and_the_proto_name_every_preset() -> None:
    from referee.game.rules import PRESETS

    options = next(line for line in (ROOT / "docs" / "matches.md").read_text().splitlines() if line.startswith("| `--preset P`"))
    proto = (ROOT / "proto" / "thirtyone" / "v1" / "game.proto").read_text()
    comment = proto[proto.index("message Rules {") : proto.index("string preset = 1;")]
    for name in PRESETS:
        assert f"`{name}`" in options, (name, options)
        assert f'"{name}"' in comment, name


def test_the_cli_names_a_tournaments_matches_by_their_key(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "my_bot+random_d000_r1.jsonl").write_text("")
    result = runner.invoke(app, ["replay", str(tmp_path)])
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert "e.g. my_bot+random/d000/r1" in text, text


def test_the_docs_say_exactly_what_a_bot_serves() -> None:
    contract = " ".join((ROOT / "docs" / "contract.md").read_text().split())
    proto = " ".join((ROOT / "proto" / "thirtyone" / "v1" / "bot.proto").read_text().replace("//", " ").split())
    for text in (contract, proto):
        assert 'SetServingStatus("thirtyone.v1.BotService", true)' in text
        assert "SERVING or NOT_FOUND" in text or "SERVING` too or is unknown to the health service (`NOT_FOUND`)" in text


# ---------------------------------------------------------------- 11. check-bot and the variants

STANDARD_ONLY = Path(__file__).resolve().parent / "bots" / "standard_only.py"


def test_check_bot_says_which_rules_a_standard_bot_keeps_and_exits_0() -> None:
    import json

    result = runner.invoke(app, ["check-bot", str(STANDARD_ONLY), "--sandbox", "off", "--json", "--budget-ms", "500"])
    data = json.loads(result.stdout)
    assert data["passed"] is False  # the widow and the dealer's option are asked, and failed
    kept = data["rules_kept"]
    assert kept["standard"] and kept["pagat"] and kept["pot"]
    assert not kept["widow"] and not kept["bicycle"] and not kept["dealer_option"]
    assert result.exit_code == 0 and data["exit_code"] == 0
    # The table says so, and --all asks for every preset and variant.
    text = runner.invoke(app, ["check-bot", str(STANDARD_ONLY), "--sandbox", "off", "--budget-ms", "500", "--all"])
    assert text.exit_code == 1
    flat = " ".join(text.stdout.split())
    assert "keeps the contract of: standard, pagat, family, cadillac, under_the_gun, dummy, pot" in flat
    assert "not of: bicycle (decision: the widow, after a knock); dealer_option (decision: the dealer's option)" in flat


# ---------------------------------------------------------------- 3. compiled languages


def test_the_docs_take_a_compiled_bot_from_the_protos_to_a_submission() -> None:
    """No C++ toolchain with gRPC here to build one, so the words: the protoc line with
    grpc_cpp_plugin, pkg-config and CMake, SIGTERM, and whether a binary needs --dir."""
    text = (ROOT / "docs" / "other-languages.md").read_text()
    section = text[text.index("## Other languages and generated code") :]
    flat = " ".join(section.split())
    assert "--grpc_out=gen --plugin=protoc-gen-grpc=" in flat and "grpc_cpp_plugin" in flat
    assert "pkg-config --cflags --libs grpc++ protobuf" in flat
    assert "target_link_libraries(my_bot gRPC::grpc++ protobuf::libprotobuf)" in flat
    assert "SIGTERM in a compiled language" in flat and "death by SIGTERM" in flat
    assert "copies that one file into the tournament" in flat and "--dir build/" in flat
