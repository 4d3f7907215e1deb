"""The device nodes as the process's copy of the providers holds them, each kept until
its tree changes.

The device searches read the nodes from the copy the other searches read (the
application's ``Replica``), brought up to date from the change log at the start
of each search. A device node is a node of the device kind (``nodes.kinds``: its
root carries ``DEVICE_NODE_TRAIT``). Building a node (``snapshot.build_device_nodes``) needs
its stored topology document, which the copy does not hold: documents are read
only for the trees that changed since the node was last built. A changed tree
has a new ``TreeForm`` in the copy; a re-import that changes only the document
moves its root's generation (``importing.import_node``), so that shows too.

A search of every node starts from the nodes, grouped by kind, that the last such
search ended with, and changes only those of the trees the copy says changed
since (``ProviderWorld.trees_changed_since``): at 10,000 nodes, finding, checking
and grouping every node on every request would cost more than the search.
"""

import bisect
import itertools
from dataclasses import dataclass

from sqlalchemy import Connection

from placement.data import device_topologies
from placement.devices.snapshot import (
    DeviceNode,
    DeviceNodes,
    DeviceRoom,
    build_device_nodes,
    group_by_kind,
)
from placement.devices.stored import StoredTopologies
from placement.group_resources.replica_nodes import tree_parts
from placement.interning import Interned
from placement.nodes.kinds import NodeKind, node_roots, roots_among
from placement.nodes.naming import Naming
from placement.replica.replica import KeptPerTree, TreeFollower
from placement.replica.world import Inventory, ProviderWorld

MAX_TREES = 20_000  # nodes kept; beyond, the oldest are dropped
MAX_STATES = 100_000  # signatures numbered; beyond, numbering goes on afresh


@dataclass(frozen=True)
class _Kept:
    naming: tuple  # the naming it was built with
    name: str
    node: DeviceNode | None  # None: no node (no topology, or the tree does not match it)
    out_of_sync: bool  # a topology the tree no longer matches


class _EveryNode:
    """Every device node of the copy as its ``follower`` last saw it, grouped by kind:
    kept from one search to the next and brought up to date with the trees changed
    since, so that a search of 10,000 nodes does not find, check and group each of
    them again."""

    def __init__(self, naming_key: tuple) -> None:
        self.naming_key = naming_key
        self.follower = TreeFollower()
        self.kept: dict[int, _Kept] = {}  # by root id
        self.kinds: dict[object, list[DeviceNode]] = {}
        self.out_of_sync: set[str] = set()

    def drop(self, root_id: int) -> None:
        kept = self.kept.pop(root_id, None)
        if kept is None:
            return
        self.out_of_sync.discard(kept.name)
        if kept.node is not None:
            alike = self.kinds[kept.node.kind()]
            del alike[bisect.bisect_left(alike, kept.name, key=DeviceNode.by_name)]
            if not alike:
                del self.kinds[kept.node.kind()]

    def add(self, root_id: int, kept: _Kept) -> None:
        self.kept[root_id] = kept
        if kept.out_of_sync:
            self.out_of_sync.add(kept.name)
        if kept.node is not None:
            alike = self.kinds.setdefault(kept.node.kind(), [])
            bisect.insort(alike, kept.node, key=DeviceNode.by_name)

    def nodes(self) -> DeviceNodes:
        count = sum(len(alike) for alike in self.kinds.values())
        return DeviceNodes(self.kinds, count, sorted(self.out_of_sync))


