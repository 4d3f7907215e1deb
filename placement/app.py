"""The application factory: ``create_app(config)`` builds the WSGI app.

Per request, in upstream's order (``before_request``): a request id
(``observability.request_log``),
the noauth2 loopback guard (403), authentication (401), microversion
negotiation (400/406), the Content-Length and Content-Type headers of a body
(400, 413 over ``max_request_body_mib``), routing (404/405),
the ``Accept`` check of the views that make it (406), the checks a view makes
before upstream's asks policy (``http.checked_first``: its microversion, 404 or
405, and its body's media type, 415), policy (403); then the view inside one
transaction (see routes);
the version, ``Vary`` and request-id headers on every response, and the request
counted in the metrics and logged (``after_request``); and one error handler that
answers every failure in the API's error format. The probes and /metrics are
answered outside the API: no microversion, no transaction.
"""

import functools
import gc
import html
import ipaddress
import json
import logging
import uuid

import flask
import psycopg
import pymysql
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from placement import auth, errors, microversion
from placement.config import Config, load_config
from placement.data.names import sync_standard_names
from placement.db import migrate, mysql
from placement.db.engine import WRITE_TRANSACTION_OPTION, make_engine, wait_until_reachable
from placement.endpoints import register_routes
from placement.handlers import k8s_scheduler
from placement.handlers import openapi as openapi_view
from placement.http import checks_first
from placement.observability import request_log
from placement.openapi.document import DocumentCache
from placement.policy import Policy
from placement.routes import (
    ANONYMOUS,
    METRICS,
    METRICS_PATH,
    OUTSIDE_THE_API,
    SCHEDULER_EXTENDER_ENDPOINT,
    scheduler_extender_routes,
)
from placement.services import Services

LOG = logging.getLogger(__name__)
REQUEST_ID_HEADER = request_log.REQUEST_ID_HEADER
# What keystonemiddleware lets by without a token: the root (as upstream), the probes
# and the documents (and the metrics when they are open: ``[metrics] unauthenticated``).
OPEN_PATHS = frozenset({"/", *OUTSIDE_THE_API})
NOT_FOUND = "The resource could not be found."
MIB = 1024 * 1024
# Seconds a client is asked to wait when the database cannot be reached.
DATABASE_RETRY_AFTER = "5"


def freeze_startup_objects() -> None:
    """Keep everything that exists once the app is built out of garbage collection.

    Modules, the app and SQLAlchemy's statement caches live as long as the
    process. Without this, every full collection traverses all of them again
    while a large answer (thousands of candidates, many small objects) is
    being built: tens of milliseconds per request. ``gc.freeze`` moves them to
    a permanent generation that collections skip. Called by the process entry
    points (``placement.wsgi``, ``placement serve``), not by ``create_app``.
    """
    gc.collect()
    gc.freeze()


def create_app(config: Config | None = None, engine: Engine | None = None) -> flask.Flask:
    config = config or load_config()
    for option in config.unused_options:
        LOG.warning(
            "Configuration: %s in %s is not used by this service", option, config.source_file
        )
    if engine is None:
        engine = make_engine(config.database_url, config.database())
        wait_until_reachable(engine, config.database())
    # Once, at start, on the connection ``wait_until_reachable`` has just opened (nothing
    # has had the time to close it): an error stops the process.
    migrate.require_current(engine)
    if engine.dialect.name == "mysql":
        with engine.connect() as conn:
            for warning in mysql.server_warnings(conn):
                LOG.warning("Database: %s", warning)
    # A write transaction from the start: several workers may sync at once.
    with engine.connect().execution_options(**{WRITE_TRANSACTION_OPTION: True}) as conn:
        with conn.begin():
            sync_standard_names(conn)

    app = flask.Flask("placement")
    # Werkzeug refuses a longer body (declared, or streamed in chunks) with a 413.
    app.config["MAX_CONTENT_LENGTH"] = config.max_request_body_mib * MIB
    app.extensions["placement"] = Services.build(config, engine)
    app.extensions[openapi_view.EXTENSION] = DocumentCache()
    if config.auth_strategy == "keystone":
        from placement import keystone  # (keystonemiddleware: loaded only to be used)

        assert config.source_file is not None  # enforced by Config
        app.wsgi_app = keystone.protect(  # type: ignore[method-assign]
            app.wsgi_app,
            config.source_file,
            OPEN_PATHS | ({METRICS_PATH} if config.metrics_unauthenticated else set()),
            # kube-scheduler sends no token: from its addresses, ``_admit_scheduler`` admits it.
            trusted_paths=set(scheduler_extender_routes(config.k8s_scheduler_prefix)),
            trusted=lambda environ: _is_scheduler_client(
                config.k8s_scheduler_clients, environ.get("REMOTE_ADDR")
            ),
        )
    register_routes(app, config.k8s_scheduler_prefix)
    app.before_request(_before_request)
    app.after_request(_after_request)
    app.register_error_handler(Exception, _handle_error)
    return app


