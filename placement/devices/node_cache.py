"""Device nodes kept between requests, per worker, and exact by construction.

Every change to a provider goes with a change of what ``ProviderVersion``
reads: its generation is bumped by every write of its inventories, traits,
aggregates or allocations (placement's own rule, which the data layer keeps
on every path); a rename or a move changes its name or parent; a deleted and
re-created provider has a new uuid. A device node's snapshot is therefore
still right exactly when the versions of its tree's providers and its
topology document's text are what they were when it was built.

So each search reads the versions (one narrow statement) and the documents,
rebuilds only the trees whose versions differ, and reuses the other
snapshots. Several workers on several hosts each keep their own: none can
be stale, since each checks against the database on every request. A
snapshot built from rows newer than the versions it is stored with is
rebuilt once more on the next request, never reused when wrong.
"""

import itertools
import threading
from dataclasses import dataclass

from sqlalchemy import Connection

from placement.data import device_topologies, group_nodes
from placement.devices.snapshot import DeviceNode, build_device_nodes
from placement.group_resources.naming import Naming

MAX_TREES = 20_000  # snapshots kept per worker; beyond, the oldest are dropped


@dataclass(frozen=True)
class _Kept:
    versions: tuple  # the tree's ProviderVersions when built
    document: str
    node: DeviceNode | None  # None: the tree does not match its topology


class DeviceNodeCache:
    def __init__(self, stored_topology, max_trees: int = MAX_TREES) -> None:
        self._stored_topology = stored_topology  # document text -> StoredTopology
        self._max_trees = max_trees
        self._kept: dict[tuple, _Kept] = {}
        self._lock = threading.Lock()

    def read(
        self, conn: Connection, naming: Naming, node_names: list[str] | None
    ) -> tuple[list[DeviceNode], list[str]]:
        """The device nodes as they are now (those in sync, by name), and the names of
        those whose trees no longer match their topologies."""
        documents = device_topologies.read_documents(conn, node_names)
        if not documents:
            return [], []
        trees: dict[int, list] = {}
        for version in device_topologies.provider_versions(conn, sorted(documents)):
            trees.setdefault(version.root_id, []).append(version)
        database = (str(conn.engine.url), _naming_key(naming))
        current: dict[int, _Kept] = {}
        changed: dict[int, tuple] = {}
        for root_id, versions in trees.items():
            root = next((v for v in versions if v.id == root_id), None)
            if root is None or root.name not in documents:
                continue
            key = tuple(versions)
            kept = self._kept.get((database, root_id))
            if kept is not None and kept.versions == key and kept.document == documents[root.name]:
                current[root_id] = kept
            else:
                changed[root_id] = key
        if changed:
            current.update(self._rebuild(conn, naming, documents, changed, database))
        nodes = sorted((k.node for k in current.values() if k.node), key=lambda n: n.name)
        out_of_sync = sorted(
            version.name
            for root_id, kept in current.items()
            if kept.node is None
            for version in trees[root_id]
            if version.id == root_id
        )
        return nodes, out_of_sync

    def _rebuild(self, conn, naming, documents, changed: dict[int, tuple], database):
        providers, inventories = group_nodes.read_nodes(conn, root_ids=sorted(changed))
        names = {p.id: p.name for p in providers if p.id == p.root_provider_id}
        topologies = {
            names[root_id]: self._stored_topology(documents[names[root_id]])
            for root_id in changed
            if root_id in names
        }
        built, _out_of_sync = build_device_nodes(topologies, providers, inventories, naming)
        by_name = {node.name: node for node in built}
        rebuilt = {}
        for root_id, versions in changed.items():
            if root_id not in names:
                continue  # no longer a managed tree: the node is gone
            name = names[root_id]
            rebuilt[root_id] = _Kept(versions, documents[name], by_name.get(name))
        with self._lock:
            for root_id, kept in rebuilt.items():
                self._kept.pop((database, root_id), None)
                self._kept[(database, root_id)] = kept
            excess = max(len(self._kept) - self._max_trees, 0)
            for oldest in list(itertools.islice(self._kept, excess)):
                del self._kept[oldest]
        return rebuilt


def _naming_key(naming: Naming) -> tuple:
    return (tuple(sorted(naming.standard_classes.items())),
            tuple(sorted(naming.byte_units.items())))
