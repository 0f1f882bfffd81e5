"""The arena's ladder: accounts, bot versions and uploads, the scheduler, ratings, the loop.

No HTTP here (that is :mod:`referee.service`): these modules are the arena's rules, beside
the tournament's, and reuse its parts. An arena folder holds:

- ``arena.toml``: its settings (:class:`~referee.ladder.settings.ArenaSettings`);
- ``secret`` (0600): the key that seeds derive from;
- ``arena.db``: the store (SQLite, WAL; :mod:`referee.ladder.store`);
- ``versions/N/``: each bot version's frozen files; ``logs/``, ``output/``: finished
  matches' logs and the bots' output; ``running/``: matches in play, readable by nobody else.
"""
