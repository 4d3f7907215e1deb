"""Each request's ids and its one log line; how a process writes its log (text or JSON).

Request ids as oslo.middleware's ``RequestId`` and oslo.context give them: every
request gets its own local id, ``req-<uuid4>`` (``flask.g.request_id``, answered in
``X-Openstack-Request-Id`` and in error bodies). A client that sends
``X-Openstack-Request-Id`` with a ``req-<uuid>`` of its own (nova passing on the id of
the user's request) has it kept as the request's global id
(``flask.g.global_request_id``), logged beside the local one; any other value is
ignored (never logged or echoed: it is the client's text).

``begin`` and ``finish`` are the application's first and last hooks of a request:
``finish`` counts the request in the metrics and logs one line at INFO on the
``placement.requests`` logger: method, route template, path, status, duration, both
ids, user and project (from ``flask.g.credentials`` when the request was
authenticated) and the client's address. Never a token or a header's value.

``configure_logging`` is called where a process starts (``placement`` commands,
``placement.wsgi``), never on import: it writes every record to standard error in
the configured format, with the ids of the request it was logged in.
"""

import datetime
import json
import logging
import re
import time
import uuid
from typing import Protocol

import flask

from placement.config import Config

LOG = logging.getLogger("placement.requests")
REQUEST_ID_HEADER = "X-Openstack-Request-Id"
# oslo.middleware's format of an inbound global request id.
GLOBAL_REQUEST_ID = re.compile(r"req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}")
UNMATCHED_ROUTE = "unmatched"  # the route of a request no route matched (404, 405)
TEXT_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s %(request_ids)s%(message)s"


class RequestRecorder(Protocol):
    def request_finished(self, route: str, method: str, status: int, seconds: float) -> None: ...


def begin(request: flask.Request) -> None:
    """The request's clock and ids, before anything may refuse it."""
    flask.g.request_started = time.perf_counter()
    flask.g.request_id = f"req-{uuid.uuid4()}"
    flask.g.global_request_id = global_request_id(request.headers.get(REQUEST_ID_HEADER))


def global_request_id(sent: str | None) -> str | None:
    """The ``X-Openstack-Request-Id`` a client sent if it is a ``req-<uuid>``, else None."""
    return sent if sent is not None and GLOBAL_REQUEST_ID.fullmatch(sent) else None


def finish(response: flask.Response, metrics: RequestRecorder) -> None:
    """Count the request and log its line."""
    request = flask.request
    rule = request.url_rule
    route = rule.rule if rule is not None else UNMATCHED_ROUTE
    seconds = time.perf_counter() - flask.g.get("request_started", time.perf_counter())
    metrics.request_finished(route, request.method, response.status_code, seconds)
    if not LOG.isEnabledFor(logging.INFO):
        return
    credentials = flask.g.get("credentials")
    fields = {
        "method": request.method,
        "route": route,
        "path": request.path,
        "status": response.status_code,
        "duration_ms": round(seconds * 1000, 1),
        "request_id": flask.g.get("request_id"),
        "global_request_id": flask.g.get("global_request_id"),
        "user_id": credentials.user_id if credentials is not None else None,
        "project_id": credentials.project_id if credentials is not None else None,
        "client": request.remote_addr,
    }
    LOG.info(
        "%s %s %d %.1f ms (route %s, user %s, project %s, client %s)",
        fields["method"],
        fields["path"],
        fields["status"],
        fields["duration_ms"],
        route,
        fields["user_id"] or "-",
        fields["project_id"] or "-",
        fields["client"] or "-",
        extra={"request_fields": fields},
    )


class RequestIds(logging.Filter):
    """Gives every record the ids of the request it is logged in (None outside one):
    ``request_id``, ``global_request_id``, and for the text format ``request_ids``."""

    def filter(self, record: logging.LogRecord) -> bool:
        local = global_ = None
        if flask.has_request_context():
            local = flask.g.get("request_id")
            global_ = flask.g.get("global_request_id")
        record.request_id, record.global_request_id = local, global_
        ids = " ".join(filter(None, (local, global_)))
        record.request_ids = f"[{ids}] " if ids else ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ISO-8601 timestamp (UTC), level, logger, process,
    message, the request's ids, the request line's fields and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "timestamp": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        for name in ("request_id", "global_request_id"):
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        entry.update(getattr(record, "request_fields", {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class _ServiceHandler(logging.StreamHandler):
    """The handler ``configure_logging`` installs (and replaces when called again)."""


def configure_logging(config: Config) -> None:
    """Log every record at ``[logging] level`` or above to standard error, in
    ``[logging] format`` (again: in place of the last call's). Nothing when the process
    configured its logging itself (gunicorn's ``--log-config``, a test runner), as
    ``logging.basicConfig``."""
    root = logging.getLogger()
    if any(not isinstance(handler, _ServiceHandler) for handler in root.handlers):
        return
    handler = _ServiceHandler()
    if config.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RequestIds())
    root.handlers.clear()
    root.addHandler(handler)
    root.setLevel(config.log_level.upper())
