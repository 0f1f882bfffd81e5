"""Tournaments: a folder with a SQLite store, a duplicate round-robin schedule, a parallel
runner that resumes after a kill, and standings."""
