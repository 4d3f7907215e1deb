"""Scorers: how good a node is for a request, after the request is placed on it.

Seed 000, section II-C: a location's score sums, over every allocatable
resource, a function of what is allocatable, what is used and what the
request puts there. The linear "most allocated" scorer is used'/allocatable.
We average instead of summing (documented in api-ref), so that a node does
not win merely for having more devices:

    pack   = mean over the node's inventories of (used + placed) / capacity
    spread = 1 - pack

Both are linear in what is placed, so the best placement on one node is the
one maximising ``direction * sum(amount / capacity)``, which is what the
allocator maximises; the node's score then follows from that sum.
"""

from dataclasses import dataclass

from placement.group_resources.snapshot import Node, Room


@dataclass(frozen=True)
class Scorer:
    name: str
    direction: int  # +1: prefer fuller groups and nodes; -1: emptier ones

    def gain(self, amount: int, room: Room) -> float:
        """What placing ``amount`` on ``room`` adds to the quantity the allocator maximises."""
        return self.direction * amount / room.capacity if room.capacity > 0 else 0.0

    def node_score(self, node: Node, gain: float) -> float:
        if node.inventory_count == 0:
            return 0.0
        packed = (node.utilisation + self.direction * gain) / node.inventory_count
        return packed if self.direction > 0 else 1.0 - packed


SCORERS = {"pack": Scorer("pack", 1), "spread": Scorer("spread", -1)}
