"""Time control: a per-decision budget, a per-match bank, and a grace for transport."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TimeControl:
    """How long a bot may think.

    Each decision may take ``budget_ms``; time beyond it is drawn from the match's
    ``bank_ms``; ``grace_ms`` absorbs transport jitter and is never charged. A decision
    that outlasts budget, bank left and grace together is a timeout.
    """

    budget_ms: int = 250
    bank_ms: int = 10_000
    grace_ms: int = 100

    def __post_init__(self) -> None:
        for name in ("budget_ms", "bank_ms", "grace_ms"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 3_600_000:
                raise ValueError(f"time control {name} must be 0..3600000 ms, got {v!r}")
        if self.budget_ms == 0:
            raise ValueError("time control budget_ms must be at least 1 ms")

    def describe(self) -> str:
        """Short text such as ``250 ms/decision + 10 s bank``."""
        bank = f"{self.bank_ms / 1000:g} s" if self.bank_ms >= 1000 else f"{self.bank_ms} ms"
        return f"{self.budget_ms} ms/decision + {bank} bank (grace {self.grace_ms} ms)"
