"""/resource_providers/{uuid}/usages and /usages (from 1.9)."""

import re

import flask

from placement import errors, query
from placement.context import RequestContext
from placement.data import inventories, usages
from placement.handlers.resource_provider import lookup_provider
from placement.http import json_response, min_version, query_params


def provider_usages(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    usage = dict.fromkeys(inventories.get_inventories(ctx.conn, provider), 0)
    usage.update(inventories.usage_by_class(ctx.conn, provider))
    return json_response(
        ctx, {"resource_provider_generation": provider.generation, "usages": usage}
    )


CONSUMER_TYPE_FILTER = re.compile(r"^([A-Z0-9_]+|all|unknown)$")


@min_version(1, 9)
def project_usages(ctx: RequestContext) -> flask.Response:
    allowed = {"project_id", "user_id"} | ({"consumer_type"} if ctx.at_least(1, 38) else set())
    params = query_params(ctx, allowed)
    if "project_id" not in params:
        raise errors.BadRequest(
            "Invalid query string parameters: 'project_id' is a required property.",
            code=errors.QUERYPARAM_MISSING_VALUE,
        )
    project = params["project_id"][0]
    user = params["user_id"][0] if "user_id" in params else None
    consumer_type = params["consumer_type"][0] if "consumer_type" in params else None
    for name, value in (("project_id", project), ("user_id", user)):
        if value is not None and not 1 <= len(value) <= 255:
            raise query.bad_value(f"'{name}' must be 1 to 255 characters long.")
    if consumer_type is not None and not CONSUMER_TYPE_FILTER.match(consumer_type):
        raise query.bad_value(
            f"Invalid consumer_type {consumer_type!r}: expected a name matching "
            "^[A-Z0-9_]+$, 'all' or 'unknown'."
        )
    if ctx.at_least(1, 38):
        by_type = usages.project_usages_by_type(ctx.conn, project, user, consumer_type)
        return json_response(ctx, {"usages": by_type})
    return json_response(ctx, {"usages": usages.project_usages(ctx.conn, project, user)})
