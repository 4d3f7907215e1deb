"""The document, built by apispec's MarshmallowPlugin: one path per route of ``routes``,
one operation per method, and the components they share (the error format, the
microversion header, the token)."""

import json
import re
import threading
from collections.abc import Callable

import marshmallow
from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin, resolver
from marshmallow import fields

from placement import microversion
from placement.openapi import operations
from placement.routes import (
    ACCEPT_CHECKED_VIEWS,
    ANONYMOUS,
    METRICS_PATH,
    OUTSIDE_THE_API,
    ROUTES,
    Empty,
    scheduler_extender_routes,
)
from placement.schemas.fields import (
    StrictDict,
    StrictInteger,
    StrictList,
    StrictNumber,
    StrictString,
    UuidString,
)

OPENAPI_VERSION = "3.1.0"
TOKEN_SCHEME = "token"
MICROVERSION_PARAMETER = "Microversion"
JSON = "application/json"
FLASK_VARIABLE = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
# Path parameters that name a uuid (any other is a name).
UUID_PARAMETERS = frozenset({"uuid", "consumer_uuid"})

# Answers every API request may get (401: but the anonymous ones), shared as components.
GENERIC_ERRORS = {
    401: ("Unauthorized", "No token, or one that is not known."),
    403: (
        "Forbidden",
        "Policy refuses the request (under noauth2, also any client not on loopback).",
    ),
}

VERSIONS = f"{microversion.min_version_string()} to {microversion.max_version_string()}"
DESCRIPTION = f"""\
A resource placement service, API-compatible with OpenStack Placement (microversions
{VERSIONS}), with its own group-resource and device routes under /group_resources.

A request chooses its microversion with the header `OpenStack-API-Version: placement 1.x` (or
`latest`); without it, 1.0. Request bodies and answers vary by microversion: each request body
here is that of the latest one, and api-ref/ (one page per noun, named by each operation's tag)
describes every body and answer field by field. Every error is answered as
`{{"errors": [{{"status", "title", "detail", "code", "request_id"}}]}}` (`code` from 1.23).

The probes (/healthcheck, /healthcheck/ready) and this document (/openapi.json) are outside the
API: no token, no microversion.
"""


class Error(marshmallow.Schema):
    """One error of an error answer; some carry more members (a 406 for the microversion:
    ``min_version`` and ``max_version``)."""

    class Meta:
        unknown = marshmallow.INCLUDE

    status = fields.Integer(required=True, metadata={"description": "The HTTP status."})
    title = fields.String(required=True, metadata={"description": "The status's phrase."})
    detail = fields.String(required=True, metadata={"description": "What went wrong."})
    code = fields.String(
        metadata={"description": "From microversion 1.23: e.g. `placement.concurrent_update`."}
    )
    request_id = fields.String(required=True, metadata={"description": "req-<uuid>"})


class Errors(marshmallow.Schema):
    """The body of every error answer (``app._handle_error``)."""

    errors = fields.List(fields.Nested(Error), required=True)


class DocumentCache:
    """An application's document as served: built at its first request, not by
    ``create_app`` (most applications, a test's, never serve it), then kept. Under the
    lock, as the threads of a worker may ask at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._text: bytes | None = None

    def text(self) -> bytes:
        with self._lock:
            if self._text is None:
                self._text = render().encode()
            return self._text


def render() -> str:
    """The document as JSON text: keys sorted, so that it is the same on every run."""
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def build() -> dict:
    plugin = MarshmallowPlugin(schema_name_resolver=_schema_name)
    spec = APISpec(
        title="placement",
        version=microversion.max_version_string(),
        openapi_version=OPENAPI_VERSION,
        plugins=[plugin],
        info={"description": DESCRIPTION},
        security=[{TOKEN_SCHEME: []}],
    )
    converter = plugin.converter
    assert converter is not None  # set by APISpec
    _teach_strict_fields(converter)
    spec.components.schema("Errors", schema=Errors)
    for status, (name, text) in GENERIC_ERRORS.items():
        spec.components.response(name, _answers({status: text})[str(status)])
    spec.components.security_scheme(
        TOKEN_SCHEME,
        {
            "type": "apiKey",
            "in": "header",
            "name": "X-Auth-Token",
            "description": "Under `auth_strategy = token` also `Authorization: Bearer <token>`.",
        },
    )
    spec.components.parameter(
        MICROVERSION_PARAMETER,
        "header",
        {
            "name": microversion.HEADER,
            "required": False,
            "schema": {"type": "string", "default": "placement 1.0"},
            "example": f"placement {microversion.max_version_string()}",
            "description": "`placement 1.x` or `placement latest`; without it, 1.0.",
        },
    )
    bodies = {
        view: body if isinstance(body, marshmallow.Schema) else converter.field2property(body)
        for view, body in operations.request_bodies().items()
    }
    for path, methods in ROUTES.items():
        by_method = {
            method: _operation(path, method, view, bodies.get(view))
            for method, view in methods.items()
        }
        _add_path(spec, path, by_method)
    for path, methods in scheduler_extender_routes().items():
        _add_path(
            spec,
            path,
            {
                method: _extender_operation(path, view, bodies[view])
                for method, view in methods.items()
            },
        )
    for path, outside in OUTSIDE_THE_API.items():
        _add_path(spec, path, {"GET": _outside_operation(outside.view)})
    _add_path(spec, METRICS_PATH, {"GET": METRICS_OPERATION})
    for tag in sorted({operations.page(view) for view in _all_views()}):
        spec.tag({"name": tag, "description": f"api-ref/{tag}.md"})
    return spec.to_dict()


def _schema_name(schema) -> str:
    """A schema's component name: its class's, without a private class's underscore."""
    return resolver(schema).lstrip("_")


