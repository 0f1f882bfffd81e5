"""A bot written for the standard game only: it knows neither the widow nor the dealer's option."""

import sdk


class StandardOnly(sdk.Bot):
    name = "standard_only"
    version = "1"

    def act(self, view: sdk.View) -> sdk.Action:
        if view.must_discard:
            return sdk.discard(view.best_discard()[0])
        if view.can(sdk.KNOCK) and view.value >= 27:
            return sdk.KNOCK
        if view.can(sdk.DRAW_STOCK):
            return sdk.DRAW_STOCK
        if view.can(sdk.PASS) and not (view.widow_game or view.is_dealer_option):
            return sdk.PASS
        return sdk.DRAW_STOCK  # what it would do in the standard game: illegal here


if __name__ == "__main__":
    sdk.run(StandardOnly)
