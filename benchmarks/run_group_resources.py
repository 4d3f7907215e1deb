"""Group-resource translator benchmarks: best candidate and claims on 8-GPU nodes.

Starts a service (``benchmarks.service``: throwaway PostgreSQL + gunicorn, or
``--database-url``, or ``--url`` of a running one), syncs ``--nodes`` 8-GPU
nodes through ``PUT /group_resources/nodes/{name}`` (``load_group_nodes``:
GPUs in pairs on a fast link, pairs of pairs on a slower one, 15 providers each),
then times:

* ``POST /group_resources/candidates`` with ``limit: 1`` for the 4-GPU affinity
  request (cpu 4, memory 16GiB and four GPUs under one ``Gpugrp1``, in two
  ``Gpugrp0`` pairs), for the flat 4-GPU request (``gpu/0..3/cards``), and the
  affinity request without ``limit`` (every node's best placement);
* ``POST /group_resources/claims`` of a 2-GPU request (one ``Gpugrp0`` pair),
  each a new consumer, ``--claims`` sequentially then ``--claims`` from
  ``--concurrency`` threads;
* the affinity candidate with ``limit: 1`` again, now that GPUs are taken;
* one more node filled by claims restricted to it (``nodes: [name]``): four
  pairs are granted, the fifth claim must be a 409 ``unplaceable``.

Every candidate query is first asked once and its answer checked (count,
``feasible_nodes`` when present (a search that ``limit`` stopped early omits
it), the mapping keeps the requested affinity, the allocations are the mapped
providers, a ``limit`` answer is the head of the same query's answer without
``limit``); then ``--warm-up`` untimed requests, ``--requests``
sequential ones (p50/p95/p99) and ``--concurrent-requests`` at
``--concurrency`` (req/s). Every claim answer is kept and checked: 200 (the
claims never exceed the loaded capacity, so a 409 is a bug), the two GPUs in
one pair, no GPU provider in two claims, and afterwards through the API
``GET /resource_providers/{uuid}/usages`` = 1 on every claimed GPU and
``GET /allocations/{consumer}`` = the claim's answer.

Exact counts (``feasible_nodes``) are checked on a fresh service only (no
``--url``, no ``--database-url``); elsewhere they are lower bounds, since
earlier runs' nodes match too.

Prints the configuration and a Markdown table; ``--json`` also writes both.
Exits 1 when anything was unexpected (non-200, error, timeout, failed check).
"""

import argparse
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from benchmarks import client, load_group_nodes, report
from benchmarks.client import add_timing_options, checked_timing_options
from benchmarks.load_group_nodes import GPU_CARDS, LoadedNodes
from benchmarks.service import add_service_options, running_service

PAIRS_PER_NODE = load_group_nodes.DEVICES // 2
UNPLACEABLE = "placement.group_resources.unplaceable"

AFFINITY_4 = {
    "cpu": 4,
    "memory": "16GiB",
    "Gpugrp1/R0/Gpugrp0/RA/gpu/g0/cards": 1,
    "Gpugrp1/R0/Gpugrp0/RA/gpu/g1/cards": 1,
    "Gpugrp1/R0/Gpugrp0/RB/gpu/g2/cards": 1,
    "Gpugrp1/R0/Gpugrp0/RB/gpu/g3/cards": 1,
}
FLAT_4 = {f"gpu/{i}/cards": 1 for i in range(4)}
PAIR_2 = {"Gpugrp0/RA/gpu/a/cards": 1, "Gpugrp0/RA/gpu/b/cards": 1}


@dataclass
class Context:
    base_url: str
    args: argparse.Namespace
    loaded: LoadedNodes
    fresh: bool  # nothing but this run's nodes on the service: counts are exact
    claims: dict[str, dict] = field(default_factory=dict)  # consumer -> 200 answer
    failed_claims: list[str] = field(default_factory=list)  # what went wrong
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def nodes(self) -> int:
        return len(self.loaded.nodes)


