"""HTTP helpers shared by the views: JSON bodies in, JSON responses out."""

import datetime
import json
from collections.abc import Callable, Iterable
from email.utils import format_datetime
from typing import Any

import flask
import marshmallow
import orjson

from placement import errors
from placement.clock import utcnow
from placement.context import RequestContext
from placement.schemas import validate

JSON_TYPE = "application/json"


def read_json(ctx: RequestContext) -> Any:
    """The request body as JSON; 415 for another media type, 400 if malformed."""
    refuse_other_media_types(ctx)
    raw = ctx.request.get_data(cache=True)
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.BadRequest(f"Malformed JSON: {exc}") from exc


def refuse_other_media_types(ctx: RequestContext) -> None:
    """415 unless the body is declared ``application/json`` (upstream's sentence names
    a missing type ``None``)."""
    media_type = ctx.request.mimetype
    if media_type != JSON_TYPE:
        raise errors.UnsupportedMediaType(
            f"The media type {media_type or None} is not supported, use {JSON_TYPE}."
        )


def requires_json(view: Callable) -> Callable:
    """Views decorated with this answer 415 to a body that is not JSON before they look
    anything up, as upstream's views that take a body do. Outside ``min_version``
    where upstream checks the type first (aggregates), inside it elsewhere."""

    def guarded(ctx: RequestContext, **kwargs: Any) -> Any:
        refuse_other_media_types(ctx)
        return view(ctx, **kwargs)

    guarded.__name__ = view.__name__
    guarded.__doc__ = view.__doc__
    return guarded


def load_body(
    ctx: RequestContext, schema: marshmallow.Schema | marshmallow.fields.Field
) -> Any:
    """Read the JSON body and validate it with a marshmallow ``schema`` (or a field
    standing for the whole body)."""
    data = read_json(ctx)
    return validate(schema, data)


def json_response(
    ctx: RequestContext,
    body: Any,
    status: int = 200,
    last_modified: datetime.datetime | None = None,
    headers: dict[str, str] | None = None,
) -> flask.Response:
    """A JSON response (compact, by orjson); from 1.15 with last-modified and cache-control."""
    return json_text_response(ctx, orjson.dumps(body), status, last_modified, headers)


def json_text_response(
    ctx: RequestContext,
    text: bytes,
    status: int = 200,
    last_modified: datetime.datetime | None = None,
    headers: dict[str, str] | None = None,
) -> flask.Response:
    """``json_response`` of a body already written as JSON ``text``."""
    response = flask.Response(text, status=status, mimetype=JSON_TYPE)
    if ctx.at_least(1, 15):
        response.headers.update(cache_headers(last_modified or utcnow()))
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


def cache_headers(last_modified: datetime.datetime) -> dict[str, str]:
    """The Last-Modified and Cache-Control headers of microversion 1.15 on."""
    return {
        "Last-Modified": format_datetime(
            last_modified.replace(tzinfo=datetime.UTC, microsecond=0), usegmt=True
        ),
        "Cache-Control": "no-cache",
    }


def absolute_url(ctx: RequestContext, path: str) -> str:
    """``path`` as an absolute URL on this service, for Location headers."""
    return ctx.request.url_root.rstrip("/") + path


def no_content(headers: dict[str, str] | None = None, status: int = 204) -> flask.Response:
    response = flask.Response(status=status)
    del response.headers["Content-Type"]  # no body, so no media type
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


def latest(timestamps: Iterable[datetime.datetime | None]) -> datetime.datetime:
    """The newest of ``timestamps``, or now when there are none."""
    present = [t for t in timestamps if t is not None]
    return max(present) if present else utcnow()


def modified_at(row: Any) -> datetime.datetime:
    return row.updated_at or row.created_at


def min_version(major: int, minor: int) -> Callable:
    """Views decorated with this answer 404 below microversion ``major.minor``."""

    def decorate(view: Callable) -> Callable:
        def guarded(ctx: RequestContext, **kwargs: Any) -> Any:
            if not ctx.at_least(major, minor):
                raise errors.NotFound("The resource could not be found.")
            return view(ctx, **kwargs)

        guarded.__name__ = view.__name__
        guarded.__doc__ = view.__doc__
        return guarded

    return decorate
