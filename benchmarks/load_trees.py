"""Load a placement service with provider trees, through its HTTP API only.

A ``Shape`` describes one tree (its providers, parents before children, each
with inventories, traits and membership of the run's aggregate); the loader
creates it ``count`` times, one tree per task on ``threads`` threads (one
``requests.Session`` each), exactly as a compute service would:

1. ``PUT /traits/CUSTOM_*`` and ``PUT /resource_classes/CUSTOM_*`` for the custom
   names the shape uses (once per load),
2. per provider: ``POST /resource_providers`` with ``parent_provider_uuid``,
   then ``PUT .../inventories``, ``PUT .../aggregates`` and ``PUT .../traits``
   when it has any, each with the generation the previous answer returned.

Three shapes, the allocation-candidate benchmarks' (``run_candidates.py``):

* ``FLAT``: a compute node alone: VCPU, MEMORY_MB, DISK_GB, HW_CPU_X86_AVX2,
  in the aggregate;
* ``NESTED``: 7 providers: a compute node (DISK_GB, COMPUTE_VOLUME_MULTI_ATTACH),
  two NUMA nodes (VCPU, MEMORY_MB, HW_NUMA_ROOT; NUMA0 also CUSTOM_FOO), FPGAs
  (FPGA: 1) two under NUMA0 and one under NUMA1, a PGPU (PGPU: 1) under the root;
* ``GPU_HOST``: 19 providers: a host (VCPU, MEMORY_MB), two NUMA nodes
  (HW_NUMA_ROOT), two PCIe switches under each (CUSTOM_PCIE_SWITCH), and under
  each switch two GPUs (PGPU: 1, CUSTOM_GPU) and a NIC (SRIOV_NET_VF: 8, CUSTOM_NIC).

Any non-2xx answer stops the load (the trees not started yet are skipped) and
raises ``load.LoadError`` with the answer's text. Progress goes to stderr.

``python -m benchmarks.load_trees --url http://127.0.0.1:8780 --shape nested --trees 100``
loads a running service by hand.
"""

import argparse
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from benchmarks.client import new_session, require_loopback
from benchmarks.load import AVX2, LoadError

TIMEOUT_S = 60
MULTI_ATTACH = "COMPUTE_VOLUME_MULTI_ATTACH"
NUMA_ROOT = "HW_NUMA_ROOT"
FOO = "CUSTOM_FOO"
PCIE_SWITCH = "CUSTOM_PCIE_SWITCH"
GPU = "CUSTOM_GPU"
NIC = "CUSTOM_NIC"


@dataclass(frozen=True)
class Node:
    """One provider of a tree; ``parent`` is the index of its parent in the shape."""

    name: str
    parent: int | None = None
    inventories: Mapping[str, Mapping] = field(default_factory=dict)
    traits: tuple[str, ...] = ()
    in_aggregate: bool = False

    @property
    def requests(self) -> int:
        return 1 + bool(self.inventories) + bool(self.traits) + self.in_aggregate


@dataclass(frozen=True)
class Shape:
    """A tree to create many times: its providers, every parent before its children."""

    name: str
    nodes: tuple[Node, ...]
    unit: str = "trees"  # what a tree is called in tables: nodes, trees, hosts

    @property
    def requests_per_tree(self) -> int:
        return sum(node.requests for node in self.nodes)

    def custom_traits(self) -> list[str]:
        return sorted({t for node in self.nodes for t in node.traits if t.startswith("CUSTOM_")})

    def custom_classes(self) -> list[str]:
        return sorted(
            {rc for node in self.nodes for rc in node.inventories if rc.startswith("CUSTOM_")}
        )


def total(amount: int, **extra) -> dict:
    return {"total": amount, **extra}


FLAT = Shape(
    "flat",
    (
        Node(
            "cn",
            inventories={
                "VCPU": total(64, allocation_ratio=16.0),
                "MEMORY_MB": total(65536),
                "DISK_GB": total(4096),
            },
            traits=(AVX2,),
            in_aggregate=True,
        ),
    ),
    unit="nodes",
)

_NUMA = {"VCPU": total(32, allocation_ratio=16.0), "MEMORY_MB": total(32768)}
_ONE_FPGA = {"FPGA": total(1)}

