"""How a route of ``routes`` is run: each view wrapped in one database transaction (a
write's committed when the view returns, rolled back when it raises; a read's rolled back,
having nothing to commit), run in its process's turn (``services.Services.serving_lock``),
but for the few that read nothing from the database (``Runs.WITHOUT_DATABASE``).

A request is run again from its start, in the same turn, when what stopped it wrote nothing
and may not stop it again (``_run``): its snapshot moved (PostgreSQL), its connection turned
out to be lost before its COMMIT (once), or it lost a race in MySQL. Connections are not
pinged as they leave the pool (``placement.db.engine``): a connection lost while pooled is
found by the request's first statement, and the request then runs on a new one."""

import logging
import random
import time

import flask
from sqlalchemy import Connection, RootTransaction
from sqlalchemy.exc import DBAPIError, OperationalError

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
            return _run(services, view, write, snapshot, kwargs)

    endpoint.__name__ = view.__name__
    return endpoint


# What stops a request, and whether it is run again from its start (an attempt that is run
# again wrote nothing: it ended before its COMMIT, or its COMMIT was refused):
#
# * ``SnapshotMoved`` (PostgreSQL, a read whose snapshot was deferred): what it read so far
#   and what it reads next would not be of one moment (``placement.db.snapshots``). Once
#   more, its snapshot opened before its first read.
# * Its connection lost before its COMMIT was sent (``DBAPIError.connection_invalidated``):
#   the database rolled its transaction back. Most often the connection was lost while it
#   waited in the pool (the database restarted, a Galera node failed over, a proxy or an
#   idle timeout closed it); SQLAlchemy has dropped it and the pool's older ones. Once
#   more, on a new connection; lost again, the database is unreachable: 503.
# * Its connection lost once its COMMIT was sent (``CommitUnanswered``): the database may
#   have applied it. Never run again: 503, as for an unreachable database.
# * A lost race on MySQL (a deadlock victim, or on Galera a write set that failed
#   certification, error 1213, after a concurrent commit through another node): nothing of
#   it was written, as upstream's oslo.db retries deadlocks. Up to ``CONTENTION_ATTEMPTS``
#   attempts in all, a short random wait before each; the last loss is a 409.
CONTENTION_ATTEMPTS = 4
CONTENTION_BACKOFF_S = 0.02


class CommitUnanswered(OperationalError):
    """The connection was lost once a write's COMMIT was sent: it may have been applied."""


def _run(services, view, write: bool, snapshot: bool, kwargs):
    deferred, reconnected, races_lost = True, False, 0
    while True:
        try:
            return _run_once(services, view, write, snapshot, deferred, kwargs)
        except SnapshotMoved:
            deferred = False
        except CommitUnanswered:
            raise
        except DBAPIError as exc:
            if exc.connection_invalidated and not reconnected:
                reconnected = True
                _log_running_again("lost its connection to the database", exc)
            elif mysql.lost_a_race(exc) and races_lost + 1 < CONTENTION_ATTEMPTS:
                races_lost += 1
                _log_running_again(f"lost a race in the database ({races_lost})", exc)
                time.sleep(random.uniform(0, CONTENTION_BACKOFF_S * races_lost))
            else:
                raise


def _log_running_again(why: str, exc: DBAPIError) -> None:
    LOG.info("Request %s %s, running it again: %s", flask.g.get("request_id"), why, exc.orig)


def _run_once(services, view, write: bool, snapshot: bool, deferred: bool, kwargs):
    with services.engine.connect() as conn:
        if write:
            conn = conn.execution_options(**{WRITE_TRANSACTION_OPTION: True})
            committed = False
            try:
                transaction = conn.begin()  # (rolled back as the connection closes, if open)
                answer = view(_context(conn, services), **kwargs)
                _commit(transaction)
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


def _commit(transaction: RootTransaction) -> None:
    try:
        transaction.commit()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        assert exc.orig is not None  # (the driver's error: SQLAlchemy's always has one)
        raise CommitUnanswered(
            exc.statement, exc.params, exc.orig, connection_invalidated=True
        ) from exc.orig


def _context(conn: Connection | None, services) -> RequestContext:
    return RequestContext(
        connection=conn,
        version=flask.g.version,
        request=flask.request,
        request_id=flask.g.request_id,
        services=services,
    )