def _all_views() -> list[Callable]:
    routes = [*ROUTES.values(), *scheduler_extender_routes().values()]
    return [view for methods in routes for view in methods.values()] + [
        outside.view for outside in OUTSIDE_THE_API.values()
    ]


def openapi_path(path: str) -> str:
    """A Flask rule (``/x/<uuid>``) as an OpenAPI path (``/x/{uuid}``)."""
    return FLASK_VARIABLE.sub(r"{\1}", path)


def _add_path(spec: APISpec, path: str, by_method: dict[str, dict]) -> None:
    parameters = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "format": "uuid"}
            if name in UUID_PARAMETERS
            else {"type": "string"},
        }
        for name in FLASK_VARIABLE.findall(path)
    ]
    spec.path(
        path=openapi_path(path),
        operations={method.lower(): operation for method, operation in by_method.items()},
        parameters=parameters,
    )


def _operation(
    path: str, method: str, view: Callable, body: marshmallow.Schema | dict | None
) -> dict:
    since = getattr(view, "min_version", microversion.MIN_VERSION)
    notes = [f"Available from microversion {since[0]}.{since[1]}."]
    operation: dict = {
        "operationId": operation_id(view),
        "tags": [operations.page(view)],
        "parameters": [MICROVERSION_PARAMETER],
        "responses": _responses(method, path, view, since, takes_body=body is not None),
    }
    if body is not None:
        notes.append(
            f"The request body is that of microversion {microversion.max_version_string()}; "
            f"it varies by microversion (api-ref/{operations.page(view)}.md)."
        )
        operation["requestBody"] = {"required": True, "content": {JSON: {"schema": body}}}
    if (method, path) in ANONYMOUS:
        operation["security"] = []
        notes.append("No token needed.")
    operation["description"] = " ".join(notes)
    return operation


def _outside_operation(view: Callable) -> dict:
    return {
        "operationId": operation_id(view),
        "tags": [operations.page(view)],
        "security": [],
        "description": "Outside the API: no token, no microversion (HEAD answers as GET).",
        "responses": _answers(operations.ANSWERS[view]),
    }


def _extender_operation(path: str, view: Callable, body: marshmallow.Schema | dict) -> dict:
    """A kube-scheduler extender verb (``app._admit_scheduler``): no microversion; no token
    from ``[k8s] scheduler_clients``, a token policy allows from others; errors are the
    protocol's ``Error`` field."""
    answers = {
        **operations.ANSWERS[view],
        **{status: text for status, (_name, text) in GENERIC_ERRORS.items()},
    }
    responses = _answers(answers)
    for status, response in responses.items():
        if int(status) >= 400:
            response["content"] = {JSON: {"schema": EXTENDER_ERROR}}
    return {
        "operationId": f"{operations.page(view)}.{path.rpartition('/')[2]}",
        "tags": [operations.page(view)],
        "security": [{}, {TOKEN_SCHEME: []}],
        "description": (
            "kube-scheduler's extender protocol, at the default [k8s] scheduler_prefix. "
            "No token from [k8s] scheduler_clients (loopback by default), else a token "
            "that policy allows; no microversion."
        ),
        "requestBody": {"required": True, "content": {JSON: {"schema": body}}},
        "responses": responses,
    }


