"""/resource_classes and /resource_classes/{name} (from 1.2)."""

import flask

from placement import errors
from placement.context import RequestContext
from placement.data import names
from placement.db.tables import resource_classes
from placement.http import (
    absolute_url,
    json_response,
    latest,
    load_body,
    min_version,
    modified_at,
    no_content,
    requires_json,
    requires_json_below,
    validate,
)
from placement.schemas.names import CreateResourceClass


def _url(name: str) -> str:
    return f"/resource_classes/{name}"


def _body(name: str) -> dict:
    return {"name": name, "links": [{"rel": "self", "href": _url(name)}]}


def _require(ctx: RequestContext, name: str):
    row = names.get_name(ctx.conn, resource_classes, name)
    if row is None:
        raise errors.NotFound(f"No such resource class {name}.")
    return row


def _refuse_standard(name: str, action: str, prefix: str = "") -> None:
    if names.is_standard_resource_class(name):
        raise errors.BadRequest(f"{prefix}Cannot {action} standard resource class {name}.")


@min_version(1, 2)
def list_resource_classes(ctx: RequestContext) -> flask.Response:
    rows = names.list_names(ctx.conn, resource_classes)
    return json_response(
        ctx,
        {"resource_classes": [_body(row.name) for row in rows]},
        last_modified=latest(modified_at(row) for row in rows),
    )


@min_version(1, 2)
@requires_json
def create_resource_class(ctx: RequestContext) -> flask.Response:
    name = load_body(ctx, CreateResourceClass())["name"]
    if not names.create_name(ctx.conn, resource_classes, name):
        raise errors.Conflict(f"Conflicting resource class already exists: {name}")
    return no_content(headers={"Location": absolute_url(ctx, _url(name))}, status=201)


@min_version(1, 2)
def show_resource_class(ctx: RequestContext, name: str) -> flask.Response:
    row = _require(ctx, name)
    return json_response(ctx, _body(row.name), last_modified=modified_at(row))


@min_version(1, 2)
@requires_json_below(1, 7)
def put_resource_class(ctx: RequestContext, name: str) -> flask.Response:
    if ctx.at_least(1, 7):
        return _ensure_resource_class(ctx, name)
    # 1.2 to 1.6: PUT renames a custom class to the name in the body. Checked in
    # upstream's order: the body, the class, then whether it may change.
    new_name = load_body(ctx, CreateResourceClass())["name"]
    _require(ctx, name)
    _refuse_standard(name, "update")
    names.rename_resource_class(ctx.conn, name, new_name)
    row = _require(ctx, new_name)
    return json_response(ctx, _body(new_name), last_modified=modified_at(row))


def _ensure_resource_class(ctx: RequestContext, name: str) -> flask.Response:
    """1.7+: create the custom class if missing (201), else nothing (204). The name is
    checked as a body's would be, as upstream does."""
    validate(CreateResourceClass(), {"name": name})
    location = {"Location": absolute_url(ctx, _url(name))}
    if names.create_name(ctx.conn, resource_classes, name):
        return no_content(headers=location, status=201)
    return no_content(headers=location)


@min_version(1, 2)
def delete_resource_class(ctx: RequestContext, name: str) -> flask.Response:
    _refuse_standard(name, "delete", prefix="Error in delete resource class: ")
    names.delete_resource_class(ctx.conn, name)
    return no_content()
