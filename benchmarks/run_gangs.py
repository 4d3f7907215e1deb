"""Gang benchmarks: the best gang and gang claims on a cluster of DGX A100-like nodes.

Starts a service (``benchmarks.service``: throwaway PostgreSQL + gunicorn, or
``--database-url``, or ``--url`` of a running one), imports ``--nodes`` device nodes
(``load_device_nodes``: 8 GPUs with NV12 between every pair), and places them in a
network of three levels through ``PUT /group_resources/network``: ``--nvlink-domains``
domains of consecutive nodes (125 of 16 for 2,000 nodes), each under one of
``--leaves`` leaves (consecutive domains), each under one of ``--spines`` spines. Then
times, with ``"scorer": "pack"``:

* (a) ``POST /group_resources/gang_candidates``: 16 members of 8 GPUs,
  ``required: nvlink_domain``, ``limit: 1`` (target: p50 <= 50 ms at 2,000 nodes);
* (b) 64 members of 8 GPUs, ``required: spine``, ``preferred: leaf``, ``limit: 1``
  (target: p50 <= 100 ms);
* (e) members of two kinds: one parameter server of 2 GPUs and 63 workers of 8 GPUs,
  ``required: spine``, ``preferred: leaf``, ``limit: 1`` (no target; beside (b));
* (c) ``POST /group_resources/gang_claims`` of (b), ``--claims`` one after the other,
  each gang kept (target: p50 <= 150 ms); then every gang released;
* (d) the same claims from ``--concurrency`` threads at once, then read back through
  ``GET /group_resources/gangs/{gang_uuid}``: no GPU held by two consumers, every gang
  granted holds all its members' devices, every gang refused holds nothing.

Each query is first asked once and checked (a gang of the members asked, in one
domain of the required level, each member with its kind's GPUs; for (b) and (e) in as
few leaves as a leaf's size allows).
The load average is printed with the results: below 1.5 the machine was quiet.
Exits 1 when anything was unexpected.
"""

import argparse
import math
import sys
import uuid

import requests

from benchmarks import client, load_device_nodes, report
from benchmarks.client import add_timing_options, checked_timing_options
from benchmarks.service import add_service_options, running_service

LEVELS = ["spine", "leaf", "nvlink_domain"]
EIGHT_GPUS = {"resources": {"nvidia.com/gpu": 8}}
NVLINK_GANG = {
    "members": 16,
    "member": EIGHT_GPUS,
    "required": "nvlink_domain",
    "scorer": "pack",
    "limit": 1,
}
SPINE_GANG = {
    "members": 64,
    "member": EIGHT_GPUS,
    "required": "spine",
    "preferred": "leaf",
    "scorer": "pack",
    "limit": 1,
}
MIXED_GANG = {
    "members": [
        {"count": 1, "member": {"resources": {"nvidia.com/gpu": 2}}},
        {"count": 63, "member": EIGHT_GPUS},
    ],
    "required": "spine",
    "preferred": "leaf",
    "scorer": "pack",
    "limit": 1,
}


def _gpus_per_member(query: dict) -> list[int]:
    """The GPUs each member asks for, in member order (kind by kind)."""
    if isinstance(query["members"], int):
        return [query["member"]["resources"]["nvidia.com/gpu"]] * query["members"]
    return [
        group["member"]["resources"]["nvidia.com/gpu"]
        for group in query["members"]
        for _ in range(group["count"])
    ]


def network(names: list[str], spines: int, leaves: int, domains: int) -> dict:
    """Node i in NVLink domain i // size, domain d under leaf d * leaves // domains, leaf
    l under spine l * spines // leaves: each domain has one parent."""
    size = math.ceil(len(names) / domains)
    nodes = {}
    for index, name in enumerate(names):
        domain = index // size
        leaf = domain * leaves // domains
        nodes[name] = {
            "spine": f"spine-{leaf * spines // leaves}",
            "leaf": f"leaf-{leaf}",
            "nvlink_domain": f"nvl-{domain}",
        }
    return {"levels": LEVELS, "nodes": nodes}


