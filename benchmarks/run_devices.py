"""Device allocation benchmarks: device candidates and claims on DGX A100-like nodes.

Starts a service (``benchmarks.service``: throwaway PostgreSQL + gunicorn, or
``--database-url``, or ``--url`` of a running one), imports ``--nodes`` device
nodes through ``PUT /group_resources/device_nodes/{name}``
(``load_device_nodes``: 8 GPUs of 80Gi with NV12 between every pair, 4 PCIe
switches of 2 GPUs + 2 NICs, 2 switches per NUMA node; 28 providers each),
then times, with ``"scorer": "pack"``:

* (a) ``POST /group_resources/device_candidates`` for 4 whole GPUs and their
  NICs, jointly on one PCIe switch each (``nvidia.com/gpu: 4``,
  ``koordinator.sh/rdma: 1``, ``device-joint-allocate`` with ``requiredScope:
  SamePCIe``), ``limit: 1``;
* (b) the same without ``limit`` (every node ranked);
* (c) 8 whole GPUs, ``limit: 10``;
* (d) half a GPU (``kubernetes.io/gpu: 50``), ``limit: 1``;
* (e) ``POST /group_resources/device_claims`` of half a GPU, a new consumer
  each: ``--claims`` sequentially, then ``--claims`` from ``--concurrency``
  threads;
* (f) (a) again, now that GPUs are taken.

Every candidate query is first asked once and its answer checked: 200, the
number of candidates, ``nodes_considered``, the nodes left unplaced, the first
candidate's devices (how many of each type, what each gives, the scope, one
NIC on each switch of the GPUs, links as tight as the topology allows, the
providers this run's import answered) and, for a ``limit``, that it is the
head of the same query's answer without ``limit``. Then ``--warm-up`` untimed
requests, ``--requests`` sequential ones (p50/p95/p99) and
``--concurrent-requests`` at ``--concurrency`` (req/s). Every claim answer is
kept and checked (200: the claims never exceed the loaded capacity, so a 409
is a bug; one GPU giving half of itself) and afterwards, through the API:
``GET /group_resources/device_nodes/{name}`` of up to ``--read-back`` claimed
nodes (no inventory over capacity, each claimed GPU's core used = 50 x the
claims that took it), ``GET /resource_providers/{uuid}/usages`` of their
claimed GPUs (the same, through plain placement) and ``GET
/allocations/{consumer}`` of ``--read-back`` claims (= the claim's answer).

Exact counts are checked on a fresh service only (no ``--url``, no
``--database-url``); elsewhere they are lower bounds.

``--profile SCENARIO`` replaces the timing: after the load, ``--requests``
requests of that scenario go through ``create_app`` and Flask's test client in
this process under cProfile, with every SQL statement timed (the pattern of
``profile_requests.py``).

Prints the configuration and a Markdown table; ``--json`` also writes both.
Exits 1 when anything was unexpected (non-200, error, timeout, failed check).
"""

import argparse
import cProfile
import dataclasses
import functools
import io
import itertools
import json
import pstats
import random
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from benchmarks import client, load_device_nodes, report
from benchmarks.client import add_timing_options, checked_timing_options
from benchmarks.load_device_nodes import GPU_MEMORY_MB, GPUS, NVLINKS, LoadedDevices, dgx_a100
from benchmarks.run_group_resources import error_code, new_consumers, post
from benchmarks.service import add_service_options, running_service

JOINT_ANNOTATION = "scheduling.koordinator.sh/device-joint-allocate"
SAME_PCIE = "SamePCIe"
SCOPES = ("SamePCIe", "SameNUMA", "Node")  # best first
GPU_CORE = "CUSTOM_GPU_CORE"
HALF_GPU_CLAIMS_PER_GPU = 2


@dataclass(frozen=True)
class Query:
    """A device request and what the first candidate of its answer must hold."""

    key: str  # the --profile name
    label: str
    resources: dict
    annotations: dict
    limit: int | None
    gpus: int
    nics: int
    scope: str | None
    gpu_gives: dict  # the resources each GPU of the answer gives
    nic_gives: dict | None = None

    def body(self, with_limit: bool = True) -> dict:
        body: dict = {"resources": self.resources, "scorer": "pack"}
        if self.annotations:
            body["annotations"] = self.annotations
        if with_limit and self.limit is not None:
            body["limit"] = self.limit
        return body


