"""The Node.js sample bot (``sample_bots/node``): a bot in another language that uses nothing
of ours but the ``.proto`` files, played for real: over gRPC, in a match through the CLI, and
in a short tournament, sandboxed wherever this machine can sandbox.

The tests that run ``node`` skip, saying how to install what is missing, when Node.js or the
bot's packages (``npm ci --prefix sample_bots/node``) are not there; CI installs both.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import grpc
import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2
from thirtyone.v1 import bot_pb2, game_pb2
from typer.testing import CliRunner, Result

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee import wire
from referee.bots.sandbox import probe
from referee.cli.app import app
from referee.game import Action, Card, Observation, Rules
from referee.game.values import all_hands, hand_value
from sample_bots.greedy import GreedyBot
from sdk import View
from sdk.harness import play_match
from tests.sdk.helpers import BotProcess, play_over_grpc, start_bot

CHECKOUT = Path(__file__).resolve().parents[2]
NODE_BOT = CHECKOUT / "sample_bots" / "node"
GREEDY_JS = NODE_BOT / "greedy.js"
CONTRACT = CHECKOUT / "proto" / "thirtyone" / "v1"
BUNDLED = NODE_BOT / "proto" / "thirtyone" / "v1"
#: The bot's only dependencies: gRPC, the .proto loader, and the standard health service.
PACKAGES = ("@grpc/grpc-js", "@grpc/proto-loader", "grpc-health-check")
INSTALL = "npm ci --prefix sample_bots/node"
#: As the tournament tests do: sandboxed wherever the machine can, so that the bot is shown
#: to start under bubblewrap (read-only folder, node_modules inside it, no network).
SANDBOX = "auto" if probe().available else "off"
SERVING = health_pb2.HealthCheckResponse.SERVING

_runner = CliRunner()


def node_missing() -> str | None:
    """Why the Node.js bot cannot run here (with what to do about it), or None if it can."""
    if shutil.which("node") is None:
        return f"node is not installed: install Node.js 18 or newer (Debian/Ubuntu: apt-get install nodejs npm), then {INSTALL}"
    missing = [p for p in PACKAGES if not (NODE_BOT / "node_modules" / p / "package.json").is_file()]
    if missing:
        return f"the Node.js bot's packages are not installed ({', '.join(missing)}): run {INSTALL}"
    return None


@pytest.fixture
def node_bot() -> None:
    """Skip, saying how to install it, when the Node.js bot cannot run here."""
    why = node_missing()
    if why is not None:
        pytest.skip(why)


@pytest.fixture
def in_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the checkout, as the manual's commands are, with a wide terminal for rich."""
    monkeypatch.chdir(CHECKOUT)
    monkeypatch.setenv("COLUMNS", "200")


def cli(*args: object) -> Result:
    """Run ``thirtyone ARGS`` in this process; it must succeed."""
    result = _runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, f"thirtyone {' '.join(map(str, args))} failed ({result.exit_code}):\n{result.output}"
    return result


def logged_actions(log: Path) -> list[tuple[int, int, str]]:
    """Every action of a match log as (round, seat, action text such as ``discard Td``)."""
    out = []
    for line in log.read_text().splitlines():
        action = json.loads(line).get("event", {}).get("action")
        if action is not None:
            kind = action["action"]["kind"].removeprefix("ACTION_KIND_").lower().replace("_", " ")
            card = action["action"].get("card", "")
            out.append((json.loads(line)["event"]["round"], action["seat"], f"{kind} {card}".strip()))
    return out


# ---------------------------------------------------------------- the folder (no node needed)


def test_bundled_protos_are_the_contract() -> None:
    """The bot's own copy of the contract (it must run from a copied folder) is current."""
    for name in ("bot.proto", "game.proto"):
        assert (BUNDLED / name).read_bytes() == (CONTRACT / name).read_bytes(), (
            f"sample_bots/node/proto/thirtyone/v1/{name} differs from proto/thirtyone/v1/{name}: "
            "run npm run sync-protos --prefix sample_bots/node"
        )
    # Every import of the copy resolves inside the copy (a new import needs a new file there).
    for proto in BUNDLED.glob("*.proto"):
        for imported in re.findall(r'^import\s+"([^"]+)";', proto.read_text(), re.M):
            assert (NODE_BOT / "proto" / imported).is_file(), f"{proto.name} imports {imported}, not in the bot's copy"


