"""/traits, /traits/{name} and /resource_providers/{uuid}/traits (from 1.6)."""

import flask

from placement import errors, query, query_schema
from placement.clock import utcnow
from placement.context import RequestContext
from placement.data import names, provider_traits
from placement.db.tables import traits
from placement.handlers.util import lookup_provider
from placement.http import (
    absolute_url,
    cache_headers,
    json_response,
    latest,
    load_body,
    min_version,
    modified_at,
    no_content,
    requires_json,
)
from placement.schemas.fields import CUSTOM_NAME_PATTERN
from placement.schemas.names import ProviderTraits

IN_OPERATOR = "in"
STARTSWITH_OPERATOR = "startswith"
# Upstream's JSON Schema of GET /traits' query string.
LIST_SCHEMA = query_schema.QuerySchema(checks={"name": (), "associated": ()})


def _name_filter(value: str) -> tuple[list[str] | None, str | None]:
    """``in:A,B`` (the names as written) or ``startswith:PREFIX``; another word before
    the colon filters nothing, as upstream; no colon at all is 400."""
    operator, colon, operand = value.partition(":")
    if not colon:
        raise query.bad_value(
            f"Badly formatted name parameter. Expected name query string parameter in "
            f'form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "{value}"'
        )
    if operator == IN_OPERATOR:
        return operand.split(","), None
    if operator == STARTSWITH_OPERATOR:
        # Trait names are upper case: upstream's LIKE ignores case on its databases.
        return None, operand.upper() if operand.isascii() else operand
    return None, None


def _associated_filter(value: str) -> bool:
    lowered = value.lower()
    if lowered not in ("true", "false"):
        raise query.bad_value(
            f'The query parameter "associated" only accepts "true" or "false", got {value!r}.'
        )
    return lowered == "true"


@min_version(1, 6)
def list_traits(ctx: RequestContext) -> flask.Response:
    """``name`` and ``associated`` are read once, as upstream does: the last value
    given, the only one validated."""
    query.require_utf8(ctx.request.query_string)
    params = query.params_of(ctx.request.args.lists())
    LIST_SCHEMA.validate(params)
    name = query.last(params, "name")
    wanted, prefix = _name_filter(name) if name is not None else (None, None)
    associated_text = query.last(params, "associated")
    associated = _associated_filter(associated_text) if associated_text is not None else None
    rows = names.list_names(ctx.conn, traits, names=wanted, prefix=prefix, associated=associated)
    return json_response(
        ctx,
        {"traits": [row.name for row in rows]},
        last_modified=latest(modified_at(row) for row in rows),
    )


@min_version(1, 6)
def show_trait(ctx: RequestContext, name: str) -> flask.Response:
    row = names.get_name(ctx.conn, traits, name)
    if row is None:
        raise errors.NotFound(f"No such trait(s): {name}.")
    if not ctx.at_least(1, 15):
        return no_content()
    return no_content(headers=cache_headers(modified_at(row)))


@min_version(1, 6)
def put_trait(ctx: RequestContext, name: str) -> flask.Response:
    """Create the custom trait if missing (201), else nothing (204); from 1.15 either
    answer carries the trait's creation time as Last-Modified, as upstream's."""
    if not CUSTOM_NAME_PATTERN.match(name) or len(name) > 255:
        raise errors.BadRequest(
            "The trait is invalid. A valid trait must be no longer than 255 characters, "
            'start with the prefix "CUSTOM_" and use following characters: "A"-"Z", '
            f'"0"-"9" and "_" (got {name!r}).'
        )
    headers = {"Location": absolute_url(ctx, f"/traits/{name}")}
    status = 201 if names.create_name(ctx.conn, traits, name) else 204
    if ctx.at_least(1, 15):
        row = names.get_name(ctx.conn, traits, name)
        headers.update(cache_headers(row.created_at if row is not None else utcnow()))
    return no_content(headers=headers, status=status)


@min_version(1, 6)
def delete_trait(ctx: RequestContext, name: str) -> flask.Response:
    if names.is_standard_trait(name):
        raise errors.BadRequest(f"Cannot delete standard trait {name}.")
    names.delete_trait(ctx.conn, name)
    return no_content()


def _provider_traits_body(generation: int, trait_names: list[str]) -> dict:
    return {"traits": trait_names, "resource_provider_generation": generation}


@min_version(1, 6)
def list_provider_traits(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    trait_names = provider_traits.get_provider_traits(ctx.conn, provider)
    return json_response(
        ctx,
        _provider_traits_body(provider.generation, trait_names),
        last_modified=modified_at(provider),
    )


@min_version(1, 6)
@requires_json
def set_provider_traits(ctx: RequestContext, uuid: str) -> flask.Response:
    """Checked in upstream's order: the body, the provider, its generation, the traits."""
    data = load_body(ctx, ProviderTraits())
    provider = lookup_provider(ctx, uuid)
    if data["resource_provider_generation"] != provider.generation:
        raise errors.ConcurrentUpdate(
            "Resource provider's generation already changed. Please update the generation "
            "and try again."
        )
    try:
        generation = provider_traits.set_provider_traits(
            ctx.conn, provider, data["traits"], data["resource_provider_generation"]
        )
    except names.UnknownTrait as exc:
        raise errors.BadRequest(f"No such trait {', '.join(exc.unknown)}") from exc
    trait_names = provider_traits.get_provider_traits(ctx.conn, provider)
    return json_response(ctx, _provider_traits_body(generation, trait_names))


@min_version(1, 6)
def delete_provider_traits(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    provider_traits.set_provider_traits(ctx.conn, provider, [], None)
    return no_content()
