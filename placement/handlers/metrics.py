"""GET /metrics: the service's Prometheus metrics (``placement.observability.metrics``), in
Prometheus' text format: this process's, or every worker's under ``placement serve``.

Outside the API like the probes (no microversion, no transaction); who may read it is
checked before the view (``placement.app``).
"""

import flask


def show() -> flask.Response:
    body, media_type = flask.current_app.extensions["placement"].metrics.exposition()
    return flask.Response(body, content_type=media_type)
