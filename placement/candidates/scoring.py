"""The score of a candidate under soft preferences (``preferences``), and its bounds.

For each request group g, with P_g its providers in the candidate (a granular
group's one provider; the unsuffixed group's, one per class):

* +1 for each trait g prefers that a provider of P_g has, -1 for each it avoids;
* +1 / -1 likewise for each aggregate a provider of P_g is in (for the unsuffixed
  group a provider's aggregates include its root's, as ``member_of`` reads them);
* with ``utilization``, for each group with resources, u_g: the mean over its
  classes c of usage / capacity of the provider giving c (usage before this
  request, capacity (total - reserved) x allocation_ratio); ``pack`` adds u_g,
  ``spread`` 1 - u_g.

The score is the sum. It is written per slot (``plan.slots``), so that a partial
placement has a score so far and a bound: a granular group is one slot, whose
value is all of its terms; each class of the unsuffixed group is one slot, whose
value is its share of u_g, and the unsuffixed group's trait and aggregate terms
(which need all its providers) are added at its last slot. A sum (``total``) is
``math.fsum`` (exactly rounded: it does not depend on the order of its terms)
rounded to ``SCORE_DIGITS`` decimals, so that two scores equal as fractions are
equal as floats (their terms' own rounding differs by far less), and a bound whose
terms are each at least a placement's is at least its score (both roundings are
monotonic).
"""

import math

from placement.candidates.plan import SearchPlan
from placement.candidates.preferences import GroupPreferences
from placement.candidates.request import CandidateRequest

SCORE_DIGITS = 9  # scores closer than this are equal; the body shows 6


def total(terms: list[float]) -> float:
    """The sum of a score's (or a bound's) terms."""
    return round(math.fsum(terms), SCORE_DIGITS)


# What one group prefers and avoids, by id.
Liking = GroupPreferences[int]


class Scorer:
    """The score of one request's placements (a provider per slot) over one plan."""

    def __init__(self, plan: SearchPlan, request: CandidateRequest) -> None:
        self.plan = plan
        trait_ids = plan.preferred_trait_ids
        providers = plan.world.providers
        self._providers = providers
        aggregate_ids = plan.world.aggregate_id_of_uuid

        def liking_of(group) -> Liking:
            wanted = group.preferences
            return Liking(
                traits=frozenset(trait_ids[t] for t in wanted.traits),
                avoided_traits=frozenset(trait_ids[t] for t in wanted.avoided_traits),
                aggregates=frozenset(
                    aggregate_ids[u] for u in wanted.aggregates if u in aggregate_ids
                ),
                avoided_aggregates=frozenset(
                    aggregate_ids[u] for u in wanted.avoided_aggregates if u in aggregate_ids
                ),
            )

        self.utilization = request.utilization
        unsuffixed = plan.unsuffixed_slots
        # Per slot: the granular group's liking (None: scored per group, or nothing).
        self._liking: list[Liking | None] = []
        # Per slot: (class id, weight) of its utilization terms.
        self._shares: list[tuple[tuple[int, float], ...]] = []
        for slot in plan.slots:
            liking = liking_of(slot.group) if slot.group.granular else None
            self._liking.append(liking or None)
            classes = len(slot.group.resources)
            self._shares.append(
                tuple((class_id, 1 / classes) for class_id, _ in slot.amounts)
                if self.utilization
                else ()
            )
        first_group = next((s.group for s in plan.slots if not s.group.granular), None)
        self._group_liking = liking_of(first_group) if first_group is not None else Liking()
        # Where the unsuffixed group's liking is added: its last slot (-1: never).
        self.group_position = unsuffixed[-1] if unsuffixed and self._group_liking else -1
        # Per slot, the values found so far by provider (twins share theirs: they are
        # scored alike).
        self.values: list[dict[int, float]] = []
        for slot in plan.slots:
            twin = slot.twin_of
            self.values.append(self.values[twin] if twin is not None else {})

    def value(self, position: int, provider_id: int) -> float:
        """The slot's own terms with the provider ``provider_id``."""
        found = self.values[position].get(provider_id)
        if found is None:
            found = self.values[position][provider_id] = self.new_value(position, provider_id)
        return found

    def new_value(self, position: int, provider_id: int) -> float:
        """``value``, worked out (not kept: ``value`` keeps it)."""
        provider = self._providers[provider_id]
        found = 0.0
        liking = self._liking[position]
        if liking is not None:
            found += liking.terms(provider.traits, provider.aggregates)
        pack = self.utilization == "pack"
        inventories = provider.inventories
        for class_id, weight in self._shares[position]:
            inventory = inventories[class_id]
            used = inventory.used / inventory.unrounded if inventory.unrounded else 0.0
            found += weight * (used if pack else 1 - used)
        return found

    def group_value(self, placed: list[int] | tuple[int, ...]) -> int:
        """The unsuffixed group's trait and aggregate terms, its slots placed as ``placed``."""
        traits: set[int] = set()
        aggregates: set[int] = set()
        providers = self._providers
        for position in self.plan.unsuffixed_slots:
            provider = providers[placed[position]]
            traits |= provider.traits
            aggregates |= provider.aggregates | providers[provider.root_id].aggregates
        return self._group_liking.terms(frozenset(traits), frozenset(aggregates))

    def group_most(self, options: list[list[int]]) -> int:
        """At most what ``group_value`` gives for a placement among ``options``."""
        traits: set[int] = set()
        aggregates: set[int] = set()
        providers = self._providers
        for position in self.plan.unsuffixed_slots:
            for provider_id in options[position]:
                provider = providers[provider_id]
                traits |= provider.traits
                aggregates |= provider.aggregates | providers[provider.root_id].aggregates
        return self._group_liking.most_terms(frozenset(traits), frozenset(aggregates))

    def score(self, placement: tuple[int, ...]) -> float:
        terms = [self.value(position, p) for position, p in enumerate(placement)]
        if self.group_position >= 0:
            terms.append(self.group_value(placement))
        return total(terms)

    def bests(self, options: list[list[int]]) -> list[float]:
        """Per slot, the most its value can be among its ``options``."""
        return [
            max(self.value(position, p) for p in choices)
            for position, choices in enumerate(options)
        ]