WHOLE_GPU = {
    "kubernetes.io/gpu-core": 100,
    "kubernetes.io/gpu-memory-ratio": 100,
    "kubernetes.io/gpu-memory": f"{GPU_MEMORY_MB}Mi",
    "exclusive": True,
}
HALF_GPU = {
    "kubernetes.io/gpu-core": 50,
    "kubernetes.io/gpu-memory-ratio": 50,
    "kubernetes.io/gpu-memory": f"{GPU_MEMORY_MB // 2}Mi",
}
JOINT_4 = Query(
    key="joint",
    label="(a) 4 GPUs + NICs, SamePCIe",
    resources={"nvidia.com/gpu": 4, "koordinator.sh/rdma": 1},
    annotations={
        JOINT_ANNOTATION: json.dumps({"deviceTypes": ["gpu", "rdma"], "requiredScope": SAME_PCIE})
    },
    limit=1,
    gpus=4,
    nics=2,
    scope=SAME_PCIE,
    gpu_gives=WHOLE_GPU,
    nic_gives={"koordinator.sh/rdma": 1},
)
JOINT_4_ALL = dataclasses.replace(
    JOINT_4, key="joint-all", label="(b) " + JOINT_4.label[4:], limit=None
)
WHOLE_8 = Query(
    key="whole8",
    label="(c) 8 whole GPUs",
    resources={"nvidia.com/gpu": 8},
    annotations={},
    limit=10,
    gpus=8,
    nics=0,
    scope=None,
    gpu_gives=WHOLE_GPU,
)
HALF = Query(
    key="half",
    label="(d) half a GPU",
    resources={"kubernetes.io/gpu": 50},
    annotations={},
    limit=1,
    gpus=1,
    nics=0,
    scope=None,
    gpu_gives=HALF_GPU,
)
QUERIES = {q.key: q for q in (JOINT_4, JOINT_4_ALL, WHOLE_8, HALF)}


@dataclass
class Context:
    base_url: str
    args: argparse.Namespace
    loaded: LoadedDevices
    fresh: bool  # nothing but this run's nodes on the service: counts are exact
    claims: dict[str, dict] = field(default_factory=dict)  # consumer -> 200 answer
    failed_claims: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def nodes(self) -> int:
        return len(self.loaded.nodes)


# --- what an answer must hold ----------------------------------------------------------


# A pair's link strength, as the service documents it (placement.devices.chooser): per
# NVLink, then the closest of one PCIe switch, one host bridge, one NUMA node, or across.
PAIR_WEIGHTS = {
    "nvlinks": 100,
    "samePCIe": 50,
    "sameHostBridge": 30,
    "sameNUMA": 20,
    "crossNUMA": 10,
}


def link_counts(gpus: list[dict]) -> dict[str, int]:
    """How the pairs of ``gpus`` (device list entries) are linked, as an answer spells it:
    NVLinks, and each pair counted once, at the closest place the two share."""
    counts = dict.fromkeys(PAIR_WEIGHTS, 0)
    for a, b in itertools.combinations(gpus, 2):
        counts["nvlinks"] += NVLINKS  # every pair of the loaded topology
        if a["pcie"] == b["pcie"]:
            counts["samePCIe"] += 1
        elif a["bridge"] == b["bridge"]:
            counts["sameHostBridge"] += 1
        elif a["numa"] == b["numa"]:
            counts["sameNUMA"] += 1
        else:
            counts["crossNUMA"] += 1
    return counts


def strength(links: dict[str, int]) -> int:
    return sum(PAIR_WEIGHTS[kind] * n for kind, n in links.items())


@functools.cache
def tightest_links(count: int) -> dict[str, int]:
    """The links of the ``count`` GPUs of the loaded topology linked most tightly."""
    gpus = [d for d in dgx_a100()["devices"] if d["type"] == "gpu"]
    return max(
        (link_counts(list(chosen)) for chosen in itertools.combinations(gpus, count)), key=strength
    )


