"""What one provider must be to serve a slot, checked on the worker's copy of it.

A *slot* is one thing the search places on one provider: one resource class
of the unsuffixed group, one whole granular group, or one resourceless
granular group (``placement.candidates.slots``). A ``SlotFilter`` is all that
can be checked on one provider alone: the amount against capacity minus
usage, min_unit, max_unit and step_size; traits; aggregates; the in_tree
tree. A ``RootFilter`` is root_required, checked on the root of the tree a
candidate is anchored in. What needs several providers at once (sums on
one provider, traits spread over the unsuffixed group's providers,
group_policy, same_subtree) is the search's (``placement.candidates.search``).
"""

from dataclasses import dataclass, field

from placement.replica.world import Provider


@dataclass(frozen=True)
class SlotFilter:
    """One slot's demands on its provider (ids, not names).

    ``aggregates_span_root``: the unsuffixed group counts an aggregate of the
    provider's root as the provider's own (an aggregate on a root spans its
    tree); granular groups look at the provider only.
    """

    amounts: tuple[tuple[int, int], ...] = ()  # (class id, amount); none when resourceless
    required_traits: tuple[frozenset[int], ...] = ()
    forbidden_traits: frozenset[int] = field(default_factory=frozenset)
    member_of: tuple[frozenset[int], ...] = ()
    forbidden_aggregates: frozenset[int] = field(default_factory=frozenset)
    aggregates_span_root: bool = False
    tree_root_id: int | None = None

    def matches(self, provider: Provider, root: Provider) -> bool:
        for class_id, amount in self.amounts:
            inventory = provider.inventories.get(class_id)
            if inventory is None or not inventory.takes_exactly(amount):
                return False
        if self.tree_root_id is not None and provider.root_id != self.tree_root_id:
            return False
        traits = provider.traits
        if self.forbidden_traits and not self.forbidden_traits.isdisjoint(traits):
            return False
        for any_of in self.required_traits:
            if any_of.isdisjoint(traits):
                return False
        if self.member_of or self.forbidden_aggregates:
            aggregates = provider.aggregates
            if self.aggregates_span_root:
                aggregates = aggregates | root.aggregates
            if not self.forbidden_aggregates.isdisjoint(aggregates):
                return False
            for any_of in self.member_of:
                if any_of.isdisjoint(aggregates):
                    return False
        return True


@dataclass(frozen=True)
class RootFilter:
    """root_required: traits the root of a candidate's tree must have / lack."""

    required: tuple[frozenset[int], ...] = ()
    forbidden: frozenset[int] = field(default_factory=frozenset)

    def matches(self, root: Provider) -> bool:
        if not self.forbidden.isdisjoint(root.traits):
            return False
        return all(not any_of.isdisjoint(root.traits) for any_of in self.required)
