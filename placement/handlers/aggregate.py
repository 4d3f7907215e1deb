"""/resource_providers/{uuid}/aggregates (from 1.1; with generations from 1.19)."""

import flask

from placement import errors
from placement.context import RequestContext
from placement.data import aggregates
from placement.handlers.util import lookup_provider
from placement.http import (
    json_response,
    load_body,
    min_version,
    modified_at,
    requires_json,
)
from placement.schemas.aggregate import ProviderAggregates, aggregate_uuids


def _body(ctx: RequestContext, generation: int, uuids: list[str]) -> dict:
    body: dict = {"aggregates": uuids}
    if ctx.at_least(1, 19):
        body["resource_provider_generation"] = generation
    return body


@min_version(1, 1)
def show_aggregates(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    uuids = aggregates.get_provider_aggregates(ctx.conn, provider)
    return json_response(
        ctx, _body(ctx, provider.generation, uuids), last_modified=modified_at(provider)
    )


@requires_json  # before the version, as upstream
@min_version(1, 1)
def set_aggregates(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    if ctx.at_least(1, 19):
        data = load_body(ctx, ProviderAggregates())
        wanted, expected = data["aggregates"], data["resource_provider_generation"]
        if expected != provider.generation:
            raise errors.ConcurrentUpdate(
                "Resource provider's generation already changed. Please update the "
                "generation and try again."
            )
    else:
        # Before 1.19 the body is a bare list of aggregate uuids.
        wanted, expected = load_body(ctx, aggregate_uuids()), None
    generation = aggregates.set_provider_aggregates(ctx.conn, provider, wanted, expected)
    # As upstream: the answer echoes the request's list.
    return json_response(ctx, _body(ctx, generation, wanted))