def _before_request() -> None:
    request = flask.request
    request_log.begin(request)
    if request.path in OUTSIDE_THE_API:  # no token, no microversion: probes, documents
        return
    services = flask.current_app.extensions["placement"]
    if request.path == METRICS_PATH:
        _check_metrics_access(services, request)
        return
    if _is_scheduler_extender(request):
        _admit_scheduler(services, request)
        return
    _refuse_remote_noauth(services.config, request)
    try:
        flask.g.version = microversion.negotiate(request.headers)
        version_error = None
    except errors.PlacementError as exc:  # answered after authentication, as upstream
        version_error = exc
    anonymous = (request.method, request.path) in ANONYMOUS
    credentials = None if anonymous else services.authenticator.authenticate(request.headers)
    flask.g.credentials = credentials  # for the request's log line
    if version_error is not None:
        raise version_error
    _check_body_headers(request)
    if request.routing_exception is not None:
        raise request.routing_exception
    view = flask.current_app.view_functions.get(request.endpoint or "")
    if getattr(view, "checks_accept", False) and not _accepts_json(request):
        raise errors.NotAcceptable("Only application/json is provided.")
    for check in checks_first(view):  # the route's version and media type: 404, 405, 415
        check(request, flask.g.version)
    if credentials is not None:
        _authorize(services.policy, getattr(view, "policy_rule", None), credentials, request)
    if _has_nul(request):
        # No name or uuid contains NUL, and PostgreSQL cannot even compare with one.
        raise errors.BadRequest("NUL characters are not allowed in the URL.")


def _authorize(
    policy: Policy, rule: str | None, credentials: auth.Credentials, request: flask.Request
) -> None:
    """The policy's judgement of the route's rule, on upstream's target: the project the
    request is about (``GET /usages``: the one asked about), else the caller's own."""
    if rule is None:
        raise errors.Forbidden("Policy does not allow this request to be performed.")
    if request.path == "/usages":
        target = {"project_id": request.args.get("project_id")}
    else:
        target = {"project_id": credentials.project_id, "user_id": credentials.user_id}
    policy.authorize(rule, credentials.policy_values(), target)


def _is_scheduler_extender(request: flask.Request) -> bool:
    return (request.endpoint or "").startswith(SCHEDULER_EXTENDER_ENDPOINT)


def _admit_scheduler(services, request: flask.Request) -> None:
    """kube-scheduler sends no token (nor a microversion): its extender verbs are admitted
    without one from ``[k8s] scheduler_clients`` (loopback, or the TLS proxy that checked
    its client certificate); any other client needs a token that policy allows for the
    verb, as the API asks. Nothing else is opened: only these routes come here."""
    flask.g.version = microversion.negotiate({})
    _check_body_headers(request)
    config = services.config
    if _is_scheduler_client(config.k8s_scheduler_clients, request.environ.get("REMOTE_ADDR")):
        flask.g.credentials = None
        return
    _refuse_remote_noauth(config, request)
    credentials = services.authenticator.authenticate(request.headers)
    flask.g.credentials = credentials
    view = flask.current_app.view_functions[request.endpoint]  # type: ignore[index]
    _authorize(services.policy, getattr(view, "policy_rule", None), credentials, request)


def _is_scheduler_client(networks: tuple[str, ...], address: str | None) -> bool:
    """Whether ``address`` is in one of ``networks`` (a Unix socket, without an address, is
    this host: admitted unless ``networks`` is empty)."""
    if not address:
        return bool(networks)
    try:
        client = ipaddress.ip_address(address)
    except ValueError:
        return False
    client = getattr(client, "ipv4_mapped", None) or client
    return any(client in network for network in _networks(networks))


