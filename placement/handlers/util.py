"""What several views share: finding the provider a URL names, reading a consumer's write
and an inventory from a body, and the options and budget of the node searches' bodies.

Views import this module, never one another.
"""

import flask

from placement import errors, query
from placement.context import RequestContext
from placement.data import allocations as allocation_data
from placement.data import inventories, providers
from placement.http import json_response
from placement.nodes.search_budget import CUT_HEADER, SearchBudget
from placement.schemas import inventory as inventory_schemas


def provider_url(uuid: str) -> str:
    return f"/resource_providers/{uuid}"


def lookup_provider(ctx: RequestContext, uuid: str, action: str = "") -> providers.Provider:
    """The provider named in the URL, or 404 (also for a malformed uuid); the 404 names
    the ``action`` ("delete") as upstream's does."""
    normalized = query.normalize_uuid(uuid)
    provider = providers.get_provider(ctx.conn, normalized) if normalized else None
    if provider is None:
        for_action = f" for {action}" if action else ""
        raise errors.NotFound(
            f"No resource provider with uuid {uuid} found{for_action}.",
            code=errors.RESOURCE_PROVIDER_NOT_FOUND,
        )
    return provider


def _allocation_map(data: dict) -> allocation_data.AllocationMap:
    """The body's allocations as provider uuid -> class -> amount."""
    if isinstance(data["allocations"], dict):
        return {uuid: dict(entry["resources"]) for uuid, entry in data["allocations"].items()}
    result: allocation_data.AllocationMap = {}
    for entry in data["allocations"]:
        provider_uuid = entry["resource_provider"]["uuid"]
        if provider_uuid in result:
            raise errors.BadRequest(
                f"Resource provider {provider_uuid} appears more than once in allocations."
            )
        result[provider_uuid] = dict(entry["resources"])
    return result


def consumer_write(ctx: RequestContext, consumer_uuid: str, data: dict):
    """A ConsumerWrite from a validated body, following the request's microversion."""
    return allocation_data.ConsumerWrite(
        consumer_uuid=consumer_uuid,
        project_id=data.get("project_id"),
        user_id=data.get("user_id"),
        allocations=_allocation_map(data),
        generation=data["consumer_generation"]
        if ctx.at_least(1, 28)
        else allocation_data.UNCHECKED,
        consumer_type=data.get("consumer_type"),
    )


def inventory_from_fields(class_name: str, data: dict) -> inventories.Inventory:
    """An Inventory from validated fields, defaults filled."""
    given = {k: v for k, v in data.items() if k in inventories.FIELDS}
    values = {**inventory_schemas.DEFAULTS, **given}
    return inventories.Inventory(resource_class=class_name, **values)


def claim_options(data: dict) -> dict:
    """What a claim body says beside what it asks for (the translator's and the device
    claims take the same): the new consumer, the scorer and the nodes to choose among."""
    return {
        "consumer_uuid": data["consumer_uuid"],
        "project_id": data["project_id"],
        "user_id": data["user_id"],
        "consumer_type": data.get("consumer_type"),
        "scorer": data.get("scorer", "pack"),
        "node_names": data.get("nodes"),
    }


def search_budget(ctx: RequestContext, data: dict) -> SearchBudget:
    """The time budget a request body gives (``budget_ms``), the configuration's else."""
    return SearchBudget(data.get("budget_ms") or ctx.config.group_candidates_budget_ms)


def answer_with_cut(ctx: RequestContext, body: dict, budget: SearchBudget) -> flask.Response:
    """``body``, saying so when the budget cut its search short: the ``cut`` field and the
    Placement-Search-Cut header (``nodes=L/T``: L of the T nodes looked at)."""
    cut = budget.cut
    if cut is None:
        return json_response(ctx, body)
    response = json_response(ctx, {**body, "cut": cut.body()})
    response.headers[CUT_HEADER] = cut.header()
    return response