def rank_key(candidate: dict) -> tuple:
    """The order the service promises: scope, link strength of the primary type (GPUs in
    every query here), score (then the node's name, left out here: answers round the score,
    so equal-looking scores may still differ)."""
    scope = candidate.get("scope")
    gpu_links = candidate.get("links", {}).get("gpu", {})
    return (SCOPES.index(scope) if scope else 0, -strength(gpu_links), -candidate["score"])


def check_candidate(
    ctx: Context, candidate: dict, query: Query, taken: AbstractSet[str] = frozenset()
) -> list[str]:
    """Problems of one candidate (or claim answer) for ``query``; ``taken``: GPU providers
    already claimed, which a whole GPU may not be."""
    problems = []
    devices = candidate.get("devices", {})
    gpus, nics = devices.get("gpu", []), devices.get("rdma", [])
    if (len(gpus), len(nics)) != (query.gpus, query.nics) or set(devices) - {"gpu", "rdma"}:
        problems.append(
            f"devices {[(t, len(d)) for t, d in devices.items()]}, expected "
            f"{query.gpus} gpu, {query.nics} rdma"
        )
    if candidate.get("scope") != query.scope:
        problems.append(f"scope {candidate.get('scope')}, expected {query.scope}")
    if any(gpu["resources"] != query.gpu_gives for gpu in gpus):
        problems.append(f"GPU resources {[gpu['resources'] for gpu in gpus][:2]}")
    if any(nic["resources"] != query.nic_gives for nic in nics):
        problems.append(f"NIC resources {[nic['resources'] for nic in nics][:2]}")
    if query.nics and sorted(nic["pcie"] for nic in nics) != sorted({g["pcie"] for g in gpus}):
        problems.append(
            f"NICs on switches {[n['pcie'] for n in nics]}, GPUs on "
            f"{[g['pcie'] for g in gpus]}: not one NIC per switch of the GPUs"
        )
    if gpus and candidate.get("links", {}).get("gpu") != tightest_links(len(gpus)):
        problems.append(
            f"GPU links {candidate.get('links', {}).get('gpu')}, the tightest are "
            f"{tightest_links(len(gpus))}"
        )
    if query.gpu_gives.get("exclusive") and taken & {gpu["provider"] for gpu in gpus}:
        problems.append("a whole GPU that a claim holds")
    node = ctx.loaded.by_name().get(candidate.get("node", ""))
    allocated = set(candidate.get("allocations", {}))
    for device in gpus + nics:
        if device["provider"] not in allocated:
            problems.append(f"no allocation on {device['path']}")
        if node is not None:  # one of this run's nodes: the providers are known
            known = (node.gpus if device in gpus else node.nics).get(device["minor"])
            if known != device["provider"]:
                problems.append(f"{device['path']} is not the provider imported")
    for gpu in gpus:
        core = candidate["allocations"].get(gpu["provider"], {}).get("resources", {})
        if core.get(GPU_CORE) != query.gpu_gives["kubernetes.io/gpu-core"]:
            problems.append(f"{gpu['path']} allocation {core}")
    return [f"{candidate.get('node')}: {p}" for p in problems]


def check_answer(
    ctx: Context, query: Query, answer: dict, expected: int, unplaced: int, taken: AbstractSet[str]
) -> list[str]:
    """Problems of a whole answer: counts, order, the first candidate."""
    problems = []
    candidates = answer.get("candidates", [])
    want = expected if query.limit is None else min(query.limit, expected)
    if len(candidates) < want or (ctx.fresh and len(candidates) != want):
        problems.append(f"{len(candidates)} candidates, {want} expected")
    considered = answer.get("nodes_considered", 0)
    if considered < ctx.nodes or (ctx.fresh and considered != ctx.nodes):
        problems.append(f"nodes_considered {considered}, {ctx.nodes} expected")
    if answer.get("nodes_out_of_sync"):
        problems.append(f"nodes out of sync: {answer['nodes_out_of_sync'][:3]}")
    left_out = sum(entry["nodes"] for entry in answer.get("unplaced", []))
    if ctx.fresh and left_out != unplaced:
        problems.append(f"unplaced {answer.get('unplaced', [])[:2]}, {unplaced} nodes expected")
    if len({c["node"] for c in candidates}) != len(candidates):
        problems.append("a node twice")
    if [rank_key(c) for c in candidates] != sorted(rank_key(c) for c in candidates):
        problems.append("candidates not best first")
    if candidates:
        problems += check_candidate(ctx, candidates[0], query, taken)
    return problems


