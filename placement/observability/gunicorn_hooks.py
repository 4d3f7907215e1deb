"""gunicorn's configuration for ``gunicorn placement.wsgi:application``: pass
``-c python:placement.observability.gunicorn_hooks``.

It installs the server hooks ``placement serve`` installs (``placement.worker_hooks``:
the copy of the providers loaded once per host, a dead worker's gauges dropped from
the metrics of several workers, with ``PROMETHEUS_MULTIPROC_DIR`` set to an empty
folder) and sets ``preload_app`` from ``[placement] preload_providers``: gunicorn reads
it before it loads the application, so the configuration is read here too, as
``placement.wsgi`` reads it.
"""

from placement.config import load_config
from placement.worker_hooks import child_exit, pre_fork

__all__ = ["child_exit", "pre_fork", "preload_app"]

preload_app = load_config().preload_providers
