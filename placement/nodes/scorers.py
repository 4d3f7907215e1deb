"""The ways a node's fit for a request is scored, by name: ``pack`` prefers the node
that is most used once the request is placed (fewer nodes stay busy), ``spread`` the
least used. The translator (``group_resources.scoring``) and the device search
(``devices.search``) each score by these."""

PACK = "pack"
SPREAD = "spread"
SCORER_NAMES = (PACK, SPREAD)