def test_dependencies_are_pinned_and_locked() -> None:
    """Exact versions in package.json, the same in the lock file, node_modules never committed."""
    deps: dict[str, str] = json.loads((NODE_BOT / "package.json").read_text())["dependencies"]
    assert sorted(deps) == sorted(PACKAGES)
    lock = json.loads((NODE_BOT / "package-lock.json").read_text())
    for name, version in deps.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is not pinned: {version}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    assert "node_modules/" in (CHECKOUT / ".gitignore").read_text().splitlines()


# ---------------------------------------------------------------- the bot itself


def test_hand_values_agree_with_the_referee(node_bot: None) -> None:
    """The bot's JavaScript scorer gives the referee's value for all 22,100 hands, under
    every way of valuing three of a kind (30½, 30, off) and of three aces."""
    variants = [
        Rules.preset("standard"),
        Rules.build("standard", {"three_aces": 33}),
        Rules.build("standard", {"three_of_a_kind": "30", "three_aces": 32.5}),
        Rules.preset("pagat"),
    ]
    hands = all_hands()
    # The rules as the bot receives them: proto field names, enums by name, three_aces absent when unset.
    rules = [json_format.MessageToDict(wire.rules_to_pb(r), preserving_proto_field_name=True) for r in variants]
    script = (
        "const { handValue } = require(process.argv[1]);"
        "const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(input.rules.map((r) => input.hands.map((h) => handValue(h, r)))));"
    )
    payload = json.dumps({"rules": rules, "hands": [[str(c) for c in h] for h in hands]})
    done = subprocess.run(["node", "-e", script, str(GREEDY_JS)], input=payload, capture_output=True, text=True, timeout=60, check=True)
    for r, values in zip(variants, json.loads(done.stdout), strict=True):
        expected = [hand_value(h, r) for h in hands]
        wrong = [(hands[i], values[i], expected[i]) for i in range(len(hands)) if values[i] != expected[i]]
        assert not wrong, f"{r.describe()}: {len(wrong)} hands valued wrongly, e.g. {wrong[:3]}"


# ---------------------------------------------------------------- the variants


#: The variants (docs/rules.md, "Variants") the node bot must play: every option, the presets.
VARIANTS: dict[str, Rules] = {
    "cadillac": Rules.preset("cadillac"),
    "bicycle": Rules.preset("bicycle"),
    "dealer_option": Rules(dealer_option=True),
    "under_the_gun": Rules(under_the_gun=True),
    "dummy": Rules(dummy=True),
    "widow": Rules(draw="widow"),
    "pot": Rules(scoring="pot"),
    "combined": Rules(dummy=True, dealer_option=True, under_the_gun=True),
}


def _text(c: Card | None) -> str:
    # Not ``str(c or "")``: the two of clubs is card 0, and false.
    return "" if c is None else str(c)


