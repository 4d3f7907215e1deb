"""Scale: many device nodes and nested trees in one service, measured per worker.

Loads ``--device-nodes`` DGX A100-like device nodes (28 providers each,
``load_device_nodes``) and ``--trees`` nested trees (7 providers each,
``load_trees.NESTED``) through the HTTP API, then reports:

* each query, sequential p50/p95 over ``--requests``: the device search
  (a) 4 GPUs + NICs on one PCIe switch, ``limit: 1``; the nested candidates
  query with ``limit=10``; a flat ``resources=VCPU:1&limit=10``;
* a refresh after one write: ``PUT /allocations`` of one VCPU on a nested tree
  (untimed), then the candidates query (timed), ``--requests`` times;
* each worker's resident memory (``VmRSS`` and its anonymous part ``RssAnon``,
  from ``/proc``), once the copy holds everything;
* a new worker's first answer: a second gunicorn (one worker) started on the same
  database, the time from its start to its first answer of each query (its copy
  of every provider read on the way), then its second answer.

``python -m benchmarks.run_scale --device-nodes 10000 --trees 10000`` is the
scale the targets name (290,000 providers); the defaults load a tenth of it.
Loading that takes about 12 minutes: with ``--database-url`` of a database a
run has loaded, ``--device-nodes 0 --trees 0`` measures what it holds (the
nested trees found through the API by their roots' trait).
"""

import argparse
import os
import sys
import time
import uuid

from benchmarks import client, load_device_nodes, load_trees, report
from benchmarks.run_devices import JOINT_4
from benchmarks.service import (
    PRELOAD_HELP,
    add_service_options,
    gunicorn,
    gunicorn_processes,
    running_service,
)

NESTED_QUERY = (
    "resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH"
    "&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO"
    "&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA&limit=10"
)
FLAT_QUERY = "resources=VCPU:1&limit=10"


def queries(base_url: str) -> dict[str, client.Request]:
    def device(session, index):
        return session.post(
            f"{base_url}/group_resources/device_candidates",
            json=JOINT_4.body(),
            timeout=client.REQUEST_TIMEOUT_S,
        )

    def nested(session, index):
        return session.get(
            f"{base_url}/allocation_candidates?{NESTED_QUERY}", timeout=client.REQUEST_TIMEOUT_S
        )

    def flat(session, index):
        return session.get(
            f"{base_url}/allocation_candidates?{FLAT_QUERY}", timeout=client.REQUEST_TIMEOUT_S
        )

    return {
        f"devices {JOINT_4.label}, limit=1": device,
        "nested candidates, limit=10": nested,
        "flat VCPU:1, limit=10": flat,
    }


def claim_a_disk_gb(session, base_url: str, root: str) -> None:
    """A new consumer's claim of one DISK_GB on the root of a nested tree (untimed)."""
    session.put(
        f"{base_url}/allocations/{uuid.uuid4()}",
        json={
            "allocations": {root: {"resources": {"DISK_GB": 1}}},
            "project_id": "scale",
            "user_id": "scale",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        },
        timeout=client.REQUEST_TIMEOUT_S,
    )


def load(base_url: str, args, prefix: str):
    """Load ``args.device_nodes`` device nodes and ``args.trees`` nested trees; what was
    loaded, and the roots of every nested tree the database holds."""
    print(f"loading {args.device_nodes} device nodes...", file=sys.stderr, flush=True)
    devices = load_device_nodes.load_device_nodes(
        base_url, args.device_nodes, args.load_threads, progress=True
    )
    print(f"loading {args.trees} nested trees...", file=sys.stderr, flush=True)
    trees = load_trees.load_trees(
        base_url,
        load_trees.NESTED,
        args.trees,
        args.load_threads,
        prefix=f"{prefix}-{uuid.uuid4().hex[:6]}",
        progress=True,
    )
    return devices, trees, list(trees.roots) or loaded_nested_roots(base_url)


def refresh_after_a_write(base_url: str, trees: list[str], count: int) -> client.Timing:
    """The nested query right after each untimed one-VCPU claim on a nested tree."""
    timing = client.Timing(requested=count, concurrency=1)
    with client.new_session() as session:
        for index in range(count):
            claim_a_disk_gb(session, base_url, trees[index % len(trees)])
            started = time.perf_counter()
            response = session.get(
                f"{base_url}/allocation_candidates?{NESTED_QUERY}", timeout=client.REQUEST_TIMEOUT_S
            )
            timing.latencies.append(time.perf_counter() - started)
            timing.statuses[response.status_code] += 1
    timing.elapsed = sum(timing.latencies)
    return timing


