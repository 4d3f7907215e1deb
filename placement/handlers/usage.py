"""/resource_providers/{uuid}/usages and /usages (from 1.9)."""

import flask
from microversion_parse import Version

from placement import query, query_schema
from placement.context import RequestContext
from placement.data import inventories, usages
from placement.handlers.util import lookup_provider
from placement.http import json_response, min_version


def provider_usages(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    usage = dict.fromkeys(inventories.get_inventories(ctx.conn, provider), 0)
    usage.update(inventories.usage_by_class(ctx.conn, provider))
    return json_response(
        ctx, {"resource_provider_generation": provider.generation, "usages": usage}
    )


# Upstream's pattern for consumer_type, as its validator searches it: a type name,
# "unknown", or anything that starts with "all" ("all" itself is every type; another
# text is a type name).
CONSUMER_TYPE_PATTERN = "^[A-Z0-9_]+$|^all|^unknown$"
MAX_ID_LENGTH = 255


def _usages_schema(version: Version) -> query_schema.QuerySchema:
    """Upstream's JSON Schema of GET /usages' query string."""
    checks: dict[str, tuple[query_schema.Check, ...]] = {
        "project_id": (query_schema.length(1, MAX_ID_LENGTH),),
        "user_id": (query_schema.length(1, MAX_ID_LENGTH),),
    }
    if version >= (1, 38):
        checks["consumer_type"] = (
            query_schema.pattern(CONSUMER_TYPE_PATTERN),
            query_schema.length(1, MAX_ID_LENGTH),
        )
    return query_schema.QuerySchema(checks=checks, required=("project_id",))


@min_version(1, 9)
def project_usages(ctx: RequestContext) -> flask.Response:
    """Each parameter is read once, as upstream does: the last value given, the only
    one validated."""
    query.require_utf8(ctx.request.query_string)
    params = query.params_of(ctx.request.args.lists())
    query_schema.validate_at(_usages_schema, ctx.version, params)
    project = params["project_id"][-1]  # required by the schema
    user = query.last(params, "user_id")
    if ctx.at_least(1, 38):
        consumer_type = query.last(params, "consumer_type")
        by_type = usages.project_usages_by_type(ctx.conn, project, user, consumer_type)
        return json_response(ctx, {"usages": by_type})
    return json_response(ctx, {"usages": usages.project_usages(ctx.conn, project, user)})