NESTED = Shape(
    "nested",
    (
        Node("cn", inventories={"DISK_GB": total(4096)}, traits=(MULTI_ATTACH,)),
        Node("numa0", parent=0, inventories=_NUMA, traits=(NUMA_ROOT, FOO)),
        Node("numa1", parent=0, inventories=_NUMA, traits=(NUMA_ROOT,)),
        Node("fpga0", parent=1, inventories=_ONE_FPGA),
        Node("fpga1", parent=1, inventories=_ONE_FPGA),
        Node("fpga2", parent=2, inventories=_ONE_FPGA),
        Node("pgpu", parent=0, inventories={"PGPU": total(1)}),
    ),
)


def gpu_host_shape() -> Shape:
    """Host > 2 NUMA > 2 PCIe switches each > 2 GPUs + 1 NIC: 8 GPUs, 4 NICs."""
    nodes = [
        Node(
            "host",
            inventories={
                "VCPU": total(128, allocation_ratio=4.0),
                "MEMORY_MB": total(524288),
            },
        )
    ]
    for numa in range(2):
        nodes.append(Node(f"numa{numa}", parent=0, traits=(NUMA_ROOT,)))
        numa_index = len(nodes) - 1
        for switch in range(2):
            nodes.append(Node(f"sw{numa}{switch}", parent=numa_index, traits=(PCIE_SWITCH,)))
            switch_index = len(nodes) - 1
            nodes += [
                Node(
                    f"gpu{numa}{switch}{gpu}",
                    parent=switch_index,
                    inventories={"PGPU": total(1)},
                    traits=(GPU,),
                )
                for gpu in range(2)
            ]
            nodes.append(
                Node(
                    f"nic{numa}{switch}",
                    parent=switch_index,
                    inventories={"SRIOV_NET_VF": total(8)},
                    traits=(NIC,),
                )
            )
    return Shape("gpu", tuple(nodes), unit="hosts")


GPU_HOST = gpu_host_shape()
SHAPES = {shape.name: shape for shape in (FLAT, NESTED, GPU_HOST)}


@dataclass
class LoadedTrees:
    """What was created: the roots in creation order and every provider's root."""

    shape: Shape
    aggregate: str
    roots: list[str] = field(default_factory=list)
    root_of: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def providers(self) -> int:
        return len(self.root_of)

    def extend(self, more: "LoadedTrees") -> None:
        self.roots += more.roots
        self.root_of.update(more.root_of)
        self.seconds += more.seconds


def _check(response: requests.Response, what: str) -> dict:
    if not 200 <= response.status_code < 300:
        raise LoadError(f"{what}: {response.status_code} {response.text[:500]}")
    return response.json() if response.content else {}


def ensure_custom_names(session: requests.Session, base_url: str, shape: Shape) -> None:
    """Create the custom traits and resource classes the shape uses (201, or 204 if known)."""
    for trait in shape.custom_traits():
        _check(session.put(f"{base_url}/traits/{trait}", timeout=TIMEOUT_S), f"trait {trait}")
    for rc in shape.custom_classes():
        _check(
            session.put(f"{base_url}/resource_classes/{rc}", timeout=TIMEOUT_S),
            f"resource class {rc}",
        )


def _put(session: requests.Session, url: str, body: dict, what: str) -> int:
    """PUT ``body``; return the provider's new generation."""
    return _check(session.put(url, json=body, timeout=TIMEOUT_S), what)[
        "resource_provider_generation"
    ]


