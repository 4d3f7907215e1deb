"""/group_resources/device_*: device topologies, device candidates and claims over HTTP.

Thin views over ``placement.devices`` (topology import: ``importing``; the rest through
its door, ``DeviceSearch``); requests are Kubernetes-style resources with Koordinator
annotations (or a whole Pod), answers are per device.
"""

import flask

from placement import errors
from placement.context import RequestContext
from placement.data import device_topologies
from placement.data.consumers import INCOMPLETE_CONSUMER_ID
from placement.devices import bodies, checkpoints, explain, importing
from placement.devices.request import DeviceRequest, parse_device_request, parse_pod
from placement.handlers.util import answer_with_cut, claim_options, search_budget
from placement.http import json_response, load_body, no_content
from placement.k8s import reconcile
from placement.k8s.koordinator_devices import read_device_object
from placement.schemas import devices as schemas


def list_nodes(ctx: RequestContext) -> flask.Response:
    nodes = [
        {"name": name, "uuid": uuid} for name, uuid in device_topologies.device_node_names(ctx.conn)
    ]
    return json_response(ctx, {"nodes": nodes})


def show_node(ctx: RequestContext, name: str) -> flask.Response:
    return json_response(ctx, _node_view(ctx, name))


def import_node(ctx: RequestContext, name: str) -> flask.Response:
    data = load_body(ctx, schemas.ImportNode())
    topology = importing.topology_from_body(data)
    result = importing.import_node(
        ctx.conn, name, topology, ctx.config.group_naming(), data.get("uuid")
    )
    body = _node_view(ctx, name)
    body["changed"] = result.changed
    return json_response(ctx, body, status=201 if result.created else 200)


def delete_node(ctx: RequestContext, name: str) -> flask.Response:
    importing.delete_node(ctx.conn, name)
    return no_content()


def hold_checkpoints(ctx: RequestContext, name: str) -> flask.Response:
    data = load_body(ctx, schemas.ImportCheckpoints())
    result = ctx.services.devices.hold_checkpoints(
        ctx.conn,
        ctx.config.group_naming(),
        name,
        checkpoints.checkpoints_from_body(data["checkpoints"]),
        project_id=data.get("project_id", INCOMPLETE_CONSUMER_ID),
        user_id=data.get("user_id", INCOMPLETE_CONSUMER_ID),
    )
    return json_response(ctx, bodies.checkpoints_body(result))


def import_koordinator_device(ctx: RequestContext, name: str) -> flask.Response:
    """Koordinator's ``Device`` object of the node, as its reporter publishes it."""
    device = read_device_object(load_body(ctx, schemas.KoordinatorDevice()))
    if device.node != name:
        raise errors.BadRequest(f"The Device object is node {device.node}'s, not {name}'s.")
    result = reconcile.apply_device_object(
        ctx.conn, ctx.services.devices, ctx.config.group_naming(), device
    )
    body = _node_view(ctx, name)
    body["changed"] = result["changed"]
    return json_response(ctx, body)


def find_candidates(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.DeviceQuery())
    request = _device_request(ctx, data)
    budget = search_budget(ctx, data)
    answer = ctx.services.devices.find_candidates(
        ctx.conn,
        request,
        ctx.config.group_naming(),
        scorer=data.get("scorer", "pack"),
        limit=data.get("limit"),
        node_names=data.get("nodes"),
        budget=budget,
    )
    body = bodies.candidates_body(answer, request, data.get("device_allocated", False))
    return answer_with_cut(ctx, body, budget)


def explain_candidates(ctx: RequestContext) -> flask.Response:
    """The candidates request's body, explained (``limit``, ``scorer``, ``budget_ms`` and
    ``device_allocated`` are taken and change nothing: every node is counted)."""
    data = load_body(ctx, schemas.DeviceQuery())
    explanation = ctx.services.devices.explain(
        ctx.conn, _device_request(ctx, data), ctx.config.group_naming(), data.get("nodes")
    )
    return json_response(ctx, explain.body(explanation))


def claim(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.DeviceClaim())
    request = _device_request(ctx, data)
    budget = search_budget(ctx, data)
    candidate = ctx.services.devices.claim(
        ctx.conn, request, ctx.config.group_naming(), **claim_options(data), budget=budget
    )
    body = {
        "consumer_uuid": data["consumer_uuid"],
        **bodies.candidate_body(candidate, request, data.get("device_allocated", False)),
    }
    return answer_with_cut(ctx, body, budget)


def _device_request(ctx: RequestContext, data: dict) -> DeviceRequest:
    naming = ctx.config.group_naming()
    if "pod" in data:
        return parse_pod(data["pod"], naming)
    return parse_device_request(data["resources"], data.get("annotations", {}), naming)


def _node_view(ctx: RequestContext, name: str) -> dict:
    return ctx.services.devices.node_view(ctx.conn, ctx.config.group_naming(), name)