def same_as_unlimited(ctx: Context, query: Query, candidates: list[dict]) -> list[str]:
    """A limited answer must be the head of the answer without limit."""
    with client.new_session() as session:
        response = post(
            session,
            f"{ctx.base_url}/group_resources/device_candidates",
            query.body(with_limit=False),
        )
    if response.status_code != 200:
        return [f"the same query without limit: {response.status_code}"]
    head = response.json()["candidates"][: len(candidates)]
    if [(c["node"], c["score"]) for c in head] != [(c["node"], c["score"]) for c in candidates]:
        return [
            f"not the best: {[(c['node'], c['score']) for c in candidates][:3]} where the "
            f"answer without limit starts {[(c['node'], c['score']) for c in head][:3]}"
        ]
    return []


# --- timing ----------------------------------------------------------------------------


def candidates_row(
    ctx: Context,
    query: Query,
    label: str,
    expected: int,
    unplaced: int = 0,
    taken: AbstractSet[str] = frozenset(),
) -> report.Row:
    """Probe (one checked answer), then time; the note says what the answer held."""
    args = ctx.args
    name = f"{label}, {ctx.nodes} nodes" + (f", limit={query.limit}" if query.limit else "")
    print(f"running {name}...", file=sys.stderr, flush=True)
    url = f"{ctx.base_url}/group_resources/device_candidates"
    body = query.body()
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
            f"first answer {response.status_code} {error_code(response)} (EXPECTED 200)",
        )
    answer = response.json()
    candidates = answer["candidates"]
    problems = check_answer(ctx, query, answer, expected, unplaced, taken)
    if query.limit is not None:
        problems += same_as_unlimited(ctx, query, candidates)
    note = (
        f"{len(candidates)} candidates (expected {'' if ctx.fresh else 'at least '}"
        f"{expected if query.limit is None else min(query.limit, expected)}), "
        f"{sum(u['nodes'] for u in answer['unplaced'])} nodes unplaced, "
        f"{len(response.content) // 1024} KiB, first answer {took * 1000:.0f} ms"
    )
    if candidates:
        first = candidates[0]
        devices = ", ".join(f"{len(d)} {t}" for t, d in first["devices"].items())
        note += f"; first: {first['node']} {devices}" + (
            f", scope {first['scope']}" if "scope" in first else ""
        )
    if problems:
        note += f"; {len(problems)} problems (EXPECTED none): " + "; ".join(problems[:3])

    def request(session, index):
        return post(session, url, body)

    if args.warm_up:
        client.warm_up(request, args.warm_up)
    seq = client.sequential(request, args.requests, args.max_seconds)
    conc = client.concurrent(request, args.concurrent_requests, args.concurrency, args.max_seconds)
    return report.Row(name, seq, conc, note)


def claim_request(ctx: Context, consumers: list[str]) -> client.Request:
    """A half-GPU claim per index, each for its own consumer; answers kept in ``ctx``."""
    url = f"{ctx.base_url}/group_resources/device_claims"

    def request(session, index):
        body = {
            **HALF.body(with_limit=False),
            "consumer_uuid": consumers[index],
            "project_id": "bench-project",
            "user_id": "bench-user",
        }
        response = post(session, url, body)
        with ctx.lock:
            if response.status_code == 200:
                ctx.claims[consumers[index]] = response.json()
            else:
                ctx.failed_claims.append(f"{response.status_code} {error_code(response)}")
        return response

    return request


