"""Bots for the server tests, served as ``python fixture_bots.py`` with FIXTURE_BOT=NAME.

Each misbehaves in one way the SDK must turn into a clear gRPC error.
"""

from __future__ import annotations

import os
import time

import sdk
from sample_bots.greedy import GreedyBot


class RaisingBot(GreedyBot):
    """Raises in ``act`` on its second decision."""

    name = "raising"

    def __init__(self) -> None:
        self.decisions = 0

    def act(self, view: sdk.View) -> sdk.Action:
        self.decisions += 1
        if self.decisions == 2:
            raise ValueError("the bot author's bug")
        return super().act(view)


class NotAnActionBot(GreedyBot):
    """Answers with a string instead of an action."""

    name = "not_an_action"

    def act(self, view: sdk.View) -> sdk.Action:
        return "knock"  # type: ignore[return-value]


class SlowBot(GreedyBot):
    """Thinks for SLOW_S seconds on every decision (with SLOW_CALLS, on its first that many
    only); with SLOW_MARKS, first writes the file ``act-N`` there for its Nth call of ``act``
    (so a test sees what it thought about: the round, then when the request arrived), and
    ``done-N`` when it is done thinking (the monotonic time)."""

    name = "slow"

    def __init__(self) -> None:
        self.calls = 0

    def act(self, view: sdk.View) -> sdk.Action:
        self.calls += 1
        if marks := os.environ.get("SLOW_MARKS"):
            with open(os.path.join(marks, f"act-{self.calls}"), "w") as f:
                f.write(f"{view.round_no}\n{view.received_at!r}\n")
        if self.calls <= int(os.environ.get("SLOW_CALLS", "1000000")):
            time.sleep(float(os.environ.get("SLOW_S", "1")))
        if marks:
            with open(os.path.join(marks, f"done-{self.calls}"), "w") as f:
                f.write(f"{time.monotonic()!r}\n")
        return super().act(view)


class LoggingBot(GreedyBot):
    """Greedy, but records its hooks so the stream's order can be checked: it knocks
    only after on_match_start ran, and says so in its name."""

    name = "hooks"

    def __init__(self) -> None:
        self.started = False

    def on_match_start(self, info: sdk.MatchInfo) -> None:
        self.started = True

    def act(self, view: sdk.View) -> sdk.Action:
        assert self.started, "act before on_match_start"
        return super().act(view)


BOTS: dict[str, type[sdk.Bot]] = {
    "raising": RaisingBot,
    "not_an_action": NotAnActionBot,
    "slow": SlowBot,
    "hooks": LoggingBot,
}

if __name__ == "__main__":
    sdk.run(BOTS[os.environ["FIXTURE_BOT"]])
