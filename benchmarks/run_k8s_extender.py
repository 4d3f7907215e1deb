"""kube-scheduler extender benchmarks (api-ref/k8s_scheduler.md): filter, prioritize and
bind on DGX A100-like device nodes, and a replay of many GPU pods from concurrent
schedulers.

Starts a service (``benchmarks.service``: throwaway PostgreSQL + gunicorn, or
``--database-url``) whose Kubernetes API is the stand-in server of the tests
(``tests/k8s_api_server.py``, in this process), imports ``--nodes`` device nodes
(``load_device_nodes``), then times, as kube-scheduler sends them (no token, from
loopback, ``nodeCacheCapable``):

* ``filter`` of a pod asking ``aliyun.com/gpu: 4`` with ``--names`` node names;
* ``prioritize`` of the same;
* ``bind`` of pods asking one GPU each, to nodes chosen round-robin; the Kubernetes
  API's part is timed apart: the same three calls (read, patch, bind) sent by this
  process straight to the stand-in server;
* a replay: ``--pods`` pods of ``--gpus`` GPUs each, from ``--schedulers`` threads, each
  pod filtered (``--names`` names, a random window of the nodes), prioritized and bound
  to its best node (again from filter when a bind loses a race); pods/s, then every
  bound pod's allocations read back: no GPU may be held by two pods.

Run by hand; never a timed test. Prints the configuration and a Markdown table.
"""

import argparse
import json
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from benchmarks import client, load_device_nodes, report
from benchmarks.client import Timing, add_timing_options, checked_timing_options
from benchmarks.service import add_service_options, running_service
from tests.k8s_api_server import FakeApiServer, binding_args, kubeconfig, running

SCHEDULER = {"Content-Type": "application/json"}
ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
GPU_TENANCY = "CUSTOM_GPU_TENANCY"


def pod(gpus: int) -> dict:
    uid = str(uuid.uuid4())
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"bench-{uid[:13]}", "namespace": "bench", "uid": uid},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "limits": {"aliyun.com/gpu": str(gpus)},
                        "requests": {"aliyun.com/gpu": str(gpus)},
                    },
                }
            ]
        },
        "status": {"phase": "Pending"},
    }


def verb_row(base: str, name: str, verb: str, body_of, args) -> report.Row:
    def call(session, index):
        return session.post(
            f"{base}/k8s/scheduler/{verb}", data=body_of(index), headers=SCHEDULER, timeout=30
        )

    client.warm_up(call, args.warm_up)
    return report.Row(name, client.sequential(call, args.requests, args.max_seconds))


def bind_rows(base: str, names: list[str], apiserver: FakeApiServer, args) -> list[report.Row]:
    pods = [pod(1) for _ in range(args.requests + args.warm_up)]
    for p in pods:
        apiserver.add_pod(p)
    errors: Counter = Counter()

    def call(session, index):
        response = session.post(
            f"{base}/k8s/scheduler/bind",
            data=json.dumps(binding_args(pods[index], names[index % len(names)])),
            headers=SCHEDULER,
            timeout=30,
        )
        if response.status_code != 200 or response.json()["Error"]:
            errors[response.text[:120]] += 1
        return response

    for index in range(args.warm_up):
        with client.new_session() as session:
            call(session, args.requests + index)
    timed = client.sequential(call, args.requests, args.max_seconds)
    api_alone = _api_alone(apiserver, args.requests, args.max_seconds)
    note = f"bind errors: {dict(errors)}" if errors else "every bind answered Error empty"
    return [
        report.Row("bind (1 GPU), the Kubernetes calls included", timed, None, note),
        report.Row(
            "  the Kubernetes calls alone (read, patch, bind)",
            api_alone,
            None,
            "the same 3 calls sent straight to the stand-in API server",
        ),
    ]


def _api_alone(apiserver: FakeApiServer, count: int, max_seconds: float) -> Timing:
    pods = [pod(1) for _ in range(count)]
    for p in pods:
        apiserver.add_pod(p)

    def calls(session, index):
        metadata = pods[index]["metadata"]
        at = f"{apiserver.url}/api/v1/namespaces/bench/pods/{metadata['name']}"
        session.get(at, timeout=30)
        session.post(
            f"{apiserver.url}/api/v1/namespaces/bench/bindings",
            json={
                "metadata": {"name": metadata["name"], "uid": metadata["uid"]},
                "target": {"kind": "Node", "name": "x"},
            },
            timeout=30,
        )
        return session.patch(  # the last, for its 200 (a Binding's is 201)
            at,
            json={"metadata": {"annotations": {"a": "b"}}},
            headers={"Content-Type": "application/merge-patch+json"},
            timeout=30,
        )

    return client.sequential(calls, count, max_seconds)


