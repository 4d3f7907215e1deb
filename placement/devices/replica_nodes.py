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

from placement.candidates.world import ProviderWorld, TreeForm
from placement.data import device_topologies
from placement.data.group_nodes import ProviderRow
from placement.devices.snapshot import DeviceNode, DeviceRoom, build_device_nodes
from placement.devices.stored import StoredTopologies
from placement.nodes.naming import DEVICE_NODE_TRAIT, Naming

MAX_TREES = 20_000  # nodes kept; beyond, the oldest are dropped
MAX_STATES = 100_000  # signatures numbered; beyond, numbering goes on afresh


@dataclass(frozen=True)
class _Kept:
    form: TreeForm  # of the tree when built
    naming: tuple  # the naming it was built with
    name: str
    node: DeviceNode | None  # None: no node (no topology, or the tree does not match it)
    out_of_sync: bool  # a topology the tree no longer matches


class DeviceNodesKept:
    def __init__(self, stored: StoredTopologies, max_trees: int = MAX_TREES) -> None:
        self._stored = stored
        self._max_trees = max_trees
        self._kept: dict[int, _Kept] = {}
        # Each kept node's signature and node resources as a number
        # (``DeviceNode.state_key``): a search then groups nodes alike by a number, not
        # by their whole state (``search.rank``).
        self._state_numbers: dict[tuple, int] = {}
        self._next_state = itertools.count()

    def read(
        self, conn: Connection, world: ProviderWorld, naming: Naming,
        node_names: list[str] | None,
    ) -> tuple[list[DeviceNode], list[str]]:
        """The device nodes of ``world`` (those in sync, by name, only the named ones when
        given), and the names of those whose trees no longer match their topologies."""
        naming_key = _naming_key(naming)
        current: list[_Kept] = []
        changed: list[int] = []
        for root_id in _device_roots(world, node_names):
            kept = self._kept.get(root_id)
            if (kept is not None and kept.form is world.form_of_tree[root_id]
                    and kept.naming == naming_key):
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
        providers, rooms = _tree_parts(world, root_ids)
        built, out_of_sync = build_device_nodes(topologies, providers, rooms, naming)
        for node in built:
            node.state_key = self._state_number(
                (node.signature(), tuple(sorted(node.node_classes.items())))
            )
        by_name = {node.name: node for node in built}
        rebuilt = []
        for root_id, name in names.items():
            kept = _Kept(
                world.form_of_tree[root_id], naming_key, name, by_name.get(name),
                name in out_of_sync,
            )
            self._kept.pop(root_id, None)
            self._kept[root_id] = kept
            rebuilt.append(kept)
        if len(self._kept) > 2 * len(world.trees) + 100:  # trees gone: forget theirs
            self._kept = {r: k for r, k in self._kept.items() if r in world.trees}
        excess = max(len(self._kept) - self._max_trees, 0)
        for oldest in list(itertools.islice(self._kept, excess)):
            del self._kept[oldest]
        return rebuilt


    def _state_number(self, signature: tuple) -> int:
        if len(self._state_numbers) >= MAX_STATES:
            self._state_numbers.clear()  # numbers already given stay unique: never reused
        number = self._state_numbers.get(signature)
        if number is None:
            number = self._state_numbers[signature] = next(self._next_state)
        return number


def _device_roots(world: ProviderWorld, node_names: list[str] | None) -> list[int]:
    trait = world.trait_id_of_name.get(DEVICE_NODE_TRAIT)
    if trait is None:
        return []
    wanted = None if node_names is None else set(node_names)
    roots = [
        provider_id for provider_id in world.with_trait.get(trait, ())
        if world.providers[provider_id].parent_id is None
        and (wanted is None or world.providers[provider_id].name in wanted)
    ]
    roots.sort()
    return roots


def _tree_parts(
    world: ProviderWorld, root_ids: list[int]
) -> tuple[list[ProviderRow], dict[int, dict[str, DeviceRoom]]]:
    providers: list[ProviderRow] = []
    rooms: dict[int, dict[str, DeviceRoom]] = {}
    for root_id in root_ids:
        for provider_id in world.trees.get(root_id, ()):
            provider = world.providers[provider_id]
            providers.append(ProviderRow(
                provider.id, provider.uuid, provider.name, provider.parent_id, provider.root_id
            ))
            rooms[provider_id] = {
                world.class_names[class_id]: DeviceRoom(
                    capacity=inventory.capacity,
                    used=inventory.used,
                    free=inventory.free,
                    units=(inventory.min_unit, inventory.max_unit, inventory.step_size),
                )
                for class_id, inventory in provider.inventories.items()
            }
    return providers, rooms


def _naming_key(naming: Naming) -> tuple:
    return (tuple(sorted(naming.standard_classes.items())),
            tuple(sorted(naming.byte_units.items())))
