"""Replaying match logs: re-simulate them through the game model, render them, verify them.

- :mod:`referee.replay.model` — the replay model: a log re-simulated into a list of steps,
  for the omniscient view or one seat's, stopping at the first divergence (pure). The
  re-simulation itself is :func:`referee.log.walk_log`, shared with
  :func:`referee.log.replay_log`.
- :mod:`referee.replay.verify` — verification of one log or a folder of them, and finding a
  match's log in a tournament folder (pure).
- :mod:`referee.replay.render` — the steps as rich renderables (presentation only).
"""

from __future__ import annotations

from referee.replay.model import Divergence, Position, Replay, Step, build_replay, load_log

__all__ = ["Divergence", "Position", "Replay", "Step", "build_replay", "load_log"]
