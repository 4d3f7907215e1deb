"""Memory per host, and a replacement worker's first answers (issue 31: one copy per host).

Loads ``--device-nodes`` device nodes and ``--trees`` nested trees as ``run_scale`` does
(or, with ``--database-url`` of a database a run loaded and ``--device-nodes 0 --trees
0``, measures what it holds), then for each count of ``--workers`` (2, 4 and 8 by
default) starts gunicorn on the database, the copy of the providers per worker or,
with ``--preload``, one per host (read in gunicorn's arbiter before it forks the
workers: ``placement.worker_hooks``), and:

* runs a mix of queries, ``--rounds`` times, each at a concurrency of twice the
  workers so that every worker takes some: ``run_scale``'s device search, nested and
  flat ``limit=10`` queries, the flat query without a limit (an answer over every
  tree, up to ``max_allocation_candidates``: what touches most of the copy), and the
  nested query after each of a few ``PUT /allocations`` (the copy refreshed);
* reads ``/proc/PID/smaps_rollup`` of the arbiter and of each worker: the host's sum
  of PSS (each page shared by k processes counts 1/k in each: the sum is what the
  host holds), and each process's USS (``Private_Clean + Private_Dirty``: what
  killing it would free) and RSS. Python 3.11 writes an object's reference count
  whenever it is read, so a page shared at the fork becomes private to the worker
  whose search reads an object on it: measured after the mix, not at start;
* kills one worker (SIGKILL), waits for gunicorn's replacement, stops the other
  workers for a moment (SIGSTOP) so that the replacement takes the next requests,
  and times its first answer of each query (its first includes what it must read or
  build: without the preload the whole copy), then its second. Then the others go on
  (SIGCONT).

``python -m benchmarks.run_memory --device-nodes 1000 --trees 1000`` loads 35,000
providers; ``--device-nodes 10000 --trees 10000`` is the 350,000 of the issue.
"""

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

from benchmarks import client, report
from benchmarks.run_scale import (
    add_scale_options,
    claim_a_disk_gb,
    first_and_second_answers,
    load,
    queries,
)
from benchmarks.service import gunicorn, gunicorn_processes, running_service

MIB = 1024 * 1024
# Long enough for a first answer without the preload at 350,000 providers, and for the
# few seconds the other workers are stopped (gunicorn would take them for hung).
WORKER_TIMEOUT_S = "300"
WRITES_PER_ROUND = 5


@dataclass(frozen=True)
class Memory:
    """One process's figures from ``smaps_rollup``, in bytes."""

    pid: int
    rss: int
    pss: int
    uss: int

    @classmethod
    def of(cls, pid: int) -> "Memory":
        fields = {}
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                name, _, rest = line.partition(":")
                if rest.strip().endswith("kB"):
                    fields[name] = int(rest.split()[0]) * 1024
        uss = fields["Private_Clean"] + fields["Private_Dirty"]
        return cls(pid, fields["Rss"], fields["Pss"], uss)


def run_mix(base_url: str, roots: list[str], workers: int, rounds: int) -> dict[str, str]:
    """The mix of queries, each ``rounds`` times per worker at a concurrency of twice the
    workers; the writes between them. What was answered, by query."""
    mix = dict(queries(base_url))

    def flat_unlimited(session, index):
        return session.get(
            f"{base_url}/allocation_candidates?resources=VCPU:1", timeout=client.REQUEST_TIMEOUT_S
        )

    mix["flat VCPU:1, no limit"] = flat_unlimited
    answered = {}
    for name, request in mix.items():
        timing = client.concurrent(request, rounds * workers, 2 * workers, max_seconds=600)
        answered[name] = ", ".join(
            f"{count} x {outcome}"
            for outcome, count in [*timing.statuses.items(), *timing.errors.items()]
        )
    with client.new_session() as session:
        for index in range(WRITES_PER_ROUND * rounds):
            claim_a_disk_gb(session, base_url, roots[index % len(roots)])
            client.concurrent(mix["nested candidates, limit=10"], workers, workers)
    return answered


def wait_for_workers(base_url: str, workers: int, timeout: float = 600) -> None:
    """Until the arbiter has forked all its workers: with the preload it brings its copy up
    to date before each fork, and the service answers as soon as the first is up."""
    deadline = time.monotonic() + timeout
    while len(gunicorn_processes(base_url)[1]) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"gunicorn did not start its {workers} workers")
        time.sleep(0.2)


