"""Allocation-candidate benchmarks: GET /allocation_candidates on flat, nested and GPU trees.

Starts a service (``benchmarks.service``: throwaway PostgreSQL + gunicorn, or
``--database-url``, or ``--url`` of a running one, e.g. upstream placement),
loads provider trees through the API (``benchmarks.load_trees``), then times
each query, with and without ``&limit=10``:

* ``flat`` (``--nodes`` compute nodes, one aggregate, AVX2 on all):
  ``resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=<agg>&required=HW_CPU_X86_AVX2``,
  one candidate per node;
* ``nested`` (7-provider trees; ``--trees 1000,5000,10000`` loads 1,000 trees,
  runs the queries, grows the load to 5,000, runs them again, and so on):
  DISK_GB on a multi-attach root, VCPU+MEMORY_MB on the CUSTOM_FOO NUMA node and
  an FPGA in the same subtree: two candidates per tree; with ``--busy``, once
  the last size was asked, every tree gets its own usage and the queries are
  asked again (below);
* ``gpu`` (``--hosts`` hosts of 2 NUMA nodes x 2 PCIe switches x (2 GPUs + 1 NIC)):
  one GPU (8 candidates per host: the big answer), two GPUs and a NIC under one
  switch (2 candidates per switch, 8 per host),
  four GPUs on one NUMA node (4! per NUMA node, 48 per host) and eight GPUs on
  the host (8! per host), all with group_policy=isolate.

Soft preferences (this service's extension; ``--no-preferences`` skips them, e.g.
against upstream): once the nested trees (at the last size of ``--trees``) and the GPU
hosts were asked as above, tree i (in creation order) gets CUSTOM_BENCH_PREFERRED when
i is even and CUSTOM_BENCH_AVOIDED when i % 3 == 0 (nested: on the root; gpu: the first
on switch sw00, the second on switch sw01, each ``PUT .../traits`` after a
``GET /resource_providers?in_tree=``), and one query per scenario is asked with
``limit=10`` and ``prefer$S=CUSTOM_BENCH_PREFERRED,!CUSTOM_BENCH_AVOIDED&utilization=spread``
(nested: the unsuffixed group; gpu: the switch of the 2 GPUs + NIC query). The probe
checks ``scores``: one per candidate, best first, each one a score of its candidate's
tree, and together the ten best of the loaded trees (a candidate's traits term plus 1
per group with resources, nothing being used). The
target is 10 ms p50; the note says when it is missed (timings are not checks).

``--busy`` (nested only) shows the search when no two trees are alike. After
the queries at the last size of ``--trees`` (once: the claims are never taken
back, so a grown load would mix idle and busy trees), tree i (in creation
order) gets one consumer, ``PUT /allocations/{new uuid}`` (1.39, consumer_type
INSTANCE), taking DISK_GB (i % 4000) + 1 on the root and MEMORY_MB i // 4000 on
NUMA0 (when not 0): a usage no other tree has, with room left for the query;
the FPGA under NUMA1 (no candidate uses it, but no tree then has room for all
the query asks on every provider of a class, so none shares its form with
another); and, on every tenth tree (i % 10 == 0), all of NUMA0's VCPU (32 x 16),
so that those trees answer nothing. The claims are made on ``--load-threads``
threads (a ``GET /resource_providers?in_tree=`` for the tree's providers, then
the PUT), then the nested queries run again, labelled ``nested, busy``: the
expected count is two per tree not made full, and the note flags any candidate
on a full tree.

Each query is first asked once (the probe: candidate count, distinct root
providers among the candidates, size of the answer); if that fails (non-200,
timeout) the query is not timed further. Then ``--warm-up`` untimed requests,
``--requests`` sequential requests (p50/p95/p99) and ``--concurrent-requests``
requests from ``--concurrency`` threads (req/s), every loop bounded by
``--max-seconds`` and every request by a 60 s timeout. When requests timed out,
the runner waits for the service to work them off before the next query.

The expected count is per-tree candidates x trees loaded, cut to the service's
``--max-candidates`` (its ``[placement] max_allocation_candidates``: 10000 for
this service, -1, i.e. none, for upstream's default) and to ``limit``. The runner
passes ``--max-candidates`` to the service it starts; against ``--url`` it only
says what the given service is configured with. The counts assume the service
held no other matching trees: on a reused service earlier runs' trees match too.

Prints the configuration and a Markdown table; ``--json`` also writes both to a
file. Exits 1 when any answer was unexpected (non-200, timeout, wrong count,
loop stopped by its time limit).
"""

