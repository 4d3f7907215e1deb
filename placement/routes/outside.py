"""What is answered outside the API: the probes, the documents about the API, the metrics."""

from placement.handlers import health, metrics, openapi
from placement.routes.route import Route

# Probes (``handlers.health``): answered outside the API, without a token, a microversion or a
# transaction of their own (GET, and HEAD as Flask adds it).
PROBES: dict[str, Route] = {
    "/healthcheck": Route(health.live, answers={200: "Alive."}),
    "/healthcheck/ready": Route(
        health.ready,
        answers={200: "Ready.", 503: "The database cannot be reached (Retry-After)."},
    ),
}
# Documents about the API, served as the probes are.
DOCUMENTS: dict[str, Route] = {
    "/openapi.json": Route(openapi.document, answers={200: "This document."})
}
# Everything answered outside the API (``app._before_request`` lets it through).
OUTSIDE_THE_API = {**PROBES, **DOCUMENTS}


# Prometheus metrics (``handlers.metrics``): outside the API like the probes, but for a token
# that policy allows, unless ``[metrics] unauthenticated`` (``app``).
METRICS_PATH = "/metrics"
METRICS = Route(metrics.show, rule="placement:metrics:show")
