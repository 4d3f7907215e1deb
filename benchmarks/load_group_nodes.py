"""Load a placement service with group-resource nodes, through its HTTP API only.

Each node is one request, ``PUT /group_resources/nodes/{name}`` with the key
map of an 8-GPU server (GPUs in pairs on a fast link, ``Gpugrp0``, pairs of pairs
on a slower one, ``Gpugrp1``)::

    cpu: 64, memory: 256GiB, and for each device d in 0..7:
    Gpugrp1/{d//4}/Gpugrp0/{d//2}/gpu/dev{d}/cards: 1
    Gpugrp1/{d//4}/Gpugrp0/{d//2}/gpu/dev{d}/memory: 16GiB

The service turns it into a tree of 15 providers (the node, 2 ``Gpugrp1``,
4 ``Gpugrp0``, 8 ``gpu``) in that request's transaction. Nodes are named
``<prefix>-n00042``, the prefix fresh per run by default, so repeated runs
against one ``--url`` never collide (they do accumulate). Every sync must
answer 201 (created), with the 14 groups expected; anything else stops the
load (the nodes not started yet are skipped) and raises ``load.LoadError``.
Progress goes to stderr.

The answers give each node's uuid and its GPU providers' uuids, which the
runner (``run_group_resources.py``) uses to check allocations.

``python -m benchmarks.load_group_nodes --url http://127.0.0.1:8780 --nodes 100``
loads a running service by hand.
"""

import argparse
import sys
import uuid
from dataclasses import dataclass, field

import requests

from benchmarks.client import load_in_parallel, require_loopback
from benchmarks.load import LoadError

TIMEOUT_S = 60
DEVICES = 8
GROUPS_PER_NODE = 2 + 4 + DEVICES  # Gpugrp1, Gpugrp0, gpu groups
GPU_CARDS = "CUSTOM_GPU_CARDS"  # the class the translator gives gpu/<i>/cards


def gpu_group(device: int) -> str:
    """The key path of device ``device``'s group: ``Gpugrp1/0/Gpugrp0/1/gpu/dev2``."""
    return f"Gpugrp1/{device // 4}/Gpugrp0/{device // 2}/gpu/dev{device}"


def eight_gpu_node() -> dict:
    """The key map of one 8-GPU node: pairs on a fast link, pairs of pairs on a slower one."""
    resources: dict = {"cpu": 64, "memory": "256GiB"}
    for device in range(DEVICES):
        resources[f"{gpu_group(device)}/cards"] = 1
        resources[f"{gpu_group(device)}/memory"] = "16GiB"
    return resources


@dataclass(frozen=True)
class GroupNode:
    name: str
    uuid: str
    gpus: dict[str, str]  # group key path (gpu_group) -> provider uuid


@dataclass
class LoadedNodes:
    """What was created, in creation order."""

    prefix: str
    nodes: list[GroupNode] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def providers(self) -> int:
        return len(self.nodes) * (1 + GROUPS_PER_NODE)

    def by_name(self) -> dict[str, GroupNode]:
        return {node.name: node for node in self.nodes}

    def gpu_owner(self) -> dict[str, str]:
        """GPU provider uuid -> its node's name."""
        return {gpu: node.name for node in self.nodes for gpu in node.gpus.values()}


def node_name(prefix: str, index: int) -> str:
    return f"{prefix}-n{index:05d}"


def sync_node(
    session: requests.Session, base_url: str, name: str, resources: dict | None = None
) -> GroupNode:
    """Create node ``name`` (201 expected) and check the groups the answer lists."""
    response = session.put(
        f"{base_url}/group_resources/nodes/{name}",
        json={"resources": resources or eight_gpu_node()},
        timeout=TIMEOUT_S,
    )
    if response.status_code != 201:
        raise LoadError(f"sync {name}: {response.status_code} (expected 201) {response.text[:500]}")
    body = response.json()
    groups = {group["key"]: group for group in body["groups"]}
    if len(groups) != GROUPS_PER_NODE:
        raise LoadError(
            f"sync {name}: {len(groups)} groups, expected {GROUPS_PER_NODE}: {sorted(groups)}"
        )
    gpus = {}
    for device in range(DEVICES):
        group = groups.get(gpu_group(device))
        cards = (group or {}).get("inventories", {}).get(GPU_CARDS, {})
        if cards.get("total") != 1:
            raise LoadError(f"sync {name}: {gpu_group(device)} has no {GPU_CARDS} of 1: {group}")
        gpus[gpu_group(device)] = group["uuid"]
    return GroupNode(name=name, uuid=body["uuid"], gpus=gpus)


def load_group_nodes(
    base_url: str,
    count: int,
    threads: int = 8,
    prefix: str | None = None,
    first: int = 0,
    progress: bool = False,
) -> LoadedNodes:
    """Sync nodes ``first`` .. ``first + count - 1``; return what was made."""
    require_loopback(base_url)
    loaded = LoadedNodes(prefix or f"gr-{uuid.uuid4().hex[:6]}")
    made, loaded.seconds = load_in_parallel(
        count,
        threads,
        lambda session, index: sync_node(
            session, base_url, node_name(loaded.prefix, first + index)
        ),
        "nodes",
        progress,
    )
    loaded.nodes = [node for node in made if node is not None]
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="base URL of a running service (loopback)")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--prefix", help="node name prefix (default: gr-<random>)")
    args = parser.parse_args(argv)
    loaded = load_group_nodes(
        args.url.rstrip("/"), args.nodes, args.threads, prefix=args.prefix, progress=True
    )
    print(
        f"{len(loaded.nodes)} nodes {node_name(loaded.prefix, 0)}.. "
        f"({loaded.providers} providers) in {loaded.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