import argparse
import itertools
import math
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import requests

from benchmarks import client, load_trees, report
from benchmarks.load import LoadError
from benchmarks.load_trees import LoadedTrees, Shape
from benchmarks.service import add_service_options, running_service

LIMIT = 10
SETTLE_TIMEOUT_S = 600
PREFERRED = "CUSTOM_BENCH_PREFERRED"  # on the trees of even index
AVOIDED = "CUSTOM_BENCH_AVOIDED"  # on the trees whose index is a multiple of 3
PREFERENCES = f"{PREFERRED},!{AVOIDED}"
PREFERENCES_TARGET_MS = 10.0
SCORE_TOLERANCE = 1e-6  # the service rounds scores to 6 decimals
BUSY_DISK_STEPS = 4000  # distinct DISK_GB usages of the root (4096 total, the query asks 10)
BUSY_FULL_EVERY = 10  # every tenth busy tree has no VCPU left on its CUSTOM_FOO NUMA node
BUSY_LABEL = f"nested, busy (every tree its own usage, {100 // BUSY_FULL_EVERY}% full)"


@dataclass(frozen=True)
class Query:
    """A GET /allocation_candidates query and how many candidates each loaded tree offers."""

    label: str
    params: str
    per_tree: int
    # With preferences: the scores of the candidates of tree i (in creation order).
    scores_of: Callable[[int], list[float]] | None = None


@dataclass
class Probe:
    """What the first answer to a query said."""

    status: int | str  # HTTP status, or the exception's name
    seconds: float
    count: int = 0
    roots: int = 0
    foreign: int = 0  # candidates using providers this run did not load
    on_full: int = 0  # candidates in trees made full (--busy)
    kib: int = 0
    scores: list[float] | None = None  # the answer's scores, when it has them
    trees: list[str | None] = field(default_factory=list)  # each candidate's loaded root
    detail: str = ""  # why it was refused, when it was


@dataclass
class Context:
    base_url: str
    run_id: str
    args: argparse.Namespace


@dataclass(frozen=True)
class Busy:
    """What ``--busy`` claimed: the roots left without room, and how long it took."""

    full: frozenset[str]
    claims: int
    seconds: float


def gpu_groups(count: int) -> str:
    return "&".join(f"resources_G{i}=PGPU:1" for i in range(1, count + 1))


def gpu_suffixes(count: int) -> str:
    return ",".join(f"_G{i}" for i in range(1, count + 1))


def flat_queries(loaded: LoadedTrees) -> list[Query]:
    return [
        Query(
            "flat",
            f"resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of={loaded.aggregate}"
            f"&required={load_trees.AVX2}",
            per_tree=1,
        )
    ]


def nested_queries(loaded: LoadedTrees) -> list[Query]:
    return [
        Query(
            "nested",
            "resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH"
            "&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO"
            "&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA",
            per_tree=2,  # the two FPGAs under NUMA0
        )
    ]


def nested_preference_query(loaded: LoadedTrees) -> Query:
    """The nested query preferring the marked roots (the unsuffixed group's DISK_GB), spread:
    three groups with resources, nothing used: + 3."""
    [nested] = nested_queries(loaded)
    return replace(
        nested,
        label="nested, preferences (prefer half, avoid a third, spread)",
        params=f"{nested.params}&prefer={PREFERENCES}&utilization=spread",
        scores_of=lambda index: [traits_term(index) + 3.0] * nested.per_tree,
    )