def _check_gang(body: dict, query: dict, placed: dict, fewest_leaves: int | None) -> str:
    """What is wrong with the first gang of an answer ('' when nothing)."""
    if not body.get("gangs"):
        return f"EXPECTED a gang, got {str(body)[:300]}"
    gang = body["gangs"][0]
    members = gang["members"]
    required = query["required"]
    gpus = _gpus_per_member(query)
    if len(members) != len(gpus) or gang["nodes"] != len(gpus):
        return f"EXPECTED {len(gpus)} members on as many nodes, got {len(members)}"
    if {placed[m["node"]][required] for m in members} != {gang["required"]["domain"]}:
        return f"EXPECTED every member in {required} {gang['required']['domain']}"
    if [len(m["devices"]["gpu"]) for m in members] != gpus:
        return "EXPECTED each member's GPUs, in member order"
    if fewest_leaves is not None and len(gang["domains"]["leaf"]) != fewest_leaves:
        return f"EXPECTED {fewest_leaves} leaves, got {gang['domains']['leaf']}"
    return ""


def query_row(
    base: str, args, name: str, query: dict, placed: dict, fewest_leaves: int | None
) -> report.Row:
    print(f"running {name}...", file=sys.stderr, flush=True)
    with client.new_session() as session:
        first = session.post(
            f"{base}/group_resources/gang_candidates", json=query, timeout=client.REQUEST_TIMEOUT_S
        )
    note = (
        f"EXPECTED 200, got {first.status_code}"
        if first.status_code != 200
        else _check_gang(first.json(), query, placed, fewest_leaves)
    )

    def ask(session: requests.Session, _index: int) -> requests.Response:
        return session.post(
            f"{base}/group_resources/gang_candidates", json=query, timeout=client.REQUEST_TIMEOUT_S
        )

    if args.warm_up:
        client.warm_up(ask, args.warm_up, 1)
    sequential = client.sequential(ask, args.requests, args.max_seconds)
    return report.Row(name, sequential, None, note)


def _claim_body() -> dict:
    body = {key: value for key, value in SPINE_GANG.items() if key != "limit"}
    return {
        **body,
        "gang_uuid": str(uuid.uuid4()),
        "consumer_uuids": [str(uuid.uuid4()) for _ in range(SPINE_GANG["members"])],
        "project_id": "bench",
        "user_id": "bench",
    }


def claims_row(base: str, args, concurrency: int) -> report.Row:
    label = "sequential" if concurrency == 1 else f"{concurrency} claimers"
    name = f"(c) claim 64 x 8 GPUs, spine/leaf, {label}"
    print(f"running {name}...", file=sys.stderr, flush=True)
    sent: list[dict] = []
    answers: dict[str, int] = {}

    def claim(session: requests.Session, _index: int) -> requests.Response:
        body = _claim_body()
        sent.append(body)
        response = session.post(
            f"{base}/group_resources/gang_claims", json=body, timeout=client.REQUEST_TIMEOUT_S
        )
        answers[body["gang_uuid"]] = response.status_code
        return response

    timing = client.concurrent(claim, args.claims, concurrency, args.max_seconds)
    note = _read_back(base, sent, answers)
    release(base, [body for body in sent if answers.get(body["gang_uuid"]) == 200])
    if concurrency == 1:
        return report.Row(name, timing, None, note)
    return report.Row(name, None, timing, note)


