"""/group_resources: the group-resource key translator over HTTP.

Thin views: each parses its body (``request_tree.parse_request``), then calls the
translator's door (``GroupResourceSearch``) or its node writes (``sync``); bodies are
in the client's keys (``gpu/0/cards``), answers map them back to the node's keys. A
candidates request may also be explained (``/candidates/explain``).
"""

import flask

from placement.context import RequestContext
from placement.data import group_nodes
from placement.devices import importing as device_importing
from placement.group_resources import bodies, explain, sync
from placement.group_resources.request_tree import GroupRequest, parse_request
from placement.handlers.util import answer_with_cut, claim_options, search_budget
from placement.http import json_response, load_body, no_content
from placement.nodes.group_options import GroupOptions
from placement.nodes.kinds import NodeKind
from placement.schemas import group_resources as schemas


def search_options(ctx: RequestContext, data: dict) -> GroupOptions:
    """The readings a request body chooses (``options``), the configuration's for the rest."""
    return ctx.config.group_options().overridden(data.get("options"))


def _request(ctx: RequestContext, data: dict) -> GroupRequest:
    """The body's ``resources`` parsed (read after its ``options``: a body wrong in both
    is answered about its options, as before the views parsed)."""
    return parse_request(data["resources"], ctx.config.group_naming())


def list_nodes(ctx: RequestContext) -> flask.Response:
    nodes = [{"name": name, "uuid": uuid} for name, uuid in group_nodes.node_names(ctx.conn)]
    return json_response(ctx, {"nodes": nodes})


def show_node(ctx: RequestContext, name: str) -> flask.Response:
    return json_response(ctx, ctx.services.group_resources.show(ctx.conn, name))


def sync_node(ctx: RequestContext, name: str) -> flask.Response:
    data = load_body(ctx, schemas.SyncNode())
    result = sync.sync_node(
        ctx.conn, name, data["resources"], ctx.config.group_naming(), data.get("uuid")
    )
    body = ctx.services.group_resources.show(ctx.conn, name)
    body["changed"] = result.changed
    return json_response(ctx, body, status=201 if result.created else 200)


def delete_node(ctx: RequestContext, name: str) -> flask.Response:
    """A device node is the device feature's to delete, with its topology (as through
    ``/group_resources/device_nodes/{name}``): the translator's delete refuses it."""
    if sync.node_kind(ctx.conn, name) is NodeKind.DEVICE:
        device_importing.delete_node(ctx.conn, name)
    else:
        sync.delete_node(ctx.conn, name)
    return no_content()


def translate(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.Translate())
    options = search_options(ctx, data)
    translations = ctx.services.group_resources.translate(
        ctx.conn, _request(ctx, data), data.get("nodes"), options
    )
    return json_response(ctx, bodies.translations_body(translations))


def find_candidates(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.FindCandidates())
    budget = search_budget(ctx, data)
    options = search_options(ctx, data)
    answer = ctx.services.group_resources.find(
        ctx.conn,
        _request(ctx, data),
        scorer=data.get("scorer", "pack"),
        limit=data.get("limit"),
        node_names=data.get("nodes"),
        options=options,
        budget=budget,
    )
    return answer_with_cut(ctx, bodies.candidates_body(answer, data["resources"]), budget)


def explain_candidates(ctx: RequestContext) -> flask.Response:
    """The candidates request's body, explained (``limit``, ``scorer`` and ``budget_ms``
    are taken and change nothing: every node is counted)."""
    data = load_body(ctx, schemas.FindCandidates())
    options = search_options(ctx, data)
    explanation = ctx.services.group_resources.explain(
        ctx.conn, _request(ctx, data), data.get("nodes"), options
    )
    return json_response(ctx, explain.body(explanation))


def claim(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.Claim())
    budget = search_budget(ctx, data)
    options = search_options(ctx, data)
    placement = ctx.services.group_resources.claim(
        ctx.conn, _request(ctx, data), **claim_options(data), options=options, budget=budget
    )
    body = {
        "consumer_uuid": data["consumer_uuid"],
        **bodies.placement_body(placement, data["resources"]),
    }
    return answer_with_cut(ctx, body, budget)
