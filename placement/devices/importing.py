"""Device topology import: a node's topology -> its provider tree (written by the
translator's ``sync.write_tree`` from the map ``node_map`` makes) and its stored
topology document; and the delete of a device node with its document.

Each function takes an open connection inside a transaction and leaves the commit to
its caller, so one call is one transaction. ``topology_from_body`` reads the import
body (a matrix with details, or a device list) into a ``Topology``.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from sqlalchemy import Connection

from placement import errors
from placement.data import allocations as allocation_data
from placement.data import device_topologies, group_nodes
from placement.data import provider_traits as trait_data
from placement.data import providers as provider_data
from placement.devices.device_list import gpu_memory_kib, parse_device_list
from placement.devices.node_map import (
    LABEL_TRAIT_PREFIX,
    NUMA_TRAIT,
    Layout,
    device_layout,
    device_naming,
)
from placement.devices.topology import Topology
from placement.devices.topology_matrix import MatrixDetails, parse_matrix
from placement.group_resources import sync as group_sync
from placement.nodes.naming import DEVICE_NODE_TRAIT, Naming, provider_name

MIB = 2**20


@dataclass(frozen=True)
class ImportResult:
    created: bool
    changed: bool


def topology_from_body(body: Mapping) -> Topology:
    """The topology an import body describes: a matrix with details, or a device list."""
    if "matrix" in body:
        gpu = body["gpu"]
        rdma = body.get("rdma", {})
        if isinstance(gpu["memory"], str):
            refuse_decimal_memory(gpu["memory"], "gpu.memory")
        details = MatrixDetails(
            gpu_memory_kib=gpu_memory_kib(gpu["memory"], "gpu.memory"),
            gpu_ids=tuple(gpu.get("ids", ())),
            gpu_labels=gpu.get("labels", {}),
            rdma_vfs=rdma.get("vfs", 0),
            rdma_labels=rdma.get("labels", {}),
            rdma_vf_labels=rdma.get("vfLabels", {}),
            node_resources=body.get("resources", {}),
        )
        return parse_matrix(body["matrix"], details)
    return parse_device_list(
        {key: body[key] for key in ("devices", "nvlinks", "resources") if key in body}
    )


# A number and a decimal unit (k, M, G, T, P, E), with or without a trailing B.
DECIMAL_MEMORY = re.compile(r"\s*(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[kKMGTPE])B?\s*")
DECIMAL_POWERS = {"k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def refuse_decimal_memory(value: str, where: str) -> None:
    """400 for a GPU memory in decimal units (``80GB``, ``80G``: 80 * 10**9 bytes, 76293
    MiB), rarely what a GPU's datasheet or ``nvidia-smi`` means by 80 GB: the matrix
    import takes binary units (``80Gi``, ``81920Mi``) or bytes rather than guess."""
    decimal = DECIMAL_MEMORY.fullmatch(value)
    if decimal is None:
        return
    number, unit = decimal["number"], decimal["unit"]
    power = DECIMAL_POWERS[unit]
    as_decimal = Fraction(number) * 1000**power // MIB
    as_binary = Fraction(number) * 1024**power // MIB
    raise errors.BadRequest(
        f"{where} {value.strip()} is in decimal units ({number}{unit}B = {number} x "
        f"1000^{power} bytes, {as_decimal} MiB). Give GPU memory in binary units: "
        f"{number}{unit.upper()}i is {as_binary} MiB."
    )


def import_node(
    conn: Connection, node: str, topology: Topology, naming: Naming, node_uuid: str | None = None
) -> ImportResult:
    """Write the node's tree and store its topology; idempotent.

    A device's health is the document's alone: changing it writes no inventory and
    leaves allocations alone, but moves the device provider's generation, locking its
    row as a claim's write does, so that a claim racing the import is ordered with it
    (``DeviceSearch.claim`` reads the health again once its rows are locked)."""
    layout = device_layout(topology)
    synced = group_sync.write_tree(conn, node, layout.resources, device_naming(naming), node_uuid)
    traits_changed = _sync_traits(conn, node, layout)
    health_before = _health(device_topologies.read_documents(conn, [node]).get(node))
    document_changed = device_topologies.store_document(conn, node, topology.to_document())
    if document_changed and not synced.created:
        # The document is part of what the node is: the nodes kept per process
        # (``replica_nodes``) see it change by its root's generation, like any other change.
        root = group_sync.require_node(conn, node)
        provider_data.bump_generation(conn, root, root.generation)
        health_changed = [
            provider_name(node, layout.devices[(d.type, d.minor)])
            for d in topology.devices
            if health_before.get((d.type, d.minor), d.healthy) != d.healthy
        ]
        allocation_data.lock_providers(
            conn,
            [
                provider.id
                for name in health_changed
                if (provider := provider_data.get_provider_by_name(conn, name)) is not None
            ],
        )
    return ImportResult(
        created=synced.created, changed=synced.changed or traits_changed or document_changed
    )


def _health(document: str | None) -> dict[tuple[str, int], bool]:
    """(type, minor) -> healthy, of a stored document (none: no device)."""
    if document is None:
        return {}
    return {(d["type"], d["minor"]): d.get("health", True) for d in json.loads(document)["devices"]}


def _sync_traits(conn: Connection, node: str, layout: Layout) -> bool:
    """The root gets DEVICE_NODE_TRAIT, NUMA nodes HW_NUMA_ROOT, devices a trait per
    label; other traits are left alone, label traits no longer wanted are taken off."""
    wanted = dict(layout.traits)
    wanted[()] = set(wanted.get((), set())) | {DEVICE_NODE_TRAIT}
    wanted_custom = {t for traits in wanted.values() for t in traits}
    group_nodes.ensure_custom_names(conn, set(), wanted_custom)
    changed = False
    for path, extra in sorted(wanted.items()):
        provider = provider_data.get_provider_by_name(conn, provider_name(node, path))
        if provider is None:
            continue
        current = set(trait_data.get_provider_traits(conn, provider))
        owned = {NUMA_TRAIT} if NUMA_TRAIT in extra else set()
        kept = {t for t in current if not t.startswith(LABEL_TRAIT_PREFIX)} - owned
        target = kept | extra
        if target != current:
            trait_data.set_provider_traits(conn, provider, sorted(target), provider.generation)
            changed = True
    return changed


def delete_node(conn: Connection, node: str) -> None:
    """Delete a device node without allocations, and its topology. A topology left behind
    by a tree deleted through the generic API is deleted alone."""
    group_nodes.lock_node(conn, node)  # before reading anything of the node
    if not device_topologies.read_documents(conn, [node]):
        raise errors.NotFound(f"No device node named {node}.")
    if provider_data.get_provider_by_name(conn, node) is None:
        device_topologies.delete_document(conn, node)
        return
    group_sync.delete_tree(conn, node)
    device_topologies.delete_document(conn, node)
