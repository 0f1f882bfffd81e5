"""The bot base class: subclass it and write one method, :meth:`Bot.act`."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from referee.game import Action
from referee.wire import PROTOCOL_VERSION, BotIdentity, MatchInfo, MatchResult

if TYPE_CHECKING:
    from sdk.view import View


class Bot(abc.ABC):
    """A Thirty-One bot. Subclass it, set :attr:`name`, and implement :meth:`act`::

        class MyBot(sdk.Bot):
            name = "mybot"

            def act(self, view: sdk.View) -> sdk.Action:
                return view.legal_actions[0]

    Pass the *class* to :func:`sdk.run` (or to the harness): the SDK makes one instance per
    match and seat, so instance attributes are per-match state, and the methods of one
    instance are never called concurrently. Pass an instance instead to share it between
    all matches; the SDK then serialises its calls with a lock.
    """

    #: Short name shown in standings and logs; defaults to the class name.
    name: str = ""
    #: Your bot's own version, free text.
    version: str = "0.1.0"
    #: Who wrote it, free text.
    author: str = ""

    @abc.abstractmethod
    def act(self, view: View) -> Action:
        """Choose one of ``view.legal_actions``. Called once per decision of this seat."""

    def on_match_start(self, info: MatchInfo) -> None:
        """Called once before the first decision of a match (seat, players, rules, clock)."""
        return None

    def on_match_end(self, result: MatchResult) -> None:
        """Called once after the match with the placings (and, over gRPC, your faults)."""
        return None

    def identity(self) -> BotIdentity:
        """What GetIdentity answers: name, version, author and the protocol version."""
        return BotIdentity(
            name=self.name or type(self).__name__,
            version=self.version,
            author=self.author,
            protocol_version=PROTOCOL_VERSION,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.identity().name!r}>"


#: What :func:`sdk.run` and the harness accept: a bot class (or any factory) or an instance.
BotSource: TypeAlias = "Bot | Callable[[], Bot]"


def make_bot(source: Bot | Callable[[], Bot]) -> Bot:
    """An instance from a :data:`BotSource`: the instance itself, or a new one from a factory."""
    if isinstance(source, Bot):
        return source
    if not callable(source):
        raise TypeError(f"expected a Bot subclass, a factory or a Bot instance, got {source!r}")
    bot = source()
    if not isinstance(bot, Bot):
        raise TypeError(f"{source!r} made {bot!r}, which is not an sdk.Bot")
    return bot
