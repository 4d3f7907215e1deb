"""HTTP helpers shared by the views: JSON bodies in, JSON responses out."""

import datetime
import functools
import json
import re
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
    """The request body as JSON; 415 for another media type, 400 if malformed.

    Also 400 (upstream: 500) for JSON nested too deeply to parse and for a lone
    UTF-16 surrogate, raw or escaped: no database can store one, and Python's
    ``json`` accepts both (it decodes bytes with ``surrogatepass``)."""
    refuse_other_media_types(ctx)
    raw = ctx.request.get_data(cache=True)
    try:
        data = json.loads(raw)
    except RecursionError as exc:
        raise errors.BadRequest("Malformed JSON: nested too deeply.") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.BadRequest(f"Malformed JSON: {exc}") from exc
    if _may_hold_surrogate(raw) and _holds_surrogate(data):
        raise errors.BadRequest("Malformed JSON: lone UTF-16 surrogates are not allowed.")
    return data


# A lone surrogate is written as an escape (\ud800-\udfff) or as its (invalid) UTF-8
# bytes ED A0-BF xx; a UTF-8 body with neither is not walked (UTF-16 and -32 bodies,
# which ``json`` recognises by NULs in the first bytes, always are).
_SURROGATE_HINT = re.compile(rb"\\[uU][dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _may_hold_surrogate(raw: bytes) -> bool:
    return b"\x00" in raw[:4] or _SURROGATE_HINT.search(raw) is not None


def _holds_surrogate(data: Any) -> bool:
    """True when a string (key or value) anywhere in decoded JSON holds a surrogate.
    Iterative, so a deep document cannot exhaust the stack here either."""
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _has_surrogate(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


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

    @functools.wraps(view)
    def guarded(ctx: RequestContext, **kwargs: Any) -> Any:
        refuse_other_media_types(ctx)
        return view(ctx, **kwargs)

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
    """Views decorated with this answer 404 below microversion ``major.minor``, which they
    carry as ``min_version`` (for the OpenAPI document)."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def guarded(ctx: RequestContext, **kwargs: Any) -> Any:
            if not ctx.at_least(major, minor):
                # Upstream's sentence, then which version the route needs: a newcomer
                # without the header otherwise sees a bare 404.
                raise errors.NotFound(
                    f"The resource could not be found. {ctx.request.method} "
                    f"{ctx.request.path} needs microversion {major}.{minor} or later "
                    f"(OpenStack-API-Version: placement {major}.{minor}, or latest)."
                )
            return view(ctx, **kwargs)

        guarded.min_version = (major, minor)  # type: ignore[attr-defined]
        return guarded

    return decorate
