"""The translator's nodes as the process's copy of the providers holds them.

Every read of the translator's nodes (candidates, claims, explanations, queries,
a node's view) reads them from the copy the candidate search keeps
(``placement.replica.world``: the application's ``Replica``), brought up to date
from the change log at the start of each call: no statement reads every node. The
copy holds each tree's providers with their names and parents, and each inventory
as stored with its usage.

The translator's nodes are the nodes of its kind (``nodes.kinds``: not the device
nodes, which the device feature owns). The score bounds of the
search with ``limit`` (``NodeSummary``) are each tree's own figures; they and
the built nodes are kept (``NodesKept``, by the translator's front door) per tree
until the tree changes.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from placement.group_resources.snapshot import Node, ProviderRow, Room, Signatures, build_nodes
from placement.nodes.kinds import NodeKind, node_roots
from placement.nodes.naming import path_of
from placement.replica.replica import KeptPerTree
from placement.replica.world import Inventory, ProviderWorld

AnyRoom = TypeVar("AnyRoom")


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
class _Built:
    node: Node | None  # None: the tree is not as a node's map writes it


class NodesKept:
    """What the translator's searches keep between requests, per tree until it changes
    (``KeptPerTree``): each tree's ``NodeSummary`` and its built ``Node``.

    Built nodes carry group signatures (``snapshot``: equal numbers for equal groups),
    so every node kept was numbered by one numbering, kept here too; when it grows
    past ``MAX_GROUP_STATES`` it starts over, and the nodes numbered by it go with it.
    """

    def __init__(self) -> None:
        self._summaries: KeptPerTree[NodeSummary] = KeptPerTree()
        self._nodes: KeptPerTree[_Built] = KeptPerTree()
        self.signatures: Signatures = {}

    def summary(self, world: ProviderWorld, root_id: int) -> NodeSummary:
        summary = self._summaries.get(world, root_id)
        if summary is None:
            summary = _summarize(world, root_id)
            self._summaries.put(world, root_id, summary)
        return summary

    def nodes(self, world: ProviderWorld, root_ids: list[int]) -> list[Node]:
        """The nodes of these roots (those whose trees are as a map writes them), by name."""
        found = [node for node in self.nodes_of_roots(world, root_ids) if node is not None]
        found.sort(key=lambda node: node.name)
        return found

    def nodes_of_roots(self, world: ProviderWorld, root_ids: list[int]) -> list[Node | None]:
        """The node of each of these roots, in their order; None where a tree is not as a
        node's map writes it."""
        if len(self.signatures) > MAX_GROUP_STATES:
            self.signatures.clear()
            self._nodes.clear()
        found: list[Node | None] = []
        to_build = []
        for root_id in root_ids:
            kept = self._nodes.get(world, root_id)
            if kept is None:
                to_build.append(root_id)
            found.append(None if kept is None else kept.node)
        if to_build:
            providers, rooms = tree_parts(world, to_build, _room)
            built = {
                node.root.uuid: node for node in build_nodes(providers, rooms, self.signatures)
            }
            built_now: dict[int, Node | None] = {}
            for root_id in to_build:
                node = built_now[root_id] = built.get(world.providers[root_id].uuid)
                self._nodes.put(world, root_id, _Built(node))
            found = [
                built_now[root_id] if root_id in built_now else node
                for root_id, node in zip(root_ids, found, strict=True)
            ]
        return found


class ReplicaNodes:
    """The nodes of one search, read from ``world`` (held up to date and locked by the
    caller for the whole search)."""

    def __init__(self, world: ProviderWorld, node_names: list[str] | None, kept: NodesKept) -> None:
        self._world = world
        self._root_ids = node_roots(world, NodeKind.GROUP, node_names)
        self._kept = kept

    def summaries(self) -> list[NodeSummary]:
        return [self._kept.summary(self._world, root_id) for root_id in self._root_ids]

    def nodes(self, root_ids: list[int] | None = None) -> list[Node]:
        """The nodes of these roots (None: every node of the search), by name."""
        return self._kept.nodes(self._world, self._root_ids if root_ids is None else root_ids)

    def nodes_of_roots(self, root_ids: list[int]) -> list[Node | None]:
        """The node of each of these roots, in their order (None: not a node's tree)."""
        return self._kept.nodes_of_roots(self._world, root_ids)


def stored_view(world: ProviderWorld, root_id: int) -> dict:
    """The node of ``root_id`` as stored, JSON-ready: its groups by key path, each with its
    provider and inventories with usage (providers others added to the tree left out)."""
    root = world.providers[root_id]
    groups = []
    node_inventories: dict = {}
    for provider_id in world.trees[root_id]:
        provider = world.providers[provider_id]
        inventories = {
            world.class_names[class_id]: {
                "total": inventory.total,
                "reserved": inventory.reserved,
                "allocation_ratio": inventory.allocation_ratio,
                "used": inventory.used,
            }
            for class_id, inventory in provider.inventories.items()
        }
        if provider_id == root_id:
            node_inventories = inventories
            continue
        path = path_of(root.name, provider.name)
        if path:  # (None: a provider the translator does not own)
            groups.append(
                {"key": "/".join(path), "uuid": provider.uuid, "inventories": inventories}
            )
    groups.sort(key=lambda group: str(group["key"]))
    return {
        "name": root.name,
        "uuid": root.uuid,
        "generation": root.generation,
        "inventories": node_inventories,
        "groups": groups,
    }


def tree_parts(
    world: ProviderWorld, root_ids: list[int], room: Callable[[Inventory], AnyRoom]
) -> tuple[list[ProviderRow], dict[int, dict[str, AnyRoom]]]:
    """The providers of these trees as rows, and each provider's inventories (by class
    name) as ``room`` makes them: what nodes are built from (the device nodes too)."""
    providers: list[ProviderRow] = []
    rooms: dict[int, dict[str, AnyRoom]] = {}
    for root_id in root_ids:
        for provider_id in world.trees.get(root_id, ()):
            provider = world.providers[provider_id]
            providers.append(
                ProviderRow(
                    provider.id,
                    provider.uuid,
                    provider.name,
                    provider.parent_id,
                    provider.root_id,
                )
            )
            rooms[provider_id] = {
                world.class_names[class_id]: room(inventory)
                for class_id, inventory in provider.inventories.items()
            }
    return providers, rooms


def _room(inventory: Inventory) -> Room:
    return Room(
        unrounded_capacity=inventory.unrounded,
        used=inventory.used,
        free=inventory.free,
        min_unit=inventory.min_unit,
        max_unit=inventory.max_unit,
        step_size=inventory.step_size,
    )


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
            capacities[name] = (
                min(smallest, inventory.unrounded),
                max(largest, inventory.unrounded),
            )
    return NodeSummary(
        root_id=root_id,
        name=world.providers[root_id].name,
        inventory_count=count,
        utilisation=utilisation,
        capacities=capacities,
    )
