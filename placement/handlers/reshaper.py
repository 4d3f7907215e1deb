"""POST /reshaper (from 1.30)."""

import flask

from placement import errors
from placement.context import RequestContext
from placement.data import names, providers, reshaper
from placement.handlers.util import consumer_write, inventory_from_fields
from placement.http import load_body, min_version, no_content, requires_json
from placement.schemas import allocation as schemas


@min_version(1, 30)
@requires_json
def reshape(ctx: RequestContext) -> flask.Response:
    """The whole body validates before anything is looked up, as upstream's one
    schema; then each provider is looked up and its generation checked, in the
    body's order and upstream's words."""
    data = load_body(ctx, schemas.reshape_schema(ctx.version))
    writes = [
        consumer_write(ctx, consumer_uuid, entry)
        for consumer_uuid, entry in data["allocations"].items()
    ]
    inventories = []
    for provider_uuid, entry in data["inventories"].items():
        provider = providers.get_provider(ctx.conn, provider_uuid)
        if provider is None:
            raise errors.BadRequest(
                f"Resource provider {provider_uuid} in inventories not found: "
                f"No resource provider with uuid {provider_uuid} found",
                code=errors.RESOURCE_PROVIDER_NOT_FOUND,
            )
        given = entry["resource_provider_generation"]
        if given != provider.generation:
            raise errors.ConcurrentUpdate(
                f"resource provider generation conflict for provider {provider_uuid}: "
                f"actual: {provider.generation}, given: {given}"
            )
        # Upstream checks no capacity here: the reshaped allocations are checked
        # against the new inventories at the end.
        wanted = {
            name: inventory_from_fields(name, fields)
            for name, fields in entry["inventories"].items()
        }
        inventories.append((provider, given, wanted))
    try:
        reshaper.reshape(ctx.conn, inventories, writes)
    except names.UnknownResourceClass as exc:
        raise errors.BadRequest(f"malformed reshaper data: {exc.no_such}") from exc
    return no_content()