def loaded_nested_roots(base_url: str) -> list[str]:
    """The roots of the nested trees a database holds (their trait): to measure a
    database an earlier run loaded."""
    trait = load_trees.NESTED.nodes[0].traits[0]
    with client.new_session() as session:
        response = session.get(
            f"{base_url}/resource_providers?required={trait}",
            headers={**client.HEADERS, "OpenStack-API-Version": "placement 1.18"},
            timeout=client.REQUEST_TIMEOUT_S,
        )
    response.raise_for_status()
    return [p["uuid"] for p in response.json()["resource_providers"]]


def worker_memory(base_url: str) -> list[str]:
    """VmRSS and RssAnon of each gunicorn worker serving ``base_url`` (from /proc)."""
    lines = []
    for pid in gunicorn_processes(base_url)[1]:
        with open(f"/proc/{pid}/status") as stream:
            status = dict(line.split(":", 1) for line in stream if ":" in line)
        lines.append(f"{status['VmRSS'].strip()} (anonymous {status['RssAnon'].strip()})")
    return lines


def first_answers(database_url: str, log_dir: str, requests_of) -> list[str]:
    """A new one-worker service on the same database: time to the first answer of each
    query from its start, then the second answer of the same query."""
    lines = []
    started = time.perf_counter()
    with gunicorn(database_url, 1, os.path.join(log_dir, "new-worker.log")) as base_url:
        up = time.perf_counter() - started
        lines.append(f"started in {up:.2f} s")
        lines += first_and_second_answers(requests_of(base_url))
    return lines


def first_and_second_answers(requests: dict[str, client.Request]) -> list[str]:
    """Each query twice in a row, on one session: the time of its first answer and of
    its second, a line each."""
    lines = []
    with client.new_session() as session:
        for name, request in requests.items():
            before = time.perf_counter()
            status = request(session, 0).status_code
            first = time.perf_counter() - before
            before = time.perf_counter()
            request(session, 1)
            second = time.perf_counter() - before
            lines.append(
                f"{name}: first answer {first * 1000:.0f} ms ({status}), "
                f"second {second * 1000:.1f} ms"
            )
    return lines


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Scale benchmark (see the module docstring).")
    add_scale_options(parser)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    return parser.parse_args(argv)


def add_scale_options(parser: argparse.ArgumentParser) -> None:
    """What to load (``load``), the service's options, and whether it is preloaded."""
    parser.add_argument("--device-nodes", type=int, default=1000)
    parser.add_argument("--trees", type=int, default=1000)
    parser.add_argument("--preload", action="store_true", help=PRELOAD_HELP)
    add_service_options(parser)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.url:
        print(
            "run_scale starts its own services (a new worker is part of it): no --url",
            file=sys.stderr,
        )
        return 2
    command = report.command_line("benchmarks.run_scale", argv)
    machine = report.environment()
    with running_service(
        args.workers, args.database_url, None, args.log_dir, args.backend, preload=args.preload
    ) as service:
        base = service.base_url
        devices, trees, roots = load(base, args, "scale")
        rows = []
        for name, request in queries(base).items():
            client.warm_up(request, 3)  # every worker's copy holds everything
            rows.append(
                report.Row(name, client.sequential(request, args.requests, args.max_seconds))
            )
        rows.append(
            report.Row(
                "nested candidates, limit=10, after each PUT /allocations",
                refresh_after_a_write(base, roots, args.requests),
                note="the PUT untimed",
            )
        )
        memory = worker_memory(base)
        log_dir = args.log_dir or os.path.dirname(service.log_path or "/tmp/x")
        new_worker = first_answers(service.database_url, log_dir, queries)
        config = {
            "command": command,
            **service.configuration(),
            "providers": f"{devices.providers + trees.providers} loaded ({len(devices.nodes)} "
            f"device nodes in {devices.seconds:.0f} s, {len(trees.roots)} nested "
            f"trees); {len(roots)} nested trees in all",
            "worker memory after the queries": "; ".join(memory),
            "a new worker": "; ".join(new_worker),
            **machine,
        }
    return report.finish(config, rows, 1, args.json)


if __name__ == "__main__":
    sys.exit(main())