def gpu_preference_query(loaded: LoadedTrees) -> Query:
    """The 2 GPUs + NIC query preferring the marked switches (the resourceless _SW group),
    spread: three groups with resources (two GPUs, the NIC), nothing used: + 3. Each switch
    gives 2 candidates: sw00 scores the preferred trait, sw01 the avoided one."""
    switch_query = gpu_queries(loaded)[0]

    def scores_of(index: int) -> list[float]:
        preferred, avoided = preference_traits(index)
        by_switch = [len(preferred), -len(avoided), 0, 0]  # sw00, sw01, sw10, sw11
        return [term + 3.0 for term in by_switch for _order in range(2)]

    return replace(
        switch_query,
        label="gpu: 2 GPUs + NIC under one switch, preferences (prefer half, avoid a third, "
        "spread)",
        params=f"{switch_query.params}&prefer_SW={PREFERENCES}&utilization=spread",
        scores_of=scores_of,
    )


def gpu_queries(loaded: LoadedTrees) -> list[Query]:
    return [
        Query(
            # The big answer of issue 31: every GPU a candidate, with the summaries of
            # every provider of every host (800 candidates on 100 hosts).
            "gpu: 1 GPU",
            "resources=PGPU:1",
            per_tree=8,
        ),
        Query(
            "gpu: 2 GPUs + NIC under one switch",
            "required_SW=CUSTOM_PCIE_SWITCH&resources_G1=PGPU:1&resources_G2=PGPU:1"
            "&resources_NIC=SRIOV_NET_VF:1&same_subtree=_SW,_G1,_G2,_NIC&group_policy=isolate",
            per_tree=4 * 2,  # 4 switches, 2 orders of their two GPUs
        ),
        Query(
            "gpu: 4 GPUs on one NUMA node",
            f"required_NUMA=HW_NUMA_ROOT&{gpu_groups(4)}"
            f"&same_subtree=_NUMA,{gpu_suffixes(4)}&group_policy=isolate",
            per_tree=2 * math.factorial(4),
        ),
        Query(
            "gpu: 8 GPUs on one host",
            f"{gpu_groups(8)}&group_policy=isolate",
            per_tree=math.factorial(8),
        ),
    ]


def expected_count(query: Query, trees: int, limit: int | None, max_candidates: int) -> int:
    count = query.per_tree * trees
    if max_candidates >= 0:
        count = min(count, max_candidates)
    return count if limit is None else min(count, limit)


def probe(url: str, loaded: LoadedTrees, full: frozenset[str] = frozenset()) -> Probe:
    """Ask once; count the candidates, the distinct trees they come from and those in
    trees of ``full`` (which should have none)."""
    start = time.perf_counter()
    try:
        with client.new_session() as session:
            response = session.get(url, timeout=client.REQUEST_TIMEOUT_S)
    except requests.RequestException as exc:
        return Probe(type(exc).__name__, time.perf_counter() - start)
    found = Probe(response.status_code, time.perf_counter() - start)
    if response.status_code != 200:
        found.detail = refusal_detail(response)
        return found
    body = response.json()
    candidates = body["allocation_requests"]
    found.scores = body.get("scores")
    roots = set()
    for candidate in candidates:
        providers = candidate["allocations"]
        if any(rp not in loaded.root_of for rp in providers):
            found.foreign += 1
        in_roots = {loaded.root_of[rp] for rp in providers if rp in loaded.root_of}
        if in_roots & full:
            found.on_full += 1
        roots.update(in_roots)
        found.trees.append(next(iter(in_roots)) if len(in_roots) == 1 else None)
    found.count, found.roots, found.kib = len(candidates), len(roots), len(response.content) // 1024
    return found


def refusal_detail(response: requests.Response) -> str:
    """The first error's detail of a refused request, on one line, cut to 200 characters."""
    try:
        detail = response.json()["errors"][0]["detail"]
    except (ValueError, KeyError, IndexError, TypeError):
        detail = response.text
    return " ".join(str(detail).split())[:200]


def probe_note(found: Probe, expected: int) -> str:
    if found.status != 200:
        note = f"first answer: {found.status} after {found.seconds:.1f} s (EXPECTED 200)"
        return f"{note}: {found.detail}" if found.detail else note
    note = f"{found.count} candidates"
    if found.count != expected:
        note += f" (EXPECTED {expected})"
    note += f", {found.roots} roots, {found.kib} KiB"
    if found.foreign:
        note += f"; {found.foreign} on providers not loaded by this run (EXPECTED none)"
    if found.on_full:
        note += f"; {found.on_full} in trees made full (EXPECTED none)"
    return note


