"""What the service tells its operators: Prometheus metrics and the request log.

* ``metrics``: the application's ``Metrics`` (built by ``Services.build``), which the
  features are handed as their recorders and /metrics renders; every gunicorn worker's
  values when ``PROMETHEUS_MULTIPROC_DIR`` is set.
* ``request_log``: each request's ids and one structured line per request (text or
  JSON), and ``configure_logging`` for the process entry points.
* ``gunicorn_hooks``: gunicorn's configuration for ``placement.wsgi`` (``-c``): the
  server hooks of ``placement.worker_hooks`` and ``preload_app``.

It sits beside ``services``: it may import the features (their report types), and
only ``app``, ``services`` and the entry points import it.
"""

# prometheus-client's variable: the folder where each process writes its values.
MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"
