"""The web viewer: standings, rating progress, the match list and a replay viewer in a browser.

- :mod:`referee.web.replay_json` — the replay model's steps as JSON (pure, generic).
- :mod:`referee.web.data` — what the pages show, read from a tournament folder (read-only)
  or a folder of match logs.
- :mod:`referee.web.server` — the local HTTP server (standard library), the static export and
  the one-file replay page. The page itself is ``static/`` (plain HTML, CSS and JavaScript,
  no library, no network).
"""
