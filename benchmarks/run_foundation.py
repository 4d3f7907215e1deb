"""Foundation benchmarks: listing, showing and claiming on a loaded service.

Starts a service (``benchmarks.service``: throwaway PostgreSQL + gunicorn,
or ``--database-url``, or ``--url``), loads ``--providers`` compute nodes
through the API (``benchmarks.load``), then times each scenario:

* ``list filtered``: GET /resource_providers?resources=VCPU:1,MEMORY_MB:256
  &member_of=<agg>&required=HW_CPU_X86_AVX2 (half the nodes match);
* ``show provider``: GET /resource_providers/{uuid} of a random node;
* ``claim random``: PUT /allocations/{new consumer} of VCPU:1, MEMORY_MB:256
  on a random node (each request a new consumer);
* ``claim one provider``: the same claims, all on ONE provider sized so that
  it cannot run out: every claim must be granted (a 409 there is a bug in the
  locked claim path, not contention), and its usage must equal the number of
  claims granted;
* ``list filtered, after the claims``: the first scenario again, now that
  allocations exist (usage enters the capacity check). No node is anywhere near
  full, so the answer must still be every AVX2 node.

Each scenario runs ``--requests`` requests sequentially (latency p50/p95/p99)
and ``--requests`` requests at ``--concurrency`` threads (req/s); the
contention case only concurrently. A few untimed warm-up requests precede each
scenario. Prints the configuration and a Markdown table; ``--json`` also
writes both to a file. Exits 1 when any answer was unexpected (5xx, a refused
claim, a failed check), so a regression cannot hide in a table.
"""

import argparse
import random
import sys
import time
import uuid
from dataclasses import dataclass

import requests

from benchmarks import client, load, report
from benchmarks.service import add_service_options, running_service

CLAIM = {"VCPU": 1, "MEMORY_MB": 256}
WARM_UP = 10


@dataclass
class Context:
    base_url: str
    loaded: load.Loaded
    contention_provider: str
    rng: random.Random


def list_filtered_url(ctx: Context) -> str:
    resources = ",".join(f"{rc}:{n}" for rc, n in CLAIM.items())
    return (
        f"{ctx.base_url}/resource_providers?resources={resources}"
        f"&member_of={ctx.loaded.aggregate}&required={load.AVX2}"
    )


def claim_body(provider: str) -> dict:
    return {
        "allocations": {provider: {"resources": dict(CLAIM)}},
        "project_id": "bench-project",
        "user_id": "bench-user",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }


def claim(base_url: str, session: requests.Session, provider: str) -> requests.Response:
    return session.put(
        f"{base_url}/allocations/{uuid.uuid4()}",
        json=claim_body(provider),
        timeout=client.REQUEST_TIMEOUT_S,
    )


def picks(ctx: Context, count: int) -> list[str]:
    """Random providers chosen up front (threads share no random state)."""
    return [ctx.rng.choice(ctx.loaded.providers) for _ in range(count)]


def run_both(request, args, warm: bool = True) -> tuple[client.Timing, client.Timing]:
    if warm:
        client.warm_up(request, WARM_UP)
    seq = client.sequential(request, args.requests, args.max_seconds)
    conc = client.concurrent(request, args.requests, args.concurrency, args.max_seconds)
    return seq, conc


def scenario_list(ctx: Context, args, label: str = "") -> report.Row:
    url = list_filtered_url(ctx)
    first = client.new_session().get(url, timeout=client.REQUEST_TIMEOUT_S)
    found = len(first.json()["resource_providers"]) if first.status_code == 200 else -1
    # Every claim is small next to a node's inventory, so claims never take a matching
    # node out of the answer: it is every AVX2 node, before and after the claims.
    expected = len(ctx.loaded.with_avx2)
    seq, conc = run_both(lambda s, i: s.get(url, timeout=client.REQUEST_TIMEOUT_S), args)
    note = f"{found} of {len(ctx.loaded.providers)} match, {len(first.content) // 1024} KiB"
    if found != expected:
        note += f" (EXPECTED {expected})"
    return report.Row("GET /resource_providers filtered" + label, seq, conc, note)


def scenario_list_after_claims(ctx: Context, args) -> report.Row:
    """The same list once allocations exist: usage now counts in the capacity check."""
    return scenario_list(ctx, args, ", after the claims")


def scenario_show(ctx: Context, args) -> report.Row:
    chosen = picks(ctx, args.requests + WARM_UP)

    def request(session, index):
        return session.get(
            f"{ctx.base_url}/resource_providers/{chosen[index]}",
            timeout=client.REQUEST_TIMEOUT_S,
        )

    seq, conc = run_both(request, args)
    return report.Row("GET /resource_providers/{uuid}", seq, conc, "random provider")


def scenario_claim_random(ctx: Context, args) -> report.Row:
    chosen = picks(ctx, args.requests + WARM_UP)
    seq, conc = run_both(lambda s, i: claim(ctx.base_url, s, chosen[i]), args)
    return report.Row("PUT /allocations/{new} random provider", seq, conc, "new consumer each")