def _read_back(base: str, sent: list[dict], answers: dict[str, int]) -> str:
    """No GPU given twice; each gang whole (granted) or absent (refused)."""
    holders: dict[str, str] = {}
    with client.new_session() as session:
        for body in sent:
            shown = session.get(
                f"{base}/group_resources/gangs/{body['gang_uuid']}",
                timeout=client.REQUEST_TIMEOUT_S,
            )
            granted = answers.get(body["gang_uuid"]) == 200
            if shown.status_code != (200 if granted else 404):
                return f"EXPECTED gang {body['gang_uuid']} {'held' if granted else 'absent'}"
            if not granted:
                continue
            for member in shown.json()["members"]:
                gpus = [
                    p
                    for p, a in member["allocations"].items()
                    if "CUSTOM_GPU_CORE" in a["resources"]
                ]
                if len(gpus) != 8:
                    return f"EXPECTED 8 GPUs held by {member['consumer_uuid']}, got {len(gpus)}"
                for provider in gpus:
                    if (
                        holders.setdefault(provider, member["consumer_uuid"])
                        != member["consumer_uuid"]
                    ):
                        return f"EXPECTED GPU {provider} given once"
    return ""


def release(base: str, bodies: list[dict]) -> None:
    with client.new_session() as session:
        for body in bodies:
            session.delete(
                f"{base}/group_resources/gangs/{body['gang_uuid']}",
                timeout=client.REQUEST_TIMEOUT_S,
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--spines", type=int, default=4)
    parser.add_argument("--leaves", type=int, default=32)
    parser.add_argument("--nvlink-domains", type=int, default=125)
    parser.add_argument("--claims", type=int, default=20, help="gang claims timed")
    add_service_options(parser)
    add_timing_options(parser, requests=30, warm_up=3, max_seconds=120)
    parser.set_defaults(concurrency=4)
    args = parser.parse_args(argv)
    checked_timing_options(parser, args)
    load_before = report.load_average()
    with running_service(
        args.workers, args.database_url, args.url, args.log_dir, args.backend
    ) as service:
        base = service.base_url
        print(f"loading {args.nodes} device nodes...", file=sys.stderr, flush=True)
        loaded = load_device_nodes.load_device_nodes(
            base, args.nodes, args.load_threads, progress=True
        )
        names = [node.name for node in loaded.nodes]
        described = network(names, args.spines, args.leaves, args.nvlink_domains)
        with client.new_session() as session:
            put = session.put(
                f"{base}/group_resources/network", json=described, timeout=client.REQUEST_TIMEOUT_S
            )
        if put.status_code != 200:
            print(f"PUT /group_resources/network: {put.status_code} {put.text[:300]}")
            return 1
        placed = {
            name: [d["spine"], d["leaf"], d["nvlink_domain"]]
            for name, d in described["nodes"].items()
        }
        placed = {name: dict(zip(LEVELS, path, strict=True)) for name, path in placed.items()}
        per_leaf: dict[str, int] = {}
        for path in placed.values():
            per_leaf[path["leaf"]] = per_leaf.get(path["leaf"], 0) + 1
        fewest_leaves = math.ceil(SPINE_GANG["members"] / max(per_leaf.values()))
        rows = [
            query_row(
                base, args, "(a) 16 x 8 GPUs, required nvlink_domain", NVLINK_GANG, placed, None
            ),
            query_row(
                base,
                args,
                "(b) 64 x 8 GPUs, required spine, preferred leaf",
                SPINE_GANG,
                placed,
                fewest_leaves,
            ),
            query_row(
                base,
                args,
                "(e) 1 x 2 GPUs + 63 x 8 GPUs, required spine, preferred leaf",
                MIXED_GANG,
                placed,
                fewest_leaves,
            ),
            claims_row(base, args, 1),
            claims_row(base, args, args.concurrency),
        ]
        config = {
            **service.configuration(),
            "nodes": f"{len(names)} device nodes, {args.spines} spines, {args.leaves} leaves, "
            f"{args.nvlink_domains} NVLink domains",
            "load average (1, 5 min) before / after": f"{load_before} / {report.load_average()}",
            "quiet": "yes"
            if float(load_before.split(",")[0]) < 1.5
            else "NO: not measured quietly (load average 1.5 or more at the start)",
            "command": report.command_line("benchmarks.run_gangs", argv),
        }
    return report.finish(config, rows, args.concurrency, args.json)


if __name__ == "__main__":
    sys.exit(main())
