"""What the translator's and the device search's explanations cost, against the searches.

In process, on a SQLite file: ``--nodes`` nodes of each benchmark (the 8-GPU node of
``load_group_nodes``, the DGX A100 of ``load_device_nodes``), written through the
Python API (``group_resources.sync.sync_node``, ``devices.importing.import_node``) in
transactions of 100 nodes, which is much faster than the HTTP loaders. With
``--distinct`` no two nodes are alike (one GPU's memory differs from node to node), so
that neither the searches nor the explanations can look at one node for many. Then, with
``create_app`` and Flask's test client (the whole WSGI stack, no socket), each request is
sent once (the first answer builds the nodes), then ``--requests`` times: the
explanation (``/candidates/explain``, ``/device_candidates/explain``) beside the search
without ``limit``, p50 in milliseconds, with what the explanation says.

    python -m benchmarks.run_explain_nodes --nodes 1000
    python -m benchmarks.run_explain_nodes --nodes 1000 --distinct
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.load_device_nodes import dgx_a100
from benchmarks.load_group_nodes import eight_gpu_node, gpu_group
from benchmarks.report import load_average
from benchmarks.run_group_resources import AFFINITY_4
from placement.app import create_app
from placement.config import Config
from placement.db import migrate
from placement.db.engine import WRITE_TRANSACTION_OPTION, make_engine
from placement.devices import importing as device_importing
from placement.group_resources import sync as group_sync

JOINT = {
    "resources": {"nvidia.com/gpu": 4, "koordinator.sh/rdma": 1},
    "annotations": {
        "scheduling.koordinator.sh/device-joint-allocate": json.dumps(
            {"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"}
        )
    },
}
# (the search's path, label, body): each body is asked of the search and of its explanation
REQUESTS = [
    ("/group_resources/candidates", "translator: 4-GPU affinity", {"resources": AFFINITY_4}),
    (
        "/group_resources/candidates",
        "translator: 4-GPU affinity, 512GiB (no node fits)",
        {"resources": {**AFFINITY_4, "memory": "512GiB"}},
    ),
    ("/group_resources/device_candidates", "devices: 4 GPUs + NICs, SamePCIe", JOINT),
    (
        "/group_resources/device_candidates",
        "devices: 9 GPUs (no node fits)",
        {"resources": {"nvidia.com/gpu": 9}},
    ),
]


def load(engine, config: Config, nodes: int, distinct: bool) -> float:
    naming = config.group_naming()
    start = time.perf_counter()
    for first in range(0, nodes, 100):
        with engine.connect() as conn:
            conn = conn.execution_options(**{WRITE_TRANSACTION_OPTION: True})
            with conn.begin():
                for index in range(first, min(nodes, first + 100)):
                    group_node, device_node = eight_gpu_node(), dgx_a100(index)
                    if distinct:
                        group_node[f"{gpu_group(0)}/memory"] = f"{16384 + index}Mi"
                        device_node["devices"][0]["memory"] = f"{80 * 1024 + index}Mi"
                    group_sync.sync_node(conn, f"g{index:05d}", group_node, naming)
                    device_importing.import_node(
                        conn,
                        f"d{index:05d}",
                        device_importing.topology_from_body(device_node),
                        naming,
                    )
    return time.perf_counter() - start


def p50_ms(client, path: str, body: dict, requests: int) -> tuple[float, dict]:
    first = client.post(path, json=body)
    assert first.status_code == 200, first.json
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        answer = client.post(path, json=body)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, answer.json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--distinct", action="store_true", help="no two nodes alike")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'explain.sqlite'}"
        engine = make_engine(url)
        migrate.upgrade(engine)
        config = Config(database_url=url)
        app = create_app(config, engine=engine)  # (it writes the standard classes)
        client = app.test_client()
        client.environ_base["HTTP_X_AUTH_TOKEN"] = "admin"
        client.environ_base["HTTP_OPENSTACK_API_VERSION"] = "placement latest"
        seconds = load(engine, config, args.nodes, args.distinct)
        print(
            f"{args.nodes} translator and {args.nodes} device nodes"
            f"{', no two alike' if args.distinct else ''}, loaded in {seconds:.0f} s; "
            f"load average {load_average()}\n"
        )
        print("| request | explain p50 ms | search p50 ms | the explanation |")
        print("|---|--:|--:|---|")
        for path, label, body in REQUESTS:
            explain_ms, explained = p50_ms(client, f"{path}/explain", body, args.requests)
            search_ms, _ = p50_ms(client, path, body, args.requests)
            last = explained["nodes"][-1]["passing"]
            says = f"{last} nodes answer" + (
                f"; empties at {explained['empties_at']}" if explained["empties_at"] else ""
            )
            print(f"| {label} | {explain_ms:.1f} | {search_ms:.1f} | {says} |")
        engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