def claims_row(ctx: Context) -> report.Row:
    args = ctx.args
    name = f"(e) claim half a GPU, new consumer each, {ctx.nodes} nodes"
    print(f"running {name}...", file=sys.stderr, flush=True)
    if args.warm_up:
        client.warm_up(claim_request(ctx, new_consumers(args.warm_up)), args.warm_up)
    seq = client.sequential(
        claim_request(ctx, new_consumers(args.claims)), args.claims, args.max_seconds
    )
    conc = client.concurrent(
        claim_request(ctx, new_consumers(args.claims)),
        args.claims,
        args.concurrency,
        args.max_seconds,
    )
    return report.Row(name, seq, conc, verify_claims(ctx))


def claimed_cores(ctx: Context) -> dict[str, int]:
    """GPU provider -> core percent the granted claims took of it."""
    cores: Counter[str] = Counter()
    for answer in ctx.claims.values():
        for provider, allocation in answer["allocations"].items():
            if GPU_CORE in allocation["resources"]:
                cores[provider] += allocation["resources"][GPU_CORE]
    return dict(cores)


def verify_claims(ctx: Context) -> str:
    """Every granted claim's shape, then what the service stored, read back through the API."""
    problems = []
    if ctx.failed_claims:
        refused = Counter(ctx.failed_claims)
        problems.append(
            "not granted: " + ", ".join(f"{n} x {what}" for what, n in refused.most_common())
        )
    for answer in ctx.claims.values():
        problems += check_candidate(ctx, answer, HALF)
    cores = claimed_cores(ctx)
    over = {p: c for p, c in cores.items() if c > 100}
    if over:
        problems.append(f"{len(over)} GPUs claimed over 100% in the answers")
    rng = random.Random(ctx.args.seed)
    claimed_nodes = sorted({answer["node"] for answer in ctx.claims.values()})
    sample_nodes = rng.sample(claimed_nodes, min(ctx.args.read_back, len(claimed_nodes)))
    sample_consumers = rng.sample(sorted(ctx.claims), min(ctx.args.read_back, len(ctx.claims)))
    read = read_back(ctx, sample_nodes, sample_consumers, cores)
    problems += read.problems
    nodes_used = len(claimed_nodes)
    note = (
        f"{len(ctx.claims)} granted (incl. {ctx.args.warm_up} warm-up) on {nodes_used} "
        f"nodes, {len(cores)} GPUs; over capacity: {len(over)} in the answers, "
        f"{read.over_capacity} read back ({len(sample_nodes)} nodes' device views, "
        f"{read.usages} GPU usages); allocations read back: {len(sample_consumers)}, "
        f"all as answered: {not read.differing}"
    )
    if problems:
        note += f"; {len(problems)} problems (EXPECTED none): " + "; ".join(problems[:3])
    return note


@dataclass
class ReadBack:
    problems: list[str] = field(default_factory=list)
    over_capacity: int = 0  # device inventories used beyond their total
    usages: int = 0  # GPUs whose plain placement usage was read
    differing: int = 0  # consumers whose stored allocations differ from the answer


def read_back(
    ctx: Context, nodes: list[str], consumers: list[str], cores: dict[str, int]
) -> ReadBack:
    """The device views of ``nodes``, the usages of their claimed GPUs, and the allocations
    of ``consumers``, compared with what the claims answered."""
    local = threading.local()
    found = ReadBack()

    def get(path: str) -> dict:
        if not hasattr(local, "session"):
            local.session = client.new_session()
        response = local.session.get(ctx.base_url + path, timeout=client.REQUEST_TIMEOUT_S)
        response.raise_for_status()
        return response.json()

    with ThreadPoolExecutor(max_workers=4) as pool:
        views = list(pool.map(lambda n: get(f"/group_resources/device_nodes/{n}"), nodes))
        gpus = [d["provider"] for view in views for d in view["devices"] if d["provider"] in cores]
        usages = dict(
            zip(
                gpus,
                pool.map(
                    lambda p: get(f"/resource_providers/{p}/usages")["usages"].get(GPU_CORE, 0),
                    gpus,
                ),
                strict=True,
            )
        )
        stored = dict(
            zip(consumers, pool.map(lambda c: get(f"/allocations/{c}"), consumers), strict=True)
        )
    for view in views:
        for device in view["devices"]:
            for base, inventory in device.get("inventories", {}).items():
                if inventory["used"] > inventory["total"]:
                    found.over_capacity += 1
                    found.problems.append(
                        f"{view['name']} {device['path']} {base} over capacity: {inventory}"
                    )
            used_core = device.get("inventories", {}).get("core", {}).get("used", 0)
            if device["type"] == "gpu" and used_core != cores.get(device["provider"], 0):
                found.problems.append(
                    f"{view['name']} {device['path']} core used {used_core}, "
                    f"the claims took {cores.get(device['provider'], 0)}"
                )
    found.usages = len(usages)
    for provider, used in usages.items():
        if used != cores[provider]:
            found.problems.append(
                f"usages of GPU {provider}: {used}, claims took {cores[provider]}"
            )
    for consumer, body in stored.items():
        allocations = {u: a["resources"] for u, a in body["allocations"].items()}
        answered = {u: a["resources"] for u, a in ctx.claims[consumer]["allocations"].items()}
        if allocations != answered:
            found.differing += 1
    if found.differing:
        found.problems.append(
            f"{found.differing} consumers' stored allocations differ from the answer"
        )
    return found


