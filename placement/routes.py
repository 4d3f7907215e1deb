"""Every URL and method the service answers, in one table (``API``), each with how it runs.

Each view takes a RequestContext first. ``register_routes`` wraps each view in
one database transaction (a write's committed when the view returns, rolled back
when it raises; a read's rolled back, having nothing to commit), run in its
process's turn (``services.Services.serving_lock``), but for the few that read
nothing from the database (``WITHOUT_DATABASE``). Methods missing from a URL's
entry get an automatic 405.
"""

import enum
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import flask
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from placement.context import RequestContext
from placement.db import mysql
from placement.db.engine import (
    WRITE_TRANSACTION_OPTION,
    reading_one_snapshot,
    reading_statement_by_statement,
)
from placement.handlers import (
    aggregate,
    allocation,
    allocation_candidate,
    devices,
    gangs,
    group_resources,
    health,
    inventory,
    k8s_scheduler,
    metrics,
    openapi,
    reshaper,
    resource_class,
    resource_provider,
    root,
    trait,
    usage,
)
from placement.http import checks_first
from placement.k8s import DEFAULT_SCHEDULER_PREFIX

LOG = logging.getLogger(__name__)
READ_METHODS = frozenset({"GET", "HEAD"})
# The API's requests answered without a token: the version document.
ANONYMOUS = frozenset({("GET", "/"), ("HEAD", "/")})


class Runs(enum.Flag):
    """How a route's view runs, besides in one transaction of its own."""

    WRITES = 0  # a write transaction (every method but GET and HEAD, unless READS_ONLY)
    # A POST that only reads (a body too rich for a query string): a read transaction,
    # which on SQLite does not take the database's one write lock.
    READS_ONLY = enum.auto()
    # Several reads that must see one snapshot of the database. SQLite's transactions
    # always do; PostgreSQL's at READ COMMITTED see each statement's own. The reads of
    # the copy of the providers: what they answer is what the database held at their start.
    ONE_SNAPSHOT = enum.auto()
    # A GET answered 406 for an ``Accept`` without JSON, before policy, as upstream's
    # (its root, GET /traits/{name} and every write ignore ``Accept``).
    CHECKS_ACCEPT = enum.auto()
    # Reads nothing from the database (the version document): runs without a connection,
    # whose checkout alone would ping the database, and without a transaction.
    WITHOUT_DATABASE = enum.auto()


@dataclass(frozen=True)
class Route:
    """One method of one URL: its view, and how it runs."""

    view: Callable
    runs: Runs = Runs.WRITES


READ = Runs.CHECKS_ACCEPT
SNAPSHOT_READ = Runs.CHECKS_ACCEPT | Runs.ONE_SNAPSHOT
SEARCH = Runs.READS_ONLY | Runs.ONE_SNAPSHOT  # a POST that searches

