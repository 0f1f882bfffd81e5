"""The luck of the cards in one match, measured so that it can be taken out of the result.

A control variate (docs/analysis.md, "Luck"): at every chance event of a match — the deal
of a round, each card drawn from the stock — the reference policy's value of the position
(:mod:`sdk.evaluate`, the deal's view) *after* the event, minus its expectation *before* it,
is that event's luck for each seat. Summed over a match, per seat, it is the seat's luck;
the seat's result minus its luck is its *adjusted* result.

Why the correction adds no bias: before a deal every order of the deck is equally likely,
and before a stock draw every card of the stock is equally likely to be on top, whatever
the bots did (no bot sees the stock; its order was fixed by a shuffle nobody saw). So the
expected value after the event is exactly the expectation before it, and each term has mean
zero, for any bots and any value function. The estimates keep that: the value after the
event and the expectation before it are both unbiased means of rollouts, on seeds that do
not depend on the cards.

A restock has no term of its own: the value treats the stock's order as unknown, so turning
the discard pile into a stock changes nothing in it; its luck shows in the draws from it.

The values are per round (lives lost, or chips won under the pot) while a match is scored by
placings: where a test uses the correction (``thirtyone sprt``), it scales it by the
regression coefficient of the score on the luck, the standard control-variate estimate.

Pure: the log is read by :mod:`referee.log`; no output.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from referee.faults import LogError, RefereeError
from referee.game import (
    ActionKind,
    ActionRecord,
    Card,
    ChanceError,
    DealRecord,
    ForfeitRecord,
    Match,
    Record,
    RecordedChance,
    RestockRecord,
    RoundResult,
    Rules,
)
from referee.game.position import Position, match_at_deal, position_of
from referee.log import LogWatcher, MatchLog, read_log, walk_log
from referee.log import Position as LogLine
from sdk.evaluate import REFERENCE_POLICY, derive_seed, payoff, reference_policy
from sdk.simulate import RolloutChance, play_round, rollout

#: Rollouts per value (each on its own stock order, the same for every card compared).
SAMPLES = 8
#: Stock cards whose draw is valued to estimate a draw's expectation (a uniform sample of
#: the stock, the same size whatever the stock holds).
CARDS = 12
#: Random deals whose values estimate a deal's expectation.
DEALS = 32


class LuckError(RefereeError, ValueError):
    """The log cannot be valued: it diverges from the game model, or holds no deal."""


@dataclass(frozen=True, slots=True)
class LuckTerm:
    """One chance event's luck, per seat (after minus the expectation before)."""

    round_no: int
    #: ``"deal"`` or ``"draw"``.
    kind: str
    #: The log line of the event (the deal, or the stock draw).
    line: int
    #: The seat that drew (None for a deal).
    seat: int | None
    #: Per seat: the value after the event minus its expectation before.
    luck: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class MatchLuck:
    """A match's luck per seat, and its results raw and adjusted (in :attr:`unit`)."""

    players: int
    #: ``"lives"`` (the results are minus the lives lost) or ``"chips"`` (chips won).
    unit: str
    policy: str
    #: Per seat: the sum over rounds of its result (minus lives lost, or chips won).
    raw: tuple[float, ...]
    #: Per seat: the sum of its luck terms.
    luck: tuple[float, ...]
    terms: tuple[LuckTerm, ...]

    @property
    def adjusted(self) -> tuple[float, ...]:
        """Per seat: the result with the luck taken out (``raw - luck``)."""
        return tuple(r - u for r, u in zip(self.raw, self.luck, strict=True))

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form."""
        return {
            "unit": self.unit,
            "policy": self.policy,
            "raw": [round(x, 6) for x in self.raw],
            "luck": [round(x, 6) for x in self.luck],
            "adjusted": [round(x, 6) for x in self.adjusted],
        }


class _DealChance:
    """Deals round ``round_no`` from ``order`` (or shuffled by ``rng``); any later deal (a
    natural 31 ends the round and the model deals on at once) unshuffled, as rollouts do."""

    def __init__(self, round_no: int, order: Sequence[Card] | None, rng: random.Random) -> None:
        self._round = round_no
        self._order = list(order) if order is not None else None
        self._rng = rng

    def deal(self, round_no: int, cards: Sequence[Card]) -> list[Card]:
        if round_no != self._round:
            return list(cards)
        if self._order is not None:
            return list(self._order)
        out = list(cards)
        self._rng.shuffle(out)
        return out

    def restock(self, round_no: int, index: int, cards: Sequence[Card]) -> list[Card]:
        out = list(cards)
        self._rng.shuffle(out)
        return out


class LuckMeter:
    """Values chance events with the reference policy; :func:`match_luck` drives it."""

    def __init__(self, rules: Rules, players: int, *, seed: int = 0, samples: int = SAMPLES, cards: int = CARDS, deals: int = DEALS) -> None:
        if samples < 1 or cards < 1 or deals < 1:
            raise ValueError("samples, cards and deals must be 1 or more")
        self.rules = rules
        self.players = players
        self.seed = seed
        self.samples = samples
        self.cards = cards
        self.deals = deals
        self.policy = reference_policy(rules)

    def _payoffs(self, result: RoundResult) -> list[float]:
        return [payoff(self.rules, result, s) for s in range(self.players)]

    def _play(self, m: Match) -> list[float]:
        if m.rounds:
            return self._payoffs(m.rounds[0])
        return self._payoffs(play_round(m, self.policy))

    def deal_term(
        self, deck: Sequence[Card], round_no: int, dealer: int, tokens: Sequence[int], alive: Sequence[bool],
        chips: Sequence[int], pot: int,
    ) -> tuple[float, ...]:
        """The luck of dealing ``deck``: its value (the stock's order unknown) minus the mean
        value of random deals at the same table."""
        n = self.players
        rng = random.Random(derive_seed(self.seed, "deal", round_no))
        before = [0.0] * n
        for _ in range(self.deals):
            ch = _DealChance(round_no, None, random.Random(rng.getrandbits(63)))
            m = match_at_deal(self.rules, n, round_no=round_no, dealer=dealer, tokens=tokens, alive=alive, chance=ch, chips=chips, pot=pot)
            for s, v in enumerate(self._play(m)):
                before[s] += v / self.deals
        after = [0.0] * n
        for _ in range(self.samples):
            r = random.Random(rng.getrandbits(63))
            m = match_at_deal(self.rules, n, round_no=round_no, dealer=dealer, tokens=tokens, alive=alive, chance=_DealChance(round_no, deck, r), chips=chips, pot=pot)
            if m.rounds:  # a natural 31: the deal decided the round
                after = self._payoffs(m.rounds[0])
                break
            pos = position_of(m)
            stock = sorted(pos.stock)
            r.shuffle(stock)
            res = rollout(replace(pos, stock=tuple(stock)), self.policy, rng=r)
            for s, v in enumerate(self._payoffs(res)):
                after[s] += v / self.samples
        return tuple(a - b for a, b in zip(after, before, strict=True))

    def draw_term(self, after: Position, drawn: Card, round_no: int, turn: int) -> tuple[float, ...]:
        """The luck of drawing ``drawn`` from the stock: the value of the position ``after``
        the draw minus the mean value of drawing each of a sample of the cards that could
        have come (every stock card was as likely), on common stock orders."""
        n = self.players
        seat = after.current
        pool = sorted(set(after.stock) | {drawn})
        rng = random.Random(derive_seed(self.seed, "draw", round_no, turn, seat, len(pool)))
        others = rng.sample(pool, min(self.cards, len(pool)))
        orders = []
        for _ in range(self.samples):
            order = list(pool)
            rng.shuffle(order)
            orders.append((order, rng.getrandbits(63)))

        def value(card: Card) -> list[float]:
            hand = tuple(card if c == drawn else c for c in after.hands[seat])
            hands = (*after.hands[:seat], hand, *after.hands[seat + 1:])
            pos = replace(after, hands=hands, drawn=card)
            total = [0.0] * n
            for order, restock_seed in orders:
                p = replace(pos, stock=tuple(c for c in order if c != card))
                for s, v in enumerate(self._payoffs(rollout(p, self.policy, chance=RolloutChance(random.Random(restock_seed))))):
                    total[s] += v / self.samples
            return total

        real = value(drawn)
        mean = [0.0] * n
        for c in others:
            for s, v in enumerate(value(c)):
                mean[s] += v / len(others)
        return tuple(a - b for a, b in zip(real, mean, strict=True))


def records_luck(
    rules: Rules,
    players: int,
    records: Sequence[Record],
    *,
    lines: Sequence[int] | None = None,
    seed: int = 0,
    samples: int = SAMPLES,
    cards: int = CARDS,
    deals: int = DEALS,
) -> MatchLuck:
    """The luck of every seat in a match given as the game model's records (a
    :class:`~referee.game.Match` played with ``record=True``: its deals, restocks, actions,
    forfeits and round results in order). ``lines`` numbers each record (a log's lines) for
    :attr:`LuckTerm.line`. The records are replayed through the game model; a match cut
    short is valued as far as its records go."""
    meter = LuckMeter(rules, players, seed=seed, samples=samples, cards=cards, deals=deals)
    n = players
    dealt = {r.round_no: r.deck for r in records if isinstance(r, DealRecord)}
    restocked = {(r.round_no, r.number): r.stock for r in records if isinstance(r, RestockRecord)}
    tokens: tuple[int, ...] = (rules.lives,) * n
    chips: tuple[int, ...] = (0,) * n
    raw = [0.0] * n
    terms: list[LuckTerm] = []
    m: Match | None = None
    for i, rec in enumerate(records):
        line = lines[i] if lines is not None else i
        if isinstance(rec, DealRecord):
            alive = tuple(bool(h) for h in rec.hands)
            luck = meter.deal_term(rec.deck, rec.round_no, rec.dealer, tokens, alive, chips, rec.pot_carried)
            terms.append(LuckTerm(rec.round_no, "deal", line, None, luck))
            if m is None:
                m = Match(n, rules, chance=RecordedChance(dealt, restocked), record=False)
        elif isinstance(rec, RoundResult):
            tokens = rec.tokens_after
            if rec.chips_after:
                chips = rec.chips_after
            for s in range(n):
                raw[s] += payoff(rules, rec, s)
        elif m is None or m.over:
            continue
        elif isinstance(rec, ActionRecord):
            try:
                m.apply_unchecked(rec.action)
            except ChanceError:
                break  # the records stop before the next deal or restock
            if rec.action.kind is ActionKind.DRAW_STOCK and rec.card is not None:
                luck = meter.draw_term(position_of(m), rec.card, rec.round_no, rec.turn)
                terms.append(LuckTerm(rec.round_no, "draw", line, rec.seat, luck))
        elif isinstance(rec, ForfeitRecord):
            try:
                m.forfeit(rec.seat, rec.reason)
            except ChanceError:
                break
    total = [0.0] * n
    for t in terms:
        for s, v in enumerate(t.luck):
            total[s] += v
    unit = "chips" if rules.scoring == "pot" else "lives"
    return MatchLuck(n, unit, REFERENCE_POLICY, tuple(raw), tuple(total), tuple(terms))


class _Collect(LogWatcher):
    """The game model's records of a log, in order, with their lines."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.lines: list[int] = []

    def _add(self, at: LogLine, record: Record) -> None:
        self.records.append(record)
        self.lines.append(at.line)

    def produced(self, at: LogLine, kind: str, record: Record, match: Match) -> None:
        if kind in ("deal", "restock", "round_end"):
            self._add(at, record)

    def acted(self, at: LogLine, match: Match, record: ActionRecord, by_referee: bool) -> None:
        self._add(at, record)

    def forfeited(self, at: LogLine, record: ForfeitRecord, hand: tuple[Card, ...]) -> None:
        self._add(at, record)


def match_luck(
    log: MatchLog | str | os.PathLike[str], *, seed: int = 0, samples: int = SAMPLES, cards: int = CARDS, deals: int = DEALS
) -> MatchLuck:
    """The luck of every seat in the match ``log`` (a path or a parsed log), with its raw and
    adjusted results. Deterministic for ``seed``. A log that diverges from the game model is
    refused (:class:`LuckError`); one cut short is valued as far as it goes."""
    parsed = log if isinstance(log, MatchLog) else read_log(log)
    h = parsed.header
    watcher = _Collect()
    walk = walk_log(parsed, watcher)
    if walk.divergence is not None:
        raise LuckError(f"{parsed.path}: the log diverges from the game model: {walk.divergence}")
    return records_luck(
        h.rules, h.players, watcher.records, lines=watcher.lines, seed=seed, samples=samples, cards=cards, deals=deals
    )


#: Where :class:`LuckCache` keeps each match's luck in a folder (one JSON line per match).
LUCK_FILE = "luck.jsonl"


class LuckCache:
    """Each match's luck per seat, measured from its log once and kept in ``folder/luck.jsonl``.

    For users of many matches (``thirtyone sprt``, standings' intervals): :meth:`get` measures
    a match not seen yet, appends it to the file, and returns the same figures for it ever
    after, so a resumed computation is the same computation. A line cut by a kill is
    measured again.
    """

    def __init__(self, folder: Path | None, seed: int = 0) -> None:
        self.folder = folder
        self.seed = seed
        self._lucks: dict[str, tuple[float, ...]] = {}
        path = folder / LUCK_FILE if folder is not None else None
        if path is not None and path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self._lucks[str(row["key"])] = tuple(float(v) for v in row["luck"])
                except (ValueError, KeyError, TypeError):
                    continue

    def get(self, key: str, log: Path | None, seats: int) -> tuple[float, ...]:
        """Each seat's luck in match ``key`` (its log at ``log``). A match without a log, or
        whose log cannot be valued, has no luck (zeros: a constant keeps the correction's
        mean zero)."""
        have = self._lucks.get(key)
        if have is not None and len(have) == seats:
            return have
        luck: tuple[float, ...] = (0.0,) * seats
        if log is not None and log.is_file():
            with contextlib.suppress(LuckError, LogError, OSError):
                luck = match_luck(log, seed=derive_seed(self.seed, key)).luck
        # Rounded as the file keeps it: a match measured now and one read back count the same.
        luck = tuple(round(v, 9) for v in luck)
        self._lucks[key] = luck
        if self.folder is not None:
            with open(self.folder / LUCK_FILE, "a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "luck": list(luck)}) + "\n")
        return luck
