"""One router per area of the API (accounts, bots, ladder, matches, admin)."""
