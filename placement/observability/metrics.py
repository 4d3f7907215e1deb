"""The application's Prometheus metrics: one ``Metrics`` per application, served on /metrics.

``Metrics`` owns its metric objects and, in one process, its own ``CollectorRegistry``
(so that every application a test builds counts from zero). It is what the features are
given at build time to tell what they did (``Replica``'s ``RefreshRecorder``,
``CandidateSearch``'s ``SearchRecorder``, the claim loop's ``ClaimRecorder``), and
``request_log`` tells it each request.

Several gunicorn workers are several processes, each counting its own requests. With
``PROMETHEUS_MULTIPROC_DIR`` set (``placement serve`` sets it when it starts more than
one worker), prometheus-client writes every value to files in that folder, one per
process, and /metrics reads them all (``MultiProcessCollector``): every worker's
requests are counted whichever worker is scraped. prometheus-client chooses between
the two when it is first imported, from the environment: so this module is imported
only when an application is built (``Services.build``), never by the modules a
process imports before it sets the variable.
"""

import os
from collections.abc import Mapping

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import Engine

from placement.candidates.service import SearchReport
from placement.observability import MULTIPROCESS_DIRECTORY

# Seconds: from a probe to a search of every tree of a large cloud.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
TREE_BUCKETS = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
PROVIDER_BUCKETS = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)