def observation_json(obs: Observation) -> dict[str, object]:
    """``obs`` as the node bot's proto loader hands it over (field names as in game.proto,
    enums by name, defaults filled in), written out here so that the bot's strategy can be
    checked under the variants before ``referee.wire`` converts their fields."""
    rules: dict[str, object] = json_format.MessageToDict(
        wire.rules_to_pb(obs.rules), preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    r = obs.rules
    rules.update(
        dealer_option=r.dealer_option,
        under_the_gun=r.under_the_gun,
        dummy=r.dummy,
        draw=f"DRAW_{r.draw.upper()}",
        scoring=f"SCORING_{r.scoring.upper()}",
        pot_rounds=r.pot_rounds,
        ante=r.ante,
    )
    return {
        "seat": obs.seat,
        "players": obs.players,
        "round": obs.round_no,
        "turn": obs.turn,
        "phase": obs.phase.name.join(("PHASE_", "")),
        "hand": [str(c) for c in obs.hand],
        "drawn_card": _text(obs.drawn_card),
        "drawn_from": f"PILE_{obs.drawn_from.name}" if obs.drawn_from is not None else "PILE_UNSPECIFIED",
        "discard_pile": [str(c) for c in obs.discard_pile],
        "stock_size": obs.stock_size,
        "tokens": list(obs.tokens),
        "in_game": list(obs.in_game),
        "dealer": obs.dealer,
        "legal_actions": [
            {"kind": f"ACTION_KIND_{a.kind.name}", "card": _text(a.card), "widow_card": _text(a.widow_card)}
            for a in obs.legal_actions
        ],
        "rules": rules,
        "widow": [str(c) for c in obs.widow],
        "dummy_state": f"DUMMY_STATE_{obs.dummy_state.name}",
        "dead_hand": [str(c) for c in obs.face_up],
        "chips": list(obs.chips),
        "pot": obs.pot,
        "rounds_in_match": obs.rounds_in_match,
    }


def test_the_strategy_plays_every_variant_as_the_python_greedy_bot(node_bot: None) -> None:
    """At every decision of in-process matches under each variant the JavaScript strategy
    answers one of the legal actions, and the very action the Python greedy bot plays: the
    dealer's option, calls under the gun, the dummy, widow swaps, the pot's thresholds."""
    observations: list[dict[str, object]] = []
    expected: list[str] = []
    kinds: set[str] = set()

    class Recording(GreedyBot):
        def act(self, view: View) -> Action:
            action = super().act(view)
            observations.append(observation_json(view.observation))
            expected.append(str(action))
            kinds.add(action.kind.name)
            return action

    for i, rules in enumerate(VARIANTS.values()):
        for players in (2, 4):
            play_match([Recording] * players, seed=100 + i, rules=rules)
    assert {"SWAP_UPCARD", "CALL", "SWAP_HAND", "SWAP_WIDOW", "KNOCK", "PASS"} <= kinds
    script = (
        "const { decide } = require(process.argv[1]);"
        "const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(input.map((o) => {"
        "  const a = decide(o);"
        "  const legal = o.legal_actions.some((l) => l.kind === a.kind && l.card === (a.card || '') && l.widow_card === (a.widow_card || ''));"
        "  return [a.kind.replace('ACTION_KIND_', '').toLowerCase().replace('_', ' '), a.card || '', a.widow_card || '', legal];"
        "})));"
    )
    done = subprocess.run(
        ["node", "-e", script, str(GREEDY_JS)], input=json.dumps(observations), capture_output=True, text=True, timeout=60, check=True
    )
    answers = json.loads(done.stdout)
    assert len(answers) == len(expected) > 500
    illegal = [(o["hand"], a) for o, a in zip(observations, answers, strict=True) if not a[3]]
    assert not illegal, f"{len(illegal)} illegal answers, e.g. {illegal[:3]}"
    node = [" ".join(x for x in a[:3] if x) for a in answers]
    differ = [(i, n, e) for i, (n, e) in enumerate(zip(node, expected, strict=True)) if n != e]
    assert not differ, f"{len(differ)} decisions differ from the Python greedy bot, e.g. {differ[:3]}"


def wire_missing_variants() -> str | None:
    """Why the referee cannot play the node bot under the variants yet, or None once it can.

    A capability check: the referee's wire must carry an observation's variant fields (the
    widow, the dummy, chips and pot, the rules' options) there and back unchanged.
    """
    from referee.game import Match

    for rules in (Rules.preset("bicycle"), Rules(dummy=True, dealer_option=True, under_the_gun=True, scoring="pot")):
        m = Match(3, rules, seed=1)
        obs = m.observation(m.current)
        try:
            back = wire.observation_from_pb(wire.observation_to_pb(obs))
        except Exception as e:  # an older wire may refuse the new fields outright
            return f"referee.wire cannot convert a {rules.describe()} observation yet ({type(e).__name__}: {e})"
        if back != obs:
            return f"referee.wire does not carry the variants' observation fields yet ({rules.describe()} differs after a round trip)"
    return None


@pytest.mark.parametrize(
    "rules",
    [["--preset", "bicycle"], ["--rule", "dummy=true", "--rule", "dealer_option=true", "--rule", "under_the_gun=true"]],
    ids=["bicycle", "dummy+dealer_option+under_the_gun"],
)
def test_a_variant_match_against_greedy_through_the_cli(
    rules: list[str], node_bot: None, in_checkout: None, tmp_path: Path
) -> None:
    """A real match over gRPC under the variants: no fault charged to the node bot, the log verifies."""
    why = wire_missing_variants()
    if why is not None:
        print(f"skipped until the wire speaks the variants: {why}")
        pytest.skip(why)
    log = tmp_path / "match.jsonl"
    cli("match", "node sample_bots/node/greedy.js", "greedy", "greedy", *rules, "--seed", 2, "--log", log, "--sandbox", SANDBOX)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[0]["header"]["seats"][0]["name"] == "node-greedy"
    assert lines[-1]["footer"]["seats"][0].get("faults", 0) == 0
    assert not [e for e in lines if "fault" in e.get("event", {})], "a fault was recorded"
    assert "ok" in cli("replay", "--verify", log).output


@pytest.fixture
def served(node_bot: None) -> Iterator[BotProcess]:
    """The bot serving on a Unix socket given in THIRTYONE_BOT_ADDRESS, as the referee starts it."""
    bot = start_bot(["node", str(GREEDY_JS)])
    yield bot
    bot.close()


def test_serves_health_identity_concurrent_streams_and_stops_on_sigterm(served: BotProcess) -> None:
    """Health says SERVING under both names the referee may ask; a request the bot cannot
    handle ends that stream at once with INTERNAL (a crash, not a timeout); the same process
    then plays every seat of a match on streams open at once, legally and exactly as the
    Python greedy bot would; SIGTERM ends it with exit code 0."""
    assert served.health("") == SERVING
    assert served.health("thirtyone.v1.BotService") == SERVING
    ident = served.stub.GetIdentity(bot_pb2.GetIdentityRequest(protocol_version=wire.PROTOCOL_VERSION), timeout=5)
    assert (ident.name, ident.protocol_version) == ("node-greedy", wire.PROTOCOL_VERSION)

    # An observation without its rules: the strategy throws on it.
    broken = bot_pb2.PlayRequest(
        decision_request=bot_pb2.DecisionRequest(
            decision_id=1,
            observation=game_pb2.Observation(
                players=2, phase=game_pb2.PHASE_TURN_START, hand=["5c", "2h", "4d"],
                legal_actions=[game_pb2.Action(kind=game_pb2.ACTION_KIND_DRAW_STOCK)],
            ),
        )
    )
    with pytest.raises(grpc.RpcError) as failed:
        list(served.stub.Play(iter([broken]), timeout=10))
    assert cast(grpc.Call, failed.value).code() == grpc.StatusCode.INTERNAL

    rules = Rules.preset("pagat")
    m, decisions = play_over_grpc(served.stub, 4, rules, seed=3)  # raises on an illegal answer
    python = play_match([GreedyBot] * 4, seed=3, rules=rules)
    assert (m.placings, m.round_no, decisions) == (python.placings, python.rounds, sum(python.decisions))
    assert served.terminate() == 0


def test_a_match_against_greedy_through_the_cli(node_bot: None, in_checkout: None, tmp_path: Path) -> None:
    """The command of docs/other-languages.md, sandboxed where the machine can: the match ends, no fault is
    charged to the node bot, its log verifies, and it plays every decision (the empty-stock
    PASS included) exactly as the Python greedy bot would on the same deals."""
    log = tmp_path / "match.jsonl"
    # Pagat's empty-stock showdown, and knocking only at 31, so that the stock runs out and
    # seat 0 must choose PASS (in round 3 with this seed).
    rules = ["--preset", "pagat", "--rule", "min_knock=31", "--rule", "max_rounds=3"]
    result = cli("match", "node sample_bots/node/greedy.js", *["greedy"] * 5, *rules, "--seed", 1, "--log", log, "--sandbox", SANDBOX)
    if probe().available:
        assert "UNSANDBOXED" not in result.output
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[0]["header"]["seats"][0]["name"] == "node-greedy"
    assert lines[-1]["footer"]["seats"][0].get("faults", 0) == 0
    assert not [e for e in lines if "fault" in e.get("event", {})], "a fault was recorded"
    verified = cli("replay", "--verify", log)
    assert "ok" in verified.output

    played = logged_actions(log)
    assert (3, 0, "pass") in played, "the scenario no longer makes the node bot PASS: pick another seed"
    # The same deals with the Python greedy bot in seat 0 too, in-process, every action recorded.
    python: list[tuple[int, int, str]] = []

    class Recording(GreedyBot):
        def act(self, view: View) -> Action:
            action = super().act(view)
            python.append((view.round_no, view.seat, str(action)))
            return action

    play_match([Recording] * 6, seed=1, rules=Rules.build("pagat", {"min_knock": 31, "max_rounds": 3}))
    assert played == python


def test_a_short_tournament_with_the_node_bot(node_bot: None, in_checkout: None, tmp_path: Path) -> None:
    """Submitted with --dir (its folder copied alone into the tournament: protos and
    node_modules inside), validated, run, standings without a single fault, logs verified."""
    t = tmp_path / "league"
    cli("tournament", "new", t, "--table-size", 2, "--games", 1, "--seed", 5, "--sandbox", SANDBOX)
    cli("submit", t, "node greedy.js", "--dir", "sample_bots/node")
    cli("submit", t, "greedy")
    cli("tournament", "run", t, "-j", 2)
    assert (t / "bots" / "node-greedy" / "proto" / "thirtyone" / "v1" / "bot.proto").is_file()
    data = json.loads(cli("standings", t, "--json").stdout)
    row = next(r for r in data["standings"] if r["bot"] == "node-greedy")
    faults = {k: v for k, v in row.items() if k.startswith("faults_") or k == "forfeits"}
    assert row["matches"] == 2 and set(faults.values()) == {0}, row
    assert data["unsandboxed"] == (SANDBOX == "off")
    cli("replay", "--verify", t)
