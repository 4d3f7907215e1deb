"""<prefix>/filter, /prioritize (/sort), /bind, /preempt: kube-scheduler's extender verbs.

Thin views over ``placement.k8s.extender``; the messages are the extender protocol's
(``placement.k8s.protocol``). Each error answers the protocol's ``Error`` field
(``error_response``).
"""

import flask

from placement import errors
from placement.context import RequestContext
from placement.http import json_response, read_json
from placement.k8s import protocol

# Set on ``flask.g`` once a view runs: its errors are the request's content's.
ANSWERING = "k8s_scheduler_answering"


def filter_nodes(ctx: RequestContext) -> flask.Response:
    args = protocol.read_extender_args(_body(ctx))
    passing, failed, unresolvable = ctx.services.k8s.filter(
        ctx.conn, args, ctx.config.group_naming()
    )
    return json_response(ctx, protocol.filter_result(args, passing, failed, unresolvable))


def prioritize_nodes(ctx: RequestContext) -> flask.Response:
    args = protocol.read_extender_args(_body(ctx))
    scores = ctx.services.k8s.prioritize(ctx.conn, args, ctx.config.group_naming())
    return json_response(ctx, protocol.host_priority_list(scores))


def bind_pod(ctx: RequestContext) -> flask.Response:
    args = protocol.read_binding_args(_body(ctx))
    ctx.services.k8s.bind(ctx.conn, args, ctx.config.group_naming())
    return json_response(ctx, protocol.error_result(""))


def preempt(ctx: RequestContext) -> flask.Response:
    args = protocol.read_preemption_args(_body(ctx))
    nodes = ctx.services.k8s.preempt(ctx.conn, args, ctx.config.group_naming())
    return json_response(ctx, protocol.preemption_result(args, nodes))


def error_response(exc: errors.PlacementError) -> flask.Response:
    """An error as the extender protocol says it: ``{"Error": ...}``. kube-scheduler
    reads the body of a 200 only, so an error of what was sent (the view's 4xx) is
    answered 200 by the verbs whose result has an ``Error`` field (filter, bind,
    preempt), and the scheduler reports its words; prioritize's list has none (its
    errors keep their status, and the scheduler ignores a failed prioritize). Errors
    before the view (token, policy, method, body size) and the service's own (5xx)
    keep their status."""
    status = int(exc.status)
    endpoint = flask.current_app.view_functions.get(flask.request.endpoint or "")
    # (Each route's endpoint carries its view's name: ``routes._transactional``.)
    has_error_field = getattr(endpoint, "__name__", "") in WITH_ERROR_FIELD
    if flask.g.get(ANSWERING) and status < 500 and has_error_field:
        status = 200
    response = flask.jsonify(protocol.error_result(exc.detail))
    response.status_code = status
    for key, value in exc.headers.items():
        response.headers[key] = value
    return response


def _body(ctx: RequestContext):
    flask.g.setdefault(ANSWERING, True)
    return read_json(ctx)


# The verbs whose result has an ``Error`` field (not prioritize's list).
WITH_ERROR_FIELD = frozenset(view.__name__ for view in (filter_nodes, bind_pod, preempt))
