"""HTTP helpers shared by the views: JSON bodies in, JSON responses out."""

import datetime
import json
import re
from collections.abc import Callable, Iterable
from email.utils import format_datetime
from typing import Any

import flask
import marshmallow
import orjson
from microversion_parse import Version

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
    """415 unless the body is declared ``application/json``."""
    _refuse_other_media_types(ctx.request, ctx.version)


def _refuse_other_media_types(request: flask.Request, version: Version) -> None:
    """(Upstream's sentence names a missing type ``None``.)"""
    media_type = request.mimetype
    if media_type != JSON_TYPE:
        raise errors.UnsupportedMediaType(
            f"The media type {media_type or None} is not supported, use {JSON_TYPE}."
        )


# What a route refuses before policy is asked (it raises): the request and its version.
FirstCheck = Callable[[flask.Request, Version], None]


def checked_first(check: FirstCheck) -> Callable:
    """Views decorated with this refuse what ``check`` refuses before policy judges the
    request (``app``), as upstream's decorators refuse before its views ask policy: a
    client that may not use a route still learns that the route needs another version
    (404) or a JSON body (415). Stacked, the outer decorator's check runs first."""

    def decorate(view: Callable) -> Callable:
        view.checks_first = (check, *getattr(view, "checks_first", ()))  # type: ignore[attr-defined]
        return view

    return decorate


def checks_first(view: object) -> tuple[FirstCheck, ...]:
    """The checks ``checked_first`` gave ``view``, outermost first."""
    return getattr(view, "checks_first", ())


# Views decorated with this answer 415 to a body that is not JSON before they look
# anything up, as upstream's views that take a body do. Outside ``min_version`` where
# upstream checks the type first (aggregates), inside it elsewhere.
requires_json = checked_first(_refuse_other_media_types)


def requires_json_below(major: int, minor: int) -> Callable:
    """``requires_json`` below microversion ``major.minor`` only (a body that later
    versions no longer take)."""

    def refuse(request: flask.Request, version: Version) -> None:
        if version < (major, minor):
            _refuse_other_media_types(request, version)

    return checked_first(refuse)


def load_body(ctx: RequestContext, schema: marshmallow.Schema | marshmallow.fields.Field) -> Any:
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
    """Views decorated with this answer 404 below microversion ``major.minor`` (before
    policy: ``checked_first``), which they carry as ``min_version`` (for the OpenAPI
    document)."""

    def refuse(request: flask.Request, version: Version) -> None:
        if version < (major, minor):
            # Upstream's sentence, then which version the route needs: a newcomer
            # without the header otherwise sees a bare 404.
            raise errors.NotFound(
                f"The resource could not be found. {request.method} "
                f"{request.path} needs microversion {major}.{minor} or later "
                f"(OpenStack-API-Version: placement {major}.{minor}, or latest)."
            )

    def decorate(view: Callable) -> Callable:
        view.min_version = (major, minor)  # type: ignore[attr-defined]
        return checked_first(refuse)(view)

    return decorate
