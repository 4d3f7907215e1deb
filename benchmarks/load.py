"""Load a placement service with compute nodes, through its HTTP API only.

Each compute node is four requests, as a real compute service would make them:

1. ``POST /resource_providers`` (``bench-cn-00042``; the 1.20+ answer carries the uuid),
2. ``PUT .../inventories``: VCPU, MEMORY_MB, DISK_GB (sizes in ``Inventory``),
3. ``PUT .../aggregates``: one aggregate shared by every node,
4. ``PUT .../traits``: HW_CPU_X86_SSE42 everywhere, HW_CPU_X86_AVX2 on even nodes
   (half of them), plus ``extra_traits``.

Each write passes the generation the previous answer returned, so a node is
loaded exactly like a client would. Nodes are loaded by ``threads`` threads
(one ``requests.Session`` each); any non-2xx answer stops the load with the
answer's text. Nothing here touches the database directly: the loader works
the same against a service started by ``benchmarks.service`` or a given URL.

``python -m benchmarks.load --url http://127.0.0.1:8780 --providers 100`` loads
a running service by hand.
"""

import argparse
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from benchmarks.client import new_session, require_loopback

AVX2 = "HW_CPU_X86_AVX2"
SSE42 = "HW_CPU_X86_SSE42"


class LoadError(RuntimeError):
    """The service refused a request of the loader."""


@dataclass(frozen=True)
class Inventory:
    """What each compute node offers: 64 cores, 64 GiB, 4 TB; room for ~250 small claims each."""

    vcpu: int = 64
    vcpu_ratio: float = 16.0
    memory_mb: int = 65536
    disk_gb: int = 4096

    def body(self, generation: int) -> dict:
        return {
            "resource_provider_generation": generation,
            "inventories": {
                "VCPU": {"total": self.vcpu, "allocation_ratio": self.vcpu_ratio},
                "MEMORY_MB": {"total": self.memory_mb},
                "DISK_GB": {"total": self.disk_gb},
            },
        }


@dataclass
class Loaded:
    """What was created: provider uuids in creation order and the aggregate."""

    aggregate: str
    providers: list[str] = field(default_factory=list)
    with_avx2: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _check(response: requests.Response, what: str) -> dict:
    if not 200 <= response.status_code < 300:
        raise LoadError(f"{what}: {response.status_code} {response.text[:500]}")
    return response.json() if response.content else {}


def create_provider(
    session: requests.Session,
    base_url: str,
    name: str,
    inventory: Inventory,
    aggregates: Sequence[str] = (),
    traits: Sequence[str] = (),
) -> str:
    """Create one provider with its inventory, aggregates and traits; return its uuid."""
    created = _check(
        session.post(f"{base_url}/resource_providers", json={"name": name}, timeout=60),
        f"create {name}",
    )
    rp_url = f"{base_url}/resource_providers/{created['uuid']}"
    generation = created["generation"]
    generation = _check(
        session.put(f"{rp_url}/inventories", json=inventory.body(generation), timeout=60),
        f"inventories of {name}",
    )["resource_provider_generation"]
    if aggregates:
        generation = _check(
            session.put(
                f"{rp_url}/aggregates",
                json={"aggregates": list(aggregates), "resource_provider_generation": generation},
                timeout=60,
            ),
            f"aggregates of {name}",
        )["resource_provider_generation"]
    if traits:
        _check(
            session.put(
                f"{rp_url}/traits",
                json={"traits": list(traits), "resource_provider_generation": generation},
                timeout=60,
            ),
            f"traits of {name}",
        )
    return created["uuid"]


def node_traits(index: int, extra_traits: Sequence[str] = ()) -> list[str]:
    traits = [SSE42, *extra_traits]
    if index % 2 == 0:
        traits.append(AVX2)
    return traits


def load_compute_nodes(
    base_url: str,
    count: int,
    threads: int = 8,
    inventory: Inventory | None = None,
    aggregate: str | None = None,
    extra_traits: Sequence[str] = (),
    prefix: str = "bench-cn",
    progress: bool = False,
) -> Loaded:
    """Create ``count`` compute nodes (see the module docstring); return what was made."""
    require_loopback(base_url)
    inventory = inventory or Inventory()
    loaded = Loaded(aggregate=aggregate or str(uuid.uuid4()))
    uuids: list[str | None] = [None] * count
    local = threading.local()
    done = 0
    done_lock = threading.Lock()

    def one(index: int) -> None:
        nonlocal done
        if not hasattr(local, "session"):
            local.session = new_session()
        uuids[index] = create_provider(
            local.session,
            base_url,
            f"{prefix}-{index:05d}",
            inventory,
            aggregates=[loaded.aggregate],
            traits=node_traits(index, extra_traits),
        )
        with done_lock:
            done += 1
            if progress and done % 250 == 0:
                print(f"  loaded {done}/{count} providers", file=sys.stderr, flush=True)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        # list() re-raises the first failure; the pool still finishes the others.
        list(pool.map(one, range(count)))
    loaded.seconds = time.perf_counter() - start
    loaded.providers = [u for u in uuids if u is not None]
    loaded.with_avx2 = [u for i, u in enumerate(loaded.providers) if i % 2 == 0]
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="base URL of a running service (loopback)")
    parser.add_argument("--providers", type=int, default=100)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args(argv)
    loaded = load_compute_nodes(args.url.rstrip("/"), args.providers, args.threads, progress=True)
    print(
        f"{len(loaded.providers)} providers in aggregate {loaded.aggregate} "
        f"({len(loaded.with_avx2)} with {AVX2}) in {loaded.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
