"""Equal values kept as one object: what the long-lived copies share.

A large cloud is mostly alike: a hardware model's hosts have the same
inventories and traits, its device nodes the same devices, and most of what is
free of them is all or nothing. The process's copy of the providers
(``replica.world``) and the device nodes built from it
(``devices.replica_nodes``) keep one object per distinct value instead of one per
provider: a fraction of the memory, and less to build. What is shared must never
be changed in place: every value kept here is treated as frozen by its users.
"""

from collections.abc import Callable, Hashable
from typing import Any


class Interned:
    """``get(key, make)``: ``make()`` once per distinct ``key``, the same object after.

    The table holds the keys given lately; ``trim`` empties it when it outgrows what
    the copy holds (values no one has any more, or values too varied to share):
    values already given out stay as they are, sharing starts afresh."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        value = self._values.get(key)
        if value is None:
            value = self._values[key] = make()
        return value

    def trim(self, kept: int) -> None:
        """Empty the table when it holds more than ``kept`` (plus some) values."""
        if len(self._values) > kept + 1024:
            self._values.clear()
