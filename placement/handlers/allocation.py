"""/allocations/{consumer_uuid}, POST /allocations and /resource_providers/{uuid}/allocations."""

import flask

from placement import errors, query
from placement.context import RequestContext
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data
from placement.data import names
from placement.handlers.util import consumer_write, lookup_provider
from placement.http import (
    json_response,
    latest,
    load_body,
    min_version,
    no_content,
    requires_json,
)
from placement.schemas import allocation as schemas


def _consumer_uuid_or_400(text: str) -> str:
    normalized = query.normalize_uuid(text)
    if normalized is None:
        raise errors.BadRequest(f"Malformed consumer_uuid: {text}")
    return normalized


def show_allocations(ctx: RequestContext, consumer_uuid: str) -> flask.Response:
    normalized = query.normalize_uuid(consumer_uuid)
    consumer = consumer_data.get_consumer(ctx.conn, normalized) if normalized else None
    if consumer is None:
        return json_response(ctx, {"allocations": {}})
    rows = allocation_data.get_consumer_allocations(ctx.conn, consumer.id)
    by_provider: dict[str, dict] = {}
    for provider_uuid, generation, class_name, used, _created, _updated in rows:
        entry = by_provider.setdefault(provider_uuid, {"resources": {}, "generation": generation})
        entry["resources"][class_name] = used
    body: dict = {"allocations": by_provider}
    if ctx.at_least(1, 12):
        body["project_id"] = consumer.project_id
        body["user_id"] = consumer.user_id
    if ctx.at_least(1, 28):
        body["consumer_generation"] = consumer.generation
    if ctx.at_least(1, 38):
        body["consumer_type"] = consumer.consumer_type or "unknown"
    return json_response(
        ctx, body, last_modified=latest(r.updated_at or r.created_at for r in rows)
    )


@requires_json
def put_allocations(ctx: RequestContext, consumer_uuid: str) -> flask.Response:
    uuid = _consumer_uuid_or_400(consumer_uuid)
    data = load_body(ctx, schemas.put_schema(ctx.version))
    try:
        allocation_data.write_allocations(ctx.conn, [consumer_write(ctx, uuid, data)])
    except names.UnknownResourceClass as exc:
        raise errors.BadRequest(
            f"Unable to allocate inventory for consumer {uuid}: {exc.no_such}"
        ) from exc
    return no_content()


@min_version(1, 13)
@requires_json
def post_allocations(ctx: RequestContext) -> flask.Response:
    body = load_body(ctx, schemas.post_schema(ctx.version))
    writes = [consumer_write(ctx, uuid, data) for uuid, data in body.items()]
    try:
        allocation_data.write_allocations(ctx.conn, writes)
    except names.UnknownResourceClass as exc:
        raise errors.BadRequest(f"Unable to allocate inventory: {exc.no_such}") from exc
    return no_content()


def delete_allocations(ctx: RequestContext, consumer_uuid: str) -> flask.Response:
    normalized = query.normalize_uuid(consumer_uuid)
    consumer = consumer_data.get_consumer(ctx.conn, normalized) if normalized else None
    if consumer is None:
        raise errors.NotFound(f"No allocations for consumer '{consumer_uuid}'.")
    allocation_data.delete_consumer_allocations(ctx.conn, consumer)
    return no_content()


def provider_allocations(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    rows = allocation_data.get_provider_allocations(ctx.conn, provider.id)
    consumers = consumer_data.get_consumers(ctx.conn, {row.uuid for row in rows})
    by_consumer: dict[str, dict] = {}
    for consumer_uuid, class_name, used, _created, _updated in rows:
        entry = by_consumer.setdefault(consumer_uuid, {"resources": {}})
        entry["resources"][class_name] = used
        if ctx.at_least(1, 28):
            entry["consumer_generation"] = consumers[consumer_uuid].generation
    return json_response(
        ctx,
        {"allocations": by_consumer, "resource_provider_generation": provider.generation},
        last_modified=latest(r.updated_at or r.created_at for r in rows),
    )