EXTENDER_ERROR = {"type": "object", "properties": {"Error": {"type": "string"}}}


# /metrics: outside the API as the probes are, but protected (``app._check_metrics_access``).
METRICS_OPERATION = {
    "operationId": "metrics.show",
    "tags": ["root"],
    "description": (
        "Outside the API: no microversion (HEAD answers as GET). Needs a token that the "
        "policy rule placement:metrics:show allows, unless [metrics] unauthenticated."
    ),
    "responses": {
        "200": {
            "description": "Every metric, in Prometheus' text format.",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        "401": {"description": "No valid token.", "content": {JSON: {"schema": Errors}}},
        "403": {"description": "The policy refuses.", "content": {JSON: {"schema": Errors}}},
    },
}


def operation_id(view: Callable) -> str:
    return f"{view.__module__.rpartition('.')[2]}.{view.__name__}"


def _responses(
    method: str, path: str, view: Callable, since: tuple[int, int], takes_body: bool
) -> dict:
    """The view's own answers (``operations.ANSWERS``), and those of the request's way to
    it (``app._before_request``): 400 for a malformed microversion header, 401 without a
    valid token, 403 when policy refuses, 406 for a microversion out of range (or an
    ``Accept`` without JSON where the view checks it), 404 below the view's microversion,
    415 for a body that is not JSON."""
    answers = {status: [text] for status, text in operations.ANSWERS[view].items()}

    def add(status: int, text: str) -> None:
        answers.setdefault(status, []).append(text)

    add(400, "A malformed OpenStack-API-Version header.")
    add(
        406,
        "A microversion outside the supported range"
        + (", or an Accept header without JSON." if view in ACCEPT_CHECKED_VIEWS else "."),
    )
    if since > microversion.MIN_VERSION:
        add(404, f"A microversion below {since[0]}.{since[1]}.")
    if takes_body:
        add(415, "The body is not application/json.")
    responses = _answers(
        # The view's own description first, of its kind (an answer without a body).
        {status: type(texts[0])(" ".join(texts)) for status, texts in answers.items()}
    )
    for status, (name, _text) in GENERIC_ERRORS.items():
        if status != 401 or (method, path) not in ANONYMOUS:
            responses[str(status)] = name
    return responses


def _answers(answers: dict[int, str]) -> dict:
    responses = {}
    for status, text in sorted(answers.items()):
        response: dict = {"description": text}
        if status >= 400:
            response["content"] = {JSON: {"schema": Errors}}
        elif not isinstance(text, Empty):
            response["content"] = {JSON: {"schema": {"type": "object"}}}
        responses[str(status)] = response
    return responses


def _teach_strict_fields(converter) -> None:
    """Show apispec the JSON type of ``placement.schemas.fields``' own field classes and
    the rules they keep as attributes (it reads marshmallow's validators by itself). The
    mapping is this converter's own: apispec's method would change its module's table."""
    converter.field_mapping = {
        **converter.field_mapping,
        UuidString: ("string", "uuid"),
        StrictNumber: ("number", None),
    }
    converter.add_attribute_function(_strict_rules)


def _strict_rules(self, field: fields.Field, **kwargs) -> dict:
    """The JSON Schema rules of one of ``placement.schemas.fields``' strict fields (bound
    to apispec's converter, ``self``)."""
    if isinstance(field, StrictInteger):
        return _present(minimum=field.minimum, maximum=field.maximum)
    if isinstance(field, StrictNumber):
        return _present(exclusiveMinimum=field.minimum, maximum=field.maximum)
    if isinstance(field, StrictString):
        pattern = field.pattern.pattern if field.pattern is not None else None
        if pattern is not None and not (pattern.startswith("^") and pattern.endswith("$")):
            pattern = f"^(?:{pattern})$"  # the field matches it whole
        return _present(minLength=field.min_length, maxLength=field.max_length, pattern=pattern)
    if isinstance(field, StrictList):
        return _present(minItems=field.min_items or None, uniqueItems=field.unique or None)
    if isinstance(field, StrictDict):
        rules = _present(minProperties=field.min_properties or None)
        if field.key_pattern is not None and field.other_keys != "load":
            values = self.field2property(field.value_field) if field.value_field else {}
            rules["patternProperties"] = {field.key_pattern: values}
            # Other keys: refused, or kept unchecked.
            rules["additionalProperties"] = False if field.other_keys == "refuse" else {}
        return rules
    return {}


def _present(**rules) -> dict:
    return {name: value for name, value in rules.items() if value is not None}
