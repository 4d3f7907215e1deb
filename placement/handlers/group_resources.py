"""/group_resources: the group-resource key translator over HTTP.

Thin views over ``placement.group_resources.service``; bodies are in the
client's keys (``gpu/0/cards``), answers map them back to the node's keys. A
candidates request may also be explained (``/candidates/explain``).
"""

import flask

from placement.context import RequestContext
from placement.data import group_nodes
from placement.group_resources import bodies, explain, service
from placement.handlers.util import answer_with_cut, claim_options, search_budget
from placement.http import json_response, load_body, no_content
from placement.nodes.group_options import GroupOptions
from placement.schemas import group_resources as schemas


def search_options(ctx: RequestContext, data: dict) -> GroupOptions:
    """The readings a request body chooses (``options``), the configuration's for the rest."""
    return ctx.config.group_options().overridden(data.get("options"))


def list_nodes(ctx: RequestContext) -> flask.Response:
    nodes = [{"name": name, "uuid": uuid} for name, uuid in group_nodes.node_names(ctx.conn)]
    return json_response(ctx, {"nodes": nodes})


def show_node(ctx: RequestContext, name: str) -> flask.Response:
    return json_response(ctx, service.node_view(ctx.conn, name))


def sync_node(ctx: RequestContext, name: str) -> flask.Response:
    data = load_body(ctx, schemas.SyncNode())
    result = service.sync_node(
        ctx.conn, name, data["resources"], ctx.config.group_naming(), data.get("uuid")
    )
    body = service.node_view(ctx.conn, name)
    body["changed"] = result.changed
    return json_response(ctx, body, status=201 if result.created else 200)


def delete_node(ctx: RequestContext, name: str) -> flask.Response:
    service.delete_node(ctx.conn, name)
    return no_content()


def translate(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.Translate())
    translations = service.translate(
        ctx.conn,
        data["resources"],
        ctx.config.group_naming(),
        data.get("nodes"),
        search_options(ctx, data),
    )
    return json_response(ctx, bodies.translations_body(translations))


def find_candidates(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.FindCandidates())
    budget = search_budget(ctx, data)
    answer = ctx.services.group_resources.find_candidates(
        ctx.conn,
        data["resources"],
        ctx.config.group_naming(),
        scorer=data.get("scorer", "pack"),
        limit=data.get("limit"),
        node_names=data.get("nodes"),
        options=search_options(ctx, data),
        budget=budget,
    )
    return answer_with_cut(ctx, bodies.candidates_body(answer, data["resources"]), budget)


def explain_candidates(ctx: RequestContext) -> flask.Response:
    """The candidates request's body, explained (``limit``, ``scorer`` and ``budget_ms``
    are taken and change nothing: every node is counted)."""
    data = load_body(ctx, schemas.FindCandidates())
    explanation = ctx.services.group_resources.explain(
        ctx.conn,
        data["resources"],
        ctx.config.group_naming(),
        data.get("nodes"),
        search_options(ctx, data),
    )
    return json_response(ctx, explain.body(explanation))


def claim(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.Claim())
    budget = search_budget(ctx, data)
    placement = ctx.services.group_resources.claim(
        ctx.conn,
        data["resources"],
        ctx.config.group_naming(),
        **claim_options(data),
        options=search_options(ctx, data),
        budget=budget,
    )
    body = {
        "consumer_uuid": data["consumer_uuid"],
        **bodies.placement_body(placement, data["resources"]),
    }
    return answer_with_cut(ctx, body, budget)
