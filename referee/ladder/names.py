"""Names that look alike: the skeleton two names share when people would take one for the other.

Users and bots are told apart by name on pages, in logs and in terminals, so a new name may
not differ from a taken one only in case (``Bob_bot``, ``bob_bot``) or in a plain look-alike
(``l``, ``I`` and ``1``; ``O`` and ``0``). Names hold ASCII letters, digits, ``_``, ``.`` and
``-`` only (:func:`referee.ladder.accounts.check_name`), so this short table covers them;
Unicode's full confusables list is not needed.
"""

from __future__ import annotations

#: Each look-alike written as the one character that stands for its group.
_LOOKALIKES = str.maketrans({"1": "l", "i": "l", "0": "o"})


def skeleton(name: str) -> str:
    """The form two names share when they look alike: case folded, then ``1``, ``i`` and
    ``l`` as ``l`` and ``0`` as ``o``. Equal skeletons: the names clash."""
    return name.casefold().translate(_LOOKALIKES)
