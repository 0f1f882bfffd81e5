"""The Thirty-One bot arena: game model, referee, tournaments and replays."""

__version__ = "0.1.0"
