"""What a small read costs in process, beside the framework's floor (``GET /``).

In process, on a SQLite file (or ``--database-url``): ``--nodes`` flat compute nodes
(``load_trees.FLAT``, created through the API by ``load_trees.create_tree``, Flask's
test client standing in for the HTTP session), then with ``create_app`` and the test
client (the whole WSGI stack, no socket), each request ``--warm-up`` times untimed
and ``--requests`` times timed, one after the other: p50 and mean in microseconds,
and the statements one more request sends its database (``tests.statements``, the
pool's ping and BEGIN/COMMIT included). ``--profile NAME`` then runs that request
``--requests`` times under cProfile and prints the functions that took the most.

With ``--http`` the same requests go over HTTP instead, to gunicorn with ``--workers``
(2) on a throwaway PostgreSQL (``service.running_service``; ``--backend mysql``: MariaDB;
or ``--database-url``), the
nodes loaded through the API (``load_trees.load_trees``): p50 of ``--requests``
sequential requests and requests/s of as many from ``--concurrency`` (10) threads.

    python -m benchmarks.run_floor --nodes 1000
    python -m benchmarks.run_floor --nodes 1000 --profile candidates
    python -m benchmarks.run_floor --nodes 1000 --http --requests 1000
"""

import argparse
import cProfile
import io
import pstats
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks import client as http_client
from benchmarks import load_trees
from benchmarks.client import HEADERS, REQUEST_TIMEOUT_S
from benchmarks.report import load_average
from benchmarks.service import BACKENDS, running_service
from placement.app import create_app
from placement.config import Config
from placement.db import migrate
from placement.db.engine import make_engine
from tests.statements import StatementLog


class InProcessSession:
    """The test client, spoken to as ``load_trees`` speaks to a ``requests.Session``."""

    def __init__(self, client) -> None:
        self._client = client

    def post(self, url: str, json=None, timeout=None) -> "_Answer":
        return _Answer(self._client.post(url, json=json, headers=HEADERS))

    def put(self, url: str, json=None, timeout=None) -> "_Answer":
        return _Answer(self._client.put(url, json=json, headers=HEADERS))


class _Answer:
    def __init__(self, response) -> None:
        self.status_code = response.status_code
        self.content = response.data
        self.text = response.get_data(as_text=True)
        self._json = response.json

    def json(self):
        return self._json


def requests_of(nodes: list[str], aggregate: str) -> dict[str, str]:
    """Each timed request by name: the floor, a provider, the flat query with limit=10."""
    flat = load_trees.FLAT
    resources = "VCPU:1,DISK_GB:10,MEMORY_MB:256"
    assert set(flat.nodes[0].inventories) == {"VCPU", "MEMORY_MB", "DISK_GB"}
    return {
        "root": "/",
        "provider": f"/resource_providers/{nodes[len(nodes) // 2]}",
        "candidates": (
            f"/allocation_candidates?resources={resources}&member_of={aggregate}"
            f"&required={load_trees.AVX2}&limit=10"
        ),
    }


def timed(client, path: str, warm_up: int, count: int) -> list[float]:
    for _ in range(warm_up):
        answer = client.get(path, headers=HEADERS)
        assert answer.status_code == 200, (path, answer.status_code, answer.data[:300])
    seconds = []
    for _ in range(count):
        started = time.perf_counter()
        client.get(path, headers=HEADERS)
        seconds.append(time.perf_counter() - started)
    return seconds


def over_http(args) -> None:
    with running_service(args.workers, args.database_url, backend=args.backend) as service:
        loaded = load_trees.load_trees(service.base_url, load_trees.FLAT, args.nodes)
        print(
            f"{args.nodes} flat nodes, {service.database}, gunicorn {args.workers} workers; "
            f"load average {load_average()}\n"
        )
        print(f"| request | p50 ms | p95 ms | req/s @{args.concurrency} | answers |")
        print("|---|--:|--:|--:|---|")
        for name, path in requests_of(loaded.roots, loaded.aggregate).items():

            def request(session, _index, url=service.base_url + path):
                return session.get(url, timeout=REQUEST_TIMEOUT_S)

            http_client.sequential(request, args.warm_up)
            alone = http_client.sequential(request, args.requests)
            together = http_client.concurrent(request, args.requests, args.concurrency)
            print(
                f"| {name} | {alone.p50_ms:.2f} | {alone.p95_ms:.2f} | "
                f"{together.per_second:.0f} | {alone.status_text()}; "
                f"{together.status_text()} |"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warm-up", type=int, default=50)
    parser.add_argument("--database-url", help="an empty, migrated database (default: SQLite)")
    parser.add_argument("--profile", help="the request to profile: root, provider, candidates")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--http", action="store_true", help="over HTTP, gunicorn and PostgreSQL")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="postgresql",
        help="--http: the throwaway database server (without --database-url)",
    )
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args(argv)
    if args.http:
        over_http(args)
        return 0
    with tempfile.TemporaryDirectory() as directory:
        url = args.database_url or f"sqlite:///{Path(directory) / 'floor.sqlite'}"
        engine = make_engine(url)
        migrate.upgrade(engine)
        client = create_app(Config(database_url=url), engine=engine).test_client()
        aggregate = str(uuid.uuid4())
        started = time.perf_counter()
        nodes = [
            load_trees.create_tree(
                InProcessSession(client), "", load_trees.FLAT, f"floor-{index:05d}", aggregate
            )[0]
            for index in range(args.nodes)
        ]
        print(
            f"{args.nodes} flat nodes on {engine.dialect.name}, loaded in "
            f"{time.perf_counter() - started:.0f} s; load average {load_average()}\n"
        )
        print("| request | p50 us | mean us | statements | round trips |")
        print("|---|--:|--:|--:|--:|")
        paths = requests_of(nodes, aggregate)
        for name, path in paths.items():
            seconds = timed(client, path, args.warm_up, args.requests)
            log = StatementLog(engine)
            client.get(path, headers=HEADERS)  # (a new connection: the pool was emptied)
            with log.counting() as seen:
                client.get(path, headers=HEADERS)
            log.close()
            print(
                f"| {name} | {statistics.median(seconds) * 1e6:.0f} | "
                f"{statistics.mean(seconds) * 1e6:.0f} | {len(seen)} | {log.round_trips} |"
            )
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(timed, client, paths[args.profile], 0, args.requests)
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)
            print(out.getvalue())
        engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