def replay(base: str, names: list[str], apiserver: FakeApiServer, args) -> report.Row:
    pods = [pod(args.gpus) for _ in range(args.pods)]
    for p in pods:
        apiserver.add_pod(p)
    queue = iter(range(args.pods))
    lock = threading.Lock()
    bound: dict[str, str] = {}
    outcomes: Counter = Counter()
    window = min(args.names, len(names))

    def schedule(session, p) -> str:
        for _attempt in range(5):
            start = random.randrange(len(names))
            asked = (names + names)[start : start + window]
            body = json.dumps({"Pod": p, "NodeNames": asked})
            passing = session.post(
                f"{base}/k8s/scheduler/filter", data=body, headers=SCHEDULER, timeout=30
            ).json()["NodeNames"]
            if not passing:
                return "unschedulable"
            body = json.dumps({"Pod": p, "NodeNames": passing})
            scores = session.post(
                f"{base}/k8s/scheduler/prioritize", data=body, headers=SCHEDULER, timeout=30
            ).json()
            best = max(scores, key=lambda entry: entry["Score"])["Host"]
            error = session.post(
                f"{base}/k8s/scheduler/bind",
                data=json.dumps(binding_args(p, best)),
                headers=SCHEDULER,
                timeout=30,
            ).json()["Error"]
            if not error:
                with lock:
                    bound[p["metadata"]["uid"]] = best
                return "bound"
        return "lost 5 races"

    def scheduler():
        with client.new_session() as session:
            while True:
                with lock:
                    index = next(queue, None)
                if index is None:
                    return
                outcome = schedule(session, pods[index])
                with lock:
                    outcomes[outcome] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=scheduler) for _ in range(args.schedulers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - started
    twice = _gpus_given_twice(base, bound)
    timing = Timing(requested=args.pods, concurrency=args.schedulers)
    timing.elapsed = took
    note = (
        f"{len(bound)} pods bound at {len(bound) / took:.1f} pods/s by {args.schedulers} "
        f"schedulers ({dict(outcomes)}); GPUs given twice: {twice} (read back from "
        f"{len(bound)} pods' allocations){' UNEXPECTED' if twice else ''}"
    )
    return report.Row(f"replay: {args.pods} pods of {args.gpus} GPU(s)", None, None, note)


def _gpus_given_twice(base: str, bound: dict[str, str]) -> int:
    holders: Counter = Counter()
    with client.new_session() as session:
        for uid in bound:
            allocations = session.get(
                f"{base}/allocations/{uid}", headers=ADMIN, timeout=30
            ).json()["allocations"]
            for provider, allocation in allocations.items():
                if GPU_TENANCY in allocation["resources"]:
                    holders[provider] += 1
    return sum(1 for count in holders.values() if count > 1)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_service_options(parser)
    add_timing_options(parser, requests=200, warm_up=10, max_seconds=120)
    parser.add_argument("--nodes", type=int, default=500, help="device nodes to load")
    parser.add_argument("--names", type=int, default=500, help="node names per filter")
    parser.add_argument("--pods", type=int, default=2000, help="pods of the replay")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs each replayed pod asks")
    parser.add_argument("--schedulers", type=int, default=4, help="concurrent schedulers")
    args = parser.parse_args(argv)
    checked_timing_options(parser, args)
    if args.url is not None:
        parser.error("--url: the service must be started here, with the stand-in API")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = report.command_line("benchmarks.run_k8s_extender", argv)
    machine = report.environment()
    with (
        tempfile.TemporaryDirectory(prefix="placement-k8s-bench-") as folder,
        running(FakeApiServer()) as apiserver,
    ):
        path = Path(folder) / "kubeconfig"
        path.write_text(kubeconfig(apiserver.url), encoding="utf-8")
        with running_service(
            args.workers,
            args.database_url,
            None,
            args.log_dir,
            args.backend,
            extra_env={"PLACEMENT_K8S_KUBECONFIG": str(path)},
        ) as service:
            base = service.base_url
            loaded = load_device_nodes.load_device_nodes(
                base, args.nodes, args.load_threads, progress=True
            )
            after_load = report.load_average()
            names = [node.name for node in loaded.nodes]
            asked = names[: args.names]
            four = pod(4)
            started = time.perf_counter()
            rows = [
                verb_row(
                    base,
                    f"filter, {len(asked)} names, 4 GPUs",
                    "filter",
                    lambda i: json.dumps({"Pod": four, "NodeNames": asked}),
                    args,
                ),
                verb_row(
                    base,
                    f"prioritize, {len(asked)} names, 4 GPUs",
                    "prioritize",
                    lambda i: json.dumps({"Pod": four, "NodeNames": asked}),
                    args,
                ),
                *bind_rows(base, names, apiserver, args),
                replay(base, names, apiserver, args),
            ]
            config = {
                "command": command,
                **service.configuration(),
                "loaded through the API": f"{len(names)} DGX A100-like device nodes in "
                f"{loaded.seconds:.1f} s",
                **machine,
                "load average after loading (1, 5 min)": after_load,
                "load average after the scenarios (1, 5 min)": report.load_average(),
                "scenarios took": f"{time.perf_counter() - started:.0f} s",
            }
    return report.finish(config, rows, args.concurrency, args.json)


if __name__ == "__main__":
    sys.exit(main())