def query_row(
    ctx: Context,
    loaded: LoadedTrees,
    query: Query,
    limit: int | None,
    full: frozenset[str] = frozenset(),
) -> report.Row:
    """Probe and time one query; the trees of ``full`` are expected to answer nothing."""
    args = ctx.args
    url = f"{ctx.base_url}/allocation_candidates?{query.params}"
    name = f"{query.label}, {len(loaded.roots)} {loaded.shape.unit}"
    if limit is not None:
        url += f"&limit={limit}"
        name += f", limit={limit}"
    print(f"running {name}...", file=sys.stderr, flush=True)
    found = probe(url, loaded, full)
    answering = len(loaded.roots) - len(full)
    note = probe_note(found, expected_count(query, answering, limit, args.max_candidates))
    if found.status == 200 and query.scores_of is not None:
        note += "; " + scores_note(found, query, loaded)
    if found.status != 200:
        if not isinstance(found.status, int):
            settle(ctx.base_url, found.seconds)
        return report.Row(name, None, None, note)

    def request(session, index):
        return session.get(url, timeout=client.REQUEST_TIMEOUT_S)

    if args.warm_up:
        client.warm_up(request, args.warm_up)
    seq = client.sequential(request, args.requests, args.max_seconds)
    conc = client.concurrent(request, args.concurrent_requests, args.concurrency, args.max_seconds)
    if seq.errors or conc.errors:
        settle(ctx.base_url, max(seq.latencies + conc.latencies))
    return report.Row(name, seq, conc, note)


def after_write_row(ctx: Context, loaded: LoadedTrees, query: Query) -> report.Row:
    """``query`` without ``limit``, each request right after a write elsewhere: before each
    (untimed, on its own session, so any worker may take it) the root of the next tree
    has its VCPU inventory's ``reserved`` changed, so that tree's part of the answer is
    made again and every other tree's is reused."""
    url = f"{ctx.base_url}/allocation_candidates?{query.params}"
    name = f"{query.label}, {len(loaded.roots)} {loaded.shape.unit}, after a write elsewhere"
    print(f"running {name}...", file=sys.stderr, flush=True)
    timing = client.Timing(requested=ctx.args.requests, concurrency=1)
    started = time.perf_counter()
    with client.new_session() as reader, client.new_session() as writer:
        for index in range(ctx.args.requests):
            root = loaded.roots[index % len(loaded.roots)]
            inventory_url = f"{ctx.base_url}/resource_providers/{root}/inventories/VCPU"
            inventory = writer.get(inventory_url, timeout=client.REQUEST_TIMEOUT_S).json()
            inventory["reserved"] = 1 - inventory["reserved"]
            written = writer.put(inventory_url, json=inventory, timeout=client.REQUEST_TIMEOUT_S)
            if written.status_code != 200:
                return report.Row(name, None, None, f"write: {written.status_code}")
            start = time.perf_counter()
            answer = reader.get(url, timeout=client.REQUEST_TIMEOUT_S)
            timing.latencies.append(time.perf_counter() - start)
            timing.statuses[answer.status_code] += 1
    timing.elapsed = time.perf_counter() - started
    return report.Row(name, timing, None, "the write before each request is not timed")


def scores_note(found: Probe, query: Query, loaded: LoadedTrees) -> str:
    """Whether the answer's scores are one per candidate, best first, each one a score of
    its candidate's tree, and the best of the loaded trees (as many as the answer has)."""
    scores = found.scores
    if scores is None:
        return "no scores (EXPECTED scores)"
    if len(scores) != found.count:
        return f"{len(scores)} scores for {found.count} candidates (EXPECTED as many)"
    if any(a < b for a, b in itertools.pairwise(scores)):
        return f"scores not best first: {scores} (EXPECTED)"
    index = {root: i for i, root in enumerate(loaded.roots)}
    for score, root in zip(scores, found.trees, strict=True):
        possible = query.scores_of(index[root]) if root in index else []
        if not any(abs(score - p) <= SCORE_TOLERANCE for p in possible):
            return (
                f"a candidate of tree {root} scores {score}, not one of {sorted(possible)} "
                "(EXPECTED)"
            )
    every = sorted((s for i in range(len(loaded.roots)) for s in query.scores_of(i)), reverse=True)
    best = every[: len(scores)]
    if any(abs(a - b) > SCORE_TOLERANCE for a, b in zip(scores, best, strict=True)):
        return f"scores {scores} (EXPECTED the best: {best})"
    return f"scores {scores[0]:g} to {scores[-1]:g}, the best"


