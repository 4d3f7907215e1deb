"""/traits, /traits/{name} and /resource_providers/{uuid}/traits (from 1.6)."""

import flask

from placement import errors, query
from placement.context import RequestContext
from placement.data import names, provider_traits
from placement.db.tables import traits
from placement.handlers.resource_provider import lookup_provider
from placement.http import (
    absolute_url,
    cache_headers,
    json_response,
    latest,
    load_body,
    min_version,
    modified_at,
    no_content,
)
from placement.schemas.fields import CUSTOM_NAME_PATTERN
from placement.schemas.names import ProviderTraits

IN_OPERATOR = "in"
STARTSWITH_OPERATOR = "startswith"


def _name_filter(value: str) -> tuple[list[str] | None, str | None]:
    """``in:A,B`` (the names as written) or ``startswith:PREFIX``; another word before
    the colon filters nothing, as upstream; no colon at all is 400."""
    operator, colon, operand = value.partition(":")
    if not colon:
        raise query.bad_value(
            f"Badly formatted name parameter. Expected name query string parameter in "
            f"form: ?name=[in|startswith]:[name1,name2|prefix]. Got: \"{value}\""
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
            f"The query parameter 'associated' only accepts 'true' or 'false', got {value!r}."
        )
    return lowered == "true"


@min_version(1, 6)
def list_traits(ctx: RequestContext) -> flask.Response:
    """``name`` and ``associated`` are read once, as upstream does: the last value
    given, the only one validated."""
    query.require_utf8(ctx.request.query_string)
    params = query.accepted_params(ctx.request.args.lists(), {"name", "associated"})
    name = query.last(params, "name")
    wanted, prefix = _name_filter(name) if name is not None else (None, None)
    associated_text = query.last(params, "associated")
    associated = _associated_filter(associated_text) if associated_text is not None else None
    rows = names.list_names(
        ctx.conn, traits, names=wanted, prefix=prefix, associated=associated
    )
    return json_response(
        ctx,
        {"traits": [row.name for row in rows]},
        last_modified=latest(modified_at(row) for row in rows),
    )


@min_version(1, 6)
def show_trait(ctx: RequestContext, name: str) -> flask.Response:
    row = names.get_name(ctx.conn, traits, name)
    if row is None:
        raise errors.NotFound(f"No such trait {name}.")
    if not ctx.at_least(1, 15):
        return no_content()
    return no_content(headers=cache_headers(modified_at(row)))


@min_version(1, 6)
def put_trait(ctx: RequestContext, name: str) -> flask.Response:
    if not CUSTOM_NAME_PATTERN.match(name) or len(name) > 255:
        raise errors.BadRequest(
            f"The trait name {name!r} is not valid: custom traits must match "
            "^CUSTOM_[A-Z0-9_]+$."
        )
    location = {"Location": absolute_url(ctx, f"/traits/{name}")}
    if names.create_name(ctx.conn, traits, name):
        return no_content(headers=location, status=201)
    return no_content(headers=location)


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
def set_provider_traits(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    data = load_body(ctx, ProviderTraits())
    generation = provider_traits.set_provider_traits(
        ctx.conn, provider, data["traits"], data["resource_provider_generation"]
    )
    trait_names = provider_traits.get_provider_traits(ctx.conn, provider)
    return json_response(ctx, _provider_traits_body(generation, trait_names))


@min_version(1, 6)
def delete_provider_traits(ctx: RequestContext, uuid: str) -> flask.Response:
    provider = lookup_provider(ctx, uuid)
    provider_traits.set_provider_traits(ctx.conn, provider, [], None)
    return no_content()