@functools.lru_cache(maxsize=8)
def _networks(networks: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def _check_metrics_access(services, request: flask.Request) -> None:
    """/metrics needs a token that policy allows to read the metrics (401, 403), unless
    ``[metrics] unauthenticated`` opens it to every client (even a remote one under
    noauth2, whose tokens are not trusted: none is asked for)."""
    if services.config.metrics_unauthenticated:
        return
    _refuse_remote_noauth(services.config, request)
    credentials = services.authenticator.authenticate(request.headers)
    flask.g.credentials = credentials
    if request.routing_exception is not None:  # a method other than GET or HEAD: 405
        raise request.routing_exception
    _authorize(services.policy, METRICS.rule, credentials, request)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    # A dual-stack socket reports an IPv4 client as ::ffff:a.b.c.d.
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def _refuse_remote_noauth(config: Config, request: flask.Request) -> None:
    """noauth2 makes anyone who sends the token ``admin`` an administrator, so it
    answers only clients on loopback (or a Unix socket, which has no address)
    unless ``allow_noauth_on_public_address`` says otherwise. Checked here, not
    where a server binds, so that every entry point (``placement serve``,
    ``placement.wsgi:application`` in any WSGI server) is guarded."""
    if config.auth_strategy != "noauth2" or config.allow_noauth_on_public_address:
        return
    remote = request.environ.get("REMOTE_ADDR") or ""
    if remote and not is_loopback(remote):
        LOG.warning("Refused %s: auth_strategy = noauth2 serves loopback clients only", remote)
        raise errors.Forbidden(
            "auth_strategy = noauth2 answers loopback clients only; configure "
            "auth_strategy = token or allow_noauth_on_public_address."
        )


def _check_body_headers(request: flask.Request) -> None:
    """A Content-Length must be an integer, and a body must say its Content-Type.
    Upstream checks this before routing, in these words."""
    length = request.environ.get("CONTENT_LENGTH")
    if not length:
        return
    try:
        has_body = int(length) > 0
    except ValueError:
        raise errors.BadRequest("content-length header must be an integer") from None
    limit = request.max_content_length
    if limit is not None and int(length) > limit:
        raise RequestEntityTooLarge()
    if has_body and not request.environ.get("CONTENT_TYPE"):
        raise errors.BadRequest("content-type header required when content-length > 0")


def _accepts_json(request: flask.Request) -> bool:
    return not request.accept_mimetypes or request.accept_mimetypes.accept_json


def _has_nul(request: flask.Request) -> bool:
    if "\x00" in request.path:
        return True
    return any("\x00" in key or "\x00" in value for key, value in request.args.items(multi=True))


def _after_request(response: flask.Response) -> flask.Response:
    version = flask.g.get("version")
    if version is not None:
        response.headers[microversion.HEADER] = f"{microversion.SERVICE_TYPE} {version}"
    # Spelled as upstream sends it (its suite and caches compare the value).
    response.vary.add(microversion.HEADER.lower())
    if "request_id" in flask.g:
        response.headers[REQUEST_ID_HEADER] = flask.g.request_id
    request_log.finish(response, flask.current_app.extensions["placement"].metrics)
    return response


def _handle_error(exc: Exception) -> flask.Response:
    if not isinstance(exc, errors.PlacementError):
        exc = _as_placement_error(exc)
    if _is_scheduler_extender(flask.request):
        return k8s_scheduler.error_response(exc)
    if "request_id" not in flask.g:
        flask.g.request_id = f"req-{uuid.uuid4()}"
    body = {
        "status": int(exc.status),
        "title": exc.title,
        "detail": exc.detail,
        "request_id": flask.g.request_id,
        **exc.extra,
    }
    version = flask.g.get("version")
    if version is not None and version >= (1, 23):
        body["code"] = exc.code
    if _prefers_html(flask.request):
        response = flask.Response(_html_error(exc), status=int(exc.status), mimetype="text/html")
    else:
        response = flask.Response(
            json.dumps({"errors": [body]}), status=int(exc.status), mimetype="application/json"
        )
    for key, value in exc.headers.items():
        response.headers[key] = value
    return response


def _prefers_html(request: flask.Request) -> bool:
    """An ``Accept`` that ranks HTML above JSON (a browser's) gets errors in HTML, as
    upstream's (webob's) are; no ``Accept``, ``*/*`` or JSON get the JSON format."""
    if "Accept" not in request.headers:
        return False
    offered = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return offered == "text/html"


def _html_error(exc: errors.PlacementError) -> str:
    heading = f"{int(exc.status)} {html.escape(exc.title)}"
    return (
        f"<html>\n <head>\n  <title>{heading}</title>\n </head>\n <body>\n"
        f"  <h1>{heading}</h1>\n  {html.escape(exc.detail)}<br /><br />\n </body>\n</html>"
    )


def _as_placement_error(exc: Exception) -> errors.PlacementError:
    if isinstance(exc, RequestEntityTooLarge):
        limit = flask.current_app.extensions["placement"].config.max_request_body_mib
        error = errors.PlacementError(f"The request body is larger than {limit} MiB.")
        error.status = 413
        return error
    if isinstance(exc, HTTPException):
        # An unknown route in upstream's words (Werkzeug's: "The requested URL...").
        detail = NOT_FOUND if exc.code == 404 else exc.description or exc.name
        error = errors.PlacementError(detail)
        error.status = exc.code or 500
        if exc.code == 405 and exc.valid_methods:  # type: ignore[attr-defined]
            # The routes' own methods, as upstream lists them (HEAD, which every GET
            # route also answers, is left out like upstream's).
            allowed = [m for m in exc.valid_methods if m != "HEAD"]  # type: ignore[attr-defined]
            error.headers["Allow"] = ", ".join(allowed)
            error.detail = f"The method {flask.request.method} is not allowed for this resource."
        return error
    if isinstance(exc, DRIVER_ERRORS):
        # A driver's error SQLAlchemy did not wrap (raised where it works on the DBAPI
        # connection itself, as when it sets an isolation level): read as the wrapped ones.
        exc = DBAPIError.instance(None, None, exc, Exception)
    if isinstance(exc, DBAPIError) and _is_contention(exc):
        # A deadlock victim, a serialization failure or a lock wait that timed out:
        # nothing was written (the transaction rolled back) and a retry may succeed.
        LOG.warning("Database contention in request %s: %s", flask.g.get("request_id"), exc)
        return errors.ConcurrentUpdate(
            "Another request changed the same data at the same time; retry the request."
        )
    if isinstance(exc, DBAPIError) and _is_unreachable(exc):
        # The database is down or restarting. The pool drops the broken connection
        # and those opened before it, so a later request reconnects by itself.
        LOG.error("Database unreachable in request %s: %s", flask.g.get("request_id"), exc)
        error = errors.PlacementError("The database cannot be reached; retry the request later.")
        error.status = 503
        error.headers["Retry-After"] = DATABASE_RETRY_AFTER
        return error
    LOG.exception("Unexpected error in request %s", flask.g.get("request_id"))
    return errors.InternalServerError("An unexpected error occurred; see the service log.")


DRIVER_ERRORS = (pymysql.err.Error, psycopg.Error)
# PostgreSQL SQLSTATEs: serialization_failure, deadlock_detected, lock_not_available.
CONTENTION_SQLSTATES = frozenset({"40001", "40P01", "55P03"})


def _is_contention(exc: DBAPIError) -> bool:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in CONTENTION_SQLSTATES or mysql.lost_a_race(exc):
        return True
    return "database is locked" in str(exc.orig)


def _is_unreachable(exc: DBAPIError) -> bool:
    """A connection that could not be made or was lost, as opposed to a statement the
    database refused: psycopg reports the former without a SQLSTATE, or with class 08
    (connection exception) or 57P01-57P03 (shutdown, cannot connect now)."""
    if exc.connection_invalidated or mysql.is_unreachable(exc.orig):
        return True
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    if not hasattr(exc.orig, "sqlstate"):  # SQLite: a file, never unreachable but missing
        return "unable to open database file" in str(exc.orig)
    sqlstate = getattr(exc.orig, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in UNREACHABLE_SQLSTATES


UNREACHABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