def preference_traits(index: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The traits tree ``index`` is marked with: (preferred ones, avoided ones)."""
    return (PREFERRED,) * (index % 2 == 0), (AVOIDED,) * (index % 3 == 0)


def traits_term(index: int) -> int:
    preferred, avoided = preference_traits(index)
    return len(preferred) - len(avoided)


def mark_trees(
    ctx: Context, loaded: LoadedTrees, marks: Callable[[int], dict[str, tuple[str, ...]]]
) -> str:
    """Add ``marks(i)`` (node name -> traits) to the providers of tree i, keeping the traits
    its shape gives them; on ``--load-threads`` threads. Returns what was done."""
    base_url = ctx.base_url
    shape_traits = {node.name: node.traits for node in loaded.shape.nodes}
    with client.new_session() as session:
        for trait in (PREFERRED, AVOIDED):
            response = session.put(f"{base_url}/traits/{trait}", timeout=client.REQUEST_TIMEOUT_S)
            if response.status_code not in (201, 204):
                raise LoadError(f"trait {trait}: {response.status_code} {response.text[:500]}")

    def mark(session: requests.Session, index: int) -> int:
        wanted = {node: traits for node, traits in marks(index).items() if traits}
        if not wanted:
            return 0
        root = loaded.roots[index]
        response = session.get(
            f"{base_url}/resource_providers?in_tree={root}", timeout=client.REQUEST_TIMEOUT_S
        )
        if response.status_code != 200:
            raise LoadError(
                f"providers of tree {root}: {response.status_code} {response.text[:500]}"
            )
        marked = 0
        for rp in response.json()["resource_providers"]:
            node = rp["name"].rsplit("-", 1)[-1]
            if node not in wanted:
                continue
            response = session.put(
                f"{base_url}/resource_providers/{rp['uuid']}/traits",
                json={
                    "resource_provider_generation": rp["generation"],
                    "traits": sorted({*shape_traits[node], *wanted[node]}),
                },
                timeout=client.REQUEST_TIMEOUT_S,
            )
            if response.status_code != 200:
                raise LoadError(
                    f"traits of {rp['name']}: {response.status_code} {response.text[:500]}"
                )
            marked += 1
        if marked != len(wanted):
            raise LoadError(f"tree {root} lacks providers {sorted(wanted)}")
        return marked

    count = len(loaded.roots)
    print(
        f"marking {count} {loaded.shape.unit} with {PREFERRED} (even) and {AVOIDED} "
        "(every third)...",
        file=sys.stderr,
        flush=True,
    )
    marked, seconds = client.load_in_parallel(
        count, ctx.args.load_threads, mark, f"{loaded.shape.unit} marked", progress=True
    )
    return (
        f"preferences: {sum(marked)} {loaded.shape.name} providers given {PREFERRED} "
        f"or {AVOIDED} in {seconds:.0f} s"
    )


def preference_row(ctx: Context, loaded: LoadedTrees, query: Query) -> report.Row:
    """``query`` with ``limit``, its scores checked; the note says how it did against the
    target."""
    row = query_row(ctx, loaded, query, LIMIT)
    if row.sequential is not None and row.sequential.count:
        p50 = row.sequential.p50_ms
        row.note += f"; target p50 <= {PREFERENCES_TARGET_MS:g} ms" + (
            " (missed)" if p50 > PREFERENCES_TARGET_MS else " (met)"
        )
    return row


def settle(base_url: str, longest: float) -> None:
    """Let the service work off the requests its client gave up on, before the next query.

    A sync gunicorn worker still computes an answer whose client timed out, and
    the requests queued behind it wait their turn: without this the next query
    would be timed against that backlog. ``GET /`` queues behind every request
    not yet accepted; once it answers, the others in progress end within about
    one request's time (the longest request of this query, at most the request timeout).
    """
    start = time.perf_counter()
    try:
        with client.new_session() as session:
            session.get(f"{base_url}/", timeout=SETTLE_TIMEOUT_S)
    except requests.RequestException:
        pass  # the next probe will say whether the service is still there
    time.sleep(min(longest, client.REQUEST_TIMEOUT_S))
    print(
        f"  waited {time.perf_counter() - start:.0f} s for abandoned requests",
        file=sys.stderr,
        flush=True,
    )


def query_rows(
    ctx: Context,
    loaded: LoadedTrees,
    queries: Callable[[LoadedTrees], list[Query]],
    full: frozenset[str] = frozenset(),
) -> list[report.Row]:
    """Every query, without then with ``limit``."""
    return [
        query_row(ctx, loaded, query, limit, full)
        for query in queries(loaded)
        for limit in (None, LIMIT)
    ]


def load(
    ctx: Context, shape: Shape, count: int, first: int = 0, aggregate: str | None = None
) -> LoadedTrees:
    print(
        f"loading {count} {shape.name} {shape.unit} ({count * len(shape.nodes)} providers, "
        f"{count * shape.requests_per_tree} requests)...",
        file=sys.stderr,
        flush=True,
    )
    return load_trees.load_trees(
        ctx.base_url,
        shape,
        count,
        ctx.args.load_threads,
        prefix=f"bench-{ctx.run_id}",
        first=first,
        aggregate=aggregate,
        progress=True,
    )


def scenario_flat(ctx: Context, loads: list[str]) -> list[report.Row]:
    loaded = load(ctx, load_trees.FLAT, ctx.args.nodes)
    loads.append(describe_load(loaded))
    return query_rows(ctx, loaded, flat_queries)


def _capacity(node: str, rc: str) -> int:
    """What a NESTED provider can give of a class: (total - reserved) x allocation_ratio."""
    inventory = next(n for n in load_trees.NESTED.nodes if n.name == node).inventories[rc]
    return int(
        (inventory["total"] - inventory.get("reserved", 0)) * inventory.get("allocation_ratio", 1.0)
    )


def busy_full(index: int) -> bool:
    return index % BUSY_FULL_EVERY == 0


def busy_usage(index: int) -> dict[str, dict[str, int]]:
    """What the ``--busy`` consumer of tree ``index`` takes, by node name of NESTED.

    DISK_GB on the root and MEMORY_MB on NUMA0 together differ from every other
    tree's, and leave room for the query; the FPGA under NUMA1 is never part of a
    candidate; every tenth tree also takes all of NUMA0's VCPU.
    """
    numa0 = {}
    if index // BUSY_DISK_STEPS:
        numa0["MEMORY_MB"] = index // BUSY_DISK_STEPS
    if busy_full(index):
        numa0["VCPU"] = _capacity("numa0", "VCPU")
    usage = {"cn": {"DISK_GB": index % BUSY_DISK_STEPS + 1}, "fpga2": {"FPGA": 1}}
    if numa0:
        usage["numa0"] = numa0
    return usage


def claim_busy(session: requests.Session, base_url: str, root: str, index: int) -> None:
    """Find the providers of tree ``index`` by name, then claim its ``busy_usage``."""
    response = session.get(
        f"{base_url}/resource_providers?in_tree={root}", timeout=client.REQUEST_TIMEOUT_S
    )
    if response.status_code != 200:
        raise LoadError(f"providers of tree {root}: {response.status_code} {response.text[:500]}")
    by_node = {
        rp["name"].rsplit("-", 1)[-1]: rp["uuid"] for rp in response.json()["resource_providers"]
    }
    usage = busy_usage(index)
    if not usage.keys() <= by_node.keys():
        raise LoadError(f"tree {root} lacks providers {sorted(usage.keys() - by_node.keys())}")
    consumer = uuid.uuid4()
    response = session.put(
        f"{base_url}/allocations/{consumer}",
        json={
            "allocations": {
                by_node[node]: {"resources": resources} for node, resources in usage.items()
            },
            "project_id": "bench-project",
            "user_id": "bench-user",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        },
        timeout=client.REQUEST_TIMEOUT_S,
    )
    if response.status_code != 204:
        raise LoadError(
            f"allocations of tree {root} ({consumer}): {response.status_code} {response.text[:500]}"
        )


def make_busy(ctx: Context, loaded: LoadedTrees) -> Busy:
    """One consumer per loaded tree (``busy_usage``), on ``--load-threads`` threads."""
    count = len(loaded.roots)
    print(
        f"claiming {count} consumers, one per nested tree ({2 * count} requests)...",
        file=sys.stderr,
        flush=True,
    )
    _, seconds = client.load_in_parallel(
        count,
        ctx.args.load_threads,
        lambda session, index: claim_busy(session, ctx.base_url, loaded.roots[index], index),
        "claims",
        progress=True,
    )
    full = frozenset(root for index, root in enumerate(loaded.roots) if busy_full(index))
    return Busy(full, count, seconds)


def busy_queries(loaded: LoadedTrees) -> list[Query]:
    return [replace(query, label=BUSY_LABEL) for query in nested_queries(loaded)]


def scenario_nested(ctx: Context, loads: list[str]) -> list[report.Row]:
    """The nested queries at each size of ``--trees``, growing one load; with ``--busy``,
    once more after the last size, every tree with its own usage."""
    rows: list[report.Row] = []
    loaded = LoadedTrees(load_trees.NESTED, aggregate=str(uuid.uuid4()))
    for size in ctx.args.trees:
        more = size - len(loaded.roots)
        loaded.extend(load(ctx, load_trees.NESTED, more, len(loaded.roots), loaded.aggregate))
        rows += query_rows(ctx, loaded, nested_queries)
        rows += [explain_row(ctx, loaded, query) for query in explained_queries(loaded)]
    loads.append(describe_load(loaded))
    if ctx.args.preferences:
        loads.append(
            mark_trees(ctx, loaded, lambda index: {"cn": sum(preference_traits(index), ())})
        )
        rows.append(preference_row(ctx, loaded, nested_preference_query(loaded)))
    if ctx.args.busy:
        busy = make_busy(ctx, loaded)
        loads.append(
            f"busy: {busy.claims} consumers, one per nested tree, "
            f"{len(busy.full)} trees full, in {busy.seconds:.0f} s"
        )
        rows += query_rows(ctx, loaded, busy_queries, busy.full)
    return rows


def explained_queries(loaded: LoadedTrees) -> list[Query]:
    """The nested query, and one no tree can answer (3 FPGAs under one NUMA node)."""
    [nested] = nested_queries(loaded)
    return [
        nested,
        replace(
            nested,
            label="nested, no tree answers",
            params=nested.params.replace("FPGA:1", "FPGA:3"),
            per_tree=0,
        ),
    ]


def explain_row(ctx: Context, loaded: LoadedTrees, query: Query) -> report.Row:
    """GET /allocation_candidates/explain of ``query``: timed, its answer checked (the trees
    it says answer, against the candidates' own count per tree)."""
    url = f"{ctx.base_url}/allocation_candidates/explain?{query.params}"
    name = f"explain {query.label}, {len(loaded.roots)} {loaded.shape.unit}"
    print(f"running {name}...", file=sys.stderr, flush=True)
    with client.new_session() as session:
        answer = session.get(url, timeout=client.REQUEST_TIMEOUT_S)
    if answer.status_code != 200:
        return report.Row(name, None, None, f"first answer: {answer.status_code} (EXPECTED 200)")
    body = answer.json()
    answering = body["trees"][-1]["passing"]
    expected = len(loaded.roots) if query.per_tree else 0
    note = f"{answering} trees answer" + (
        "" if answering >= expected else f" (EXPECTED at least {expected})"
    )
    note += f"; empties at: {body['empties_at']}" if body["empties_at"] else ""

    def request(session, index):
        return session.get(url, timeout=client.REQUEST_TIMEOUT_S)

    seq = client.sequential(request, ctx.args.requests, ctx.args.max_seconds)
    return report.Row(name, seq, None, note)


def scenario_gpu(ctx: Context, loads: list[str]) -> list[report.Row]:
    loaded = load(ctx, load_trees.GPU_HOST, ctx.args.hosts)
    loads.append(describe_load(loaded))
    rows = query_rows(ctx, loaded, gpu_queries)
    rows.append(after_write_row(ctx, loaded, gpu_queries(loaded)[0]))
    if ctx.args.preferences:
        loads.append(
            mark_trees(
                ctx,
                loaded,
                lambda index: dict(zip(("sw00", "sw01"), preference_traits(index), strict=True)),
            )
        )
        rows.append(preference_row(ctx, loaded, gpu_preference_query(loaded)))
    return rows


SCENARIOS = {"flat": scenario_flat, "nested": scenario_nested, "gpu": scenario_gpu}


def describe_load(loaded: LoadedTrees) -> str:
    return (
        f"{len(loaded.roots)} {loaded.shape.name} {loaded.shape.unit}, "
        f"{loaded.providers} providers in {loaded.seconds:.0f} s"
    )


def tree_sizes(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",")]
    if any(b <= a for a, b in zip([0, *sizes[:-1]], sizes, strict=True)):
        raise argparse.ArgumentTypeError("tree counts must be positive and increasing")
    return sizes


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Allocation-candidate benchmarks (see benchmarks/README.md)."
    )
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--nodes", type=int, default=1000, help="flat: compute nodes")
    parser.add_argument(
        "--trees",
        type=tree_sizes,
        default=[1000],
        help="nested: trees, or increasing sizes to grow to (1000,5000,10000)",
    )
    parser.add_argument("--hosts", type=int, default=250, help="gpu: hosts")
    parser.add_argument(
        "--busy",
        action="store_true",
        help="nested: after the last size, give every tree its own usage "
        f"({100 // BUSY_FULL_EVERY}%% of them full) and ask again",
    )
    parser.add_argument(
        "--preferences",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="nested and gpu: mark the trees and ask one query with soft "
        "preferences (this service's extension; --no-preferences for "
        "upstream)",
    )
    parser.add_argument("--requests", type=int, default=30, help="sequential requests per query")
    parser.add_argument(
        "--concurrent-requests",
        type=int,
        help="requests per query at --concurrency (default: --requests)",
    )
    parser.add_argument("--concurrency", type=int, default=10, help="threads for req/s")
    parser.add_argument(
        "--warm-up", type=int, default=5, help="untimed requests per query after the probe"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=60.0, help="time limit of each timed loop"
    )
    parser.add_argument(
        "--max-candidates",
        type=int,
        default=10000,
        help="the service's max_allocation_candidates (-1: none); "
        "passed to the service the runner starts",
    )
    add_service_options(parser)
    args = parser.parse_args(argv)
    if args.busy and args.scenario not in ("nested", "all"):
        parser.error("--busy applies to the nested scenario (--scenario nested or all)")
    if args.concurrent_requests is None:
        args.concurrent_requests = args.requests
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = report.command_line("benchmarks.run_candidates", argv)
    machine = report.environment()  # before the service adds its own load
    if args.url is None:
        # gunicorn inherits the environment: the service caps candidates as the checks expect.
        os.environ["PLACEMENT_MAX_ALLOCATION_CANDIDATES"] = str(args.max_candidates)
    chosen = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    with running_service(
        args.workers, args.database_url, args.url, args.log_dir, args.backend
    ) as service:
        print(f"service at {service.base_url}", file=sys.stderr, flush=True)
        ctx = Context(service.base_url, uuid.uuid4().hex[:6], args)
        rows: list[report.Row] = []
        loads: list[str] = []
        for name in chosen:
            rows += SCENARIOS[name](ctx, loads)
        config = {
            "command": command,
            **service.configuration(),
            "loaded through the API": f"{'; '.join(loads)} ({args.load_threads} threads)",
            "requests": f"{args.requests} sequential, {args.concurrent_requests} concurrent "
            f"per query, after {args.warm_up} untimed warm-up",
            "concurrency": args.concurrency,
            "max seconds per loop": args.max_seconds,
            "max_allocation_candidates": args.max_candidates,
            **machine,
        }
    return report.finish(config, rows, args.concurrency, args.json)


if __name__ == "__main__":
    sys.exit(main())
