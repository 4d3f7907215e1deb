"""/resource_providers/{uuid}/usages and /usages (from 1.9)."""

import re

import flask

from placement import errors, query
from placement.context import RequestContext
from placement.data import inventories, usages
from placement.handlers.resource_provider import lookup_provider
from placement.http import json_response, min_version


def provider_usages(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    usage = dict.fromkeys(inventories.get_inventories(ctx.conn, provider), 0)
    usage.update(inventories.usage_by_class(ctx.conn, provider))
    return json_response(
        ctx, {"resource_provider_generation": provider.generation, "usages": usage}
    )


# Upstream's pattern, as its validator reads it: a type name, "unknown", or anything
# that starts with "all" ("all" itself is every type; another text is a type name).
CONSUMER_TYPE_FILTER = re.compile(r"[A-Z0-9_]+$|all|unknown$")
MAX_ID_LENGTH = 255


@min_version(1, 9)
def project_usages(ctx: RequestContext) -> flask.Response:
    """Each parameter is read once, as upstream does: the last value given, the only
    one validated."""
    query.require_utf8(ctx.request.query_string)
    allowed = {"project_id", "user_id"} | ({"consumer_type"} if ctx.at_least(1, 38) else set())
    params = query.accepted_params(ctx.request.args.lists(), allowed)
    project = query.last(params, "project_id")
    if project is None:
        raise errors.BadRequest(
            "Invalid query string parameters: 'project_id' is a required property.",
            code=errors.QUERYPARAM_MISSING_VALUE,
        )
    user = query.last(params, "user_id")
    consumer_type = query.last(params, "consumer_type")
    for name, value in (
        ("project_id", project), ("user_id", user), ("consumer_type", consumer_type)
    ):
        if value is not None and not 1 <= len(value) <= MAX_ID_LENGTH:
            raise query.bad_value(f"'{name}' must be 1 to {MAX_ID_LENGTH} characters long.")
    if consumer_type is not None and not CONSUMER_TYPE_FILTER.match(consumer_type):
        raise query.bad_value(
            f"Invalid consumer_type {consumer_type!r}: expected a name matching "
            "^[A-Z0-9_]+$, 'all' or 'unknown'."
        )
    if ctx.at_least(1, 38):
        by_type = usages.project_usages_by_type(ctx.conn, project, user, consumer_type)
        return json_response(ctx, {"usages": by_type})
    return json_response(ctx, {"usages": usages.project_usages(ctx.conn, project, user)})
