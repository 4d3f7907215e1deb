"""Probes for load balancers and Kubernetes: no token, no microversion, not in the API.

``GET /healthcheck`` (liveness): the process answers. It touches no database and
waits for no other request's turn, so a long search never makes a healthy
worker look dead. ``GET /healthcheck/ready`` (readiness): this process can serve
now: the database answers and the copy of the providers is brought up to date
from it (``Services.check_ready``); 503 in the API's error format, with
``Retry-After``, when it cannot.
"""

import flask


def live() -> flask.Response:
    return flask.jsonify(status="alive")


def ready() -> flask.Response:
    facts = flask.current_app.extensions["placement"].check_ready()
    return flask.jsonify(status="ready", **facts)
