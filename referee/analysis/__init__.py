"""What a match's logs say about its play: each decision's cost (:mod:`.decisions`) and the
luck of the cards (:mod:`.luck`), both valued by :mod:`sdk.evaluate`.

Pure: logs are read through :mod:`referee.log`; nothing is printed.
"""
