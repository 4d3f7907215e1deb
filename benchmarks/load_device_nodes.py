"""Load a placement service with DGX A100-like device nodes, through its HTTP API only.

Each node is one request, ``PUT /group_resources/device_nodes/{name}`` with a
device list (the positions of ``tests/data/topologies/dgx_a100.yaml``)::

    2 NUMA nodes, each with 2 PCIe switches (each on a host bridge of its own);
    each switch: 2 GPUs (80Gi, labels model=A100) and 2 RDMA NICs (8 VFs,
    labels model=ConnectX-6, vfLabels type=fullmode);
    NVLinks: NV12 between every pair of the 8 GPUs;
    node resources: cpu 128, memory 1Ti.

The service turns it into a tree of 28 providers (the node, one ``nvlink``
group, 2 NUMA nodes, 4 host bridges, 4 switches, 8 GPUs, 8 NICs) with 66
inventories, in that request's transaction. Device ids are unique per node
(``GPU-<uuid>``, ``mlx5_<minor>``). Nodes are named ``<prefix>-n00042``, the
prefix fresh per run by default (``dev-<random>``), so repeated runs against
one ``--url`` never collide (they do accumulate). Every import must answer
201 with the 16 devices, each with a provider; anything else stops the load
(the nodes not started yet are skipped) and raises ``load.LoadError``.
Progress goes to stderr.

The answers give each node's uuid and its devices' provider uuids, which the
runner (``run_devices.py``) checks allocations against.

``python -m benchmarks.load_device_nodes --url http://127.0.0.1:8780 --nodes 100``
loads a running service by hand.
"""

import argparse
import itertools
import sys
import uuid
from dataclasses import dataclass, field

import requests

from benchmarks.client import load_in_parallel, require_loopback
from benchmarks.load import LoadError

TIMEOUT_S = 60
NUMA_NODES = 2
SWITCHES_PER_NUMA = 2
GPUS_PER_SWITCH = 2
NICS_PER_SWITCH = 2
SWITCHES = NUMA_NODES * SWITCHES_PER_NUMA
GPUS = SWITCHES * GPUS_PER_SWITCH
NICS = SWITCHES * NICS_PER_SWITCH
GPU_MEMORY = "80Gi"
GPU_MEMORY_MB = 80 * 1024
NIC_VFS = 8
NVLINKS = 12  # NV12 between every pair, as on a DGX A100 (NVSwitch)
NODE_RESOURCES = {"cpu": 128, "memory": "1Ti"}
# root, nvlink group, NUMA nodes, host bridges, switches, devices
PROVIDERS_PER_NODE = 1 + 1 + NUMA_NODES + SWITCHES + SWITCHES + GPUS + NICS


def dgx_a100(node_index: int = 0) -> dict:
    """The device list of one node; GPU ids are unique per node (seeded by its index)."""
    devices = []
    for switch in range(SWITCHES):
        numa = switch // SWITCHES_PER_NUMA
        for slot in range(GPUS_PER_SWITCH):
            minor = switch * GPUS_PER_SWITCH + slot
            gpu_id = uuid.uuid5(uuid.NAMESPACE_OID, f"bench-gpu-{node_index}-{minor}")
            devices.append(
                {
                    "type": "gpu",
                    "minor": minor,
                    "id": f"GPU-{gpu_id}",
                    "numa": numa,
                    "bridge": switch,
                    "pcie": switch,
                    "memory": GPU_MEMORY,
                    "labels": {"model": "A100"},
                }
            )
    for switch in range(SWITCHES):
        numa = switch // SWITCHES_PER_NUMA
        for slot in range(NICS_PER_SWITCH):
            minor = switch * NICS_PER_SWITCH + slot
            devices.append(
                {
                    "type": "rdma",
                    "minor": minor,
                    "id": f"mlx5_{minor}",
                    "numa": numa,
                    "bridge": switch,
                    "pcie": switch,
                    "vfs": NIC_VFS,
                    "labels": {"model": "ConnectX-6"},
                    "vfLabels": {"type": "fullmode"},
                }
            )
    nvlinks = [
        {"gpus": [a, b], "links": NVLINKS} for a, b in itertools.combinations(range(GPUS), 2)
    ]
    return {"devices": devices, "nvlinks": nvlinks, "resources": dict(NODE_RESOURCES)}


@dataclass(frozen=True)
class DeviceNode:
    name: str
    uuid: str
    gpus: dict[int, str]  # minor -> provider uuid
    nics: dict[int, str]  # minor -> provider uuid

    def owner(self) -> dict[str, tuple[str, int]]:
        """Provider uuid -> (device type, minor)."""
        found = {provider: ("gpu", minor) for minor, provider in self.gpus.items()}
        found.update({provider: ("rdma", minor) for minor, provider in self.nics.items()})
        return found


@dataclass
class LoadedDevices:
    """What was created, in creation order."""

    prefix: str
    nodes: list[DeviceNode] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def providers(self) -> int:
        return len(self.nodes) * PROVIDERS_PER_NODE

    def by_name(self) -> dict[str, DeviceNode]:
        return {node.name: node for node in self.nodes}


def node_name(prefix: str, index: int) -> str:
    return f"{prefix}-n{index:05d}"


def import_node(
    session: requests.Session, base_url: str, name: str, document: dict | None = None
) -> DeviceNode:
    """Create device node ``name`` (201 expected) and check the devices the answer lists."""
    response = session.put(
        f"{base_url}/group_resources/device_nodes/{name}",
        json=document or dgx_a100(),
        timeout=TIMEOUT_S,
    )
    if response.status_code != 201:
        raise LoadError(
            f"import {name}: {response.status_code} (expected 201) {response.text[:500]}"
        )
    body = response.json()
    providers: dict[str, dict[int, str]] = {"gpu": {}, "rdma": {}}
    for device in body.get("devices", []):
        if "provider" in device:
            providers.setdefault(device["type"], {})[device["minor"]] = device["provider"]
    if not body.get("in_sync") or len(providers["gpu"]) != GPUS or len(providers["rdma"]) != NICS:
        raise LoadError(
            f"import {name}: in_sync {body.get('in_sync')}, "
            f"{len(providers['gpu'])} GPU and {len(providers['rdma'])} NIC "
            f"providers, expected {GPUS} and {NICS}"
        )
    return DeviceNode(name=name, uuid=body["uuid"], gpus=providers["gpu"], nics=providers["rdma"])


def load_device_nodes(
    base_url: str,
    count: int,
    threads: int = 4,
    prefix: str | None = None,
    progress: bool = False,
) -> LoadedDevices:
    """Import nodes 0 .. ``count - 1``; return what was made."""
    require_loopback(base_url)
    loaded = LoadedDevices(prefix or f"dev-{uuid.uuid4().hex[:6]}")
    made, loaded.seconds = load_in_parallel(
        count,
        threads,
        lambda session, index: import_node(
            session, base_url, node_name(loaded.prefix, index), dgx_a100(index)
        ),
        "device nodes",
        progress,
    )
    loaded.nodes = [node for node in made if node is not None]
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="base URL of a running service (loopback)")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--prefix", help="node name prefix (default: dev-<random>)")
    args = parser.parse_args(argv)
    loaded = load_device_nodes(
        args.url.rstrip("/"), args.nodes, args.threads, prefix=args.prefix, progress=True
    )
    print(
        f"{len(loaded.nodes)} device nodes {node_name(loaded.prefix, 0)}.. "
        f"({loaded.providers} providers) in {loaded.seconds:.1f} s "
        f"({len(loaded.nodes) / loaded.seconds:.1f} nodes/s, {args.threads} threads)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
