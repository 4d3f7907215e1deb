"""Device nodes kept between requests, per worker, and exact by construction.

Every change to a provider goes with a change of what ``ProviderVersion``
reads: its generation is bumped by every write of its inventories, traits,
aggregates or allocations (placement's own rule, which the data layer keeps
on every path); a rename or a move changes its name or parent; a deleted and
re-created provider has a new uuid; and an import that changes a node's
topology document bumps its root's generation too. A device node's snapshot
is therefore still right exactly when the versions of its tree's providers
are what they were when it was built.

So each search reads the versions (one narrow statement), rebuilds only the
trees whose versions differ (reading their documents), and reuses the other
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
from placement.nodes.naming import Naming

MAX_TREES = 20_000  # snapshots kept per worker; beyond, the oldest are dropped


@dataclass(frozen=True)
class _Kept:
    versions: tuple  # the tree's ProviderVersions when built
    name: str
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
        trees: dict[int, list] = {}
        for version in device_topologies.provider_versions(conn, node_names):
            trees.setdefault(version.root_id, []).append(version)
        database = (str(conn.engine.url), _naming_key(naming))
        current: dict[int, _Kept] = {}
        changed: dict[int, tuple] = {}
        for root_id, versions in trees.items():
            key = tuple(versions)
            kept = self._kept.get((database, root_id))
            if kept is not None and kept.versions == key:
                current[root_id] = kept
            else:
                changed[root_id] = key
        if changed:
            current.update(self._rebuild(conn, naming, changed, database))
        nodes = sorted((k.node for k in current.values() if k.node), key=lambda n: n.name)
        out_of_sync = sorted(k.name for k in current.values() if k.node is None)
        return nodes, out_of_sync

    def _rebuild(self, conn, naming, changed: dict[int, tuple], database):
        providers, inventories = group_nodes.read_nodes(conn, root_ids=sorted(changed))
        names = {p.id: p.name for p in providers if p.id == p.root_provider_id}
        documents = device_topologies.read_documents(conn, sorted(names.values()))
        topologies = {name: self._stored_topology(documents[name]) for name in documents}
        built, _out_of_sync = build_device_nodes(topologies, providers, inventories, naming)
        by_name = {node.name: node for node in built}
        rebuilt = {}
        for root_id, versions in changed.items():
            if root_id not in names or names[root_id] not in documents:
                continue  # no longer a managed tree, or its topology is gone: no node
            name = names[root_id]
            rebuilt[root_id] = _Kept(versions, name, by_name.get(name))
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
