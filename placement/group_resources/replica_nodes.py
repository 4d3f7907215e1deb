"""The translator's nodes as the process's copy of the providers holds them.

The translator's searches (candidates, claims) read the nodes from the copy the
candidate search keeps (``placement.candidates.world``: the application's
``Replica``), brought up to date from the change log at the start of each
search: no statement reads every node. What the copy holds of a tree is what
``data.group_nodes.read_nodes`` reads of it in the same snapshot: its providers
with their names and parents, and each inventory with its usage.

A node is a tree whose root carries ``NODE_TRAIT`` and not
``DEVICE_NODE_TRAIT`` (the device routes own those). The score bounds of the
search with ``limit`` (``NodeSummary``) are each tree's own figures, kept (by
the caller, ``SummariesKept``) per tree until the tree changes.
"""

from dataclasses import dataclass

from placement.candidates.world import ProviderWorld, TreeForm
from placement.data.group_nodes import ProviderRow
from placement.group_resources.snapshot import Node, Room, build_nodes
from placement.nodes.naming import DEVICE_NODE_TRAIT, NODE_TRAIT


@dataclass(frozen=True)
class NodeSummary:
    """What bounds a node's score (``Scorer.bound``), without building the node."""

    root_id: int
    name: str
    inventory_count: int
    utilisation: float  # sum of used/capacity over the tree's inventories
    # class -> (smallest, largest) capacity above 0 of the tree's inventories of it
    capacities: dict[str, tuple[float, float]]


class SummariesKept:
    """Each tree's ``NodeSummary`` with the form of the tree it was computed for: a
    changed tree has a new ``TreeForm``, so a kept summary is used only while its
    tree's form is the one it was computed for."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[TreeForm, NodeSummary]] = {}

    def summary(self, world: ProviderWorld, root_id: int) -> NodeSummary:
        form = world.form_of_tree[root_id]
        kept = self._kept.get(root_id)
        if kept is not None and kept[0] is form:
            return kept[1]
        summary = _summarize(world, root_id)
        self._kept[root_id] = (form, summary)
        if len(self._kept) > 2 * len(world.trees) + 100:  # trees gone: forget theirs
            self._kept = {r: k for r, k in self._kept.items() if r in world.trees}
        return summary


class ReplicaNodes:
    """The nodes of one search, read from ``world`` (held up to date and locked by the
    caller for the whole search)."""

    def __init__(
        self, world: ProviderWorld, node_names: list[str] | None, summaries: SummariesKept
    ) -> None:
        self._world = world
        self._root_ids = _managed_roots(world, node_names)
        self._summaries = summaries

    def summaries(self) -> list[NodeSummary]:
        return [self._summaries.summary(self._world, root_id) for root_id in self._root_ids]

    def nodes(
        self, root_ids: list[int] | None = None, signatures: dict[tuple, int] | None = None
    ) -> list[Node]:
        """The nodes of these roots (None: every node of the search), by name."""
        world = self._world
        providers: list[ProviderRow] = []
        rooms: dict[int, dict[str, Room]] = {}
        for root_id in self._root_ids if root_ids is None else root_ids:
            for provider_id in world.trees.get(root_id, ()):
                provider = world.providers[provider_id]
                providers.append(ProviderRow(
                    provider.id, provider.uuid, provider.name, provider.parent_id,
                    provider.root_id,
                ))
                if provider.inventories:
                    rooms[provider_id] = {
                        world.class_names[class_id]: Room(
                            unrounded_capacity=inventory.unrounded,
                            used=inventory.used,
                            free=inventory.free,
                            min_unit=inventory.min_unit,
                            max_unit=inventory.max_unit,
                            step_size=inventory.step_size,
                        )
                        for class_id, inventory in provider.inventories.items()
                    }
        return build_nodes(providers, rooms, signatures)


def _managed_roots(world: ProviderWorld, node_names: list[str] | None) -> list[int]:
    node_trait = world.trait_id_of_name.get(NODE_TRAIT)
    if node_trait is None:
        return []
    device_trait = world.trait_id_of_name.get(DEVICE_NODE_TRAIT)
    device_roots = world.with_trait.get(device_trait, set()) if device_trait is not None else set()
    wanted = None if node_names is None else set(node_names)
    roots = []
    for provider_id in world.with_trait.get(node_trait, ()):
        provider = world.providers[provider_id]
        if provider.parent_id is not None or provider_id in device_roots:
            continue
        if wanted is None or provider.name in wanted:
            roots.append(provider_id)
    roots.sort()
    return roots


def _summarize(world: ProviderWorld, root_id: int) -> NodeSummary:
    count = 0
    utilisation = 0.0
    capacities: dict[str, tuple[float, float]] = {}
    for provider_id in world.trees[root_id]:
        for class_id, inventory in world.providers[provider_id].inventories.items():
            count += 1
            if inventory.unrounded <= 0:
                continue  # holds nothing, bounds nothing
            utilisation += inventory.used / inventory.unrounded
            name = world.class_names[class_id]
            smallest, largest = capacities.get(name, (inventory.unrounded, inventory.unrounded))
            capacities[name] = (min(smallest, inventory.unrounded),
                                max(largest, inventory.unrounded))
    return NodeSummary(
        root_id=root_id,
        name=world.providers[root_id].name,
        inventory_count=count,
        utilisation=utilisation,
        capacities=capacities,
    )

