"""/resource_providers and /resource_providers/{uuid}."""

import uuid as uuid_lib

import flask
from microversion_parse import Version

from placement import errors, query, query_schema
from placement.context import RequestContext
from placement.data import names, providers
from placement.db.tables import resource_classes, traits
from placement.handlers.util import lookup_provider, provider_url
from placement.http import (
    absolute_url,
    json_response,
    latest,
    load_body,
    modified_at,
    no_content,
    requires_json,
)
from placement.schemas import resource_provider as schemas


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


def _list_schema(version: Version) -> query_schema.QuerySchema:
    """Upstream's JSON Schema of GET /resource_providers' query string."""
    checks: dict[str, tuple[query_schema.Check, ...]] = {
        "name": (),
        "uuid": (query_schema.uuid_format,),
    }
    if version >= (1, 3):
        checks["member_of"] = ()
    if version >= (1, 4):
        checks["resources"] = ()
    if version >= (1, 14):
        checks["in_tree"] = (query_schema.uuid_format,)
    if version >= (1, 18):
        checks["required"] = ()
    return query_schema.QuerySchema(checks=checks)


def _uuid_param(params: dict, key: str) -> str | None:
    """``uuid`` or ``in_tree`` (their last value: the schema checked it)."""
    text = query.last(params, key)
    return query.parse_dashed_uuid(text) if text is not None else None


def list_providers(ctx: RequestContext) -> flask.Response:
    """Every parameter but ``member_of`` (from 1.24) and ``required`` (from 1.39) is
    read once, as upstream does: the last value given, the only one validated. The
    parameters are checked in upstream's order (schema, member_of, required,
    resources). A trait or an aggregate both required and forbidden matches
    nothing."""
    query.require_utf8(ctx.request.query_string)
    params = query.params_of(ctx.request.args.lists())
    query_schema.validate_at(_list_schema, ctx.version, params)
    aggregates = (
        query.parse_member_of(
            params["member_of"],
            allow_repeats=ctx.at_least(1, 24),
            allow_forbidden=ctx.at_least(1, 32),
        )
        if "member_of" in params
        else query.AggregateFilter()
    )
    required = params.get("required")
    trait_filter = (
        query.parse_required(
            required if ctx.at_least(1, 39) else required[-1:],
            allow_forbidden=ctx.at_least(1, 22),
            allow_any_of=ctx.at_least(1, 39),
        )
        if required
        else query.TraitFilter()
    )
    resources = query.last(params, "resources")
    filters = providers.ProviderFilters(
        name=query.last(params, "name") or None,  # empty: no filter, as upstream
        uuid=_uuid_param(params, "uuid"),
        in_tree=_uuid_param(params, "in_tree"),
        resources=query.parse_resources(resources) if resources is not None else None,
        traits=trait_filter,
        aggregates=aggregates,
    )
    if _unknown_name_after_an_empty_filter(ctx, filters):
        found = []
    else:
        found = providers.list_providers(ctx.conn, filters)
    return json_response(
        ctx,
        {"resource_providers": [provider_body(ctx, p) for p in found]},
        last_modified=latest(modified_at(p) for p in found),
    )


def _unknown_name_after_an_empty_filter(
    ctx: RequestContext, filters: providers.ProviderFilters
) -> bool:
    """Whether a class or trait of ``filters`` does not exist but a filter upstream
    applies before it looks that name up already matched nothing (the answer is then
    empty); 400 for an unknown name otherwise, in upstream's words. Upstream's order:
    in_tree, the required traits, the forbidden ones, member_of, resources."""
    conn = ctx.conn
    classes = list(filters.resources or {})
    trait_names = filters.traits.names()
    known_classes = names.ids_by_name(conn, resource_classes, classes) if classes else {}
    known_traits = names.ids_by_name(conn, traits, trait_names) if trait_names else {}
    if len(known_classes) == len(classes) and len(known_traits) == len(trait_names):
        return False
    if filters.in_tree is not None and providers.get_provider(conn, filters.in_tree) is None:
        return True
    required = set().union(*filters.traits.required)
    _refuse_unknown_traits(required, known_traits)
    if required and not providers.list_providers(
        conn, providers.ProviderFilters(traits=query.TraitFilter(filters.traits.required))
    ):
        return True
    _refuse_unknown_traits(set(filters.traits.forbidden), known_traits)
    if filters.aggregates.member_of and not providers.list_providers(
        conn,
        providers.ProviderFilters(aggregates=query.AggregateFilter(filters.aggregates.member_of)),
    ):
        return True
    unknown_class = next(name for name in classes if name not in known_classes)
    raise errors.BadRequest(
        f"Invalid resource class in resources parameter: No such resource class {unknown_class}."
    )


def _refuse_unknown_traits(wanted: set[str], known: dict[str, int]) -> None:
    unknown = sorted(wanted - set(known))
    if unknown:
        raise errors.BadRequest(
            f'Invalid trait(s) in "required" parameter: No such trait(s): {", ".join(unknown)}.'
        )


def show_provider(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    return json_response(ctx, provider_body(ctx, provider), last_modified=modified_at(provider))


@requires_json
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
            ctx,
            provider_body(ctx, provider),
            last_modified=modified_at(provider),
            headers=location,
        )
    return no_content(headers=location, status=201)


@requires_json
def update_provider(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    nested = ctx.at_least(1, 14)
    data = load_body(ctx, schemas.UpdateNestedProvider() if nested else schemas.UpdateProvider())
    # As upstream: a refused parent (400) before a taken name (409).
    if nested and "parent_provider_uuid" in data:
        providers.set_parent(
            ctx.conn, provider, data["parent_provider_uuid"], allow_reparent=ctx.at_least(1, 37)
        )
    providers.rename_provider(ctx.conn, provider, data["name"])
    providers.touch(ctx.conn, provider)
    updated = providers.require_provider(ctx.conn, provider.uuid)
    return json_response(ctx, provider_body(ctx, updated), last_modified=modified_at(updated))


def delete_provider(ctx: RequestContext, uuid: str) -> flask.Response:
    providers.delete_provider(ctx.conn, lookup_provider(ctx, uuid, action="delete"))
    return no_content()
