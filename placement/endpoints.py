"""How a route of ``routes`` is run: each view wrapped in one database transaction (a
write's committed when the view returns, rolled back when it raises; a read's rolled back,
having nothing to commit), run in its process's turn (``services.Services.serving_lock``),
but for the few that read nothing from the database (``Runs.WITHOUT_DATABASE``). A write that
lost a race in MySQL is run again from its start."""

import logging
import random
import time

import flask
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from placement.context import RequestContext
from placement.db import mysql
from placement.db.engine import WRITE_TRANSACTION_OPTION, reading_statement_by_statement
from placement.db.snapshots import SnapshotMoved, reading_one_snapshot
from placement.http import checks_first
from placement.k8s import DEFAULT_SCHEDULER_PREFIX
from placement.routes import (
    API,
    METRICS,
    METRICS_PATH,
    OUTSIDE_THE_API,
    READ_METHODS,
    SCHEDULER_EXTENDER_ENDPOINT,
    Runs,
    scheduler_extender_api,
)

LOG = logging.getLogger(__name__)


def register_routes(app: flask.Flask, scheduler_prefix: str = DEFAULT_SCHEDULER_PREFIX) -> None:
    """Every route of ``routes`` on ``app``. An API endpoint carries what the checks before
    its view need: ``policy_rule``, ``checks_accept`` and ``checks_first``."""
    for path, outside in OUTSIDE_THE_API.items():
        app.add_url_rule(path, endpoint=f"outside {path}", view_func=outside.view, methods=["GET"])
    app.add_url_rule(METRICS_PATH, endpoint="metrics", view_func=METRICS.view, methods=["GET"])
    extender = scheduler_extender_api(scheduler_prefix)
    for path, methods in [*API.items(), *extender.items()]:
        kind = SCHEDULER_EXTENDER_ENDPOINT if path in extender else ""
        for method, route in methods.items():
            writes = method not in READ_METHODS and Runs.READS_ONLY not in route.runs
            if Runs.WITHOUT_DATABASE in route.runs:
                endpoint = _without_database(route.view)
            else:
                endpoint = _transactional(
                    route.view, write=writes, snapshot=Runs.ONE_SNAPSHOT in route.runs
                )
            endpoint.checks_accept = (  # type: ignore[attr-defined]
                Runs.CHECKS_ACCEPT in route.runs
            )
            endpoint.checks_first = checks_first(route.view)  # type: ignore[attr-defined]
            endpoint.policy_rule = route.rule  # type: ignore[attr-defined]
            app.add_url_rule(
                path,
                endpoint=f"{kind}{method} {path}",
                view_func=endpoint,
                methods=[method],
                provide_automatic_options=False,
            )


def _without_database(view):
    def endpoint(**kwargs):
        return view(_context(None, flask.current_app.extensions["placement"]), **kwargs)

    endpoint.__name__ = view.__name__
    return endpoint


def _transactional(view, write: bool, snapshot: bool = False):
    def endpoint(**kwargs):
        services = flask.current_app.extensions["placement"]
        # The whole body first (kept for the view), then this process's turn: see
        # ``Services.serving_lock``.
        flask.request.get_data(cache=True)
        with services.serving_lock:
            deferred = True
            for attempt in range(1, CONTENTION_ATTEMPTS + 1):
                try:
                    return _run_once(services, view, write, snapshot, deferred, kwargs)
                except SnapshotMoved:
                    # What the request read so far and what it reads next would not be of
                    # one moment (``placement.db.snapshots``): once more, in one snapshot.
                    deferred = False
                    continue
                except DBAPIError as exc:
                    if not _retried_on_contention(exc, attempt):
                        raise
                    time.sleep(random.uniform(0, CONTENTION_BACKOFF_S * attempt))
        raise AssertionError("unreachable")  # the last attempt returns or raises

    endpoint.__name__ = view.__name__
    return endpoint


# On MySQL a request whose transaction lost to another (a deadlock victim, or on Galera
# a write set that failed certification at commit, error 1213, after a concurrent
# commit through another node) is run again from its start, as upstream's oslo.db
# retries deadlocks: nothing of the lost attempt was written. The last loss is a 409.
CONTENTION_ATTEMPTS = 4
CONTENTION_BACKOFF_S = 0.02


def _retried_on_contention(exc: DBAPIError, attempt: int) -> bool:
    if attempt >= CONTENTION_ATTEMPTS or not mysql.lost_a_race(exc):
        return False
    LOG.info(
        "Request %s lost a race in the database (attempt %d), running it again: %s",
        flask.g.get("request_id"),
        attempt,
        exc.orig,
    )
    return True


def _run_once(services, view, write: bool, snapshot: bool, deferred: bool, kwargs):
    with services.engine.connect() as conn:
        if write:
            conn = conn.execution_options(**{WRITE_TRANSACTION_OPTION: True})
            committed = False
            try:
                with conn.begin():
                    answer = view(_context(conn, services), **kwargs)
                committed = True
                return answer
            finally:
                services.replica.write_ended(committed)
        if snapshot:
            conn = reading_one_snapshot(conn, deferred)
        else:
            conn = reading_statement_by_statement(conn)
        # A read has nothing to commit: its transaction is rolled back as the connection
        # goes back to the pool, which then has nothing left to reset (a COMMIT, then the
        # pool's ROLLBACK, were two round trips on MySQL).
        conn.begin()
        return view(_context(conn, services), **kwargs)


def _context(conn: Connection | None, services) -> RequestContext:
    return RequestContext(
        connection=conn,
        version=flask.g.version,
        request=flask.request,
        request_id=flask.g.request_id,
        services=services,
    )