def create_node(
    session: requests.Session,
    base_url: str,
    node: Node,
    name: str,
    parent: str | None,
    aggregate: str,
) -> str:
    """Create one provider with its inventories, aggregate and traits; return its uuid."""
    body = {"name": name}
    if parent is not None:
        body["parent_provider_uuid"] = parent
    created = _check(
        session.post(f"{base_url}/resource_providers", json=body, timeout=TIMEOUT_S),
        f"create {name}",
    )
    rp_url = f"{base_url}/resource_providers/{created['uuid']}"
    generation = created["generation"]
    if node.inventories:
        generation = _put(
            session,
            f"{rp_url}/inventories",
            {
                "resource_provider_generation": generation,
                "inventories": {rc: dict(inv) for rc, inv in node.inventories.items()},
            },
            f"inventories of {name}",
        )
    if node.in_aggregate:
        generation = _put(
            session,
            f"{rp_url}/aggregates",
            {
                "resource_provider_generation": generation,
                "aggregates": [aggregate],
            },
            f"aggregates of {name}",
        )
    if node.traits:
        _put(
            session,
            f"{rp_url}/traits",
            {
                "resource_provider_generation": generation,
                "traits": list(node.traits),
            },
            f"traits of {name}",
        )
    return created["uuid"]


def create_tree(
    session: requests.Session,
    base_url: str,
    shape: Shape,
    prefix: str,
    aggregate: str,
) -> list[str]:
    """Create one tree of ``shape``, parents first; return the uuids in shape order."""
    uuids: list[str] = []
    for node in shape.nodes:
        parent = None if node.parent is None else uuids[node.parent]
        uuids.append(
            create_node(session, base_url, node, f"{prefix}-{node.name}", parent, aggregate)
        )
    return uuids


class _Progress:
    """Thread-safe count of finished trees, printed every ``every`` trees."""

    def __init__(self, shape: Shape, count: int, enabled: bool) -> None:
        self.shape, self.count, self.enabled = shape, count, enabled
        self.every = max(1, count // 20)
        self.done = 0
        self.lock = threading.Lock()
        self.start = time.perf_counter()

    def tree_done(self) -> None:
        with self.lock:
            self.done += 1
            done = self.done
        if self.enabled and (done % self.every == 0 or done == self.count):
            elapsed = time.perf_counter() - self.start
            left = elapsed / done * (self.count - done)
            print(
                f"  {self.shape.name}: {done}/{self.count} {self.shape.unit} "
                f"({done * len(self.shape.nodes)} providers, "
                f"{done * self.shape.requests_per_tree / elapsed:.0f} req/s) "
                f"in {elapsed:.0f} s, about {left:.0f} s left",
                file=sys.stderr,
                flush=True,
            )


def load_trees(
    base_url: str,
    shape: Shape,
    count: int,
    threads: int = 8,
    prefix: str = "bench",
    first: int = 0,
    aggregate: str | None = None,
    progress: bool = False,
) -> LoadedTrees:
    """Create trees ``first`` .. ``first + count - 1`` of ``shape``; return what was made.

    Trees are named ``<prefix>-<shape>-NNNNN-<node>``; ``first`` lets a caller
    grow a load (1,000 trees, then 4,000 more) without name clashes.
    """
    require_loopback(base_url)
    loaded = LoadedTrees(shape, aggregate or str(uuid.uuid4()))
    trees: list[list[str] | None] = [None] * count
    local = threading.local()
    failed = threading.Event()
    tracker = _Progress(shape, count, progress)

    def one(index: int) -> None:
        if failed.is_set():
            return
        if not hasattr(local, "session"):
            local.session = new_session()
        try:
            trees[index] = create_tree(
                local.session,
                base_url,
                shape,
                f"{prefix}-{shape.name}-{first + index:05d}",
                loaded.aggregate,
            )
        except Exception:
            failed.set()
            raise
        tracker.tree_done()

    start = time.perf_counter()
    with new_session() as session:
        ensure_custom_names(session, base_url, shape)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        # list() re-raises the first failure; the trees not started yet are skipped.
        list(pool.map(one, range(count)))
    loaded.seconds = time.perf_counter() - start
    for tree in trees:
        if tree is not None:
            loaded.roots.append(tree[0])
            loaded.root_of.update(dict.fromkeys(tree, tree[0]))
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="base URL of a running service (loopback)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="nested")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args(argv)
    loaded = load_trees(
        args.url.rstrip("/"),
        SHAPES[args.shape],
        args.trees,
        args.threads,
        prefix=f"bench-{uuid.uuid4().hex[:6]}",
        progress=True,
    )
    print(
        f"{len(loaded.roots)} {args.shape} trees ({loaded.providers} providers, "
        f"aggregate {loaded.aggregate}) in {loaded.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
