"""The translator's nodes as the process's copy of the providers holds them.

The translator's searches (candidates, claims) read the nodes from the copy the
candidate search keeps (``placement.candidates.world``: the application's
``Replica``), brought up to date from the change log at the start of each
search: no statement reads every node. What the copy holds of a tree is what
``data.group_nodes.read_nodes`` reads of it in the same snapshot: its providers
with their names and parents, and each inventory with its usage.

A node is a tree whose root carries ``NODE_TRAIT`` and not
``DEVICE_NODE_TRAIT`` (the device routes own those). The score bounds of the
search with ``limit`` (``NodeSummary``) are each tree's own figures; they and
the built nodes are kept (``NodesKept``, by the translator's front door) per tree
until the tree changes.
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


MAX_GROUP_STATES = 200_000  # groups numbered; beyond, numbering and kept nodes start over


@dataclass(frozen=True)
class _KeptNode:
    form: TreeForm  # of the tree when built
    node: Node | None  # None: the tree is not as a node's map writes it


class NodesKept:
    """What the translator's searches keep between requests, per tree, with the form of
    the tree it was made from (a changed tree has a new ``TreeForm``, so what is kept
    serves only while its tree's form is the one it was made from): each tree's
    ``NodeSummary`` and its built ``Node``.

    Built nodes carry group signatures (``snapshot``: equal numbers for equal groups),
    so every node kept was numbered by one numbering, kept here too; when it grows
    past ``MAX_GROUP_STATES`` it starts over, and the nodes numbered by it go with it.
    """

    def __init__(self) -> None:
        self._summaries: dict[int, tuple[TreeForm, NodeSummary]] = {}
        self._nodes: dict[int, _KeptNode] = {}
        self.signatures: dict[tuple, int] = {}

    def summary(self, world: ProviderWorld, root_id: int) -> NodeSummary:
        form = world.form_of_tree[root_id]
        kept = self._summaries.get(root_id)
        if kept is not None and kept[0] is form:
            return kept[1]
        summary = _summarize(world, root_id)
        self._summaries[root_id] = (form, summary)
        if len(self._summaries) > 2 * len(world.trees) + 100:  # trees gone: forget theirs
            self._summaries = {r: k for r, k in self._summaries.items() if r in world.trees}
        return summary

    def nodes(self, world: ProviderWorld, root_ids: list[int]) -> list[Node]:
        """The nodes of these roots (those whose trees are as a map writes them), by name."""
        if len(self.signatures) > MAX_GROUP_STATES:
            self.signatures.clear()
            self._nodes.clear()
        found: list[Node] = []
        to_build = []
        for root_id in root_ids:
            kept = self._nodes.get(root_id)
            if kept is not None and kept.form is world.form_of_tree[root_id]:
                if kept.node is not None:
                    found.append(kept.node)
            else:
                to_build.append(root_id)
        if to_build:
            built = {node.root.uuid: node for node in _build(world, to_build, self.signatures)}
            for root_id in to_build:
                node = built.get(world.providers[root_id].uuid)
                self._nodes[root_id] = _KeptNode(world.form_of_tree[root_id], node)
                if node is not None:
                    found.append(node)
            if len(self._nodes) > 2 * len(world.trees) + 100:  # trees gone: forget theirs
                self._nodes = {r: k for r, k in self._nodes.items() if r in world.trees}
        found.sort(key=lambda node: node.name)
        return found


class ReplicaNodes:
    """The nodes of one search, read from ``world`` (held up to date and locked by the
    caller for the whole search)."""

    def __init__(
        self, world: ProviderWorld, node_names: list[str] | None, kept: NodesKept
    ) -> None:
        self._world = world
        self._root_ids = _managed_roots(world, node_names)
        self._kept = kept

    def summaries(self) -> list[NodeSummary]:
        return [self._kept.summary(self._world, root_id) for root_id in self._root_ids]

    def nodes(self, root_ids: list[int] | None = None) -> list[Node]:
        """The nodes of these roots (None: every node of the search), by name."""
        return self._kept.nodes(self._world, self._root_ids if root_ids is None else root_ids)


def _build(world: ProviderWorld, root_ids: list[int], signatures: dict[tuple, int]) -> list[Node]:
    providers: list[ProviderRow] = []
    rooms: dict[int, dict[str, Room]] = {}
    for root_id in root_ids:
        for provider_id in world.trees.get(root_id, ()):
            provider = world.providers[provider_id]
            providers.append(ProviderRow(
                provider.id, provider.uuid, provider.name, provider.parent_id, provider.root_id,
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

