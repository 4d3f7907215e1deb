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
    query_params,
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


def _list_parameters(ctx: RequestContext) -> tuple[set[str], set[str]]:
    allowed = {"name", "uuid"}
    if ctx.at_least(1, 3):
        allowed.add("member_of")
    if ctx.at_least(1, 4):
        allowed.add("resources")
    if ctx.at_least(1, 14):
        allowed.add("in_tree")
    if ctx.at_least(1, 18):
        allowed.add("required")
    repeatable = set()
    if ctx.at_least(1, 24):
        repeatable.add("member_of")
    if ctx.at_least(1, 39):
        repeatable.add("required")
    return allowed, repeatable


def _uuid_param(params: dict, key: str) -> str | None:
    if key not in params:
        return None
    value = query.normalize_uuid(params[key][0])
    if value is None:
        raise query.bad_value(
            f"Invalid query string parameters: '{key}' must be a valid UUID, "
            f"got {params[key][0]!r}."
        )
    return value


def list_providers(ctx: RequestContext) -> flask.Response:
    allowed, repeatable = _list_parameters(ctx)
    params = query_params(ctx, allowed, repeatable)
    filters = providers.ProviderFilters(
        name=params["name"][0] if "name" in params else None,
        uuid=_uuid_param(params, "uuid"),
        in_tree=_uuid_param(params, "in_tree"),
        resources=query.parse_resources(params["resources"][0]) if "resources" in params else None,
        traits=query.parse_required(
            params["required"],
            allow_forbidden=ctx.at_least(1, 22),
            allow_any_of=ctx.at_least(1, 39),
        )
        if "required" in params
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
