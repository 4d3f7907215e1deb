"""Scorers: how good a node is for a request, after the request is placed on it.

A node's score is a function, over every inventory the node offers, of its
capacity, what is used of it and what the request puts there; the linear
"most allocated" form is (used + requested) / capacity. By default we average it
over the node's inventories instead of summing it (api-ref/group_resources.md,
Scoring), so that a node does not win merely for having more devices; the
``sum`` node ranking (``GroupOptions.node_ranking``) sums it, as KubeGPU's group
allocator does:

    pack   = mean over the node's inventories of (used + placed) / capacity
    spread = 1 - pack
    (sum:    pack = the sum instead of the mean; spread = inventories - pack)

Both are linear in what is placed, so the best placement on one node is the
one maximising ``direction * sum(amount / capacity)``, which is what the
allocator maximises; the node's score then follows from that sum.

Scores are computed in floats and compared exactly (``exact``): the gains of
placements on one node by the allocator, and nodes by ``node_score_key``, the
exact score at nine decimals.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from placement.group_resources.exact import ExactSums, Gain, exact_quotient, fraction, slack
from placement.group_resources.request_tree import GroupRequest
from placement.group_resources.snapshot import Node, Room
from placement.nodes.group_options import SUM
from placement.nodes.scorers import PACK, SPREAD

SCORE_SCALE = 10**9  # scores are compared, and tie, at nine decimals


KEY_LIMIT = 2**62  # beyond any real score; where absurd ratios overflow a float


def score_key(score: float) -> int:
    """A score as compared: nine decimals, as an integer."""
    return _clamped(score, round, if_nan=-KEY_LIMIT)


def bound_key(bound: float) -> int:
    """A bound as compared: never below the ``score_key`` of a score it bounds.

    A bound equal to a score but computed in another order may differ from it
    in the last bits; rounding half a unit up (plus a little) absorbs that.
    """
    # Not a number: nothing is known, so the node must be looked at.
    return _clamped(bound, lambda scaled: math.floor(scaled + 0.501), if_nan=KEY_LIMIT)


def _clamped(value: float, to_int, if_nan: int) -> int:
    scaled = value * SCORE_SCALE
    if math.isnan(scaled):
        return if_nan
    if math.isinf(scaled) or abs(scaled) >= KEY_LIMIT:
        return KEY_LIMIT if scaled > 0 else -KEY_LIMIT
    return to_int(scaled)


@dataclass(frozen=True)
class Scorer:
    name: str
    direction: int  # +1: prefer fuller groups and nodes; -1: emptier ones
    summed: bool = False  # the node's score sums its inventories' instead of averaging

    def gain(self, sums: ExactSums, amount: int, room: Room) -> Gain:
        """What placing ``amount`` on ``room`` adds to the quantity the allocator maximises."""
        return sums.quotient(self.direction * amount, room.unrounded_capacity)

    def node_score(self, node: Node, gain: Gain, terms: int) -> tuple[float, int]:
        """The node's score with a placement of ``gain`` (a sum of ``terms`` amounts), and
        its ``score_key``: that of the exact score.

        The float score rounds to the same nine decimals as the exact one unless
        it lies within its rounding error of a half: only then is it computed
        exactly (the node's use as fractions, and the gain's).
        """
        count = node.inventory_count
        score = self._score(node.utilisation, count, self.direction * gain)
        scaled = score * SCORE_SCALE
        if not -KEY_LIMIT < scaled < KEY_LIMIT:
            return score, score_key(score)
        key = round(scaled)
        magnitude = abs(node.utilisation) + abs(gain) + count
        if not self.summed:
            magnitude /= max(count, 1)
        if 0.5 - abs(scaled - key) > SCORE_SCALE * slack(terms + count, magnitude):
            return score, key
        utilisation = sum(
            (exact_quotient(room.used, room.unrounded_capacity) for room in node.rooms),
            Fraction(0),
        )
        exact = self._score(utilisation, node.inventory_count, self.direction * fraction(gain))
        return score, max(-KEY_LIMIT, min(KEY_LIMIT, round(exact * SCORE_SCALE)))

    def bound(
        self,
        utilisation: float,
        inventory_count: int,
        request: GroupRequest,
        capacity_ranges: Mapping[str, tuple[float, float]],
    ) -> float:
        """The best score a node with this use could reach with ``request`` placed on it.

        Every requested amount lands on some inventory of its class on the
        node, whose capacity lies within that class's range there
        (``capacity_ranges``): the smallest adds the most to pack, the largest
        the least (the best for spread). A node without some requested class
        cannot take the request: its bound is minus infinity, so it is only
        looked at when nothing better was found.
        """
        placed = 0.0
        for group in request.top.walk():
            for demand in group.demands:
                if demand.resource_class not in capacity_ranges:
                    return -math.inf
                smallest, largest = capacity_ranges[demand.resource_class]
                capacity = smallest if self.direction > 0 else largest
                placed += demand.amount / capacity
        bound = self._score(utilisation, inventory_count, placed)
        if self.summed:
            # A sum may round by more than ``bound_key``'s slack (a thousandth of its last
            # unit): raise the bound by what it may have lost, so that it stays a bound.
            terms = inventory_count + len(request.keys())
            magnitude = abs(utilisation) + abs(placed) + inventory_count
            bound += slack(terms, magnitude)
        return bound

    def _score(self, utilisation, inventory_count: int, placed):
        """The score of a node: floats, or fractions for the exact score."""
        if inventory_count == 0:
            return 0.0
        if self.summed:
            packed = utilisation + placed
            return packed if self.direction > 0 else inventory_count - packed
        packed = (utilisation + placed) / inventory_count
        return packed if self.direction > 0 else 1 - packed


SCORERS = {PACK: Scorer(PACK, 1), SPREAD: Scorer(SPREAD, -1)}


def scorer_for(name: str, node_ranking: str) -> Scorer:
    """The scorer ``name`` (pack, spread), ranking nodes by ``node_ranking`` (mean, sum)."""
    scorer = SCORERS[name]
    return Scorer(scorer.name, scorer.direction, summed=True) if node_ranking == SUM else scorer
