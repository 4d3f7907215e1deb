"""/group_resources/network and /group_resources/gang_*: the network as levels, and
gangs of device requests in one network domain, over HTTP.

Thin views over ``placement.gangs.service``, and for the searches over
``placement.gangs.answers`` (the CLI's door too); a gang's member is a request as the
device routes take it (resources and annotations, or a whole Pod).
"""

import flask

from placement import errors
from placement.context import RequestContext
from placement.gangs import answers, service
from placement.handlers.util import answer_with_cut, search_budget
from placement.http import json_response, load_body, no_content
from placement.schemas import gangs as schemas


def show_network(ctx: RequestContext) -> flask.Response:
    return json_response(ctx, service.read_network(ctx.conn).body())


def set_network(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.Network())
    network = service.set_network(ctx.conn, data["levels"], data["nodes"])
    return json_response(ctx, network.body())


def show_network_node(ctx: RequestContext, name: str) -> flask.Response:
    network = service.read_network(ctx.conn)
    if name not in network.domains:
        raise errors.NotFound(f"No node named {name} in the network.")
    return json_response(ctx, {"name": name, "domains": network.node_body(name)})


def set_network_node(ctx: RequestContext, name: str) -> flask.Response:
    data = load_body(ctx, schemas.NetworkNode())
    created = service.set_node(ctx.conn, name, data["domains"])
    network = service.read_network(ctx.conn)
    return json_response(
        ctx, {"name": name, "domains": network.node_body(name)}, status=201 if created else 200
    )


def delete_network_node(ctx: RequestContext, name: str) -> flask.Response:
    service.delete_node(ctx.conn, name)
    return no_content()


def find_candidates(ctx: RequestContext) -> flask.Response:
    return _answer(ctx, schemas.GangQuery(), answers.candidates)


def explain_candidates(ctx: RequestContext) -> flask.Response:
    """The candidates request's body, explained (``limit``, ``scorer`` and
    ``device_allocated`` are taken and change nothing; ``budget_ms`` bounds the search
    explained, as it bounds the candidates')."""
    return _answer(ctx, schemas.GangQuery(), answers.explain)


def claim(ctx: RequestContext) -> flask.Response:
    return _answer(ctx, schemas.GangClaim(), answers.claim)


def _answer(ctx: RequestContext, schema, answer) -> flask.Response:
    """The body validated by ``schema``, answered by ``answer`` within its budget."""
    data = load_body(ctx, schema)
    budget = search_budget(ctx, data)
    body = answer(ctx.services.gangs, ctx.conn, data, ctx.config.group_naming(), budget)
    return answer_with_cut(ctx, body, budget)


def show_gang(ctx: RequestContext, gang_uuid: str) -> flask.Response:
    return json_response(ctx, ctx.services.gangs.show(ctx.conn, gang_uuid))


def release_gang(ctx: RequestContext, gang_uuid: str) -> flask.Response:
    ctx.services.gangs.release(ctx.conn, gang_uuid)
    return no_content()
