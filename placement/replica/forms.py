"""Tree forms: what a search without sharing providers sees of a tree, as a number and
its free amounts (``TreeForm``), worked out by ``tree_form`` whenever a tree changes in
the worker's copy of the providers (``world.ProviderWorld``).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from placement.interning import Interned


class _Provider(Protocol):
    """What a form reads of a provider (``world.Provider``)."""

    @property
    def parent_id(self) -> int | None: ...
    @property
    def inventories(self) -> Mapping[int, Any]: ...  # class id -> world.Inventory
    @property
    def traits(self) -> frozenset[int]: ...
    @property
    def aggregates(self) -> frozenset[int]: ...


@dataclass(frozen=True, slots=True, eq=False)
class TreeForm:
    """What a search without sharing providers sees of a tree.

    ``shape`` numbers the tree's shape (parents) and each provider's traits,
    aggregates and inventories without their amounts: two trees with one shape
    and the same free amounts have the same placements (in positions of their
    providers by id). Free amounts beyond what a request asks of a class change
    nothing either: ``frees`` lists each inventory's free amount so that the
    search can cap them (``search.tree_key``), and ``least_free`` answers at once
    whether every inventory has room for all a request asks.
    """

    shape: int
    least_free: dict[int, int]  # class id -> the least free of any provider of the tree
    frees: tuple[tuple[int, int], ...]  # (class id, free) of each inventory, in position order


def tree_form(
    providers: Mapping[int, _Provider],
    tree: list[int],
    numbers: dict[tuple, int],
    shared: Interned,
) -> TreeForm:
    """The form of ``tree`` (its providers' ids, in id order): its shape numbered in
    ``numbers`` (equal shapes, one number), its tables shared through ``shared``."""
    position = {provider_id: index for index, provider_id in enumerate(tree)}
    shape = []
    least_free: dict[int, int] = {}
    frees = []
    for provider in (providers[provider_id] for provider_id in tree):
        inventories = sorted(provider.inventories.items())
        shape.append(
            (
                position.get(provider.parent_id, -1),  # type: ignore[arg-type]
                provider.traits,
                provider.aggregates,
                tuple(
                    (class_id, i.min_unit, i.max_unit, i.step_size) for class_id, i in inventories
                ),
            )
        )
        for class_id, inventory in inventories:
            least_free[class_id] = min(least_free.get(class_id, inventory.free), inventory.free)
            frees.append((class_id, inventory.free))
    number = numbers.setdefault(tuple(shape), len(numbers))
    least = tuple(sorted(least_free.items()))
    return TreeForm(
        shape=number,
        least_free=shared.get(("least free", least), lambda: dict(least)),
        frees=shared.get(("frees", tuple(frees)), lambda: tuple(frees)),
    )
