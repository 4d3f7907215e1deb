"""/resource_providers/{uuid}/usages."""

import flask

from placement.context import RequestContext
from placement.data import inventories
from placement.handlers.resource_provider import lookup_provider
from placement.http import json_response


def provider_usages(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    usage = dict.fromkeys(inventories.get_inventories(ctx.conn, provider), 0)
    usage.update(inventories.usage_by_class(ctx.conn, provider))
    return json_response(
        ctx, {"resource_provider_generation": provider.generation, "usages": usage}
    )