API: dict[str, dict[str, Route]] = {
    "/": {"GET": Route(root.home, Runs.WITHOUT_DATABASE)},
    "/resource_providers": {
        "GET": Route(resource_provider.list_providers, READ),
        "POST": Route(resource_provider.create_provider),
    },
    "/resource_providers/<uuid>": {
        "GET": Route(resource_provider.show_provider, READ),
        "PUT": Route(resource_provider.update_provider),
        "DELETE": Route(resource_provider.delete_provider),
    },
    "/resource_providers/<uuid>/inventories": {
        "GET": Route(inventory.list_inventories, READ),
        "POST": Route(inventory.create_inventory),
        "PUT": Route(inventory.replace_inventories),
        "DELETE": Route(inventory.delete_inventories),
    },
    "/resource_providers/<uuid>/inventories/<resource_class>": {
        "GET": Route(inventory.show_inventory, READ),
        "PUT": Route(inventory.update_inventory),
        "DELETE": Route(inventory.delete_inventory),
    },
    "/resource_providers/<uuid>/usages": {"GET": Route(usage.provider_usages, READ)},
    "/resource_providers/<uuid>/allocations": {"GET": Route(allocation.provider_allocations, READ)},
    "/resource_providers/<uuid>/aggregates": {
        "GET": Route(aggregate.show_aggregates, READ),
        "PUT": Route(aggregate.set_aggregates),
    },
    "/resource_providers/<uuid>/traits": {
        "GET": Route(trait.list_provider_traits, READ),
        "PUT": Route(trait.set_provider_traits),
        "DELETE": Route(trait.delete_provider_traits),
    },
    "/resource_classes": {
        "GET": Route(resource_class.list_resource_classes, READ),
        "POST": Route(resource_class.create_resource_class),
    },
    "/resource_classes/<name>": {
        "GET": Route(resource_class.show_resource_class, READ),
        "PUT": Route(resource_class.put_resource_class),
        "DELETE": Route(resource_class.delete_resource_class),
    },
    "/allocations": {"POST": Route(allocation.post_allocations)},
    "/allocations/<consumer_uuid>": {
        "GET": Route(allocation.show_allocations, READ),
        "PUT": Route(allocation.put_allocations),
        "DELETE": Route(allocation.delete_allocations),
    },
    "/usages": {"GET": Route(usage.project_usages, READ)},
    "/allocation_candidates": {
        "GET": Route(allocation_candidate.list_allocation_candidates, SNAPSHOT_READ)
    },
    # Why a request finds what it finds (not part of the Placement API).
    "/allocation_candidates/explain": {
        "GET": Route(allocation_candidate.explain_allocation_candidates, SNAPSHOT_READ)
    },
    "/reshaper": {"POST": Route(reshaper.reshape)},
    "/traits": {"GET": Route(trait.list_traits, READ)},
    # The group-resource key translator (not part of the Placement API).
    "/group_resources/nodes": {"GET": Route(group_resources.list_nodes, SNAPSHOT_READ)},
    "/group_resources/nodes/<name>": {
        "GET": Route(group_resources.show_node, SNAPSHOT_READ),
        "PUT": Route(group_resources.sync_node),
        "DELETE": Route(group_resources.delete_node),
    },
    "/group_resources/queries": {"POST": Route(group_resources.translate, SEARCH)},
    "/group_resources/candidates": {"POST": Route(group_resources.find_candidates, SEARCH)},
    # Why a request finds what it finds.
    "/group_resources/candidates/explain": {
        "POST": Route(group_resources.explain_candidates, SEARCH)
    },
    "/group_resources/claims": {"POST": Route(group_resources.claim)},
    # Device topologies, device candidates and claims (on the translator's trees).
    "/group_resources/device_nodes": {"GET": Route(devices.list_nodes, SNAPSHOT_READ)},
    "/group_resources/device_nodes/<name>": {
        "GET": Route(devices.show_node, SNAPSHOT_READ),
        "PUT": Route(devices.import_node),
        "DELETE": Route(devices.delete_node),
    },
    "/group_resources/device_nodes/<name>/checkpoints": {"PUT": Route(devices.hold_checkpoints)},
    # Koordinator's Device object of the node (and its checkpoint annotation).
    "/group_resources/device_nodes/<name>/koordinator_device": {
        "PUT": Route(devices.import_koordinator_device)
    },
    "/group_resources/device_candidates": {"POST": Route(devices.find_candidates, SEARCH)},
    "/group_resources/device_candidates/explain": {
        "POST": Route(devices.explain_candidates, SEARCH)
    },
    "/group_resources/device_claims": {"POST": Route(devices.claim)},
    # The network as levels, and gangs of device requests in one network domain.
    "/group_resources/network": {
        "GET": Route(gangs.show_network, SNAPSHOT_READ),
        "PUT": Route(gangs.set_network),
    },
    "/group_resources/network/nodes/<name>": {
        "GET": Route(gangs.show_network_node, READ),
        "PUT": Route(gangs.set_network_node),
        "DELETE": Route(gangs.delete_network_node),
    },
    "/group_resources/gang_candidates": {"POST": Route(gangs.find_candidates, SEARCH)},
    "/group_resources/gang_candidates/explain": {"POST": Route(gangs.explain_candidates, SEARCH)},
    "/group_resources/gang_claims": {"POST": Route(gangs.claim)},
    "/group_resources/gangs/<gang_uuid>": {
        "GET": Route(gangs.show_gang, READ),
        "DELETE": Route(gangs.release_gang),
    },
    "/traits/<name>": {
        "GET": Route(trait.show_trait),
        "PUT": Route(trait.put_trait),
        "DELETE": Route(trait.delete_trait),
    },
}

