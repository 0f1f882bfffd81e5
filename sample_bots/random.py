"""``random``: plays a uniformly random legal action. The smallest possible bot.

Its random generator is seeded from the match id and seat, so a match replays exactly.
Serve it with ``python -m sample_bots.random``.
"""

from __future__ import annotations

import random

import sdk


class RandomBot(sdk.Bot):
    """Picks any legal action, each with equal chance."""

    name = "random"
    version = "1.0"
    author = "thirtyone sample bots"

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def on_match_start(self, info: sdk.MatchInfo) -> None:
        # One instance plays one match and seat (sdk.run makes a new one per stream),
        # so reseeding here makes every match reproducible on its own.
        self.rng = random.Random(f"{info.match_id}/{info.seat}")

    def act(self, view: sdk.View) -> sdk.Action:
        return self.rng.choice(view.legal_actions)


if __name__ == "__main__":
    sdk.run(RandomBot)
