"""/group_resources/network and /group_resources/gang_*: the network as levels, and
gangs of device requests in one network domain, over HTTP.

Thin views over ``placement.gangs.service``; a gang's member is a request as the
device routes take it (resources and annotations, or a whole Pod).
"""

import flask

from placement import errors
from placement.claiming import NewConsumer
from placement.context import RequestContext
from placement.devices.request import parse_device_request, parse_pod
from placement.gangs import bodies, service
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
    data = load_body(ctx, schemas.GangQuery())
    answer = _search(ctx).find(
        ctx.conn, _gang_request(ctx, data), ctx.config.group_naming(), data.get("scorer", "pack")
    )
    return json_response(
        ctx, bodies.candidates_body(answer, data.get("limit"), data.get("device_allocated", False))
    )


def explain_candidates(ctx: RequestContext) -> flask.Response:
    """The candidates request's body, explained (``limit``, ``scorer`` and
    ``device_allocated`` are taken and change nothing)."""
    data = load_body(ctx, schemas.GangQuery())
    answer = _search(ctx).find(ctx.conn, _gang_request(ctx, data), ctx.config.group_naming())
    return json_response(ctx, bodies.explain_body(answer))


def claim(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.GangClaim())
    request = _gang_request(ctx, data)
    consumers = [
        NewConsumer(uuid, data["project_id"], data["user_id"], data.get("consumer_type"))
        for uuid in data["consumer_uuids"]
    ]
    gang = _search(ctx).claim(
        ctx.conn,
        request,
        ctx.config.group_naming(),
        data["gang_uuid"],
        consumers,
        data.get("scorer", "pack"),
    )
    body = {
        "gang_uuid": data["gang_uuid"],
        **bodies.gang_body(
            request, gang, data.get("device_allocated", False), data["consumer_uuids"]
        ),
    }
    return json_response(ctx, body)


def show_gang(ctx: RequestContext, gang_uuid: str) -> flask.Response:
    return json_response(ctx, _search(ctx).show(ctx.conn, gang_uuid))


def release_gang(ctx: RequestContext, gang_uuid: str) -> flask.Response:
    _search(ctx).release(ctx.conn, gang_uuid)
    return no_content()


def _search(ctx: RequestContext) -> service.GangSearch:
    return service.GangSearch(ctx.services.devices, ctx.services.metrics)


def _gang_request(ctx: RequestContext, data: dict) -> service.GangRequest:
    naming = ctx.config.group_naming()
    member = data["member"]
    if "pod" in member:
        parsed = parse_pod(member["pod"], naming)
    else:
        parsed = parse_device_request(member["resources"], member.get("annotations", {}), naming)
    return service.GangRequest(
        member=parsed,
        members=data["members"],
        required=data["required"],
        preferred=data.get("preferred"),
        share_nodes=data.get("share_nodes", False),
    )
