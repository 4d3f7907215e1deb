"""gunicorn server hooks for the metrics of several workers.

``placement serve`` installs them; under your own gunicorn (with
``PROMETHEUS_MULTIPROC_DIR`` set to an empty folder), pass
``-c python:placement.observability.gunicorn_hooks``.
"""

import os

from placement.observability import MULTIPROCESS_DIRECTORY


def child_exit(server, worker) -> None:
    """A worker exited: its gauges of live workers (copy size, pool connections) go; its
    counts stay in the totals."""
    if os.environ.get(MULTIPROCESS_DIRECTORY):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
