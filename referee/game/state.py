"""The match as a state machine (docs/rules.md, from "The deal" to "The round limit", and
the "Variants").

A :class:`Match` is a whole game to the last player standing (or, playing for a pot, a
fixed number of rounds). It always waits on one seat's
decision (or is over): rounds are dealt, scored and redealt inside :meth:`Match.apply`.
``apply`` checks an action and raises :class:`IllegalActionError` naming the action, the seat
and the reason; :meth:`Match.apply_unchecked` is the fast path for callers that validated.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import NamedTuple

from referee.game.actions import (
    CALL,
    CARD_KINDS,
    DISCARDS,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCK,
    PASS,
    SWAP_HAND,
    SWAP_UPCARDS,
    SWAP_WIDOWS,
    Action,
    ActionKind,
    DummyState,
    EventKind,
    Phase,
    Pile,
    PublicEvent,
)
from referee.game.cards import DECK, Card
from referee.game.chance import Chance, SeededChance
from referee.game.errors import GameError, IllegalActionError
from referee.game.observation import Observation
from referee.game.rules import MAX_PLAYERS, MIN_PLAYERS, Rules
from referee.game.values import is_flush, mask, value_table

_ALL_START_ACTIONS: tuple[Action, ...] = (KNOCK, DRAW_STOCK, DRAW_DISCARD)
_DRAW_ACTIONS: tuple[Action, ...] = (DRAW_STOCK, DRAW_DISCARD)
_EMPTY_STOCK_ACTIONS: tuple[Action, ...] = (DRAW_DISCARD, PASS)
_CARD_VALUE = tuple(c.value for c in DECK)
_event = tuple.__new__  # builds a PublicEvent without NamedTuple's Python-level __new__
_round_result = tuple.__new__  # likewise a RoundResult (every field given, in order)


class RoundEnd(Enum):
    """How a round ended."""

    NATURAL_31 = "natural_31"
    BLITZ = "blitz"
    KNOCK = "knock"
    EMPTY_STOCK = "empty_stock"
    MAX_TURNS = "max_turns"
    #: Every other seat forfeited mid-round; nobody lost a life (and nobody won the pot).
    ABANDONED = "abandoned"
    #: A call under the gun (docs/rules.md, "Variants"): a showdown, the caller as the knocker.
    CALL = "call"


_SHOWDOWN_ENDS = frozenset((RoundEnd.KNOCK, RoundEnd.EMPTY_STOCK, RoundEnd.MAX_TURNS, RoundEnd.CALL))


class MatchEnd(Enum):
    """How a match ended."""

    #: One seat left: the winner (under the pot, only forfeits leave one seat).
    LAST_PLAYER = "last_player"
    #: ``max_rounds`` reached (lives): no winner.
    MAX_ROUNDS = "max_rounds"
    #: The pot's ``pot_rounds`` were played (playing for a pot): placings by net chips.
    POT_ROUNDS = "pot_rounds"


class RoundResult(NamedTuple):
    """Everything decided at the end of one round.

    A named tuple rather than a frozen dataclass: one is built per round, and in
    simulations that is a measurable share of the time (about 1 µs against 3-5 µs).
    """

    round_no: int
    dealer: int
    end: RoundEnd
    knocker: int | None
    #: Seats that showed 31 (dealt, or the blitzing seat).
    thirty_one: tuple[int, ...]
    #: Hands and values of every seat still in when the round ended.
    hands: dict[int, tuple[Card, ...]]
    values: dict[int, float]
    #: True when hands were compared (knock, empty stock, max turns).
    showdown: bool
    #: Lives each seat was to lose (seats losing nothing are absent).
    lives_lost: dict[int, int]
    tokens_after: tuple[int, ...]
    eliminated: tuple[int, ...]
    #: The round would have eliminated everyone still in, so nobody was (docs/rules.md,
    #: "Sudden death").
    sudden_death: bool
    turns: int
    # --- playing for a pot (docs/rules.md, "Variants"); the defaults are the lives game's.
    #: Seats that won (share) the pot: the natural 31s, the blitzer, or the best hands at
    #: the showdown. Empty under lives, and when nobody won (an abandoned round).
    winners: tuple[int, ...] = ()
    #: Chips in the pot when the round was decided: carried from before plus this deal's antes.
    pot: int = 0
    #: Per seat: chips won this round (its share of the pot); empty under lives.
    chips_won: tuple[int, ...] = ()
    #: Chips left in the pot after the round: the remainder of an uneven share (or the whole
    #: pot, when nobody won). Carried into the next round; after the last, nobody's.
    carried: int = 0
    #: Per seat: net chips after the round (antes paid and pots won); empty under lives.
    chips_after: tuple[int, ...] = ()
    # --- public cards of the variants, as they lay when the round ended.
    #: The widow's three cards; empty without the widow.
    widow: tuple[Card, ...] = ()
    #: The old hand of the seat that took the dummy, face up.
    face_up: tuple[Card, ...] = ()
    #: The seat that took the dummy this round, if any.
    dummy_taker: int | None = None
    #: Under the pot: the highest value at the showdown was tied, so the pot went by the
    #: tied hands' ranks (``winners`` then holds the hands equal rank for rank at the top).
    high_card_tie_break: bool = False


class DealRecord(NamedTuple):
    """A round's deal: the whole deck in dealing order, and what it gave each seat.

    Dealing order (docs/rules.md, "The deal", "Variants"): three cards to each seat still in, one at a
    time from the dealer's left; then the dummy's three cards (``dummy=true``) or the widow's
    three (``draw="widow"``); then the up-card and the stock (top first), or, with the
    widow, the unused rest of the deck.
    """

    round_no: int
    dealer: int
    deck: tuple[Card, ...]
    #: ``hands[seat]`` is empty for a seat no longer in.
    hands: tuple[tuple[Card, ...], ...]
    #: None in the widow game (no up-card).
    upcard: Card | None
    #: The dummy's three face-down cards (``dummy=true``), else empty.
    dummy: tuple[Card, ...] = ()
    #: The widow's three face-up cards (``draw="widow"``), else empty.
    widow: tuple[Card, ...] = ()
    #: Per seat: chips paid into the pot at this deal (``scoring="pot"``; 0 for seats out),
    #: else empty.
    antes: tuple[int, ...] = ()
    #: Chips in the pot before the antes (carried from the round before).
    pot_carried: int = 0
    #: Chips in the pot after the antes: what this round is played for.
    pot: int = 0


class RestockRecord(NamedTuple):
    """The discard pile, less its top card, turned into a new stock (top first)."""

    round_no: int
    #: 0 for the round's first restock, 1 for the second, ...
    number: int
    stock: tuple[Card, ...]


class ActionRecord(NamedTuple):
    """An action and what it did, with the card drawn even from the stock."""

    round_no: int
    turn: int
    seat: int
    action: Action
    #: The card drawn for draws; the discarded card for discards; the card given up in an
    #: up-card or widow swap (``action.card``).
    card: Card | None
    #: The card received in an up-card swap (the old up-card) or a widow swap.
    taken_card: Card | None = None


class ForfeitRecord(NamedTuple):
    """A seat left the match (the referee's fault policy)."""

    round_no: int
    turn: int
    seat: int
    reason: str


#: What :meth:`Match.take_records` yields, in order.
Record = DealRecord | RestockRecord | ActionRecord | ForfeitRecord | RoundResult


class Match:
    """A match of 31 between ``players`` seats under ``rules``.

    Randomness comes from ``seed`` (HMAC-derived shuffles) or from an explicit ``chance``
    (e.g. recorded deals, to replay a log without the seed). With ``record=False`` the
    match keeps no log records, for fast simulations.

    Every field a match holds is declared in :meth:`_configure` (what the rules fix) and
    :meth:`_set_state` (what play changes); :meth:`resume` builds a match in any mid-round
    state through the same two, so no other module sets a field.
    """

    def __init__(
        self,
        players: int,
        rules: Rules | None = None,
        *,
        seed: int | None = None,
        chance: Chance | None = None,
        record: bool = True,
    ) -> None:
        if isinstance(players, bool) or not isinstance(players, int) or not (
            MIN_PLAYERS <= players <= MAX_PLAYERS
        ):
            raise GameError(f"players must be {MIN_PLAYERS} to {MAX_PLAYERS}, got {players!r}")
        if (seed is None) == (chance is None):
            raise GameError("give exactly one of seed= or chance=")
        r = rules or Rules()
        self._configure(players, r, seed, chance if chance is not None else SeededChance(seed), record)  # type: ignore[arg-type]
        self._set_state(
            tokens=[r.lives] * players,
            alive=[True] * players,
            out_step=[None] * players,
            round_no=0,
            dealer=players - 1,
            chips=[0] * players,
            pot=0,
        )
        self._start_round(first=True)

    def _configure(self, players: int, rules: Rules, seed: int | None, chance: Chance, record: bool) -> None:
        """The fields the rules and the table fix for the whole match."""
        self.players = players
        self.rules = rules
        self.seed = seed
        self._chance: Chance = chance
        self._record = record
        self._records: list[Record] = []
        self._values = value_table(rules)
        r = rules
        self._widow_game = r.draw == "widow"
        # Turns that find the stock empty restock only under reshuffle in the stock game.
        self._no_restock = r.empty_stock == "showdown" or self._widow_game
        self._min_knock = r.min_knock
        self._max_turns = r.max_turns_per_round
        self._knock_ban = r.knock_ban
        self._utg = r.under_the_gun
        self._dummy_rule = r.dummy
        self._dealer_option = r.dealer_option
        # A deal with more than hands, up-card and stock (or with antes).
        self._variant_deal = r.dummy or self._widow_game or r.scoring == "pot"
        # Any variant that changes a turn's choices: the plain game keeps its own fast path.
        self._special = r.dealer_option or r.under_the_gun or r.dummy or self._widow_game
        self._pot_game = r.scoring == "pot"
        #: Rounds the match lasts: ``pot_rounds`` (0 = three per seat at the start) under the
        #: pot, the ``max_rounds`` guard under lives.
        self.round_limit = (r.pot_rounds or 3 * players) if self._pot_game else r.max_rounds

    def _set_state(
        self,
        *,
        tokens: list[int],
        alive: list[bool],
        out_step: list[int | None],
        round_no: int,
        dealer: int,
        chips: list[int],
        pot: int,
        hands: list[list[Card]] | None = None,
        stock: list[Card] | None = None,
        pile: list[Card] | None = None,
        dead: list[Card] | None = None,
        dummy: list[Card] | None = None,
        face_up: list[Card] | None = None,
        dummy_taker: int | None = None,
        widow: list[Card] | None = None,
        unused: list[Card] | None = None,
        current: int = 0,
        phase: Phase = Phase.TURN_START,
        drawn: Card | None = None,
        drawn_from: Pile | None = None,
        knocker: int | None = None,
        turns_left: int = 0,
        owes: list[bool] | None = None,
        had_turn: list[bool] | None = None,
        turn: int = 0,
        restocks: int = 0,
        history: list[PublicEvent] | None = None,
    ) -> None:
        """Every field that play changes, in one place (see :meth:`resume`)."""
        n = self.players
        self.tokens = tokens
        self.alive = alive
        #: Order in which seats left (larger = later = better placing); None while in.
        self._out_step = out_step
        self._step = max((x for x in out_step if x is not None), default=0)
        self.rounds: list[RoundResult] = []
        self.over = False
        self.end: MatchEnd | None = None
        self.round_no = round_no
        self.dealer = dealer
        #: Net chips per seat (``scoring="pot"``; all 0 under lives).
        self.chips = chips
        #: Chips in the pot now (carried remainders included).
        self.pot = pot
        # Round state.
        self.hands: list[list[Card]] = hands if hands is not None else [[] for _ in range(n)]
        self.stock: list[Card] = stock if stock is not None else []  # top is the last element
        self.pile: list[Card] = pile if pile is not None else []  # top is the last element
        self.dead: list[Card] = dead if dead is not None else []  # hands of seats that forfeited this round
        #: The dummy's face-down cards (empty once taken, or without ``dummy``).
        self.dummy: list[Card] = dummy if dummy is not None else []
        #: The dummy-taker's old hand, face up and out of play for the rest of the round.
        self.face_up: list[Card] = face_up if face_up is not None else []
        self.dummy_taker = dummy_taker
        #: The widow's three face-up cards (``draw="widow"``).
        self.widow: list[Card] = widow if widow is not None else []
        #: The widow game's undealt cards: out of play for the round.
        self.unused: list[Card] = unused if unused is not None else []
        self.current = current
        self.phase = phase
        self.drawn = drawn
        self.drawn_from = drawn_from
        self.knocker = knocker
        self.turns_left = turns_left
        self._owes = owes if owes is not None else [False] * n
        self._had_turn = had_turn if had_turn is not None else [False] * n
        self.turn = turn
        self._restocks = restocks
        #: The round's events in order (omniscient: stock draws carry their card).
        self.history: list[PublicEvent] = history if history is not None else []

    @classmethod
    def resume(
        cls,
        players: int,
        rules: Rules,
        *,
        chance: Chance,
        seed: int | None = None,
        record: bool = False,
        tokens: list[int],
        alive: list[bool],
        out_step: list[int | None],
        round_no: int,
        dealer: int,
        chips: list[int],
        pot: int,
        hands: list[list[Card]],
        stock: list[Card],
        pile: list[Card],
        dead: list[Card],
        dummy: list[Card],
        face_up: list[Card],
        dummy_taker: int | None,
        widow: list[Card],
        unused: list[Card],
        current: int,
        phase: Phase,
        drawn: Card | None,
        drawn_from: Pile | None,
        knocker: int | None,
        turns_left: int,
        owes: list[bool],
        had_turn: list[bool],
        turn: int,
        restocks: int,
        history: list[PublicEvent],
    ) -> Match:
        """A match in the given mid-round state, waiting on ``current`` (no checks: see
        :func:`referee.game.position.match_from_position`, which checks a position first).

        Its ``rounds`` starts empty. The lists are taken over, not copied.
        """
        m = cls.__new__(cls)
        m._configure(players, rules, seed, chance, record)
        m._set_state(
            tokens=tokens,
            alive=alive,
            out_step=out_step,
            round_no=round_no,
            dealer=dealer,
            chips=chips,
            pot=pot,
            hands=hands,
            stock=stock,
            pile=pile,
            dead=dead,
            dummy=dummy,
            face_up=face_up,
            dummy_taker=dummy_taker,
            widow=widow,
            unused=unused,
            current=current,
            phase=phase,
            drawn=drawn,
            drawn_from=drawn_from,
            knocker=knocker,
            turns_left=turns_left,
            owes=owes,
            had_turn=had_turn,
            turn=turn,
            restocks=restocks,
            history=history,
        )
        return m

    # ------------------------------------------------------------------ queries

    @property
    def is_over(self) -> bool:
        """True once the match has ended."""
        return self.over

    @property
    def current_seat(self) -> int | None:
        """The seat whose decision the match waits on, or None when it is over."""
        return None if self.over else self.current

    @property
    def seats_in(self) -> list[int]:
        """Seats still in the match."""
        return [s for s in range(self.players) if self.alive[s]]

    def hand(self, seat: int) -> tuple[Card, ...]:
        """A seat's cards (omniscient; the referee's view)."""
        return tuple(self.hands[seat])

    def value(self, seat: int) -> float:
        """A seat's three-card hand value."""
        h = self.hands[seat]
        if len(h) != 3:
            raise GameError(f"seat {seat} holds {len(h)} cards, not three")
        return self._values[mask(h)]

    def legal_actions(self) -> Sequence[Action]:
        """The actions the seat to move may take (empty when the match is over)."""
        if self.over:
            return ()
        if self.phase is Phase.DISCARD:
            h = self.hands[self.current]
            if self.drawn_from is Pile.DISCARD:
                d = self.drawn
                return [DISCARDS[c] for c in h if c != d]
            return [DISCARDS[c] for c in h]
        if self._special:
            return self._variant_actions()
        if not self.pile:
            # Only after a forfeit took the last discard out of play with a dead hand.
            if not self.stock:
                return (PASS,)
            return (KNOCK, DRAW_STOCK) if self._may_knock(self.current) else (DRAW_STOCK,)
        if not self.stock:
            # Under empty_stock=showdown, or when too few discards are left to restock.
            return _EMPTY_STOCK_ACTIONS
        if self._may_knock(self.current):
            return _ALL_START_ACTIONS
        return _DRAW_ACTIONS

    def _variant_actions(self) -> list[Action]:
        """Turn-start choices under the variants of docs/rules.md, "Variants" (a phase of their own for
        the dealer's option). Order: call, knock, draws, pass, swaps."""
        s = self.current
        h = self.hands[s]
        if self.phase is Phase.DEALER_OPTION:
            return [PASS, *(SWAP_UPCARDS[c] for c in h)]
        acts: list[Action] = []
        if self._utg and self.turn == 0:
            acts.append(CALL)
        if self._widow_game:
            if self._may_knock(s):
                acts.append(KNOCK)
            widow = self.widow
            acts.extend(SWAP_WIDOWS[c * 52 + w] for c in h for w in widow)
            return acts
        if not self.pile:
            if not self.stock:
                acts.append(PASS)
            else:
                if self._may_knock(s):
                    acts.append(KNOCK)
                acts.append(DRAW_STOCK)
        elif not self.stock:
            acts.extend(_EMPTY_STOCK_ACTIONS)
        else:
            if self._may_knock(s):
                acts.append(KNOCK)
            acts.extend(_DRAW_ACTIONS)
        if self.dummy:
            acts.append(SWAP_HAND)
        return acts

    def _may_knock(self, seat: int) -> bool:
        if self.knocker is not None or (not self.stock and not self._widow_game):
            return False
        ban = self._knock_ban
        if ban == "first_turn" and self.turn == 0:
            return False
        if ban == "first_lap" and not self._had_turn[seat]:
            return False
        if self._min_knock > 0:
            h = self.hands[seat]
            if self._values[mask(h)] < self._min_knock and not (
                self.rules.flush_may_knock and is_flush(h)
            ):
                return False
        return True

    def why_illegal(self, action: Action, seat: int | None = None) -> str | None:
        """Why ``action`` by ``seat`` (default: the seat to move) is illegal, or None if legal."""
        if self.over:
            return "the match is over"
        if seat is not None and seat != self.current:
            return f"it is seat {self.current}'s turn, not seat {seat}'s"
        if not isinstance(action, Action):
            return f"{action!r} is not an action"
        if action in self.legal_actions():
            return None
        kind = action.kind
        s = self.current
        r = self.rules
        hand_text = " ".join(map(str, self.hands[s]))
        name = kind.name.lower().replace("_", " ")
        if kind not in CARD_KINDS and action.card is not None:
            return f"{name} takes no card, got {action.card}"
        if kind in CARD_KINDS and action.card is None:
            return f"a {name} must name a card"
        if kind is ActionKind.SWAP_WIDOW and action.widow_card is None:
            return "a widow swap must name a hand card and a widow card"
        if kind is not ActionKind.SWAP_WIDOW and action.widow_card is not None:
            return f"{name} takes no widow card, got {action.widow_card}"
        if self.phase is Phase.DEALER_OPTION:
            if kind is ActionKind.SWAP_UPCARD:
                return f"{action.card} is not in the dealer's hand ({hand_text})"
            return "the dealer must first swap a hand card for the up-card or pass (dealer_option=true)"
        if kind is ActionKind.SWAP_UPCARD:
            if not r.dealer_option:
                return "there is no dealer's option in these rules (dealer_option=false)"
            return "the dealer's option is only taken once, before the round's first turn"
        if self.phase is Phase.DISCARD:
            if kind is not ActionKind.DISCARD:
                return "after drawing, the player must discard one card"
            if action.card not in self.hands[s]:
                return f"{action.card} is not in the hand ({hand_text})"
            return f"{action.card} was just taken from the discard pile and may not be discarded this turn"
        if kind is ActionKind.DISCARD:
            if self._widow_game:
                return "there is no discarding in the widow game (draw=widow): knock or swap with the widow"
            return "the player must knock or draw before discarding"
        if kind is ActionKind.CALL:
            if not r.under_the_gun:
                return "calling is not in these rules (under_the_gun=false)"
            return f"a call is only allowed on the round's first turn (turn {self.turn} now)"
        if kind is ActionKind.SWAP_HAND:
            if not r.dummy:
                return "there is no dummy in these rules (dummy=false)"
            return f"the dummy was already taken this round (by seat {self.dummy_taker})"
        if kind is ActionKind.SWAP_WIDOW:
            if not self._widow_game:
                return "there is no widow in these rules (draw=stock)"
            if action.card not in self.hands[s]:
                return f"{action.card} is not in the hand ({hand_text})"
            return f"{action.widow_card} is not in the widow ({' '.join(map(str, self.widow))})"
        if self._widow_game and kind is not ActionKind.KNOCK:
            return f"{name}: the widow game has no stock, discard pile or pass (knock or swap with the widow)"
        stock_empty = not self.stock
        if kind is ActionKind.KNOCK:
            if self.knocker is not None:
                return f"seat {self.knocker} has already knocked this round"
            if stock_empty and not self._widow_game:
                return "no knocking when the stock is empty (empty_stock=showdown)"
            if self.rules.knock_ban == "first_turn" and self.turn == 0:
                return "no knocking on the round's first turn (knock_ban=first_turn)"
            if self.rules.knock_ban == "first_lap" and not self._had_turn[s]:
                return "no knocking on one's own first turn of the round (knock_ban=first_lap)"
            return (
                f"hand value {self.value(s):g} is below min_knock={self._min_knock:g}"
                + (" and is not a flush" if self.rules.flush_may_knock else "")
            )
        if kind is ActionKind.DRAW_STOCK:
            return "the stock is empty"
        if kind is ActionKind.DRAW_DISCARD:
            return "the discard pile is empty"
        if kind is ActionKind.PASS:
            return "passing is only allowed when the stock is empty under empty_stock=showdown"
        return "not allowed now"  # pragma: no cover - every kind is handled above

    # ------------------------------------------------------------------ actions

    def apply(self, action: Action, seat: int | None = None) -> None:
        """Apply ``action`` for ``seat`` (default: the seat to move) after checking it.

        Raises :class:`IllegalActionError` and changes nothing if the action is illegal.
        """
        reason = self.why_illegal(action, seat)
        if reason is not None:
            raise IllegalActionError(action, self.current if seat is None else seat, reason)
        self.apply_unchecked(action)

    def apply_unchecked(self, action: Action) -> None:
        """Apply a legal action without checking it (the referee validates first)."""
        kind = action.kind
        s = self.current
        if kind is ActionKind.DISCARD:
            c = action.card
            assert c is not None
            h = self.hands[s]
            h.remove(c)
            self.pile.append(c)
            self.history.append(_event(PublicEvent, (EventKind.DISCARD, s, c, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c))
            self.drawn = None
            self.drawn_from = None
            self.phase = Phase.TURN_START
            a, b, d = h
            if _CARD_VALUE[a] + _CARD_VALUE[b] + _CARD_VALUE[d] == 31 and (a & 3) == (b & 3) == (d & 3):
                self.turn += 1
                self._finish_round(RoundEnd.BLITZ, thirty_one=(s,))
                return
            # The common case of _end_turn, inlined: this is the simulator's hottest path.
            self.turn += 1
            self._had_turn[s] = True
            if self.knocker is not None:
                self._end_turn_after_knock(s)
            elif self.turn >= self._max_turns:
                self._finish_round(RoundEnd.MAX_TURNS)
            else:
                alive = self.alive
                n = self.players
                t = s + 1
                if t == n:
                    t = 0
                while not alive[t]:
                    t += 1
                    if t == n:
                        t = 0
                self.current = t
                if not self.stock and not self._no_restock:
                    self._restock()
        elif kind is ActionKind.DRAW_STOCK:
            c = self.stock.pop()
            self.hands[s].append(c)
            self.drawn = c
            self.drawn_from = Pile.STOCK
            self.phase = Phase.DISCARD
            self.history.append(_event(PublicEvent, (EventKind.DRAW_STOCK, s, c, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c))
        elif kind is ActionKind.DRAW_DISCARD:
            c = self.pile.pop()
            self.hands[s].append(c)
            self.drawn = c
            self.drawn_from = Pile.DISCARD
            self.phase = Phase.DISCARD
            self.history.append(_event(PublicEvent, (EventKind.DRAW_DISCARD, s, c, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c))
        elif kind is ActionKind.KNOCK:
            self.knocker = s
            n = 0
            owes = self._owes
            for t in range(self.players):
                if t != s and self.alive[t]:
                    owes[t] = True
                    n += 1
            self.turns_left = n
            self.history.append(_event(PublicEvent, (EventKind.KNOCK, s, None, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, None))
            self._end_turn(s)
        elif kind is ActionKind.PASS:
            if self.phase is Phase.DEALER_OPTION:
                # The dealer keeps the hand: not a turn, and the round goes on.
                self.history.append(_event(PublicEvent, (EventKind.DEALER_PASS, s, None, None)))
                if self._record:
                    self._records.append(ActionRecord(self.round_no, self.turn, s, action, None))
                self._open_play()
                return
            self.history.append(_event(PublicEvent, (EventKind.PASS, s, None, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, None))
            self.turn += 1
            self._finish_round(RoundEnd.EMPTY_STOCK)
        else:
            self._apply_variant(action, s)

    push = apply_unchecked

    def _apply_variant(self, action: Action, s: int) -> None:
        """The actions of docs/rules.md, "Variants" (off the plain game's hot path)."""
        kind = action.kind
        h = self.hands[s]
        if kind is ActionKind.SWAP_UPCARD:
            c = action.card
            assert c is not None
            old = self.pile.pop()
            h[h.index(c)] = old
            self.pile.append(c)
            self.history.append(_event(PublicEvent, (EventKind.SWAP_UPCARD, s, c, old)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c, old))
            if _is31(h):
                # A blitz before the first turn: the round has 0 turns (the option is no turn).
                self._finish_round(RoundEnd.BLITZ, thirty_one=(s,))
            else:
                self._open_play()
        elif kind is ActionKind.CALL:
            # Scored as a knock (knocking under the gun): the caller is the showdown's knocker.
            self.knocker = s
            self.history.append(_event(PublicEvent, (EventKind.CALL, s, None, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, None))
            self.turn += 1
            self._had_turn[s] = True
            self._finish_round(RoundEnd.CALL)
        elif kind is ActionKind.SWAP_HAND:
            self.face_up = h
            h = self.hands[s] = self.dummy
            self.dummy = []
            self.dummy_taker = s
            self.history.append(_event(PublicEvent, (EventKind.SWAP_HAND, s, None, None)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, None))
            self._after_swap(s, h)
        elif kind is ActionKind.SWAP_WIDOW:
            c, w = action.card, action.widow_card
            assert c is not None and w is not None
            widow = self.widow
            h[h.index(c)] = w
            widow[widow.index(w)] = c
            self.history.append(_event(PublicEvent, (EventKind.SWAP_WIDOW, s, c, w)))
            if self._record:
                self._records.append(ActionRecord(self.round_no, self.turn, s, action, c, w))
            self._after_swap(s, h)
        else:  # pragma: no cover - apply_unchecked handles the other kinds
            raise GameError(f"unknown action kind {kind!r}")

    def _after_swap(self, s: int, h: list[Card]) -> None:
        """End a swap turn (dummy or widow): a blitz at 31, else the turn is over."""
        if _is31(h):
            self.turn += 1
            self._finish_round(RoundEnd.BLITZ, thirty_one=(s,))
        else:
            self._end_turn(s)

    def _open_play(self) -> None:
        """After the dealer's option: the first turn goes to the dealer's left."""
        self.phase = Phase.TURN_START
        self.current = self._next_seat(self.dealer)
        self._begin_turn()

    def forfeit(self, seat: int, reason: str = "") -> None:
        """Take ``seat`` out of the match at once (the referee's fault policy).

        Its hand is dead and it is placed below every seat still in. The match goes on
        for the others (or ends, if one is left). Under the pot it pays no more antes and
        its chips so far stay as they are.
        """
        if self.over:
            raise GameError("the match is over")
        if not 0 <= seat < self.players or not self.alive[seat]:
            raise GameError(f"seat {seat} is not in the match")
        self.alive[seat] = False
        self._step += 1
        self._out_step[seat] = self._step
        self.dead.extend(self.hands[seat])
        self.hands[seat] = []
        self.history.append(_event(PublicEvent, (EventKind.FORFEIT, seat, None, None)))
        if self._record:
            self._records.append(ForfeitRecord(self.round_no, self.turn, seat, reason))
        if self._owes[seat]:
            self._owes[seat] = False
            self.turns_left -= 1
        if sum(self.alive) == 1:
            self._finish_round(RoundEnd.ABANDONED)
            return
        if seat == self.current:
            # A dealer who forfeits at the dealer's option: play opens at its left (the
            # next seat still in), as _advance finds it.
            self.drawn = None
            self.drawn_from = None
            self.phase = Phase.TURN_START
            if self.knocker is not None and self.turns_left == 0:
                self._finish_round(RoundEnd.KNOCK)
            else:
                self._advance()

    # ------------------------------------------------------------------ flow

    def _next_seat(self, seat: int) -> int:
        alive = self.alive
        n = self.players
        t = (seat + 1) % n
        while not alive[t]:
            t = (t + 1) % n
        return t

    def _advance(self) -> None:
        t = self._next_seat(self.current)
        if t == self.knocker:
            t = self._next_seat(t)
        self.current = t
        self._begin_turn()

    def _begin_turn(self) -> None:
        # Under reshuffle the restock comes first, whatever the player then does (a dummy
        # swap included: the dummy hand).
        if not self.stock and not self._no_restock:
            self._restock()

    def _restock(self) -> None:
        pile = self.pile
        if len(pile) < 2:
            # Nothing to turn over (only possible once forfeits took cards out of play):
            # the turn then offers what empty_stock=showdown offers.
            return
        top = pile.pop()
        order = self._chance.restock(self.round_no, self._restocks, pile)
        self._restocks += 1
        self.stock = order[::-1]
        self.pile = [top]
        self.history.append(_event(PublicEvent, (EventKind.RESTOCK, self.current, None, None)))
        if self._record:
            self._records.append(RestockRecord(self.round_no, self._restocks - 1, tuple(order)))

    def _end_turn(self, s: int) -> None:
        self.turn += 1
        self._had_turn[s] = True
        self._end_turn_after_knock(s)

    def _end_turn_after_knock(self, s: int) -> None:
        if self._owes[s]:
            self._owes[s] = False
            self.turns_left -= 1
        if self.knocker is not None and self.turns_left == 0:
            self._finish_round(RoundEnd.KNOCK)
        elif self.turn >= self._max_turns:
            self._finish_round(RoundEnd.MAX_TURNS)
        else:
            self._advance()

    def _start_round(self, first: bool = False) -> None:
        n = self.players
        self.round_no += 1
        if not first:
            self.dealer = self._next_seat(self.dealer)
        deck = self._chance.deal(self.round_no, DECK)
        alive = self.alive
        d = self.dealer
        # Dealing starts left of the dealer and goes clockwise among the seats still in.
        order = [t for t in range(d + 1, n) if alive[t]] + [t for t in range(d + 1) if alive[t]]
        k = len(order)
        antes: tuple[int, ...] = ()
        carried = self.pot
        if self._pot_game:
            # Antes go in at the deal, before natural 31s are checked (playing for a pot).
            ante = self.rules.ante
            antes = tuple(ante if alive[t] else 0 for t in range(n))
            chips = self.chips
            for t in order:
                chips[t] -= ante
            self.pot = carried + ante * k
        hands: list[list[Card]] = [[] for _ in range(n)]
        # One card at a time: seat order[j] gets cards j, j+k and j+2k.
        naturals: list[int] = []
        for j, seat in enumerate(order):
            h = hands[seat] = deck[j : 3 * k : k]
            a, b, c = h
            if _CARD_VALUE[a] + _CARD_VALUE[b] + _CARD_VALUE[c] == 31 and (a & 3) == (b & 3) == (c & 3):
                naturals.append(seat)
        i = 3 * k
        self.hands = hands
        upcard: Card | None
        if not self._variant_deal:
            # The plain deal (the hot path of simulations): the variants' places stay empty.
            upcard = deck[i]
            self.pile = [upcard]
            self.stock = deck[:i:-1]  # top of the stock is the list's end
        elif self._widow_game:
            # Three face-up cards; no up-card, stock or pile; the rest is not used (the widow).
            self.widow = deck[i : i + 3]
            self.unused = deck[i + 3 :]
            self.dummy = []
            upcard = None
            self.pile = []
            self.stock = []
        else:
            self.widow = []
            self.unused = []
            if self._dummy_rule:
                # The dummy is dealt after the players' hands, before the up-card (the dummy hand).
                self.dummy = deck[i : i + 3]
                i += 3
            else:
                self.dummy = []
            upcard = deck[i]
            self.pile = [upcard]
            self.stock = deck[:i:-1]  # top of the stock is the list's end
            self.face_up = []
            self.dummy_taker = None
        self.dead = []
        self.current = order[0]
        self.phase = Phase.TURN_START
        self.drawn = None
        self.drawn_from = None
        self.knocker = None
        self.turns_left = 0
        self._owes = [False] * n
        self._had_turn = [False] * n
        self.turn = 0
        self._restocks = 0
        self.history = []
        if self._record:
            self._records.append(
                DealRecord(
                    self.round_no,
                    self.dealer,
                    tuple(deck),
                    tuple(tuple(h) for h in hands),
                    upcard,
                    tuple(self.dummy),
                    tuple(self.widow),
                    antes,
                    carried,
                    self.pot,
                )
            )
        if naturals:
            # Natural 31s are checked on the players' hands only, and first: no dealer's
            # option after one (docs/rules.md, "Variants").
            self._finish_round(RoundEnd.NATURAL_31, thirty_one=tuple(naturals))
        elif self._dealer_option:
            self.phase = Phase.DEALER_OPTION
            self.current = d

    def _finish_round(self, end: RoundEnd, thirty_one: tuple[int, ...] = ()) -> None:
        r = self.rules
        seats = [s for s in range(self.players) if self.alive[s]]
        table = self._values
        values: dict[int, float] = {}
        for s in seats:
            h = self.hands[s]
            if len(h) == 3:
                values[s] = table[(1 << h[0]) | (1 << h[1]) | (1 << h[2])]
        losses: dict[int, int] = {}
        showdown = end in _SHOWDOWN_ENDS
        winners: tuple[int, ...] = ()
        tie_break = False
        pot = self.pot
        chips_won: tuple[int, ...] = ()
        if self._pot_game:
            winners, tie_break = self._pot_winners(end, thirty_one, values)
            won = [0] * self.players
            if winners:
                share = pot // len(winners)
                for s in winners:
                    won[s] = share
                    self.chips[s] += share
                self.pot = pot - share * len(winners)
            chips_won = tuple(won)
        elif end is RoundEnd.NATURAL_31 or end is RoundEnd.BLITZ:
            loss = r.simultaneous_31_loss if len(thirty_one) > 1 else 1
            losses = {s: loss for s in seats if s not in thirty_one}
        elif showdown:
            low = min(values.values())
            at_low = [s for s in seats if values[s] == low]
            k = self.knocker
            for s in at_low:
                if s != k:
                    losses[s] = 1
            if k is not None and k in at_low:
                if len(at_low) == 1 or r.knocker_tied == "double":
                    loss = r.knocker_alone_loss
                elif r.knocker_tied == "single":
                    loss = 1
                else:
                    loss = 0
                if loss:
                    losses[k] = loss
        tokens = self.tokens
        new_tokens = list(tokens)
        out: list[int] = []
        for s, loss in losses.items():
            t = new_tokens[s]
            for _ in range(loss):
                if t == 0:
                    out.append(s)
                    break
                t -= 1
                if t == 0 and not r.bus:
                    out.append(s)
                    break
            new_tokens[s] = t
        sudden = bool(out) and len(out) == len(seats)
        if sudden:
            out = []
            for s in seats:
                new_tokens[s] = 0
        self.tokens = new_tokens
        if out:
            self._step += 1
            for s in out:
                self.alive[s] = False
                self._out_step[s] = self._step
        # Positional and without NamedTuple's Python-level __new__: one per round, and in
        # simulations that is a measurable share of the time.
        result = _round_result(
            RoundResult,
            (
                self.round_no,
                self.dealer,
                end,
                self.knocker,
                thirty_one,
                {s: tuple(self.hands[s]) for s in seats},
                values,
                showdown,
                losses,
                tuple(new_tokens),
                tuple(sorted(out)),
                sudden,
                self.turn,
                winners,
                pot if self._pot_game else 0,
                chips_won,
                self.pot,
                tuple(self.chips) if self._pot_game else (),
                tuple(self.widow) if self.widow else (),
                tuple(self.face_up) if self.face_up else (),
                self.dummy_taker,
                tie_break,
            ),
        )
        self.rounds.append(result)
        if self._record:
            self._records.append(result)
        if sum(self.alive) <= 1:
            self.over = True
            self.end = MatchEnd.LAST_PLAYER
        elif self.round_no >= self.round_limit:
            self.over = True
            self.end = MatchEnd.POT_ROUNDS if self._pot_game else MatchEnd.MAX_ROUNDS
        else:
            self._start_round()

    def _pot_winners(
        self, end: RoundEnd, thirty_one: tuple[int, ...], values: dict[int, float]
    ) -> tuple[tuple[int, ...], bool]:
        """Who takes the pot (playing for a pot), and whether ranks broke a tie: 31s at once;
        else the best hand at the showdown, a tie going to the highest card, then the second,
        then the third (all three count)."""
        if end is RoundEnd.NATURAL_31 or end is RoundEnd.BLITZ:
            return thirty_one, False
        if end is RoundEnd.ABANDONED or not values:
            return (), False
        top = max(values.values())
        tied = [s for s in sorted(values) if values[s] == top]
        if len(tied) == 1:
            return (tied[0],), False
        keys = {s: tuple(sorted((c >> 2 for c in self.hands[s]), reverse=True)) for s in tied}
        best = max(keys.values())
        return tuple(s for s in tied if keys[s] == best), True

    # ------------------------------------------------------------------ results

    @property
    def placings(self) -> tuple[int, ...]:
        """Each seat's placing (1 = best; shared placings ranked 1, 2, 2, 4).

        Under lives, while the match runs, seats still in share the best placing. Under the
        pot, seats still in are ranked by net chips at any time; forfeited seats come below
        them, later forfeits above earlier ones.
        """
        keys: list[tuple[float, int]] = []
        pot_game = self._pot_game
        for s in range(self.players):
            step = self._out_step[s]
            if step is None:
                # Still in: above everyone out; after max_rounds, ranked by tokens; under the
                # pot, by net chips.
                if pot_game:
                    tok = self.chips[s]
                else:
                    tok = self.tokens[s] if self.end is MatchEnd.MAX_ROUNDS else 0
                keys.append((float("inf"), tok))
            else:
                keys.append((float(step), 0))
        return tuple(1 + sum(1 for o in keys if o > k) for k in keys)

    @property
    def winner(self) -> int | None:
        """The last seat standing, or under the pot the single seat placed first; None while
        the match runs, after max_rounds, or on a tie for first."""
        if self.end is MatchEnd.LAST_PLAYER:
            return next(s for s in range(self.players) if self.alive[s])
        if self.end is MatchEnd.POT_ROUNDS:
            firsts = [s for s, p in enumerate(self.placings) if p == 1]
            return firsts[0] if len(firsts) == 1 else None
        return None

    def take_records(self) -> list[Record]:
        """The records made since the last call (deals, restocks, actions, forfeits, rounds)."""
        out = self._records
        self._records = []
        return out

    def cards_in_play(self) -> list[Card]:
        """Every card in hands, stock, discard pile, dead hands, the dummy, the face-up old
        hand, the widow and the widow game's unused cards (52 while the rules hold)."""
        out: list[Card] = []
        for h in self.hands:
            out.extend(h)
        out.extend(self.stock)
        out.extend(self.pile)
        out.extend(self.dead)
        out.extend(self.dummy)
        out.extend(self.face_up)
        out.extend(self.widow)
        out.extend(self.unused)
        return out

    def observation(self, seat: int) -> Observation:
        """What ``seat`` may know now: its information set (docs/rules.md, "What a bot sees")."""
        return observe(self, seat)


def _public(ev: PublicEvent, seat: int) -> PublicEvent:
    if ev.kind is EventKind.DRAW_STOCK and ev.seat != seat:
        return PublicEvent(EventKind.DRAW_STOCK, ev.seat, None)
    return ev


def observe(m: Match, seat: int) -> Observation:
    """Build ``seat``'s observation of match ``m``."""
    if not 0 <= seat < m.players:
        raise ValueError(f"no seat {seat} in a {m.players}-player match")
    to_move = not m.over and m.current == seat
    mine = to_move and m.drawn is not None
    return Observation(
        seat=seat,
        players=m.players,
        round_no=m.round_no,
        turn=m.turn,
        phase=m.phase if to_move else Phase.TURN_START,
        to_move=to_move,
        hand=tuple(m.hands[seat]),
        drawn_card=m.drawn if mine else None,
        drawn_from=m.drawn_from if mine else None,
        history=tuple(_public(e, seat) for e in m.history),
        discard_pile=tuple(m.pile),
        stock_size=len(m.stock),
        tokens=tuple(m.tokens),
        in_game=tuple(m.alive),
        dealer=m.dealer,
        knocker=m.knocker,
        turns_left_after_knock=m.turns_left if m.knocker is not None else 0,
        rules=m.rules,
        legal_actions=tuple(m.legal_actions()) if to_move else (),
        widow=tuple(m.widow),
        dummy_state=(
            DummyState.NONE
            if not m.rules.dummy
            else DummyState.FACE_DOWN
            if m.dummy_taker is None
            else DummyState.TAKEN
        ),
        dummy_taker=m.dummy_taker,
        face_up=tuple(m.face_up),
        chips=tuple(m.chips),
        pot=m.pot,
        rounds_in_match=m.round_limit if m.rules.scoring == "pot" else 0,
    )


def _is31(h: Sequence[Card]) -> bool:
    a, b, c = h
    return _CARD_VALUE[a] + _CARD_VALUE[b] + _CARD_VALUE[c] == 31 and (a & 3) == (b & 3) == (c & 3)


def replay_actions(
    players: int, rules: Rules, actions: Sequence[Action], *, seed: int | None = None, chance: Chance | None = None
) -> Match:
    """Play ``actions`` in order from a fresh match (checked) and return the match."""
    m = Match(players, rules, seed=seed, chance=chance)
    for a in actions:
        m.apply(a)
    return m
