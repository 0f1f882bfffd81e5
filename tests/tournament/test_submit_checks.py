"""``thirtyone submit``: the name is checked before anything starts, the bot must pass the
compliance check of ``thirtyone check-bot`` and then its validation match, and errors name
the user's own files, never the temporary copy the bot ran from."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from referee.timecontrol import TimeControl
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore

from .conftest import SDK_BOT, cli, copy_tournament, fails, flat, left_as_is, ok
from .faulty import entry


@pytest.fixture
def one(one_bot_tournament: Path, tmp_path: Path) -> Path:
    """A fresh copy of a tournament holding the random bot (sandboxed where the machine can)."""
    return copy_tournament(one_bot_tournament, tmp_path / "t")


@pytest.fixture
def open_air(tmp_path: Path) -> Path:
    """A tournament holding the random bot whose bots run unsandboxed, so that a test bot can
    leave marks where the test sees them."""
    folder = tmp_path / "open"
    with TournamentStore.create(folder, TournamentSettings(table_size=2, games=1, seed=1, sandbox="off")) as store:
        store.add_bot(entry("random", "sample", "random"))
    return folder


def marking_bot(path: Path, marks: Path, name: str = "marker") -> Path:
    """An SDK bot named ``name`` that appends to ``marks`` when it starts, when a match starts,
    and at each decision."""
    source = SDK_BOT.replace('name = "plain"', f"name = {name!r}")
    source = source.replace("import sdk\n", f"import sdk\nopen({str(marks)!r}, 'a').write('started\\n')\n", 1)
    source = source.replace(
        "    def act(self, view: sdk.View) -> sdk.Action:\n",
        f"    def on_match_start(self, info: object) -> None:\n        open({str(marks)!r}, 'a').write('match\\n')\n\n"
        f"    def act(self, view: sdk.View) -> sdk.Action:\n        open({str(marks)!r}, 'a').write('decided\\n')\n",
    )
    path.write_text(source)
    return path


# ---------------------------------------------------------------- the name, first


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{bot}", "--name", "random"], "a bot named 'random' is already submitted; choose another --name"),
        (["random={bot}"], "a bot named 'random' is already submitted; choose another --name"),
        (["{bot}", "--name", "bad name"], "bot name 'bad name' is not allowed"),
        (["{bot}", "--name", "ok/../x"], "bot name 'ok/../x' is not allowed"),
    ],
)
def test_a_given_name_is_checked_before_anything_starts(open_air: Path, tmp_path: Path, args: list[str], message: str) -> None:
    marks = tmp_path / "marks"
    bot = marking_bot(tmp_path / "bot.py", marks)
    with left_as_is(open_air):
        fails("submit", open_air, *(a.replace("{bot}", str(bot)) for a in args), message=message)
    assert not marks.exists(), "the bot was started although its name was refused"


def test_the_bots_own_name_is_checked_before_it_plays(open_air: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    bot = marking_bot(tmp_path / "taken.py", marks, name="random")
    with left_as_is(open_air):
        fails("submit", open_air, bot, message="a bot named 'random' is already submitted; choose another --name")
    # Started once, to say its name; refused before any match or decision.
    assert marks.read_text() == "started\n"


def test_a_malformed_own_name_says_to_choose_one(open_air: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    bot = marking_bot(tmp_path / "spaced.py", marks, name="my bot")
    with left_as_is(open_air):
        fails("submit", open_air, bot, message="bot name 'my bot' is not allowed")
        fails("submit", open_air, bot, message="that is the name the bot gives itself: choose one with --name")
    assert set(marks.read_text().split()) == {"started"}
    result = ok("submit", open_air, bot, "--name", "spaced")
    assert "submitted spaced: my bot" in flat(result.stdout)


# ---------------------------------------------------------------- the user's own paths


SYNTAX_ERROR = "import sdk\n\nclass Broken(sdk.Bot)\n    name = 'broken'\n"


def test_a_syntax_error_names_the_users_file_not_the_copy(one: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    bot = src / "broken.py"
    bot.write_text(SYNTAX_ERROR)
    with left_as_is(one):
        result = fails("submit", one, bot, message="the bot could not be used")
    text = flat(result.stderr)
    assert f"bot '{bot}' exited with code 1 before it was ready" in text
    assert f'File "{bot}", line 3' in text and "SyntaxError" in text
    assert "submit-" not in text and str(one) not in text


def test_a_folder_bot_that_fails_to_start_names_the_users_folder(one: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "main.py").write_text("import lib.brains\n")
    (src / "lib" / "__init__.py").write_text("")
    (src / "lib" / "brains.py").write_text(SYNTAX_ERROR)
    with left_as_is(one):
        # Not fails(): the bot's own traceback is in the message, on purpose.
        result = cli("submit", one, f"{sys.executable} main.py", "--dir", src)
    assert result.exit_code == 2, result.output
    text = flat(result.stderr)
    assert f"error: the bot could not be used: bot '{sys.executable} main.py' exited with code 1 before it was ready" in text
    assert f'File "{src / "main.py"}", line 1' in text
    assert f'File "{src / "lib" / "brains.py"}", line 3' in text
    assert "submit-" not in text and str(one) not in text


# ---------------------------------------------------------------- the check, then the match


TAKE_BACK = SDK_BOT.replace('name = "plain"', 'name = "takeback"').replace(
    "        if view.must_discard:\n",
    "        if view.must_discard and view.drawn_from == sdk.Pile.DISCARD:\n"
    "            return sdk.discard(view.drawn_card)\n"
    "        if view.must_discard:\n",
)


def test_a_bot_that_fails_the_compliance_check_is_refused_with_the_step(one: Path, tmp_path: Path) -> None:
    bot = tmp_path / "takeback.py"
    bot.write_text(TAKE_BACK)
    with left_as_is(one):
        result = fails("submit", one, bot, message="the bot failed its compliance check")
    text = flat(result.stderr)
    assert "decision: discard after taking the discard: illegal action discard" in text
    assert "may not be discarded this turn" in text
    assert "decision: turn start" not in text  # only the failed steps are named


LATE_PASSER = SDK_BOT.replace('name = "plain"', 'name = "latepasser"').replace(
    "        if view.must_discard:\n",
    "        if view.round_no >= 2:\n            return sdk.PASS\n        if view.must_discard:\n",
)


def test_a_bot_that_passes_the_check_still_plays_its_validation_match(one: Path, tmp_path: Path) -> None:
    # Every position of the check is in round 1; this bot breaks the rules from round 2 on.
    bot = tmp_path / "latepasser.py"
    bot.write_text(LATE_PASSER)
    with left_as_is(one):
        fails("submit", one, bot, message="the bot faulted in its validation match against the random bot: illegal in round 2")


def test_a_bot_that_outlives_sigterm_is_accepted_as_a_match_would_cope(open_air: Path) -> None:
    """check-bot fails a bot that ignores SIGTERM; submit does not refuse it, since the referee
    kills it a second later in every match (a late answer is likewise the validation match's
    to judge)."""
    bot = Path(__file__).resolve().parents[1] / "referee" / "bots" / "noncompliant.py"
    command = f"{sys.executable} {bot} --mode sigterm_proof"
    result = ok("submit", open_air, command, "--name", "stubborn")
    assert "stubborn" in result.output
    with TournamentStore.open(open_air, readonly=True) as store:
        assert "stubborn" in [b.name for b in store.bots()]


NONCOMPLIANT = Path(__file__).resolve().parents[1] / "referee" / "bots" / "noncompliant.py"


#: The clock of the lateness tests: room for an honest answer on a busy machine (500 ms and
#: a 500 ms bank), and far below the late bots' sleeps (1.5 s and 3 s).
CLOCK = TimeControl(budget_ms=500, bank_ms=500, grace_ms=100)


def _clocked(tmp_path: Path) -> Path:
    """A tournament on :data:`CLOCK`, its bots unsandboxed."""
    folder = tmp_path / "clocked"
    settings = TournamentSettings(table_size=2, games=1, seed=1, sandbox="off", time_control=CLOCK)
    with TournamentStore.create(folder, settings) as store:
        store.add_bot(entry("random", "sample", "random"))
    return folder


def test_one_late_answer_does_not_refuse_a_bot(tmp_path: Path) -> None:
    """A bot late once (it warms up on its first decision) would not forfeit in the tournament,
    so submit takes it; check-bot still reports the late answer."""
    folder = _clocked(tmp_path)
    command = f"{sys.executable} {NONCOMPLIANT} --mode warm_up --sleep-ms 1500"
    ok("submit", folder, command, "--name", "warmup")
    checked = cli("check-bot", command, "--sandbox", "off", "--budget-ms", "100", "--bank-ms", "0", "--grace-ms", "50")
    assert checked.exit_code == 1 and "no answer within" in flat(checked.stdout)


def test_a_bot_late_at_every_decision_is_refused(tmp_path: Path) -> None:
    """Late often enough to forfeit under the tournament's fault policy: refused, saying so."""
    folder = _clocked(tmp_path)
    slow = tmp_path / "slowpoke.py"
    slow.write_text(
        SDK_BOT.replace('name = "plain"', 'name = "slowpoke"').replace(
            "    def act(self, view: sdk.View) -> sdk.Action:\n",
            # Every position of the check is in round 1: from round 2 on, late at every decision.
            "    def act(self, view: sdk.View) -> sdk.Action:\n        import time\n        if view.round_no >= 2:\n            time.sleep(3)\n",
        )
    )
    with left_as_is(folder):
        fails("submit", folder, slow, message="the bot faulted in its validation match against the random bot: timeout in round 2")


