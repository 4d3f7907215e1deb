"""POST /reshaper (from 1.30)."""

import flask

from placement import errors
from placement.context import RequestContext
from placement.data import providers, reshaper
from placement.handlers.allocation import consumer_write
from placement.handlers.inventory import inventory_from_fields
from placement.http import load_body, min_version, no_content, validate
from placement.schemas import allocation as schemas


@min_version(1, 30)
def reshape(ctx: RequestContext) -> flask.Response:
    data = load_body(ctx, schemas.Reshape())
    # The whole body validates before anything is looked up, as upstream's one schema.
    writes = [
        consumer_write(ctx, consumer_uuid, validate(schemas.consumer_schema(ctx.version), entry))
        for consumer_uuid, entry in data["allocations"].items()
    ]
    inventories = []
    for provider_uuid, entry in data["inventories"].items():
        provider = providers.get_provider(ctx.conn, provider_uuid)
        if provider is None:
            raise errors.BadRequest(
                f"Resource provider {provider_uuid} in inventories not found.",
                code=errors.RESOURCE_PROVIDER_NOT_FOUND,
            )
        # Upstream checks no capacity here: the reshaped allocations are checked
        # against the new inventories at the end.
        wanted = {
            name: inventory_from_fields(name, fields)
            for name, fields in entry["inventories"].items()
        }
        inventories.append((provider, entry["resource_provider_generation"], wanted))
    reshaper.reshape(ctx.conn, inventories, writes)
    return no_content()
