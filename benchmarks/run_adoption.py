"""The downtime of taking a cloud over: ``placement db upgrade`` on a database of
upstream openstack-placement 16.0.0's schema, and ``placement db return-to-upstream``.

A database of upstream's schema is filled directly (as years of Nova would have left
it: compute nodes with NUMA children, disk on the roots, aggregates and traits,
consumers of two allocations each), then adopted and given back, each timed. The
API is down from upstream's stop to this service's start: the adoption is that
window, less the seconds a service takes to start.

    python -m benchmarks.run_adoption --backend postgresql --providers 10000 \\
        --allocations 100000
"""

import argparse
import contextlib
import datetime
import os
import time
import uuid

import os_resource_classes
from sqlalchemy import Engine, func, select

from benchmarks.service import THROWAWAY
from placement.db import adopt, give_back, migrate, rebuild
from placement.db.engine import make_engine
from placement.db.upstream_schema import UPSTREAM_HEAD, upstream_metadata

CHILDREN = 3  # NUMA children per compute node
BATCH = 5000


def fill(engine: Engine, providers: int, allocations: int) -> None:
    tables = upstream_metadata().tables
    upstream_metadata().create_all(engine)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    roots = providers // (CHILDREN + 1)
    with engine.begin() as conn, rebuild.keeping_zero_ids(conn):
        migrate.write_revision(conn, UPSTREAM_HEAD)

        def insert(name: str, rows: list[dict]) -> None:
            for start in range(0, len(rows), BATCH):
                conn.execute(tables[name].insert(), rows[start : start + BATCH])

        insert(
            "resource_classes",
            [
                {"id": i, "name": n, "created_at": now}
                for i, n in enumerate(os_resource_classes.STANDARDS)
            ],
        )
        insert("resource_classes", [{"id": 10000, "name": "CUSTOM_FPGA", "created_at": now}])
        insert(
            "traits",
            [
                {"id": 1, "name": "HW_CPU_X86_AVX2", "created_at": now},
                {"id": 2, "name": "CUSTOM_RACK1", "created_at": now},
            ],
        )
        rows, numa = [], []
        for root in range(1, roots + 1):
            first = roots + (root - 1) * CHILDREN + 1
            rows.append(_provider(root, root, None, now))
            for child in range(first, first + CHILDREN):
                rows.append(_provider(child, root, root, now))
                numa.append(child)
        insert("resource_providers", sorted(rows, key=lambda row: row["id"]))
        inventory = {
            "reserved": 0,
            "min_unit": 1,
            "step_size": 1,
            "allocation_ratio": 1.0,
            "created_at": now,
        }
        insert(
            "inventories",
            [
                {
                    **inventory,
                    "resource_provider_id": child,
                    "resource_class_id": rc,
                    "total": total,
                    "max_unit": total,
                }
                for child in numa
                for rc, total in ((0, 64), (1, 262144))
            ],
        )
        insert(
            "inventories",
            [
                {
                    **inventory,
                    "resource_provider_id": root,
                    "resource_class_id": 2,
                    "total": 4000,
                    "max_unit": 4000,
                }
                for root in range(1, roots + 1)
            ],
        )
        insert(
            "placement_aggregates",
            [{"id": a, "uuid": str(uuid.uuid4()), "created_at": now} for a in range(1, 101)],
        )
        insert(
            "resource_provider_aggregates",
            [
                {"resource_provider_id": root, "aggregate_id": root % 100 + 1, "created_at": now}
                for root in range(1, roots + 1)
            ],
        )
        insert(
            "resource_provider_traits",
            [
                {"resource_provider_id": root, "trait_id": root % 2 + 1, "created_at": now}
                for root in range(1, roots + 1)
            ],
        )
        insert(
            "projects",
            [{"id": p, "external_id": f"project-{p}", "created_at": now} for p in range(1, 51)],
        )
        insert(
            "users",
            [{"id": u, "external_id": f"user-{u}", "created_at": now} for u in range(1, 201)],
        )
        consumers = allocations // 2
        uuids = [str(uuid.uuid4()) for _ in range(consumers)]
        insert(
            "consumers",
            [
                {
                    "id": c + 1,
                    "uuid": uuids[c],
                    "project_id": c % 50 + 1,
                    "user_id": c % 200 + 1,
                    "generation": 1,
                    "created_at": now,
                }
                for c in range(consumers)
            ],
        )
        insert(
            "allocations",
            [
                {
                    "resource_provider_id": numa[c % len(numa)],
                    "consumer_id": uuids[c],
                    "resource_class_id": rc,
                    "used": used,
                    "created_at": now,
                }
                for c in range(consumers)
                for rc, used in ((0, 1), (1, 512))
            ],
        )


def _provider(id_: int, root: int, parent: int | None, now) -> dict:
    return {
        "id": id_,
        "uuid": str(uuid.uuid4()),
        "name": f"rp-{id_}",
        "generation": 3,
        "root_provider_id": root,
        "parent_provider_id": parent,
        "created_at": now,
    }


def _count(engine: Engine, table: str) -> int:
    with engine.connect() as conn:
        return conn.execute(
            select(func.count()).select_from(upstream_metadata().tables[table])
        ).scalar_one()


@contextlib.contextmanager
def _database(backend: str, url: str | None):
    if url:
        yield url
    elif backend == "sqlite":
        folder = f"/tmp/placement-adoption-{os.getpid()}"
        os.makedirs(folder, exist_ok=True)
        yield f"sqlite:///{folder}/placement.sqlite"
    else:
        with THROWAWAY[backend]() as server_url:
            yield server_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend", choices=("postgresql", "mysql", "sqlite"), default="postgresql"
    )
    parser.add_argument("--url", help="an empty database to use instead of a throwaway one")
    parser.add_argument("--providers", type=int, default=10000)
    parser.add_argument("--allocations", type=int, default=100000)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with _database(args.backend, args.url) as url:
        engine = make_engine(url)
        started = time.perf_counter()
        fill(engine, args.providers, args.allocations)
        print(
            f"filled upstream's schema: {_count(engine, 'resource_providers')} providers, "
            f"{_count(engine, 'allocations')} allocations "
            f"({time.perf_counter() - started:.1f} s)"
        )
        started = time.perf_counter()
        adopt.adopt(engine)
        migrate.upgrade(engine)
        print(f"placement db upgrade (adoption): {time.perf_counter() - started:.2f} s")
        started = time.perf_counter()
        give_back.give_back(engine)
        print(f"placement db return-to-upstream: {time.perf_counter() - started:.2f} s")
        engine.dispose()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