def scenario_claim_one(ctx: Context, args) -> report.Row:
    scenario_name = "PUT /allocations/{new} ONE provider"
    provider = ctx.contention_provider
    conc = client.concurrent(
        lambda s, i: claim(ctx.base_url, s, provider),
        args.requests,
        args.concurrency,
        args.max_seconds,
    )
    granted = conc.statuses.get(204, 0)
    note = f"409s: {conc.statuses.get(409, 0)}"
    try:
        with client.new_session() as session:
            usage = (
                session.get(
                    f"{ctx.base_url}/resource_providers/{provider}/usages",
                    timeout=client.REQUEST_TIMEOUT_S,
                )
                .json()["usages"]
                .get("VCPU", 0)
            )
    except (requests.RequestException, ValueError, KeyError) as exc:
        return report.Row(scenario_name, None, conc, f"{note}; usage check EXPECTED, got {exc!r}")
    note += f"; usage VCPU {usage}"
    if usage != granted * CLAIM["VCPU"]:
        note += f" (EXPECTED {granted * CLAIM['VCPU']})"
    return report.Row(scenario_name, None, conc, note)


def scenario_candidates_after_each_claim(ctx: Context, args) -> report.Row:
    """``GET /allocation_candidates?resources=VCPU:1&limit=10`` right after each
    ``PUT /allocations`` (untimed): the worker answering first brings its copy of the
    providers up to date with the write, so this times a refresh plus a small search."""
    url = f"{ctx.base_url}/allocation_candidates?resources=VCPU:1&limit=10"
    chosen = picks(ctx, args.requests + WARM_UP)
    timing = client.Timing(requested=args.requests, concurrency=1)
    with client.new_session() as session:
        for index, provider in enumerate(chosen):
            claim(ctx.base_url, session, provider)
            started = time.perf_counter()
            response = session.get(url, timeout=client.REQUEST_TIMEOUT_S)
            took = time.perf_counter() - started
            if index >= WARM_UP:
                timing.latencies.append(took)
                timing.statuses[response.status_code] += 1
    timing.elapsed = sum(timing.latencies)
    return report.Row(
        "GET /allocation_candidates?resources=VCPU:1&limit=10 after each PUT /allocations",
        timing,
        None,
        "the PUT untimed",
    )


SCENARIOS = [
    scenario_list,
    scenario_show,
    scenario_claim_random,
    scenario_claim_one,
    scenario_list_after_claims,
    scenario_candidates_after_each_claim,
]


def contention_inventory(args) -> load.Inventory:
    """Room for every claim of the contention scenario, twice over."""
    claims = 2 * args.requests
    return load.Inventory(
        vcpu=claims * CLAIM["VCPU"],
        vcpu_ratio=1.0,
        memory_mb=claims * CLAIM["MEMORY_MB"],
        disk_gb=1,
    )


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Foundation benchmarks (see benchmarks/README.md)."
    )
    parser.add_argument("--providers", type=int, default=1000, help="compute nodes to load")
    parser.add_argument(
        "--requests",
        type=int,
        default=300,
        help="requests per scenario and mode (sequential, concurrent)",
    )
    parser.add_argument("--concurrency", type=int, default=10, help="threads for req/s")
    add_service_options(parser)
    parser.add_argument(
        "--max-seconds", type=float, default=60.0, help="time limit of each timed loop"
    )
    parser.add_argument("--seed", type=int, default=42, help="seed of the random picks")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = report.command_line("benchmarks.run_foundation", argv)
    machine = report.environment()  # before the service adds its own load
    with running_service(
        args.workers, args.database_url, args.url, args.log_dir, args.backend
    ) as service:
        print(
            f"service at {service.base_url}; loading {args.providers} providers...",
            file=sys.stderr,
            flush=True,
        )
        run_id = uuid.uuid4().hex[:6]
        loaded = load.load_compute_nodes(
            service.base_url,
            args.providers,
            args.load_threads,
            prefix=f"bench-{run_id}-cn",
            progress=True,
        )
        with client.new_session() as session:
            contention = load.create_provider(
                session,
                service.base_url,
                f"bench-{run_id}-contention",
                contention_inventory(args),
            )
        ctx = Context(service.base_url, loaded, contention, random.Random(args.seed))
        rows = []
        for scenario in SCENARIOS:
            print(f"running {scenario.__name__}...", file=sys.stderr, flush=True)
            started = time.perf_counter()
            rows.append(scenario(ctx, args))
            print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        config = {
            "command": command,
            **service.configuration(),
            "providers": f"{len(loaded.providers)} (+1 contention provider), "
            f"loaded through the API in {loaded.seconds:.1f} s "
            f"with {args.load_threads} threads",
            "requests": f"{args.requests} per scenario and mode, {WARM_UP} untimed warm-up first",
            "concurrency": args.concurrency,
            "max seconds per loop": args.max_seconds,
            "seed": args.seed,
            **machine,
        }
    return report.finish(config, rows, args.concurrency, args.json)


if __name__ == "__main__":
    sys.exit(main())
