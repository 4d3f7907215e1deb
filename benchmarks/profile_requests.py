"""Where the time of one kind of request goes: SQL versus Python, and the top functions.

Loads a service exactly like ``run_foundation`` (throwaway PostgreSQL or
``--database-url``, gunicorn, the HTTP loader), then, in this process, builds
the application with ``create_app`` on the same database and sends it
``--requests`` requests through Flask's test client (full WSGI stack, no
socket) under cProfile. SQLAlchemy cursor events time every statement, so the
report splits each request into time in the database driver and the rest.

    python -m benchmarks.profile_requests --scenario list --providers 1000 --requests 50
"""

import argparse
import cProfile
import io
import pstats
import random
import sys
import time
import uuid

from sqlalchemy import event

from benchmarks import load
from benchmarks.client import HEADERS
from benchmarks.run_foundation import CLAIM, claim_body
from benchmarks.service import running_service
from placement.app import create_app
from placement.config import Config
from placement.db.engine import make_engine


class SqlTimer:
    """Counts statements and sums their execution time (cursor execute to fetch ready)."""

    def __init__(self, engine):
        self.statements = 0
        self.seconds = 0.0
        self.by_statement: dict[str, list[float]] = {}
        self.example: dict[str, tuple[str, object]] = {}  # key -> (statement, parameters)
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)

    def _before(self, conn, cursor, statement, parameters, context, executemany):
        conn.info["bench_started"] = time.perf_counter()

    def _after(self, conn, cursor, statement, parameters, context, executemany):
        took = time.perf_counter() - conn.info.pop("bench_started")
        self.statements += 1
        self.seconds += took
        key = " ".join(statement.split())[:110]
        self.by_statement.setdefault(key, []).append(took)
        self.example.setdefault(key, (statement, parameters))


def requests_for(scenario: str, loaded: load.Loaded, count: int):
    """(method, path, json body) for each request of the scenario."""
    rng = random.Random(42)
    if scenario == "list":
        resources = ",".join(f"{rc}:{n}" for rc, n in CLAIM.items())
        path = (
            f"/resource_providers?resources={resources}&member_of={loaded.aggregate}"
            f"&required={load.AVX2}"
        )
        return [("GET", path, None)] * count
    if scenario == "show":
        return [
            ("GET", f"/resource_providers/{rng.choice(loaded.providers)}", None)
            for _ in range(count)
        ]
    if scenario == "claim":
        return [
            ("PUT", f"/allocations/{uuid.uuid4()}", claim_body(rng.choice(loaded.providers)))
            for _ in range(count)
        ]
    raise ValueError(scenario)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", choices=["list", "show", "claim"], default="list")
    parser.add_argument("--providers", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--top", type=int, default=25, help="functions to print")
    parser.add_argument("--statements", type=int, default=5, help="SQL statements to print")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="EXPLAIN ANALYZE the statement that took the most time",
    )
    parser.add_argument("--database-url", help="migrate, load and profile this database")
    args = parser.parse_args(argv)

    with running_service(1, args.database_url) as service:
        loaded = load.load_compute_nodes(service.base_url, args.providers, threads=4)
        engine = make_engine(service.database_url)
        app = create_app(Config(database_url=service.database_url, log_level="WARNING"), engine)
        client = app.test_client()
        todo = requests_for(args.scenario, loaded, args.requests)
        for method, path, body in todo[:3]:  # warm up: pool, caches, first-call imports
            client.open(path, method=method, json=body, headers=HEADERS)
        todo = requests_for(args.scenario, loaded, args.requests)
        started = time.perf_counter()
        for method, path, body in todo:
            client.open(path, method=method, json=body, headers=HEADERS)
        plain = (time.perf_counter() - started) / len(todo)
        todo = requests_for(args.scenario, loaded, args.requests)
        timer = SqlTimer(engine)
        profiler = cProfile.Profile()
        statuses: dict[int, int] = {}
        started = time.perf_counter()
        profiler.enable()
        for method, path, body in todo:
            status = client.open(path, method=method, json=body, headers=HEADERS).status_code
            statuses[status] = statuses.get(status, 0) + 1
        profiler.disable()
        total = time.perf_counter() - started
        explained = ""
        if args.explain and timer.by_statement:
            key = max(timer.by_statement, key=lambda k: sum(timer.by_statement[k]))
            statement, parameters = timer.example[key]
            with engine.connect() as conn:
                rows = conn.exec_driver_sql(
                    "EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters
                ).scalars()
                explained = "\n".join(rows)
        engine.dispose()

    n = len(todo)
    print(
        f"{args.scenario}: {n} requests in process on {args.providers} providers "
        f"(answers {statuses}): {plain * 1000:.1f} ms/request without profiler, "
        f"{total / n * 1000:.1f} ms/request under cProfile (which inflates the Python part)"
    )
    print(
        f"  SQL: {timer.statements / n:.1f} statements, {timer.seconds / n * 1000:.1f} ms "
        f"per request ({timer.seconds / total:.0%} of the time)"
    )
    slowest = sorted(timer.by_statement.items(), key=lambda kv: -sum(kv[1]))[: args.statements]
    for statement, times in slowest:
        print(f"    {sum(times) / n * 1000:6.2f} ms/request  x{len(times) / n:.0f}  {statement}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())
    if explained:
        print("EXPLAIN ANALYZE of the slowest statement:")
        print(explained)
    return 0


if __name__ == "__main__":
    sys.exit(main())