class Metrics:
    def __init__(self, engine: Engine, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        self._directory = environ.get(MULTIPROCESS_DIRECTORY) or None
        _require_value_files_if(self._directory is not None)
        self._registry = CollectorRegistry()
        self._engine = engine  # its pool read when sampled: a fork gives it a new one
        registry = self._registry
        self.requests = Counter(
            "placement_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "placement_http_request_duration_seconds",
            "Time to answer a request, from its "
            "first hook to its response (the body not yet sent).",
            ["route", "method"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.candidate_searches = Counter(
            "placement_candidate_searches",
            "GET /allocation_candidates searches; answer: "
            "searched, or reused (the body answered to the same request, nothing written "
            "since).",
            ["answer"],
            registry=registry,
        )
        self.candidate_trees = Histogram(
            "placement_candidate_search_trees",
            "Trees one search looked at.",
            buckets=TREE_BUCKETS,
            registry=registry,
        )
        self.candidate_trees_reused = Counter(
            "placement_candidate_trees_reused",
            "Trees answered from the answers kept for the same request, not searched again.",
            registry=registry,
        )
        self.candidate_answers_capped = Counter(
            "placement_candidate_answers_capped",
            "Answers cut short (more candidates may "
            "exist), by the bound met: limit, max_allocation_candidates or time_budget.",
            ["by"],
            registry=registry,
        )
        self.candidate_requests_kept = Gauge(
            "placement_candidate_kept_requests",
            "Requests whose answers this worker keeps.",
            registry=registry,
            multiprocess_mode="liveall",
        )
        self.candidate_bytes_kept = Gauge(
            "placement_candidate_kept_bytes",
            "Estimated size of the answers this worker "
            "keeps (allocation_candidates_cache_mib bounds it).",
            registry=registry,
            multiprocess_mode="liveall",
        )
        self.refresh_seconds = Histogram(
            "placement_replica_refresh_duration_seconds",
            "Time to bring a worker's copy of the providers up to date before a search.",
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.refresh_lag = Histogram(
            "placement_replica_lag_providers",
            "Providers changed since the copy's last "
            "refresh, read again by a refresh: how far the copy was behind the database.",
            buckets=PROVIDER_BUCKETS,
            registry=registry,
        )
        self.replica_providers = Gauge(
            "placement_replica_providers",
            "Providers in the worker's copy.",
            registry=registry,
            multiprocess_mode="liveall",
        )
        self.replica_trees = Gauge(
            "placement_replica_trees",
            "Provider trees in the worker's copy.",
            registry=registry,
            multiprocess_mode="liveall",
        )
        self.claims = Counter(
            "placement_claims",
            "Group-resource and device claims, by kind and outcome: "
            "granted (allocations written) or refused.",
            ["kind", "outcome"],
            registry=registry,
        )
        self.node_searches_cut = Counter(
            "placement_node_searches_cut",
            "Translator and device searches (for candidates "
            "or a claim) that ran out of their time budget (budget_ms) and answered the best "
            "found so far, by kind.",
            ["kind"],
            registry=registry,
        )
        self.claim_retries = Counter(
            "placement_claim_retries",
            "Claims that lost a race to a concurrent writer and chose again.",
            ["kind"],
            registry=registry,
        )
        self.pool_connections = Gauge(
            "placement_db_pool_connections",
            "Database connections of the workers' pools, "
            "by state: in_use or idle (sampled at the end of each request and scrape).",
            ["state"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.pool_size = Gauge(
            "placement_db_pool_size",
            "Connections the workers' pools keep open at most "
            "(beyond them, overflow connections are opened and closed as needed).",
            registry=registry,
            multiprocess_mode="livesum",
        )

    # Requests (``request_log``).

    def request_finished(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.request_seconds.labels(route, method).observe(seconds)
        self._sample_pool()

    # The features' recorders.

    def replica_refreshed(
        self, seconds: float, providers_read: int, providers: int, trees: int
    ) -> None:
        self.refresh_seconds.observe(seconds)
        self.refresh_lag.observe(providers_read)
        self.replica_providers.set(providers)
        self.replica_trees.set(trees)

    def candidates_searched(self, report: SearchReport) -> None:
        self.candidate_searches.labels("reused" if report.body_reused else "searched").inc()
        if not report.body_reused:
            self.candidate_trees.observe(report.trees_looked_at)
        if report.trees_reused:
            self.candidate_trees_reused.inc(report.trees_reused)
        if report.capped_by is not None:
            self.candidate_answers_capped.labels(report.capped_by).inc()
        self.candidate_requests_kept.set(report.requests_kept)
        self.candidate_bytes_kept.set(report.bytes_kept)

    def claim_retried(self, kind: str) -> None:
        self.claim_retries.labels(kind).inc()

    def claim_ended(self, kind: str, granted: bool) -> None:
        self.claims.labels(kind, "granted" if granted else "refused").inc()

    def search_cut(self, kind: str) -> None:
        self.node_searches_cut.labels(kind).inc()

    # /metrics.

    def exposition(self) -> tuple[bytes, str]:
        """The text of every metric, and its media type: this process's, or with
        ``PROMETHEUS_MULTIPROC_DIR`` every worker's."""
        self._sample_pool()
        if self._directory is None:
            return generate_latest(self._registry), CONTENT_TYPE_LATEST
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self._directory)
        return generate_latest(registry), CONTENT_TYPE_LATEST

    def _sample_pool(self) -> None:
        """The pool's state now. Sampled rather than followed through the pool's events:
        a test's engine serves many applications, whose listeners would pile up on it."""
        pool = self._engine.pool
        for state, read in (("in_use", "checkedout"), ("idle", "checkedin")):
            count = getattr(pool, read, None)
            if count is not None:
                self.pool_connections.labels(state).set(count())
        size = getattr(pool, "size", None)
        if size is not None:
            self.pool_size.set(size())


def _require_value_files_if(multiprocess: bool) -> None:
    """Refuse to count in memory when the values must go to files (prometheus-client was
    imported before ``PROMETHEUS_MULTIPROC_DIR`` was set): each worker would then answer
    its own counts only, silently."""
    in_memory = values.ValueClass is values.MutexValue
    if multiprocess and in_memory:
        raise RuntimeError(
            f"{MULTIPROCESS_DIRECTORY} was set after prometheus_client was imported; set it "
            "before the process starts (placement serve does)"
        )
