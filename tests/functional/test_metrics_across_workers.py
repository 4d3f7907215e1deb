"""/metrics counts every worker's requests: gunicorn, 2 workers, both databases.

Each worker is a process with its own counters. With ``PROMETHEUS_MULTIPROC_DIR`` set,
each writes its values to that folder and /metrics, on whichever worker, adds them all
up. ``placement serve`` sets it (a folder of its own) and installs the gunicorn hook
that drops a dead worker's gauges; under gunicorn itself the environment and
``-c python:placement.observability.gunicorn_hooks`` do. Which worker answered each
request is read from the JSON request lines the workers log (one per request: serve
turns gunicorn's access log off); a worker killed is replaced, its counts stay and
its gauges go.
"""

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.functional.gunicorn import running_gunicorn, running_placement_serve

WORKERS = 2
BATCH = 16
READY = "/healthcheck/ready"
JSON_LOG = {"PLACEMENT_LOG_LEVEL": "INFO", "PLACEMENT_LOG_FORMAT": "json"}


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def under_gunicorn(request, empty_database_url, tmp_path):
    """The service under gunicorn with shared metrics; yields its base URL and its log."""
    metrics_folder = tmp_path / "metrics"
    metrics_folder.mkdir()
    environment = {"PROMETHEUS_MULTIPROC_DIR": str(metrics_folder), **JSON_LOG}
    hooks = ("-c", "python:placement.observability.gunicorn_hooks")
    with running_gunicorn(
        empty_database_url(request.param), tmp_path, WORKERS, hooks, environment
    ) as base:
        yield base, tmp_path / "gunicorn.log"


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def under_placement_serve(request, empty_database_url, tmp_path):
    """``placement serve`` with nothing set for the metrics; its base URL and its log."""
    with running_placement_serve(
        empty_database_url(request.param), tmp_path, WORKERS, JSON_LOG
    ) as base:
        yield base, tmp_path / "serve.log"


def _request_lines(log_path) -> list[dict]:
    lines = [line for line in log_path.read_text().splitlines() if line.startswith("{")]
    return [entry for entry in map(json.loads, lines) if entry["logger"] == "placement.requests"]


def _ready_pids(log_path, expected: int) -> list[int]:
    """The pid of the worker that answered each readiness request, once all are logged."""
    pids: list[int] = []
    for _ in range(50):  # written by the workers, maybe a little after their answers
        pids = [e["pid"] for e in _request_lines(log_path) if e["path"] == READY]
        if len(pids) >= expected:
            break
        time.sleep(0.1)
    return pids


def _ask_every_worker(base: str, log_path) -> list[int]:
    """Readiness requests, in concurrent batches, until every worker has answered some;
    the pid of the worker that answered each. A worker still starting takes no request
    (on a busy machine, for seconds), so the batches go on for up to a minute."""
    sent = 0
    deadline = time.monotonic() + 60
    with ThreadPoolExecutor(8) as pool:
        while time.monotonic() < deadline:
            statuses = list(
                pool.map(lambda _: requests.get(base + READY, timeout=30).status_code, range(BATCH))
            )
            assert statuses == [200] * BATCH
            sent += BATCH
            if len(set(_ready_pids(log_path, sent))) == WORKERS:
                break
            time.sleep(0.2)
    pids = _ready_pids(log_path, sent)
    assert len(pids) == sent  # one line per request
    assert len(set(pids)) == WORKERS, "one worker answered every request"
    return pids


def _scrape(base: str) -> dict[tuple[str, frozenset], float]:
    response = requests.get(base + "/metrics", headers={"X-Auth-Token": "admin"}, timeout=30)
    assert response.status_code == 200, response.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _ready_count(samples) -> float:
    labels = frozenset({("route", READY), ("method", "GET"), ("status", "200")})
    return samples.get(("placement_http_requests_total", labels), 0.0)


def _copy_pids(samples) -> set[str]:
    """The workers whose copy of the providers a gauge shows (``liveall``: one per pid)."""
    return {
        dict(labels)["pid"] for name, labels in samples if name == "placement_replica_providers"
    }


def _check_every_worker_counted(base: str, pids: list[int]) -> None:
    for _ in range(4):  # whichever worker answers the scrape
        samples = _scrape(base)
        assert _ready_count(samples) == len(pids)
        refreshes = samples[("placement_replica_refresh_duration_seconds_count", frozenset())]
        assert refreshes == len(pids)
        assert _copy_pids(samples) == {str(pid) for pid in set(pids)}


def _check_a_dead_worker_is_dropped(base: str, pids: list[int]) -> None:
    """A worker killed: gunicorn starts another; the dead one's counts stay, its gauges go."""
    dead = pids[0]
    os.kill(dead, signal.SIGKILL)
    for _ in range(100):
        samples = _scrape(base)
        if str(dead) not in _copy_pids(samples):
            break
        time.sleep(0.1)
    assert str(dead) not in _copy_pids(samples)
    assert _ready_count(samples) == len(pids)


@pytest.mark.slow
def test_metrics_add_up_every_worker_under_gunicorn(under_gunicorn):
    base, log_path = under_gunicorn
    pids = _ask_every_worker(base, log_path)
    _check_every_worker_counted(base, pids)
    _check_a_dead_worker_is_dropped(base, pids)


@pytest.mark.slow
def test_placement_serve_shares_the_metrics_of_its_workers(under_placement_serve):
    base, log_path = under_placement_serve
    pids = _ask_every_worker(base, log_path)
    _check_every_worker_counted(base, pids)
    _check_a_dead_worker_is_dropped(base, pids)
    # No access log beside the request lines: each request is logged once.
    assert f"GET {READY} HTTP" not in log_path.read_text()
