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

from collections.abc import Callable
from dataclasses import dataclass, field

from placement import capacity
from placement.replica.world import Provider


@dataclass(frozen=True)
class Check:
    """One of a slot filter's checks, named for an explanation (``candidates.explain``)."""

    name: str
    test: Callable[[Provider, Provider], bool]  # (provider, its root) -> passes
    # The amounts the provider lacks (a free-amount check), else None.
    short: Callable[[Provider], dict[str, int] | None] = lambda provider: None


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

    def checks(self, class_names: dict[int, str], names: dict[str, dict[int, str]]) -> list[Check]:
        """``matches`` one check at a time, in its order (so that a provider passes them
        all exactly when it matches), each named with ``class_names`` and the trait and
        aggregate names of ``names``."""
        checks = []
        for class_id, amount in self.amounts:
            checks.extend(_amount_checks(class_id, class_names[class_id], amount))
        if self.tree_root_id is not None:
            tree_root_id = self.tree_root_id
            checks.append(Check("in_tree", lambda p, r: p.root_id == tree_root_id))
        traits, aggregates = names["traits"], names["aggregates"]
        if self.forbidden_traits:
            forbidden = self.forbidden_traits
            checks.append(
                Check(
                    f"without traits {_listed(forbidden, traits)}",
                    lambda p, r: forbidden.isdisjoint(p.traits),
                )
            )
        for any_of in self.required_traits:
            checks.append(
                Check(
                    f"with {_one_of('trait', any_of, traits)}",
                    _shares(any_of, lambda p, r: p.traits),
                )
            )
        span = self.aggregates_span_root

        def aggregates_of(p: Provider, r: Provider) -> frozenset[int]:
            return p.aggregates | r.aggregates if span else p.aggregates

        if self.forbidden_aggregates:
            shunned = self.forbidden_aggregates
            checks.append(
                Check(
                    f"in none of aggregates {_listed(shunned, aggregates)}",
                    lambda p, r: shunned.isdisjoint(aggregates_of(p, r)),
                )
            )
        for any_of in self.member_of:
            checks.append(
                Check(
                    f"in {_one_of('aggregate', any_of, aggregates)}", _shares(any_of, aggregates_of)
                )
            )
        return checks


def _shares(
    any_of: frozenset[int], ids_of: Callable[[Provider, Provider], frozenset[int]]
) -> Callable[[Provider, Provider], bool]:
    """A test: the provider's ids (``ids_of(provider, root)``) include one of ``any_of``."""
    return lambda p, r: not any_of.isdisjoint(ids_of(p, r))


def _amount_checks(class_id: int, name: str, amount: int) -> list[Check]:
    def has(p: Provider, r: Provider) -> bool:
        return class_id in p.inventories

    def units_allow(p: Provider, r: Provider) -> bool:
        i = p.inventories.get(class_id)
        return i is not None and capacity.units_allow(amount, i.min_unit, i.max_unit, i.step_size)

    def free(p: Provider, r: Provider) -> bool:
        i = p.inventories.get(class_id)
        return i is not None and amount <= i.free

    def short(p: Provider) -> dict[str, int] | None:
        i = p.inventories.get(class_id)
        return {name: amount - i.free} if i is not None else None

    return [
        Check(f"has {name}", has),
        Check(f"{name}: min_unit, max_unit and step_size allow {amount}", units_allow),
        Check(f"{name}: {amount} free (capacity less usage)", free, short),
    ]


def _listed(ids: frozenset[int], names: dict[int, str]) -> str:
    return ", ".join(sorted(names.get(i, str(i)) for i in ids))


def _one_of(kind: str, ids: frozenset[int], names: dict[int, str]) -> str:
    if len(ids) == 1:
        return f"{kind} {_listed(ids, names)}"
    return f"one of {kind}s {_listed(ids, names)}"


@dataclass(frozen=True)
class RootFilter:
    """root_required: traits the root of a candidate's tree must have / lack."""

    required: tuple[frozenset[int], ...] = ()
    forbidden: frozenset[int] = field(default_factory=frozenset)

    def matches(self, root: Provider) -> bool:
        if not self.forbidden.isdisjoint(root.traits):
            return False
        return all(not any_of.isdisjoint(root.traits) for any_of in self.required)
