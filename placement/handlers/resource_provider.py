"""/resource_providers and /resource_providers/{uuid}."""

import uuid as uuid_lib

import flask

from placement import errors, query
from placement.context import RequestContext
from placement.data import providers
from placement.http import (
    absolute_url,
    json_response,
    latest,
    load_body,
    modified_at,
    no_content,
)
from placement.schemas import resource_provider as schemas


def provider_url(uuid: str) -> str:
    return f"/resource_providers/{uuid}"


def provider_body(ctx: RequestContext, provider: providers.Provider) -> dict:
    base = provider_url(provider.uuid)
    links = [
        {"rel": "self", "href": base},
        {"rel": "inventories", "href": f"{base}/inventories"},
        {"rel": "usages", "href": f"{base}/usages"},
    ]
    if ctx.at_least(1, 1):
        links.append({"rel": "aggregates", "href": f"{base}/aggregates"})
    if ctx.at_least(1, 6):
        links.append({"rel": "traits", "href": f"{base}/traits"})
    if ctx.at_least(1, 11):
        links.append({"rel": "allocations", "href": f"{base}/allocations"})
    body = {
        "uuid": provider.uuid,
        "name": provider.name,
        "generation": provider.generation,
        "links": links,
    }
    if ctx.at_least(1, 14):
        body["parent_provider_uuid"] = provider.parent_provider_uuid
        body["root_provider_uuid"] = provider.root_provider_uuid
    return body


def lookup_provider(ctx: RequestContext, uuid: str) -> providers.Provider:
    """The provider named in the URL, or 404 (also for a malformed uuid)."""
    normalized = query.normalize_uuid(uuid)
    if normalized is None:
        raise errors.NotFound(
            f"No resource provider with uuid {uuid} found.",
            code=errors.RESOURCE_PROVIDER_NOT_FOUND,
        )
    return providers.require_provider(ctx.conn, normalized)


def _list_parameters(ctx: RequestContext) -> set[str]:
    allowed = {"name", "uuid"}
    if ctx.at_least(1, 3):
        allowed.add("member_of")
    if ctx.at_least(1, 4):
        allowed.add("resources")
    if ctx.at_least(1, 14):
        allowed.add("in_tree")
    if ctx.at_least(1, 18):
        allowed.add("required")
    return allowed


def _uuid_param(params: dict, key: str) -> str | None:
    text = query.last(params, key)
    if text is None:
        return None
    value = query.parse_dashed_uuid(text)
    if value is None:
        raise query.bad_value(
            f"Invalid query string parameters: '{key}' must be a valid UUID, got {text!r}."
        )
    return value


def list_providers(ctx: RequestContext) -> flask.Response:
    """Every parameter but ``member_of`` (from 1.24) and ``required`` (from 1.39) is
    read once, as upstream does: the last value given, the only one validated. A
    trait or an aggregate both required and forbidden matches nothing."""
    query.require_utf8(ctx.request.query_string)
    params = query.accepted_params(ctx.request.args.lists(), _list_parameters(ctx))
    if len(params.get("member_of", ())) > 1 and not ctx.at_least(1, 24):
        raise query.duplicate_key("member_of")
    resources = query.last(params, "resources")
    required = params.get("required")
    filters = providers.ProviderFilters(
        name=query.last(params, "name") or None,  # empty: no filter, as upstream
        uuid=_uuid_param(params, "uuid"),
        in_tree=_uuid_param(params, "in_tree"),
        resources=query.parse_resources(resources) if resources is not None else None,
        traits=query.parse_required(
            required if ctx.at_least(1, 39) else required[-1:],
            allow_forbidden=ctx.at_least(1, 22),
            allow_any_of=ctx.at_least(1, 39),
        )
        if required
        else query.TraitFilter(),
        aggregates=query.parse_member_of(params["member_of"], allow_forbidden=ctx.at_least(1, 32))
        if "member_of" in params
        else query.AggregateFilter(),
    )
    found = providers.list_providers(ctx.conn, filters)
    return json_response(
        ctx,
        {"resource_providers": [provider_body(ctx, p) for p in found]},
        last_modified=latest(modified_at(p) for p in found),
    )


def show_provider(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    return json_response(ctx, provider_body(ctx, provider), last_modified=modified_at(provider))


def create_provider(ctx: RequestContext) -> flask.Response:
    schema = schemas.CreateNestedProvider() if ctx.at_least(1, 14) else schemas.CreateProvider()
    data = load_body(ctx, schema)
    uuid = data.get("uuid") or str(uuid_lib.uuid4())
    provider = providers.create_provider(
        ctx.conn, uuid=uuid, name=data["name"], parent_uuid=data.get("parent_provider_uuid")
    )
    location = {"Location": absolute_url(ctx, provider_url(provider.uuid))}
    if ctx.at_least(1, 20):
        return json_response(
            ctx, provider_body(ctx, provider), last_modified=modified_at(provider),
            headers=location,
        )
    return no_content(headers=location, status=201)


def update_provider(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    nested = ctx.at_least(1, 14)
    data = load_body(ctx, schemas.UpdateNestedProvider() if nested else schemas.UpdateProvider())
    providers.rename_provider(ctx.conn, provider, data["name"])
    if nested and "parent_provider_uuid" in data:
        providers.set_parent(
            ctx.conn, provider, data["parent_provider_uuid"], allow_reparent=ctx.at_least(1, 37)
        )
    providers.touch(ctx.conn, provider)
    updated = providers.require_provider(ctx.conn, provider.uuid)
    return json_response(ctx, provider_body(ctx, updated), last_modified=modified_at(updated))


def delete_provider(ctx: RequestContext, uuid: str) -> flask.Response:
    providers.delete_provider(ctx.conn, lookup_provider(ctx, uuid))
    return no_content()
