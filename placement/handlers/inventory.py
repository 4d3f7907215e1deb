"""/resource_providers/{uuid}/inventories[/{resource_class}]."""

import datetime

import flask
from microversion_parse import Version

from placement import errors
from placement.context import RequestContext
from placement.data import inventories, names
from placement.data.providers import Provider, check_generation
from placement.handlers.util import inventory_from_fields, lookup_provider, provider_url
from placement.http import (
    absolute_url,
    checked_first,
    json_response,
    latest,
    load_body,
    no_content,
    requires_json,
)
from placement.schemas import inventory as schemas


def _inventory_url(provider: Provider, class_name: str) -> str:
    return f"{provider_url(provider.uuid)}/inventories/{class_name}"


def build_inventory(
    ctx: RequestContext, provider: Provider, class_name: str, data: dict, action: str = "update"
):
    """An Inventory from validated fields, defaults filled, its capacity checked.

    As upstream: the capacity (``placement.capacity``, upstream's
    ``int((total - reserved) * allocation_ratio)``) must be positive before 1.26 and
    may be zero from 1.26 on (everything reserved); ``min_unit`` above ``max_unit``
    is stored as given. The refusal says ``action`` ("create" or "update") as
    upstream's does.
    """
    inventory = inventory_from_fields(class_name, data)
    if inventory.capacity < 0 or (inventory.capacity == 0 and not ctx.at_least(1, 26)):
        relation, bound = ("", "negative") if ctx.at_least(1, 26) else (" or equal to", "zero")
        raise errors.BadRequest(
            f"Unable to {action} inventory for resource provider {provider.uuid}: "
            f"Invalid inventory for '{class_name}' on resource provider "
            f"'{provider.uuid}'. The reserved value is greater than{relation} total. "
            f"The capacity, (total - reserved) * allocation_ratio, must not be {bound}."
        )
    return inventory


def _inventories_body(generation: int, current: dict) -> dict:
    return {
        "inventories": {name: inv.fields() for name, inv in current.items()},
        "resource_provider_generation": generation,
    }


def _inventory_body(generation: int, inventory: inventories.Inventory) -> dict:
    return {"resource_provider_generation": generation, **inventory.fields()}


def _modified(current) -> datetime.datetime:
    return latest(inv.updated_at or inv.created_at for inv in current)


def list_inventories(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    current = inventories.get_inventories(ctx.conn, provider)
    return json_response(
        ctx,
        _inventories_body(provider.generation, current),
        last_modified=_modified(current.values()),
    )


@requires_json
def replace_inventories(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    data = load_body(ctx, schemas.ReplaceInventories())
    check_generation(provider, data["resource_provider_generation"])
    wanted = {
        name: build_inventory(ctx, provider, name, fields)
        for name, fields in data["inventories"].items()
    }
    try:
        generation = inventories.replace_inventories(
            ctx.conn, provider, wanted, data["resource_provider_generation"]
        )
    except names.UnknownResourceClass as exc:
        raise errors.BadRequest(
            f"Unknown resource class in inventory for resource provider {provider.uuid}: "
            f"{exc.no_such}"
        ) from exc
    current = inventories.get_inventories(ctx.conn, provider)
    return json_response(
        ctx, _inventories_body(generation, current), last_modified=_modified(current.values())
    )


@requires_json
def create_inventory(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    data = load_body(ctx, schemas.CreateInventory())
    inventory = build_inventory(ctx, provider, data["resource_class"], data, action="create")
    try:
        generation = inventories.add_inventory(ctx.conn, provider, inventory)
    except names.UnknownResourceClass as exc:
        raise errors.BadRequest(
            f"Unable to create inventory for resource provider {provider.uuid}: {exc.no_such}"
        ) from exc
    return json_response(
        ctx,
        _inventory_body(generation, inventory),
        status=201,
        headers={"Location": absolute_url(ctx, _inventory_url(provider, inventory.resource_class))},
    )


def _delete_all_needs_1_5(request: flask.Request, version: Version) -> None:
    if version < (1, 5):
        raise errors.MethodNotAllowed(
            "DELETE of all inventories needs microversion 1.5 or later.",
            headers={"Allow": "GET, POST, PUT"},
        )


@checked_first(_delete_all_needs_1_5)
def delete_inventories(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    inventories.replace_inventories(ctx.conn, provider, {}, provider.generation)
    return no_content()


def _require_inventory(ctx, provider, resource_class) -> inventories.Inventory:
    current = inventories.get_inventories(ctx.conn, provider)
    if resource_class not in current:
        raise errors.NotFound(f"No inventory of class {resource_class} for {provider.uuid}.")
    return current[resource_class]


def show_inventory(ctx: RequestContext, uuid: str, resource_class: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    inventory = _require_inventory(ctx, provider, resource_class)
    return json_response(
        ctx,
        _inventory_body(provider.generation, inventory),
        last_modified=_modified([inventory]),
    )


@requires_json
def update_inventory(ctx: RequestContext, uuid: str, resource_class: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    data = load_body(ctx, schemas.UpdateInventory())
    check_generation(provider, data["resource_provider_generation"])
    inventory = build_inventory(ctx, provider, resource_class, data)
    try:
        generation = inventories.update_inventory(
            ctx.conn, provider, inventory, data["resource_provider_generation"]
        )
    except names.UnknownResourceClass as exc:
        # Upstream answers a class in the URL that does not exist with 404.
        raise errors.NotFound(exc.no_such) from exc
    return json_response(ctx, _inventory_body(generation, inventory))


def delete_inventory(ctx: RequestContext, uuid: str, resource_class: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    try:
        inventories.delete_inventory(ctx.conn, provider, resource_class)
    except errors.Conflict as exc:
        # Upstream answers this one DELETE's conflicts, in use included, with
        # concurrent_update; clients (and its suite) match that code.
        raise errors.Conflict(
            f"Unable to delete inventory of class {resource_class}: {exc.detail}",
            code=errors.CONCURRENT_UPDATE,
        ) from exc
    return no_content()