def wait_for_replacement(base_url: str, before: list[int], timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _arbiter, now = gunicorn_processes(base_url)
        new = set(now) - set(before)
        if new:
            return new.pop()
        time.sleep(0.05)
    raise RuntimeError("gunicorn started no replacement worker")


@contextlib.contextmanager
def stopped(pids: list[int]) -> Iterator[None]:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def replacement_answers(base_url: str) -> list[str]:
    """Kill a worker; the replacement's first and second answer of each query."""
    _arbiter, workers = gunicorn_processes(base_url)
    victim = workers[0]
    killed = time.perf_counter()
    os.kill(victim, signal.SIGKILL)
    survivors = workers[1:]
    replacement = wait_for_replacement(base_url, workers)
    forked = time.perf_counter() - killed
    lines = [f"forked {forked:.2f} s after the SIGKILL"]
    with stopped(survivors):
        lines += first_and_second_answers(queries(base_url))
    lines.append(f"(pid {replacement})")
    return lines


def measure(args, database_url: str, roots: list[str], workers: int, log_dir: str) -> dict:
    """One service of ``workers`` workers on the database: its memory after the mix, and
    a replacement's first answers."""
    log_path = os.path.join(log_dir, f"gunicorn-{workers}.log")
    timeout = ("--timeout", WORKER_TIMEOUT_S)
    started = time.perf_counter()
    with gunicorn(
        database_url, workers, log_path, preload=args.preload, extra_args=timeout
    ) as base:
        up = time.perf_counter() - started
        wait_for_workers(base, workers)
        answered = run_mix(base, roots, workers, args.rounds)
        arbiter, pids = gunicorn_processes(base)
        memory = [Memory.of(pid) for pid in [arbiter, *pids]]
        replacement = replacement_answers(base)
    host_pss = sum(m.pss for m in memory)
    return {
        "workers": workers,
        "up": f"{up:.1f} s",
        "answered": answered,
        "host PSS (arbiter + workers)": f"{host_pss / MIB:.0f} MiB",
        "arbiter": _figures(memory[0]),
        "workers' USS": ", ".join(f"{m.uss / MIB:.0f}" for m in memory[1:]) + " MiB",
        "workers' PSS": ", ".join(f"{m.pss / MIB:.0f}" for m in memory[1:]) + " MiB",
        "workers' RSS": ", ".join(f"{m.rss / MIB:.0f}" for m in memory[1:]) + " MiB",
        "replacement": "; ".join(replacement),
    }


def _figures(memory: Memory) -> str:
    return (
        f"RSS {memory.rss / MIB:.0f} MiB, PSS {memory.pss / MIB:.0f} MiB, "
        f"USS {memory.uss / MIB:.0f} MiB"
    )


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Memory per host (see the module docstring).")
    add_scale_options(parser)
    parser.add_argument(
        "--workers-counts", default="2,4,8", help="the services to measure, by their workers"
    )
    parser.add_argument("--rounds", type=int, default=4, help="requests of each query per worker")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.url:
        print("run_memory starts its own services: no --url", file=sys.stderr)
        return 2
    command = report.command_line("benchmarks.run_memory", argv)
    machine = report.environment()
    counts = [int(count) for count in args.workers_counts.split(",")]
    with contextlib.ExitStack() as stack:
        log_dir = args.log_dir or stack.enter_context(tempfile.TemporaryDirectory())
        # The loader: the workers of --workers, each with its own copy (it only writes).
        loader = stack.enter_context(
            running_service(args.workers, args.database_url, None, log_dir, args.backend)
        )
        devices, trees, roots = load(loader.base_url, args, "memory")
        database_url = loader.database_url
        assert database_url is not None
        results = []
        for workers in counts:
            print(f"measuring {workers} workers...", file=sys.stderr, flush=True)
            results.append(measure(args, database_url, roots, workers, log_dir))
        config = {
            "command": command,
            **loader.configuration(),
            "copy of the providers": "one per host (preloaded)" if args.preload else "per worker",
            "providers": f"{devices.providers + trees.providers} loaded ({len(devices.nodes)} "
            f"device nodes, {len(trees.roots)} nested trees); {len(roots)} nested trees in all",
            **machine,
        }
    print("Configuration:")
    for key, value in config.items():
        if key != "gunicorn workers":
            print(f"  {key}: {value}")
    for result in results:
        print()
        for key, value in result.items():
            print(f"  {key}: {value}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"configuration": config, "results": results}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
