"""What the service tells its operators: Prometheus metrics and the request log.

* ``metrics``: the application's ``Metrics`` (built by ``Services.build``), which the
  features are handed as their recorders and /metrics renders; every gunicorn worker's
  values when ``PROMETHEUS_MULTIPROC_DIR`` is set.
* ``request_log``: each request's ids and one structured line per request (text or
  JSON), and ``configure_logging`` for the process entry points.
* ``gunicorn_hooks``: the gunicorn hook that drops a dead worker's live gauges.

It sits beside ``services``: it may import the features (their report types), and
only ``app``, ``services`` and the entry points import it.
"""

# prometheus-client's variable: the folder where each process writes its values.
MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"
