"""Match logs: written per event, read back with clear errors, replayed without the seed;
and what a bot was sent, checked against the log (docs/rules.md, "What a bot sees")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import json_format
from thirtyone.v1 import bot_pb2, log_pb2

from referee import wire
from referee.faults import LogError, ReplayError
from referee.game import ActionRecord, Match
from referee.log import LogWriter, encode_record, iter_log, read_log, replay_log
from referee.match import MatchConfig, MatchOutcome, run_match

from .conftest import hostile

# Its module fixtures start bot processes: its tests share one test process, to start them once.
pytestmark = pytest.mark.xdist_group("test_log")

SEED = 987654321012345678


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[MatchOutcome, Path, Path]:
    """One 3-bot match with a spy at seat 1 recording every request it gets."""
    tmp = tmp_path_factory.mktemp("played")
    record = tmp / "spy.jsonl"
    bots = [hostile("random", "--seed", 1), hostile("spy", "--record", record), hostile("random", "--seed", 2)]
    out = run_match(bots, seed=SEED, config=MatchConfig(), log_path=tmp / "match.jsonl")
    return out, tmp / "match.jsonl", record


def test_every_line_is_a_canonical_log_record(played: tuple[MatchOutcome, Path, Path]) -> None:
    _, path, _ = played
    lines = path.read_text(encoding="utf-8").splitlines()
    kinds = []
    for line in lines:
        record = json_format.Parse(line, log_pb2.LogRecord())
        assert encode_record(record) == line  # canonical: re-encoding gives the same text
        kinds.append(record.WhichOneof("payload"))
        json.loads(line)
    assert kinds[0] == "header" and kinds[-1] == "footer" and set(kinds[1:-1]) == {"event"}
    header = json.loads(lines[0])["header"]
    assert header["schemaVersion"] == 1 and header["seed"] == str(SEED) and header["protocolVersion"] == 1
    assert header["seats"][0]["seat"] == 0  # zero values are written out
    assert header["timeControl"] == {"decisionBudgetMs": 250, "timeBankMs": 10000, "graceMs": 100}


def test_log_holds_every_kind_of_event(played: tuple[MatchOutcome, Path, Path]) -> None:
    out, path, _ = played
    log = read_log(path)
    kinds = {e.event.WhichOneof("payload") for e in log.events}
    assert {"deal", "action", "round_end"} <= kinds
    deal = next(e.event.deal for e in log.events if e.event.HasField("deal"))
    assert len(deal.deck) == 52 and len(deal.hands) == 3 and deal.upcard
    draws = [e.event.action for e in log.events if e.event.HasField("action") and e.event.action.action.kind == 2]
    assert draws and all(a.drawn_card for a in draws)  # stock draws carry their card in the log
    assert all(e.event.action.decision_id > 0 for e in log.events if e.event.HasField("action"))
    assert log.footer is not None
    assert log.footer.placings == out.placings and log.footer.winner == out.winner
    assert sum(s.decisions for s in log.footer.stats) == out.decisions
    assert log.header.seats[1].identity.name == "hostile-spy"


def test_replay_without_the_seed(played: tuple[MatchOutcome, Path, Path]) -> None:
    out, path, _ = played
    result = replay_log(path)
    assert result.complete and result.notes == ()
    assert result.placings == out.placings and result.winner == out.winner
    assert [r.values for r in result.rounds] == [r.values for r in out.rounds]
    assert result.match is not None and result.match.seed is None  # replayed from recorded chance


def test_observations_hold_no_secrets(played: tuple[MatchOutcome, Path, Path]) -> None:
    """Every request the spy got equals its observation, and holds no card it may not know."""
    out, path, record = played
    sent = {}
    for line in record.read_text().splitlines():
        req = json_format.Parse(line, bot_pb2.DecisionRequest())
        sent[req.decision_id] = (req, line)
    checked = 0

    def check(m: Match, rec: ActionRecord, decision_id: int, by_referee: bool) -> None:
        nonlocal checked
        if rec.seat != 1:
            return
        req, raw = sent[decision_id]
        assert req.observation == wire.observation_to_pb(m.observation(1))
        assert req.budget_ms == 250 and 0 < req.time_bank_ms <= 10_000
        # Cards the spy may never see here: the stock, and others' cards never shown.
        public = {e.card for e in m.history if e.card is not None and e.kind.name != "DRAW_STOCK"} | set(m.pile)
        secret = set(m.stock) | {c for s in (0, 2) for c in m.hands[s] if c not in public}
        seen = set(req.observation.hand) | set(req.observation.discard_pile) | {req.observation.drawn_card}
        seen |= {e.card for e in req.observation.history} | {a.card for a in req.observation.legal_actions}
        assert not ({c.text for c in secret} & seen)
        for e in req.observation.history:
            if e.kind == 1 and e.seat != 1:  # another seat's stock draw: the card stays hidden
                assert e.card == ""
        assert str(SEED) not in raw and hex(SEED)[2:] not in raw
        checked += 1

    replay_log(path, on_action=check)
    assert checked == out.seats[1].stats.decisions == len(sent) > 0


def _cut(src: Path, dst: Path, n_bytes: int) -> Path:
    dst.write_bytes(src.read_bytes()[:n_bytes])
    return dst


def test_truncated_log_reads_up_to_the_cut(played: tuple[MatchOutcome, Path, Path], tmp_path: Path) -> None:
    _, path, _ = played
    data = path.read_bytes()
    # Cut in the middle of a line about two thirds in: as if the referee died writing it.
    cut_at = data.index(b"\n", len(data) * 2 // 3) - 10
    log = read_log(_cut(path, tmp_path / "cut.jsonl", cut_at))
    assert not log.complete and log.footer is None
    assert any("cut short" in n for n in log.notes) and any("no footer" in n for n in log.notes)
    whole_lines = data[:cut_at].count(b"\n")
    assert len(log.events) == whole_lines - 1  # every whole line but the header
    result = replay_log(log)
    assert not result.complete
    full = read_log(path)
    assert len(result.rounds) <= len(replay_log(full).rounds)

    # Cut on a line boundary: no partial line, still no footer.
    log2 = read_log(_cut(path, tmp_path / "cut2.jsonl", cut_at - (cut_at - data.rindex(b"\n", 0, cut_at)) + 1))
    assert not log2.complete and not any("cut short" in n for n in log2.notes)
    replay_log(log2)


def test_every_cut_point_reads(played: tuple[MatchOutcome, Path, Path], tmp_path: Path) -> None:
    _, path, _ = played
    data = path.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    for n in sorted({*ends[1:40:3], *(e - 5 for e in ends[1:40:3])}):
        log = read_log(_cut(path, tmp_path / "c.jsonl", n))
        replay_log(log)  # never raises on an honest prefix


def test_header_only_and_empty_logs(played: tuple[MatchOutcome, Path, Path], tmp_path: Path) -> None:
    _, path, _ = played
    first = path.read_bytes().split(b"\n")[0] + b"\n"
    (tmp_path / "h.jsonl").write_bytes(first)
    log = read_log(tmp_path / "h.jsonl")
    assert log.events == [] and not log.complete
    result = replay_log(log)
    assert result.match is None and result.notes
    (tmp_path / "e.jsonl").write_bytes(b"")
    with pytest.raises(LogError, match="the log is empty"):
        read_log(tmp_path / "e.jsonl")


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda lines: lines.__setitem__(3, "{not json"), r":4: not a log record"),
        (lambda lines: lines.__setitem__(3, ""), r":4: empty line"),
        (lambda lines: lines.__setitem__(3, "{}"), r":4: .*holds none"),
        (lambda lines: lines.insert(0, lines[-1]), r":1: the first line must be the header"),
        (lambda lines: lines.append(lines[-2]), r"a line after the footer"),
        (lambda lines: lines.insert(2, lines[0]), r":3: a second header"),
        (lambda lines: lines.__setitem__(0, lines[0].replace('"schemaVersion": 1', '"schemaVersion": 9')), r"schema version 9"),
    ],
)
def test_malformed_logs_name_the_line(
    played: tuple[MatchOutcome, Path, Path], tmp_path: Path, mangle: object, message: str
) -> None:
    _, path, _ = played
    lines = path.read_text().splitlines()
    mangle(lines)  # type: ignore[operator]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogError, match=message):
        read_log(bad)


def _edit_first(lines: list[str], kind: str, edit: object) -> int:
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if kind in obj.get("event", {}):
            edit(obj["event"][kind])  # type: ignore[operator]
            lines[i] = json.dumps(obj)
            return i + 1
    raise AssertionError(f"no {kind} event")


@pytest.mark.parametrize(
    ("kind", "edit", "message"),
    [
        ("roundEnd", lambda e: e.__setitem__("livesLost", []), r"roundEnd\.livesLost .* in the log; the game model gives"),
        ("deal", lambda e: e["hands"][0]["cards"].reverse(), r"deal\.hands\[0\]\.cards\[0\] is .* in the log; the game model gives"),
        ("deal", lambda e: e["deck"].__setitem__(0, e["deck"][1]), "not an order"),
        ("action", lambda e: e.__setitem__("seat", (e["seat"] + 1) % 3), "the game model waits for seat"),
        ("action", lambda e: e.__setitem__("action", {"kind": "ACTION_KIND_DISCARD", "card": "2c"}), "illegal"),
    ],
)
def test_tampered_logs_do_not_replay(
    played: tuple[MatchOutcome, Path, Path], tmp_path: Path, kind: str, edit: object, message: str
) -> None:
    _, path, _ = played
    lines = path.read_text().splitlines()
    lineno = _edit_first(lines, kind, edit)
    bad = tmp_path / "tampered.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayError, match=message) as info:
        replay_log(bad)
    assert f"tampered.jsonl:{lineno}: round " in str(info.value)  # a bad deck too: at its own line


def test_tampered_footer_does_not_replay(played: tuple[MatchOutcome, Path, Path], tmp_path: Path) -> None:
    _, path, _ = played
    lines = path.read_text().splitlines()
    footer = json.loads(lines[-1])
    footer["footer"]["placings"] = list(reversed(footer["footer"]["placings"]))
    lines[-1] = json.dumps(footer)
    bad = tmp_path / "f.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayError, match="footer: placings"):
        replay_log(bad)


def test_writer_flushes_every_record(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    with LogWriter(path) as w:
        w.write(log_pb2.LogRecord(event=log_pb2.LogEvent(round=1)))
        # Readable before close: the line is already with the operating system.
        assert [n for n, _ in iter_log(path)] == [1]
        w.write_many([log_pb2.LogRecord(event=log_pb2.LogEvent(round=2))] * 2)
        assert w.lines == 3
        assert len(path.read_text().splitlines()) == 3
    with pytest.raises(ValueError, match="closed"):
        w.write(log_pb2.LogRecord())


def test_unreadable_log_file(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="cannot read the match log"):
        read_log(tmp_path / "missing.jsonl")