# --- what a node key says --------------------------------------------------------------


def parse_gpu_key(key: str) -> tuple[str, str, str] | None:
    """``Gpugrp1/0/Gpugrp0/1/gpu/dev2/cards`` -> ('0', '1', 'Gpugrp1/0/Gpugrp0/1/gpu/dev2')."""
    parts = key.split("/")
    if len(parts) != 7 or parts[0] != "Gpugrp1" or parts[2] != "Gpugrp0" or parts[4] != "gpu":
        return None
    return parts[1], parts[3], "/".join(parts[:6])


def check_placement(
    ctx: Context, candidate: dict, resources: dict, pairs: list[list[str]], one_group1: bool
) -> list[str]:
    """Problems of one candidate or claim answer for ``resources``.

    ``pairs``: requested GPU keys that must share a Gpugrp0 (different pairs,
    different Gpugrp0); ``one_group1``: all of them under one Gpugrp1.
    """
    problems = []
    mappings = candidate.get("mappings", {})
    if set(mappings) != set(resources):
        return [f"{candidate.get('node')}: mapped keys {sorted(mappings)}"]
    gpu_keys = [k for k in resources if k.endswith("/cards")]
    parsed = {k: parse_gpu_key(mappings[k]) for k in gpu_keys}
    if any(p is None for p in parsed.values()):
        return [f"{candidate.get('node')}: not a GPU of the layout: {mappings}"]
    if len({p[2] for p in parsed.values()}) != len(gpu_keys):
        problems.append("two requested GPUs on one device")
    group0s = []
    for pair in pairs:
        pair_group0 = {parsed[k][1] for k in pair}
        if len(pair_group0) != 1:
            problems.append(f"pair {pair} split over Gpugrp0 {sorted(pair_group0)}")
        group0s.append(min(pair_group0))
    if len(set(group0s)) != len(group0s):
        problems.append("two requested pairs on one Gpugrp0")
    if one_group1 and len({p[0] for p in parsed.values()}) != 1:
        problems.append("GPUs over more than one Gpugrp1")
    for key in resources:
        if "/" not in key and mappings[key] != key:
            problems.append(f"{key} mapped to {mappings[key]}")
    node = ctx.loaded.by_name().get(candidate.get("node", ""))
    allocations = {u: a["resources"] for u, a in candidate.get("allocations", {}).items()}
    gpu_allocations = {u: r for u, r in allocations.items() if GPU_CARDS in r}
    if len(gpu_allocations) != len(gpu_keys) or any(
        r != {GPU_CARDS: 1} for r in gpu_allocations.values()
    ):
        problems.append(f"GPU allocations {gpu_allocations}")
    if node is not None:  # one of this run's nodes: the uuids are known
        mapped = {node.gpus[p[2]] for p in parsed.values()}
        if mapped != set(gpu_allocations):
            problems.append("allocations are not on the mapped GPUs")
        base = {k: v for k, v in resources.items() if "/" not in k}
        if base and node.uuid not in allocations:
            problems.append("no allocation on the node itself for " + ", ".join(base))
    return [f"{candidate.get('node')}: {p}" for p in problems]


def affinity_pairs() -> list[list[str]]:
    ra = [k for k in AFFINITY_4 if "/RA/" in k]
    rb = [k for k in AFFINITY_4 if "/RB/" in k]
    return [ra, rb]


# --- timing ----------------------------------------------------------------------------


def post(session: requests.Session, url: str, body: dict) -> requests.Response:
    return session.post(url, json=body, timeout=client.REQUEST_TIMEOUT_S)


def timed(
    ctx: Context,
    request: client.Request,
    seq_count: int | None = None,
    conc_count: int | None = None,
) -> tuple[client.Timing | None, client.Timing | None]:
    args = ctx.args
    seq = client.sequential(request, seq_count, args.max_seconds) if seq_count else None
    conc = (
        client.concurrent(request, conc_count, args.concurrency, args.max_seconds)
        if conc_count
        else None
    )
    return seq, conc


