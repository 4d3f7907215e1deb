"""The readings of the group allocator a translator request may choose, by name.

The translator follows the group allocator (every requested group on a group of
its level, distinct groups for distinct requested groups, subgroups under their
parent's group) with three choices of its own (``api-ref/group_resources.md``,
Options); a request may ask for the allocator's own reading of each instead, in
its ``options`` object, and the configuration sets what a request that says
nothing gets:

* ``flat_requests``: ``anywhere`` (a request whose groups hold no subgroups
  places each group on any group of its level anywhere on the node) or
  ``fill_levels`` (the levels such a request skips are filled in per group, as
  for a request with subgroups: each group gets its own group at every level
  above it).
* ``node_ranking``: ``mean`` (nodes rank by the mean of the per-inventory
  scores) or ``sum`` (by their sum).
* ``sibling_groups``: ``distinct`` (two request groups never share a group of
  the node) or ``shared`` (they may, when its inventories hold both).

Names only, below the configuration, the schemas and the translator.
"""

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

ANYWHERE = "anywhere"
FILL_LEVELS = "fill_levels"
MEAN = "mean"
SUM = "sum"
DISTINCT = "distinct"
SHARED = "shared"

# option -> its values, the default first
CHOICES: dict[str, tuple[str, ...]] = {
    "flat_requests": (ANYWHERE, FILL_LEVELS),
    "node_ranking": (MEAN, SUM),
    "sibling_groups": (DISTINCT, SHARED),
}


@dataclass(frozen=True)
class GroupOptions:
    """The readings one translator request is answered by."""

    flat_requests: str = ANYWHERE
    node_ranking: str = MEAN
    sibling_groups: str = DISTINCT

    def __post_init__(self) -> None:
        for option in fields(self):
            value = getattr(self, option.name)
            if value not in CHOICES[option.name]:
                raise ValueError(
                    f"{option.name} must be one of {', '.join(CHOICES[option.name])}, not {value!r}"
                )

    def overridden(self, given: Mapping[str, str] | None) -> "GroupOptions":
        """These options with those a request gave (already checked by its schema)."""
        return replace(self, **given) if given else self

    @property
    def fills_flat_requests(self) -> bool:
        return self.flat_requests == FILL_LEVELS

    @property
    def sums_nodes(self) -> bool:
        return self.node_ranking == SUM

    @property
    def shares_groups(self) -> bool:
        return self.sibling_groups == SHARED


DEFAULT_OPTIONS = GroupOptions()  # today's readings, for callers that choose none
