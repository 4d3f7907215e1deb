"""WSGI entry point: ``gunicorn placement.wsgi:application``.

The configuration comes from PLACEMENT_CONFIG_FILE (or /etc/placement/placement.conf)
and PLACEMENT_* environment variables; the process logs as ``[logging]`` says. For the
metrics of several workers, set ``PROMETHEUS_MULTIPROC_DIR`` (an empty folder); for those
and for one copy of the providers per host (``[placement] preload_providers``: this
module is then imported in gunicorn's arbiter, before it forks the workers), pass
``-c python:placement.observability.gunicorn_hooks`` (see the README).
"""

from placement.app import create_app, freeze_startup_objects
from placement.config import load_config
from placement.observability.request_log import configure_logging

config = load_config()
configure_logging(config)
application = create_app(config)
freeze_startup_objects()
