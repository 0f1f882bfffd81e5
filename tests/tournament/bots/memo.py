"""A bot that shows which process plays which match (tests/tournament/test_deal_memory.py).

It makes one random token when its process starts, and at the start of every match prints
``MEMO <token>`` on stdout: the matches whose output shows one token were played by one
process, which could have remembered all of them. It plays the first legal action, discarding
its worst card after a draw.

Run it as ``python tests/tournament/bots/memo.py`` (an SDK bot: ``--address`` etc. as for
every SDK bot).
"""

from __future__ import annotations

import uuid

import sdk

#: This process's token: the same in every match it plays.
TOKEN = uuid.uuid4().hex


class Memo(sdk.Bot):
    """The first legal action; says which process it is at each match start."""

    name = "memo"
    version = "1.0"
    author = "a test"

    def on_match_start(self, info: sdk.MatchInfo) -> None:
        """Say which process plays this match."""
        print(f"MEMO {TOKEN}", flush=True)

    def act(self, view: sdk.View) -> sdk.Action:
        """The first legal action (the worst card, when one must be discarded)."""
        if view.must_discard:
            card, _ = view.best_discard()
            return sdk.discard(card)
        return view.legal_actions[0]


if __name__ == "__main__":
    sdk.run(Memo)