# kube-scheduler's extender verbs, under ``[k8s] scheduler_prefix`` (not part of the
# Placement API; ``sort`` is ``prioritize`` under the name GPU topology extenders give it).
# Admitted without a token from ``[k8s] scheduler_clients`` only (``app``).
SCHEDULER_EXTENDER: dict[str, Route] = {
    "/filter": Route(k8s_scheduler.filter_nodes),  # imports the nodes' annotated topologies
    "/prioritize": Route(k8s_scheduler.prioritize_nodes, SEARCH),
    "/sort": Route(k8s_scheduler.prioritize_nodes, SEARCH),
    "/bind": Route(k8s_scheduler.bind_pod),
    "/preempt": Route(k8s_scheduler.preempt, SEARCH),
}
SCHEDULER_EXTENDER_ENDPOINT = "k8s-scheduler "


def scheduler_extender_api(prefix: str = DEFAULT_SCHEDULER_PREFIX) -> dict[str, dict[str, Route]]:
    """The extender's routes under ``prefix``, as ``API`` declares routes."""
    return {prefix + verb: {"POST": route} for verb, route in SCHEDULER_EXTENDER.items()}


def _views(table: dict[str, dict[str, Route]]) -> dict[str, dict[str, Callable]]:
    return {
        path: {method: route.view for method, route in methods.items()}
        for path, methods in table.items()
    }


def _views_that(runs: Runs) -> frozenset[Callable]:
    return frozenset(
        route.view
        for methods in [*API.values(), *scheduler_extender_api().values()]
        for route in methods.values()
        if runs in route.runs
    )


# Derived from ``API``: each URL's views by method, and the views that run a way.
ROUTES = _views(API)
READ_ONLY_POSTS = _views_that(Runs.READS_ONLY)
WITHOUT_DATABASE = _views_that(Runs.WITHOUT_DATABASE)
SNAPSHOT_VIEWS = _views_that(Runs.ONE_SNAPSHOT)
ACCEPT_CHECKED_VIEWS = _views_that(Runs.CHECKS_ACCEPT)


def scheduler_extender_routes(
    prefix: str = DEFAULT_SCHEDULER_PREFIX,
) -> dict[str, dict[str, Callable]]:
    """The extender's views under ``prefix``, as ``ROUTES`` gives views."""
    return _views(scheduler_extender_api(prefix))


# Probes (``handlers.health``): answered outside the API, without a token, a microversion or a
# transaction of their own (GET, and HEAD as Flask adds it).
PROBES: dict[str, Callable[[], flask.Response]] = {
    "/healthcheck": health.live,
    "/healthcheck/ready": health.ready,
}
# Documents about the API, served as the probes are.
DOCUMENTS: dict[str, Callable[[], flask.Response]] = {"/openapi.json": openapi.document}
# Everything answered outside the API (``app._before_request`` lets it through).
OUTSIDE_THE_API = {**PROBES, **DOCUMENTS}


# Prometheus metrics (``handlers.metrics``): outside the API like the probes, but for a token
# that policy allows, unless ``[metrics] unauthenticated`` (``app``).
METRICS_PATH = "/metrics"


def register_routes(app: flask.Flask, scheduler_prefix: str = DEFAULT_SCHEDULER_PREFIX) -> None:
    for path, view in OUTSIDE_THE_API.items():
        app.add_url_rule(path, endpoint=f"outside {path}", view_func=view, methods=["GET"])
    app.add_url_rule(METRICS_PATH, endpoint="metrics", view_func=metrics.show, methods=["GET"])
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
            for attempt in range(1, CONTENTION_ATTEMPTS + 1):
                try:
                    return _run_once(services, view, write, snapshot, kwargs)
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


def _run_once(services, view, write: bool, snapshot: bool, kwargs):
    with services.engine.connect() as conn:
        if write:
            conn = conn.execution_options(**{WRITE_TRANSACTION_OPTION: True})
            with conn.begin():
                return view(_context(conn, services), **kwargs)
        if snapshot:
            conn = reading_one_snapshot(conn)
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
