"""/resource_providers/{uuid}/aggregates (from 1.1; with generations from 1.19)."""

import flask

from placement import errors
from placement.context import RequestContext
from placement.data import aggregates
from placement.handlers.resource_provider import lookup_provider
from placement.http import (
    json_response,
    load_body,
    min_version,
    modified_at,
    read_json,
    validate,
)
from placement.schemas.aggregate import AggregateList, ProviderAggregates


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


@min_version(1, 1)
def set_aggregates(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    if ctx.at_least(1, 19):
        data = load_body(ctx, ProviderAggregates())
        wanted, expected = data["aggregates"], data["resource_provider_generation"]
    else:
        # Before 1.19 the body is a bare list of aggregate uuids.
        raw = read_json(ctx)
        if not isinstance(raw, list):
            raise errors.BadRequest(
                "JSON does not validate: before microversion 1.19 the body must be a list "
                "of aggregate uuids."
            )
        wanted = validate(AggregateList(), {"aggregates": raw})["aggregates"]
        expected = None
    generation = aggregates.set_provider_aggregates(ctx.conn, provider, wanted, expected)
    # As upstream: the answer echoes the request's list.
    return json_response(ctx, _body(ctx, generation, wanted))

