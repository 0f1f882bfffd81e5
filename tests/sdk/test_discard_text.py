"""``sdk.discard`` takes a Card or card text (issue #12, item 10): ``sdk.discard("Ah")`` used to
raise ``TypeError: tuple indices must be integers`` from deep inside, a crash in a served bot."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import sdk
from referee.game import ActionKind, CardParseError
from referee.match import run_match


def test_discard_takes_a_card_or_its_text() -> None:
    ah = sdk.card("Ah")
    assert sdk.discard("Ah") is sdk.discard(ah)  # the shared action, as for a Card
    assert sdk.discard("Ah").card == ah and sdk.discard("Ah").kind is ActionKind.DISCARD
    # Text is what people type, read leniently like sdk.card: the wire gets the canonical form.
    assert sdk.discard("ah") is sdk.discard(" AH ") is sdk.discard(ah)
    assert sdk.discard("10h") is sdk.discard(sdk.card("Th"))


@pytest.mark.parametrize("text", ["Zz", "", "A", "11h", "Ahh"])
def test_bad_text_is_a_value_error_naming_it(text: str) -> None:
    with pytest.raises(ValueError) as info:
        sdk.discard(text)
    assert isinstance(info.value, CardParseError)
    assert f"discard({text!r})" in str(info.value)
    assert "not a card" in str(info.value)


@pytest.mark.parametrize("thing", [5, None, 2.0, ["Ah"]])
def test_other_types_are_a_type_error_naming_them(thing: object) -> None:
    with pytest.raises(TypeError, match=r"takes a Card or card text like 'Ah', got"):
        sdk.discard(thing)  # type: ignore[arg-type]


def test_action_built_by_hand_takes_text_too() -> None:
    assert sdk.Action(ActionKind.DISCARD, "Kd") == sdk.discard("Kd")  # type: ignore[arg-type]
    with pytest.raises(CardParseError, match=r"Action\('Kx'\)"):
        sdk.Action(ActionKind.DISCARD, "Kx")  # type: ignore[arg-type]


def test_a_served_bot_may_discard_by_text(tmp_path: Path) -> None:
    # A real bot process over gRPC that discards by text, in canonical and loose forms: the
    # SDK sends the canonical text, so the referee records no fault.
    bot = tmp_path / "texty.py"
    bot.write_text(
        textwrap.dedent(
            """\
            import sdk


            class Texty(sdk.Bot):
                name = "texty"

                def act(self, view: sdk.View) -> sdk.Action:
                    if view.must_discard:
                        card, _ = view.best_discard()
                        text = card.text if view.turn % 2 else card.text.lower()
                        return sdk.discard(text)
                    return sdk.DRAW_STOCK if view.can(sdk.DRAW_STOCK) else view.legal_actions[0]


            if __name__ == "__main__":
                sdk.run(Texty)
            """
        )
    )
    out = run_match([str(bot), "greedy"], seed=11, log_path=tmp_path / "match.jsonl")
    assert out.faults == ()
    assert out.seats[0].stats.decisions > 2
