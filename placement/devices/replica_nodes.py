"""The device nodes as the process's copy of the providers holds them, each kept until
its tree changes.

The device searches read the nodes from the copy the other searches read (the
application's ``Replica``), brought up to date from the change log at the start
of each search. A device node is a tree whose root carries
``DEVICE_NODE_TRAIT``. Building a node (``snapshot.build_device_nodes``) needs
its stored topology document, which the copy does not hold: documents are read
only for the trees that changed since the node was last built. A changed tree
has a new ``TreeForm`` in the copy; a re-import that changes only the document
moves its root's generation (``service.import_node``), so that shows too.
"""

import itertools
from dataclasses import dataclass

from sqlalchemy import Connection

from placement.candidates.world import Inventory, KeptPerTree, ProviderWorld
from placement.data import device_topologies
from placement.devices.snapshot import DeviceNode, DeviceRoom, build_device_nodes
from placement.devices.stored import StoredTopologies
from placement.group_resources.replica_nodes import tree_parts
from placement.interning import Interned
from placement.nodes.naming import DEVICE_NODE_TRAIT, Naming

MAX_TREES = 20_000  # nodes kept; beyond, the oldest are dropped
MAX_STATES = 100_000  # signatures numbered; beyond, numbering goes on afresh


@dataclass(frozen=True)
class _Kept:
    naming: tuple  # the naming it was built with
    name: str
    node: DeviceNode | None  # None: no node (no topology, or the tree does not match it)
    out_of_sync: bool  # a topology the tree no longer matches


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

    def read(
        self, conn: Connection, world: ProviderWorld, naming: Naming,
        node_names: list[str] | None,
    ) -> tuple[list[DeviceNode], list[str]]:
        """The device nodes of ``world`` (those in sync, by name, only the named ones when
        given), and the names of those whose trees no longer match their topologies."""
        naming_key = _naming_key(naming)
        current: list[_Kept] = []
        changed: list[int] = []
        for root_id in world.roots_with_trait(DEVICE_NODE_TRAIT, names=node_names):
            kept = self._kept.get(world, root_id)
            if kept is not None and kept.naming == naming_key:
                current.append(kept)
            else:
                changed.append(root_id)
        if changed:
            current += self._rebuild(conn, world, naming, naming_key, changed)
        nodes = sorted((k.node for k in current if k.node), key=lambda n: n.name)
        out_of_sync = sorted(k.name for k in current if k.out_of_sync)
        return nodes, out_of_sync

    def _rebuild(
        self, conn: Connection, world: ProviderWorld, naming: Naming, naming_key: tuple,
        root_ids: list[int],
    ) -> list[_Kept]:
        names = {root_id: world.providers[root_id].name for root_id in root_ids}
        documents = device_topologies.read_documents(conn, sorted(set(names.values())))
        topologies = {name: self._stored.read(document) for name, document in documents.items()}
        providers, rooms = tree_parts(world, root_ids, _room)
        self._shared.trim(50 * len(world.trees))  # (a few tables per device)
        built, out_of_sync = build_device_nodes(
            topologies, providers, rooms, naming, self._shared)
        for node in built:
            node.state_key = self._state_number(
                (node.signature(), tuple(sorted(node.node_classes.items())))
            )
        by_name = {node.name: node for node in built}
        rebuilt = []
        for root_id, name in names.items():
            kept = _Kept(naming_key, name, by_name.get(name), name in out_of_sync)
            self._kept.put(world, root_id, kept)
            rebuilt.append(kept)
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
    return (tuple(sorted(naming.standard_classes.items())),
            tuple(sorted(naming.byte_units.items())))