def candidates_row(
    ctx: Context,
    label: str,
    resources: dict,
    limit: int | None,
    check: Callable[[dict], list[str]],
    expected_feasible: int,
) -> report.Row:
    """Probe (one checked answer), then time; the note says what the answer held."""
    args = ctx.args
    name = f"{label}, {ctx.nodes} nodes" + (f", limit={limit}" if limit else "")
    print(f"running {name}...", file=sys.stderr, flush=True)
    url = f"{ctx.base_url}/group_resources/candidates"
    body: dict = {"resources": resources, "scorer": "pack"}
    if limit is not None:
        body["limit"] = limit
    start = time.perf_counter()
    try:
        with client.new_session() as session:
            response = post(session, url, body)
    except requests.RequestException as exc:
        return report.Row(name, None, None, f"first answer: {type(exc).__name__} (EXPECTED 200)")
    took = time.perf_counter() - start
    if response.status_code != 200:
        return report.Row(
            name,
            None,
            None,
            f"first answer: {response.status_code} {response.text[:200]} (EXPECTED 200)",
        )
    answer = response.json()
    # feasible_nodes is omitted when a limit stopped the search before every node was seen.
    candidates, feasible = answer["candidates"], answer.get("feasible_nodes")
    problems = []
    if feasible is None and limit is None:
        problems.append("feasible_nodes missing without a limit")
    known = feasible if feasible is not None else expected_feasible
    want_count = known if limit is None else min(limit, known)
    if len(candidates) < want_count or (ctx.fresh and len(candidates) != want_count):
        problems.append(f"{len(candidates)} candidates, {want_count} expected")
    if feasible is not None:
        if ctx.fresh and feasible != expected_feasible:
            problems.append(f"feasible_nodes {feasible}, {expected_feasible} expected")
        elif feasible < expected_feasible:
            problems.append(f"feasible_nodes {feasible}, at least {expected_feasible} expected")
    if ctx.fresh and expected_feasible == ctx.nodes and answer.get("unplaced"):
        problems.append(f"unplaced {answer['unplaced'][:1]}")
    for candidate in candidates:
        problems += check(candidate)
    scores = [c["score"] for c in candidates]
    if scores != sorted(scores, reverse=True):
        problems.append("candidates not best first")
    if limit is not None:
        problems += same_as_unlimited(ctx, url, body, candidates)
    counted = "omitted (search stopped early)" if feasible is None else feasible
    note = (
        f"{len(candidates)} candidates, feasible_nodes {counted} "
        f"(expected {'' if ctx.fresh else 'at least '}{expected_feasible}), "
        f"{len(response.content) // 1024} KiB, first answer {took * 1000:.0f} ms"
    )
    if candidates:
        note += f"; best: {candidates[0]['node']} score {candidates[0]['score']}"
    if problems:
        note += f"; {len(problems)} problems (EXPECTED none): " + "; ".join(problems[:3])

    def request(session, index):
        return post(session, url, body)

    if args.warm_up:
        client.warm_up(request, args.warm_up)
    seq, conc = timed(ctx, request, args.requests, args.concurrent_requests)
    return report.Row(name, seq, conc, note)


def same_as_unlimited(ctx: Context, url: str, body: dict, candidates: list[dict]) -> list[str]:
    """A limited answer must be the head of the answer without limit (best first, ties by name)."""
    unlimited = {key: value for key, value in body.items() if key != "limit"}
    with client.new_session() as session:
        response = post(session, url, unlimited)
    if response.status_code != 200:
        return [f"the same query without limit: {response.status_code}"]
    head = response.json()["candidates"][: len(candidates)]
    if [(c["node"], c["score"]) for c in head] != [(c["node"], c["score"]) for c in candidates]:
        return [
            f"not the best: {[(c['node'], c['score']) for c in candidates]} where the answer "
            f"without limit starts {[(c['node'], c['score']) for c in head]}"
        ]
    return []