def unfit_after_claims(ctx: Context) -> tuple[int, set[str]]:
    """This run's nodes left with fewer than 4 GPUs nobody uses, and the GPUs in use."""
    taken = set(claimed_cores(ctx))
    unfit = sum(
        1
        for node in ctx.loaded.nodes
        if sum(p not in taken for p in node.gpus.values()) < JOINT_4.gpus
    )
    return unfit, taken


# --- the run ---------------------------------------------------------------------------


def run(ctx: Context) -> list[report.Row]:
    n = ctx.nodes
    rows = [
        candidates_row(ctx, JOINT_4, JOINT_4.label, n),
        candidates_row(ctx, JOINT_4_ALL, JOINT_4_ALL.label, n),
        candidates_row(ctx, WHOLE_8, WHOLE_8.label, n),
        candidates_row(ctx, HALF, HALF.label, n),
        claims_row(ctx),
    ]
    unfit, taken = unfit_after_claims(ctx)
    rows.append(
        candidates_row(
            ctx, JOINT_4, "(f) " + JOINT_4.label[4:] + ", after the claims", n - unfit, unfit, taken
        )
    )
    return rows


def profile(service, loaded: LoadedDevices, args: argparse.Namespace) -> None:
    """``--requests`` requests of one scenario in process, under cProfile, SQL timed."""
    from benchmarks.profile_requests import SqlTimer
    from placement.app import create_app
    from placement.config import Config
    from placement.db.engine import make_engine

    engine = make_engine(service.database_url)
    app = create_app(Config(database_url=service.database_url, log_level="WARNING"), engine)
    test_client = app.test_client()

    def todo() -> list[tuple[str, dict]]:
        if args.profile == "claim":
            return [
                (
                    "/group_resources/device_claims",
                    {
                        **HALF.body(with_limit=False),
                        "consumer_uuid": str(uuid.uuid4()),
                        "project_id": "bench-project",
                        "user_id": "bench-user",
                    },
                )
                for _ in range(args.requests)
            ]
        return [
            ("/group_resources/device_candidates", QUERIES[args.profile].body())
        ] * args.requests

    def send(path, body) -> int:
        return test_client.post(path, json=body, headers=client.HEADERS).status_code

    for path, body in todo()[:3]:  # warm up: pool, caches, first-call imports
        send(path, body)
    started = time.perf_counter()
    for path, body in todo():
        send(path, body)
    plain = (time.perf_counter() - started) / args.requests
    timer = SqlTimer(engine)
    profiler = cProfile.Profile()
    statuses: Counter[int] = Counter()
    started = time.perf_counter()
    profiler.enable()
    for path, body in todo():
        statuses[send(path, body)] += 1
    profiler.disable()
    total = time.perf_counter() - started
    engine.dispose()
    n = args.requests
    print(
        f"{args.profile}: {n} requests in process on {len(loaded.nodes)} device nodes "
        f"(answers {dict(statuses)}): {plain * 1000:.1f} ms/request without profiler, "
        f"{total / n * 1000:.1f} ms/request under cProfile (which inflates the Python part)"
    )
    print(
        f"  SQL: {timer.statements / n:.1f} statements, {timer.seconds / n * 1000:.1f} ms "
        f"per request ({timer.seconds / total:.0%} of the time)"
    )
    for statement, times in sorted(timer.by_statement.items(), key=lambda kv: -sum(kv[1]))[:6]:
        print(f"    {sum(times) / n * 1000:7.2f} ms/request  x{len(times) / n:.0f}  {statement}")
    for sort in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(args.top)
        print(out.getvalue())


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Device allocation benchmarks (see benchmarks/README.md)."
    )
    parser.add_argument("--nodes", type=int, default=1000, help="DGX A100-like nodes to load")
    add_timing_options(parser, requests=20, warm_up=3, max_seconds=120.0)
    parser.add_argument(
        "--claims",
        type=int,
        default=50,
        help="half-GPU claims sequentially, and as many concurrently",
    )
    parser.add_argument(
        "--read-back",
        type=int,
        default=50,
        help="claimed nodes and consumers read back after the claims",
    )
    parser.add_argument("--seed", type=int, default=42, help="of the read-back sample")
    parser.add_argument(
        "--profile",
        choices=[*QUERIES, "claim"],
        help="profile this scenario in process instead of timing (see above)",
    )
    parser.add_argument("--top", type=int, default=30, help="functions of the profile to print")
    add_service_options(parser)
    parser.set_defaults(load_threads=4)  # two gunicorn workers: more threads only queue
    args = parser.parse_args(argv)
    checked_timing_options(parser, args)
    if min(args.nodes, args.claims) < 1:
        parser.error("--nodes and --claims must be >= 1")
    if args.warm_up + 2 * args.claims > HALF_GPU_CLAIMS_PER_GPU * GPUS * args.nodes:
        parser.error(
            f"{args.warm_up} + 2 x {args.claims} claims do not fit the "
            f"{HALF_GPU_CLAIMS_PER_GPU * GPUS * args.nodes} half GPUs of "
            f"{args.nodes} nodes"
        )
    if args.profile and args.url:
        parser.error("--profile needs the database: not with --url")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = report.command_line("benchmarks.run_devices", argv)
    machine = report.environment()  # before the service adds its own load
    with running_service(
        args.workers, args.database_url, args.url, args.log_dir, args.backend
    ) as service:
        print(f"service at {service.base_url}", file=sys.stderr, flush=True)
        print(
            f"loading {args.nodes} device nodes "
            f"({args.nodes * load_device_nodes.PROVIDERS_PER_NODE} providers, "
            f"{args.nodes} requests)...",
            file=sys.stderr,
            flush=True,
        )
        loaded = load_device_nodes.load_device_nodes(
            service.base_url, args.nodes, args.load_threads, progress=True
        )
        print(f"loaded in {loaded.seconds:.1f} s", file=sys.stderr, flush=True)
        after_load = report.load_average()
        if args.profile:
            profile(service, loaded, args)
            return 0
        fresh = args.url is None and args.database_url is None
        ctx = Context(service.base_url, args, loaded, fresh)
        started = time.perf_counter()
        rows = run(ctx)
        config = {
            "command": command,
            **service.configuration(),
            "loaded through the API": (
                f"{args.nodes} DGX A100-like device nodes "
                f"{load_device_nodes.node_name(loaded.prefix, 0)}.., {loaded.providers} "
                f"providers, in {loaded.seconds:.1f} s ({args.nodes / loaded.seconds:.1f} "
                f"nodes/s, {args.load_threads} threads)"
            ),
            "requests": f"{args.requests} sequential, {args.concurrent_requests} concurrent "
            f"per candidates query; {args.claims} + {args.claims} claims; "
            f"{args.warm_up} untimed warm-up each",
            "concurrency": args.concurrency,
            "max seconds per loop": args.max_seconds,
            "counts exact (fresh service)": fresh,
            **machine,
            "load average after loading (1, 5 min)": after_load,
            "scenarios took": f"{time.perf_counter() - started:.0f} s",
        }
    return report.finish(config, rows, args.concurrency, args.json)


if __name__ == "__main__":
    sys.exit(main())
