"""Timing helpers: latency percentiles of sequential requests, throughput at a concurrency.

A request is a function ``request(session, index) -> requests.Response``; the
helpers call it with their own ``requests.Session`` (one per thread) and an
index counting from 0, so a scenario can build a new consumer or pick a
provider per call. Every loop is bounded twice: by its number of requests and
by ``max_seconds`` (the run stops early and says so in ``Timing.truncated``).
Only loopback addresses are accepted: these helpers hammer a service as fast
as they can and must never be pointed at someone else's.
"""

import ipaddress
import math
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests

HEADERS = {
    "X-Auth-Token": "admin",
    "OpenStack-API-Version": "placement 1.39",
    "Accept": "application/json",
}
REQUEST_TIMEOUT_S = 60
DEFAULT_MAX_SECONDS = 60.0

Request = Callable[[requests.Session, int], requests.Response]


def require_loopback(url: str) -> str:
    """``url`` if its host is a loopback address; ValueError otherwise."""
    host = urlsplit(url).hostname or ""
    if host != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                raise ValueError
        except ValueError:
            raise ValueError(f"benchmarks only talk to loopback addresses, not {url!r}") from None
    return url


def new_session() -> requests.Session:
    session = requests.Session()
    session.headers.update(HEADERS)
    return session


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list (``fraction`` in 0..1)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class Timing:
    """What one timed loop measured. Latencies in seconds."""

    requested: int
    concurrency: int
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)  # exceptions by type name
    truncated: bool = False  # stopped by max_seconds before all requests were sent

    @property
    def count(self) -> int:
        return len(self.latencies)

    def ms(self, fraction: float) -> float:
        return percentile(sorted(self.latencies), fraction) * 1000

    @property
    def p50_ms(self) -> float:
        return self.ms(0.50)

    @property
    def p95_ms(self) -> float:
        return self.ms(0.95)

    @property
    def p99_ms(self) -> float:
        return self.ms(0.99)

    @property
    def per_second(self) -> float:
        return self.count / self.elapsed if self.elapsed else math.nan

    def status_text(self) -> str:
        parts = [f"{code}x{n}" for code, n in sorted(self.statuses.items())]
        parts += [f"{name}x{n}" for name, n in sorted(self.errors.items())]
        return " ".join(parts)

    def as_dict(self) -> dict:
        return {
            "requested": self.requested,
            "completed": self.count,
            "concurrency": self.concurrency,
            "elapsed_s": round(self.elapsed, 4),
            "p50_ms": round(self.p50_ms, 3),
            "p95_ms": round(self.p95_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "req_per_s": round(self.per_second, 2),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "errors": dict(self.errors),
            "truncated": self.truncated,
        }


def _timed_call(
    request: Request, session: requests.Session, index: int, timing: Timing, lock: threading.Lock
) -> None:
    start = time.perf_counter()
    try:
        response = request(session, index)
        outcome, is_status = response.status_code, True
    except requests.RequestException as exc:
        outcome, is_status = type(exc).__name__, False
    took = time.perf_counter() - start
    with lock:
        timing.latencies.append(took)
        (timing.statuses if is_status else timing.errors)[outcome] += 1


def sequential(request: Request, count: int, max_seconds: float = DEFAULT_MAX_SECONDS) -> Timing:
    """``count`` requests one after the other on one session: latency percentiles."""
    return concurrent(request, count, 1, max_seconds)


def concurrent(
    request: Request, count: int, concurrency: int, max_seconds: float = DEFAULT_MAX_SECONDS
) -> Timing:
    """``count`` requests shared by ``concurrency`` threads, each with its own session.

    The threads take the next index from a shared counter until ``count`` were
    taken or ``max_seconds`` passed; ``per_second`` is completed requests over
    the wall time from the first start to the last finish.
    """
    if count < 1 or concurrency < 1:
        raise ValueError("count and concurrency must be at least 1")
    timing = Timing(requested=count, concurrency=concurrency)
    lock = threading.Lock()
    next_index = iter(range(count))
    start = time.perf_counter()
    deadline = start + max_seconds

    def worker() -> None:
        with new_session() as session:
            while True:
                with lock:
                    index = next(next_index, None)
                    if index is not None and time.perf_counter() > deadline:
                        # Truncated only when a request is left undone.
                        timing.truncated = True
                        return
                if index is None:
                    return
                _timed_call(request, session, index, timing, lock)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        # A request can outlive the deadline by at most its own timeout.
        thread.join(timeout=max_seconds + REQUEST_TIMEOUT_S + 5)
    timing.elapsed = time.perf_counter() - start
    return timing


def warm_up(request: Request, count: int = 10, concurrency: int = 2) -> None:
    """A few untimed requests: connection pools in every worker, caches, imports."""
    concurrent(request, count, concurrency, max_seconds=30)


def load_in_parallel(
    count: int,
    threads: int,
    make: Callable[[requests.Session, int], object],
    what: str,
    progress: bool = False,
) -> tuple[list, float]:
    """``make(session, index)`` for index 0 .. ``count - 1`` on ``threads`` threads (one
    session each); returns the results in index order and the seconds taken. The first
    failure stops the rest and is raised."""
    made: list = [None] * count
    local = threading.local()
    failed = threading.Event()
    lock = threading.Lock()
    every = max(1, count // 20)
    done = 0
    start = time.perf_counter()

    def one(index: int) -> None:
        nonlocal done
        if failed.is_set():
            return
        if not hasattr(local, "session"):
            local.session = new_session()
        try:
            made[index] = make(local.session, index)
        except Exception:
            failed.set()
            raise
        with lock:
            done += 1
            finished = done
        if progress and (finished % every == 0 or finished == count):
            elapsed = time.perf_counter() - start
            print(
                f"  {finished}/{count} {what} ({finished / elapsed:.1f}/s) in "
                f"{elapsed:.0f} s, about {elapsed / finished * (count - finished):.0f} s left",
                file=sys.stderr,
                flush=True,
            )

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        # list() re-raises the first failure; the items not started yet are skipped.
        list(pool.map(one, range(count)))
    return made, time.perf_counter() - start


def add_timing_options(parser, requests: int, warm_up: int, max_seconds: float) -> None:
    """The options every runner times its requests with (``--concurrent-requests``
    defaults to ``--requests``: see ``checked_timing_options``)."""
    parser.add_argument(
        "--requests", type=int, default=requests, help="sequential requests per candidates query"
    )
    parser.add_argument(
        "--concurrent-requests",
        type=int,
        help="requests per candidates query at --concurrency (default: --requests)",
    )
    parser.add_argument("--concurrency", type=int, default=10, help="threads for req/s")
    parser.add_argument(
        "--warm-up", type=int, default=warm_up, help="untimed requests per scenario"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=max_seconds, help="time limit of each timed loop"
    )


def checked_timing_options(parser, args) -> None:
    if args.concurrent_requests is None:
        args.concurrent_requests = args.requests
    if min(args.requests, args.concurrent_requests) < 1:
        parser.error("--requests and --concurrent-requests must be >= 1")