def claim_request(
    ctx: Context, resources: dict, consumers: list[str], nodes: list[str] | None = None
) -> client.Request:
    """A claim per index, each for its own consumer; 200 answers are kept in ``ctx.claims``."""
    url = f"{ctx.base_url}/group_resources/claims"

    def request(session, index):
        body = {
            "resources": resources,
            "consumer_uuid": consumers[index],
            "project_id": "bench-project",
            "user_id": "bench-user",
            "scorer": "pack",
        }
        if nodes is not None:
            body["nodes"] = nodes
        response = post(session, url, body)
        with ctx.lock:
            if response.status_code == 200:
                ctx.claims[consumers[index]] = response.json()
            else:
                ctx.failed_claims.append(f"{response.status_code} {error_code(response)}")
        return response

    return request


def error_code(response: requests.Response) -> str:
    try:
        return response.json()["errors"][0]["code"]
    except (ValueError, KeyError, IndexError, TypeError):
        return response.text[:100]


def new_consumers(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


def claims_row(ctx: Context) -> report.Row:
    args = ctx.args
    name = f"claim 2 GPUs (one Gpugrp0 pair), {ctx.nodes} nodes"
    print(f"running {name}...", file=sys.stderr, flush=True)
    if args.warm_up:
        consumers = new_consumers(args.warm_up)
        client.warm_up(claim_request(ctx, PAIR_2, consumers), args.warm_up)
    seq = client.sequential(
        claim_request(ctx, PAIR_2, new_consumers(args.claims)), args.claims, args.max_seconds
    )
    conc = client.concurrent(
        claim_request(ctx, PAIR_2, new_consumers(args.claims)),
        args.claims,
        args.concurrency,
        args.max_seconds,
    )
    return report.Row(name, seq, conc, verify_claims(ctx))


def verify_claims(ctx: Context) -> str:
    """Every granted claim: shape, disjointness, and what the service stored."""
    problems = []
    if ctx.failed_claims:
        refused = Counter(ctx.failed_claims)
        problems.append(
            "not granted: " + ", ".join(f"{n} x {what}" for what, n in refused.most_common())
        )
    holders: Counter[str] = Counter()
    for answer in ctx.claims.values():
        problems += check_placement(ctx, answer, PAIR_2, [list(PAIR_2)], one_group1=True)
        for provider, allocation in answer["allocations"].items():
            if GPU_CARDS in allocation["resources"]:
                holders[provider] += 1
    doubled = [provider for provider, n in holders.items() if n > 1]
    if doubled:
        problems.append(f"{len(doubled)} GPU providers in two claims")
    usages, stored = read_back(ctx, sorted(holders))
    wrong_usage = {p: u for p, u in usages.items() if u != 1}
    if wrong_usage:
        problems.append(
            f"{len(wrong_usage)} claimed GPUs with usage != 1: {list(wrong_usage.items())[:3]}"
        )
    differing = [
        c
        for c, allocations in stored.items()
        if allocations != {u: a["resources"] for u, a in ctx.claims[c]["allocations"].items()}
    ]
    if differing:
        problems.append(f"{len(differing)} consumers' stored allocations differ from the answer")
    nodes_used = len({answer["node"] for answer in ctx.claims.values()})
    note = (
        f"{len(ctx.claims)} granted (incl. {ctx.args.warm_up} warm-up) on {nodes_used} nodes, "
        f"{len(holders)} GPUs; GPUs in two claims: {len(doubled)}; usages read back: "
        f"{len(usages)} GPUs, all 1: {not wrong_usage}; allocations read back: "
        f"{len(stored)}, all as answered: {not differing}"
    )
    if problems:
        note += f"; {len(problems)} problems (EXPECTED none): " + "; ".join(problems[:3])
    return note


def read_back(ctx: Context, gpus: list[str]) -> tuple[dict[str, int], dict[str, dict]]:
    """GET the usages of ``gpus`` and the allocations of every claimed consumer."""
    local = threading.local()

    def session() -> requests.Session:
        if not hasattr(local, "session"):
            local.session = client.new_session()
        return local.session

    def usage(provider: str) -> tuple[str, int]:
        response = session().get(
            f"{ctx.base_url}/resource_providers/{provider}/usages", timeout=client.REQUEST_TIMEOUT_S
        )
        response.raise_for_status()
        return provider, response.json()["usages"].get(GPU_CARDS, 0)

    def allocations(consumer: str) -> tuple[str, dict]:
        response = session().get(
            f"{ctx.base_url}/allocations/{consumer}", timeout=client.REQUEST_TIMEOUT_S
        )
        response.raise_for_status()
        stored = response.json()["allocations"]
        return consumer, {u: a["resources"] for u, a in stored.items()}

    with ThreadPoolExecutor(max_workers=4) as pool:
        usages = dict(pool.map(usage, gpus))
        stored = dict(pool.map(allocations, list(ctx.claims)))
    return usages, stored


def feasible_after_claims(ctx: Context) -> int:
    """This run's nodes that still have a Gpugrp1 with its four GPUs free."""
    taken: dict[str, set[str]] = {}
    for answer in ctx.claims.values():
        for key in answer["mappings"].values():
            parsed = parse_gpu_key(key)
            if parsed is not None:
                taken.setdefault(answer["node"], set()).add(parsed[0])
    return sum(1 for node in ctx.loaded.nodes if len(taken.get(node.name, ())) < 2)


def exhaustion_row(ctx: Context) -> report.Row:
    """One more node, claimed pair by pair: 4 granted, the fifth a 409 unplaceable."""
    name = "claims until one node is full (nodes: [it])"
    print(f"running {name}...", file=sys.stderr, flush=True)
    full_name = f"{ctx.loaded.prefix}-full"
    with client.new_session() as session:
        node = load_group_nodes.sync_node(session, ctx.base_url, full_name)
        ctx.loaded.nodes.append(node)  # its uuids, for check_placement
        url = f"{ctx.base_url}/group_resources/claims"
        statuses, granted, problems = [], [], []
        for _ in range(PAIRS_PER_NODE + 1):
            response = post(
                session,
                url,
                {
                    "resources": PAIR_2,
                    "consumer_uuid": str(uuid.uuid4()),
                    "project_id": "bench-project",
                    "user_id": "bench-user",
                    "nodes": [full_name],
                },
            )
            statuses.append(response.status_code)
            if response.status_code == 200:
                granted.append(response.json())
            elif response.status_code == 409:
                code = response.json()["errors"][0].get("code")
                if code != UNPLACEABLE:
                    problems.append(f"409 code {code}")
    for answer in granted:
        problems += check_placement(ctx, answer, PAIR_2, [list(PAIR_2)], one_group1=True)
    devices = [u for answer in granted for u in answer["allocations"]]
    if len(set(devices)) != len(devices) or set(devices) != set(node.gpus.values()):
        problems.append("the granted pairs do not take the 8 GPUs once each")
    if statuses != [200] * PAIRS_PER_NODE + [409]:
        problems.append(f"answers {statuses}, expected 200 x{PAIRS_PER_NODE} then 409")
    note = f"answers {' '.join(map(str, statuses))}; 8 GPUs taken once each: {not problems}"
    if problems:
        note += f"; {len(problems)} problems (EXPECTED none): " + "; ".join(problems[:3])
    return report.Row(name, None, None, note)


# --- the run ---------------------------------------------------------------------------


def run(ctx: Context) -> list[report.Row]:
    n = ctx.nodes
    pairs = affinity_pairs()

    def affinity(candidate):
        return check_placement(ctx, candidate, AFFINITY_4, pairs, one_group1=True)

    def flat(candidate):
        return check_placement(ctx, candidate, FLAT_4, [], one_group1=False)

    rows = [
        candidates_row(ctx, "candidates: 4-GPU affinity", AFFINITY_4, 1, affinity, n),
        candidates_row(ctx, "candidates: flat 4 GPUs", FLAT_4, 1, flat, n),
        candidates_row(ctx, "candidates: 4-GPU affinity", AFFINITY_4, None, affinity, n),
        claims_row(ctx),
    ]
    claimed = {u for answer in ctx.claims.values() for u in answer["allocations"]}

    def affinity_free(candidate):
        problems = affinity(candidate)
        if claimed & set(candidate["allocations"]):
            problems.append(f"{candidate['node']}: offers a GPU already claimed")
        return problems

    rows.append(
        candidates_row(
            ctx,
            "candidates: 4-GPU affinity, after the claims",
            AFFINITY_4,
            1,
            affinity_free,
            feasible_after_claims(ctx),
        )
    )
    rows.append(exhaustion_row(ctx))
    return rows


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Group-resource translator benchmarks (see benchmarks/README.md)."
    )
    parser.add_argument("--nodes", type=int, default=1000, help="8-GPU nodes to load")
    add_timing_options(parser, requests=50, warm_up=5, max_seconds=120.0)
    parser.add_argument(
        "--claims",
        type=int,
        default=100,
        help="2-GPU claims sequentially, and as many concurrently",
    )
    add_service_options(parser)
    args = parser.parse_args(argv)
    checked_timing_options(parser, args)
    if min(args.nodes, args.claims) < 1:
        parser.error("--nodes and --claims must be >= 1")
    if args.warm_up + 2 * args.claims > PAIRS_PER_NODE * args.nodes:
        parser.error(
            f"{args.warm_up} + 2 x {args.claims} claims do not fit the "
            f"{PAIRS_PER_NODE * args.nodes} GPU pairs of {args.nodes} nodes"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = report.command_line("benchmarks.run_group_resources", argv)
    machine = report.environment()  # before the service adds its own load
    with running_service(
        args.workers, args.database_url, args.url, args.log_dir, args.backend
    ) as service:
        print(f"service at {service.base_url}", file=sys.stderr, flush=True)
        print(
            f"loading {args.nodes} 8-GPU nodes ({args.nodes * 15} providers, "
            f"{args.nodes} requests)...",
            file=sys.stderr,
            flush=True,
        )
        loaded = load_group_nodes.load_group_nodes(
            service.base_url, args.nodes, args.load_threads, progress=True
        )
        print(f"loaded in {loaded.seconds:.1f} s", file=sys.stderr, flush=True)
        after_load = report.load_average()
        fresh = args.url is None and args.database_url is None
        ctx = Context(service.base_url, args, loaded, fresh)
        rows = run(ctx)
        config = {
            "command": command,
            **service.configuration(),
            "loaded through the API": (
                f"{args.nodes} 8-GPU nodes {load_group_nodes.node_name(loaded.prefix, 0)}.., "
                f"{args.nodes * 15} providers, in {loaded.seconds:.1f} s "
                f"({args.nodes / loaded.seconds:.1f} nodes/s, {args.load_threads} threads)"
            ),
            "requests": f"{args.requests} sequential, {args.concurrent_requests} concurrent "
            f"per candidates query; {args.claims} + {args.claims} claims; "
            f"{args.warm_up} untimed warm-up each",
            "concurrency": args.concurrency,
            "max seconds per loop": args.max_seconds,
            "counts exact (fresh service)": fresh,
            **machine,
            "load average after loading (1, 5 min)": after_load,
        }
    return report.finish(config, rows, args.concurrency, args.json)


if __name__ == "__main__":
    sys.exit(main())
