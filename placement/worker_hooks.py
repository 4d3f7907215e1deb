"""What gunicorn's arbiter does around its workers (its server hooks): one copy of the
providers per host when the application is preloaded, and a dead worker's gauges
dropped from the shared metrics.

With ``preload_app`` (``[placement] preload_providers``) the arbiter builds the
application once and forks every worker from itself: a worker holds what the arbiter
held at its fork without copying it, page by page until one of them writes the page.
So before each fork (``pre_fork``) the arbiter brings its copy of the providers up to
date (the first time it reads it whole), builds the device and translator nodes the
searches keep from it, and moves both out of the cyclic collector's sight (``gc.freeze``: a
collection would otherwise write to every object's header, and so to every page). A
worker forked later (one that died, ``max_requests``) then starts from a copy a log
read behind the database, not from nothing. Reading an object still writes its
reference count (Python 3.11 has no immortal objects), so the pages a worker's
searches touch become its own: ``benchmarks/run_memory`` measures what stays shared.

The arbiter never serves: its connections are closed before each fork, and a worker
drops the pool it inherited without closing it (as every forked child does:
``placement.db.engine``), so that no two processes ever talk on one connection.
"""

import os
import time

from placement.observability import MULTIPROCESS_DIRECTORY
from placement.services import Services


def pre_fork(server, worker) -> None:
    """Before each fork, in the arbiter: the preloaded application's copy brought up to
    date and frozen, its connections closed. A failure is logged and the worker started
    all the same: what its copy lacks, its first request reads."""
    services = preloaded_services(server)
    if services is None:
        return
    from placement.app import freeze_startup_objects

    started = time.perf_counter()
    try:
        held = services.prepare_to_fork()
    except Exception:  # (the arbiter must outlive a database that is down)
        server.log.exception("The copy of the providers could not be brought up to date")
    else:
        server.log.info(
            "Copy of %d providers (%d device nodes, %d translator nodes) up to date for a new "
            "worker in %.2f s; provider summaries and uuids written in %.1f MiB",
            held["providers"],
            held["device nodes"],
            held["translator nodes"],
            time.perf_counter() - started,
            held["text bytes"] / (1024 * 1024),
        )
    freeze_startup_objects()
    # The arbiter counts nothing (its refreshes are not recorded), but prometheus-client
    # gave it a file of gauges when the metrics were built: /metrics would read it as a
    # live worker's.
    _drop_gauges_of(os.getpid())


def child_exit(server, worker) -> None:
    """A worker exited: its gauges of live workers (copy size, pool connections) go; its
    counts stay in the totals."""
    _drop_gauges_of(worker.pid)


def preloaded_services(server) -> Services | None:
    """The services of the application the arbiter loaded (``preload_app``); None when
    each worker loads its own (gunicorn loads it after the fork then)."""
    application = getattr(server.app, "callable", None)
    services = getattr(application, "extensions", {}).get("placement")
    return services if isinstance(services, Services) else None


def _drop_gauges_of(pid: int) -> None:
    if os.environ.get(MULTIPROCESS_DIRECTORY):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