class DeviceNodesKept:
    def __init__(self, stored: StoredTopologies, max_trees: int = MAX_TREES) -> None:
        self._stored = stored
        self._kept: KeptPerTree[_Kept] = KeptPerTree(max_trees)
        # Each kept node's signature and node resources as a number
        # (``DeviceNode.state_key``): a search then groups nodes alike by a number, not
        # by their whole state (``search.rank``).
        self._state_numbers: dict[tuple, int] = {}
        self._next_state = itertools.count()
        self._shared = Interned()  # the nodes' tables equal in content, as one object
        self._every: _EveryNode | None = None

    def read(
        self,
        conn: Connection,
        world: ProviderWorld,
        naming: Naming,
        node_names: list[str] | None,
    ) -> DeviceNodes:
        """The device nodes of ``world`` in sync with their topologies (only the named
        ones when given), and the names of those whose trees no longer match."""
        naming_key = _naming_key(naming)
        if node_names is None:
            return self._every_node(conn, world, naming, naming_key)
        current = self._current(
            conn,
            world,
            naming,
            naming_key,
            node_roots(world, NodeKind.DEVICE, node_names),
        )
        nodes = sorted((k.node for k in current.values() if k.node), key=DeviceNode.by_name)
        out_of_sync = sorted(k.name for k in current.values() if k.out_of_sync)
        return DeviceNodes(group_by_kind(nodes), len(nodes), out_of_sync)

    def _every_node(
        self, conn: Connection, world: ProviderWorld, naming: Naming, naming_key: tuple
    ) -> DeviceNodes:
        every = self._every
        if every is None or every.naming_key != naming_key:
            every = self._every = _EveryNode(naming_key)
        changed = every.follower.changed(world)
        if changed is None:
            every = self._every = _EveryNode(naming_key)
            every.follower.changed(world)  # (it starts where the world stands)
            roots = node_roots(world, NodeKind.DEVICE)
        else:
            for root_id in changed:
                every.drop(root_id)
            roots = roots_among(world, NodeKind.DEVICE, changed)
        for root_id, kept in self._current(conn, world, naming, naming_key, roots).items():
            every.add(root_id, kept)
        return every.nodes()

    def _current(
        self,
        conn: Connection,
        world: ProviderWorld,
        naming: Naming,
        naming_key: tuple,
        root_ids: list[int],
    ) -> dict[int, _Kept]:
        """What is kept of each of ``root_ids`` (device roots), built again where its
        tree changed since."""
        current: dict[int, _Kept] = {}
        changed: list[int] = []
        for root_id in root_ids:
            kept = self._kept.get(world, root_id)
            if kept is not None and kept.naming == naming_key:
                current[root_id] = kept
            else:
                changed.append(root_id)
        if changed:
            current.update(self._rebuild(conn, world, naming, naming_key, changed))
        return current

    def _rebuild(
        self,
        conn: Connection,
        world: ProviderWorld,
        naming: Naming,
        naming_key: tuple,
        root_ids: list[int],
    ) -> dict[int, _Kept]:
        names = {root_id: world.providers[root_id].name for root_id in root_ids}
        documents = device_topologies.read_documents(conn, sorted(set(names.values())))
        topologies = {name: self._stored.read(document) for name, document in documents.items()}
        providers, rooms = tree_parts(world, root_ids, _room)
        self._shared.trim(50 * len(world.trees))  # (a few tables per device)
        built, out_of_sync = build_device_nodes(topologies, providers, rooms, naming, self._shared)
        for node in built:
            node.state_key = self._state_number(
                (node.signature(), tuple(sorted(node.node_classes.items())))
            )
        by_name = {node.name: node for node in built}
        rebuilt = {}
        for root_id, name in names.items():
            kept = _Kept(naming_key, name, by_name.get(name), name in out_of_sync)
            self._kept.put(world, root_id, kept)
            rebuilt[root_id] = kept
        return rebuilt

    def _state_number(self, signature: tuple) -> int:
        if len(self._state_numbers) >= MAX_STATES:
            self._state_numbers.clear()  # numbers already given stay unique: never reused
        number = self._state_numbers.get(signature)
        if number is None:
            number = self._state_numbers[signature] = next(self._next_state)
        return number


def _room(inventory: Inventory) -> DeviceRoom:
    return DeviceRoom(
        capacity=inventory.capacity,
        used=inventory.used,
        free=inventory.free,
        units=(inventory.min_unit, inventory.max_unit, inventory.step_size),
    )


def _naming_key(naming: Naming) -> tuple:
    return (
        tuple(sorted(naming.standard_classes.items())),
        tuple(sorted(naming.byte_units.items())),
        tuple(sorted(naming.level_units.items())),
    )