# ---------------------------------------------------------------- several at once


def test_several_bots_submitted_at_once_are_each_checked_and_stored_or_refused(tmp_path: Path) -> None:
    from referee.tournament.store import StoreError
    from referee.tournament.submit import submit_many

    folder = tmp_path / "t"
    TournamentStore.create(folder, TournamentSettings(table_size=2, games=1, seed=1, sandbox="auto")).close()
    twins = []
    for letter in "ab":
        twins.append(tmp_path / f"twin_{letter}.py")
        twins[-1].write_text(SDK_BOT.replace('name = "plain"', 'name = "twin"'))
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit(3)\n")
    got = submit_many(folder, ["greedy", str(twins[0]), str(broken), str(twins[1]), "threshold"])
    # In the order given: the sample bots stored, the bot that cannot start refused.
    assert [g.name if not isinstance(g, Exception) else None for g in got[:1] + got[4:]] == ["greedy", "threshold"]
    assert isinstance(got[2], Exception) and "broken" in str(got[2])
    # Both twins pass their checks at once; one takes the name, the other is refused for it.
    refused = [g for g in (got[1], got[3]) if isinstance(g, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], StoreError), got
    assert "a bot named 'twin' is already submitted" in str(refused[0])
    with TournamentStore.open(folder) as store:
        assert [b.name for b in store.bots()] == ["greedy", "threshold", "twin"]
    # Nothing left of the refused ones: the bots folder holds the stored twin's copy alone.
    assert sorted(p.name for p in (folder / "bots").iterdir()) == ["twin"]
