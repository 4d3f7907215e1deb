"""Every URL and method the service answers, in one table.

Each view takes a RequestContext first. ``register_routes`` wraps each view in
one database transaction (committed when the view returns, rolled back when it
raises), run in its process's turn (``services.Services.serving_lock``). Methods
missing from a URL's entry get an automatic 405.
"""

import logging
import random
import time
from collections.abc import Callable

import flask
from sqlalchemy.exc import DBAPIError

from placement.context import RequestContext
from placement.db import mysql
from placement.db.engine import WRITE_TRANSACTION_OPTION, reading_one_snapshot
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

ROUTES: dict[str, dict[str, Callable]] = {
    "/": {"GET": root.home},
    "/resource_providers": {
        "GET": resource_provider.list_providers,
        "POST": resource_provider.create_provider,
    },
    "/resource_providers/<uuid>": {
        "GET": resource_provider.show_provider,
        "PUT": resource_provider.update_provider,
        "DELETE": resource_provider.delete_provider,
    },
    "/resource_providers/<uuid>/inventories": {
        "GET": inventory.list_inventories,
        "POST": inventory.create_inventory,
        "PUT": inventory.replace_inventories,
        "DELETE": inventory.delete_inventories,
    },
    "/resource_providers/<uuid>/inventories/<resource_class>": {
        "GET": inventory.show_inventory,
        "PUT": inventory.update_inventory,
        "DELETE": inventory.delete_inventory,
    },
    "/resource_providers/<uuid>/usages": {"GET": usage.provider_usages},
    "/resource_providers/<uuid>/allocations": {"GET": allocation.provider_allocations},
    "/resource_providers/<uuid>/aggregates": {
        "GET": aggregate.show_aggregates,
        "PUT": aggregate.set_aggregates,
    },
    "/resource_providers/<uuid>/traits": {
        "GET": trait.list_provider_traits,
        "PUT": trait.set_provider_traits,
        "DELETE": trait.delete_provider_traits,
    },
    "/resource_classes": {
        "GET": resource_class.list_resource_classes,
        "POST": resource_class.create_resource_class,
    },
    "/resource_classes/<name>": {
        "GET": resource_class.show_resource_class,
        "PUT": resource_class.put_resource_class,
        "DELETE": resource_class.delete_resource_class,
    },
    "/allocations": {"POST": allocation.post_allocations},
    "/allocations/<consumer_uuid>": {
        "GET": allocation.show_allocations,
        "PUT": allocation.put_allocations,
        "DELETE": allocation.delete_allocations,
    },
    "/usages": {"GET": usage.project_usages},
    "/allocation_candidates": {"GET": allocation_candidate.list_allocation_candidates},
    # Why a request finds what it finds (not part of the Placement API).
    "/allocation_candidates/explain": {
        "GET": allocation_candidate.explain_allocation_candidates
    },
    "/reshaper": {"POST": reshaper.reshape},
    "/traits": {"GET": trait.list_traits},
    # The group-resource key translator (not part of the Placement API).
    "/group_resources/nodes": {"GET": group_resources.list_nodes},
    "/group_resources/nodes/<name>": {
        "GET": group_resources.show_node,
        "PUT": group_resources.sync_node,
        "DELETE": group_resources.delete_node,
    },
    "/group_resources/queries": {"POST": group_resources.translate},
    "/group_resources/candidates": {"POST": group_resources.find_candidates},
    # Why a request finds what it finds.
    "/group_resources/candidates/explain": {"POST": group_resources.explain_candidates},
    "/group_resources/claims": {"POST": group_resources.claim},
    # Device topologies, device candidates and claims (on the translator's trees).
    "/group_resources/device_nodes": {"GET": devices.list_nodes},
    "/group_resources/device_nodes/<name>": {
        "GET": devices.show_node,
        "PUT": devices.import_node,
        "DELETE": devices.delete_node,
    },
    "/group_resources/device_nodes/<name>/checkpoints": {"PUT": devices.hold_checkpoints},
    # Koordinator's Device object of the node (and its checkpoint annotation).
    "/group_resources/device_nodes/<name>/koordinator_device": {
        "PUT": devices.import_koordinator_device
    },
    "/group_resources/device_candidates": {"POST": devices.find_candidates},
    "/group_resources/device_candidates/explain": {"POST": devices.explain_candidates},
    "/group_resources/device_claims": {"POST": devices.claim},
    # The network as levels, and gangs of device requests in one network domain.
    "/group_resources/network": {"GET": gangs.show_network, "PUT": gangs.set_network},
    "/group_resources/network/nodes/<name>": {
        "GET": gangs.show_network_node,
        "PUT": gangs.set_network_node,
        "DELETE": gangs.delete_network_node,
    },
    "/group_resources/gang_candidates": {"POST": gangs.find_candidates},
    "/group_resources/gang_candidates/explain": {"POST": gangs.explain_candidates},
    "/group_resources/gang_claims": {"POST": gangs.claim},
    "/group_resources/gangs/<gang_uuid>": {
        "GET": gangs.show_gang,
        "DELETE": gangs.release_gang,
    },
    "/traits/<name>": {
        "GET": trait.show_trait,
        "PUT": trait.put_trait,
        "DELETE": trait.delete_trait,
    },
}

# kube-scheduler's extender verbs, under ``[k8s] scheduler_prefix`` (not part of the
# Placement API; ``sort`` is ``prioritize`` under the name GPU topology extenders give it).
# Admitted without a token from ``[k8s] scheduler_clients`` only (``app``).
SCHEDULER_EXTENDER: dict[str, Callable] = {
    "/filter": k8s_scheduler.filter_nodes,
    "/prioritize": k8s_scheduler.prioritize_nodes,
    "/sort": k8s_scheduler.prioritize_nodes,
    "/bind": k8s_scheduler.bind_pod,
    "/preempt": k8s_scheduler.preempt,
}
SCHEDULER_EXTENDER_ENDPOINT = "k8s-scheduler "


def scheduler_extender_routes(
    prefix: str = DEFAULT_SCHEDULER_PREFIX,
) -> dict[str, dict[str, Callable]]:
    """The extender's routes under ``prefix``, as ``ROUTES`` writes routes."""
    return {prefix + verb: {"POST": view} for verb, view in SCHEDULER_EXTENDER.items()}


# POSTs that only read (a body too rich for a query string): they run as read
# transactions, which on SQLite do not take the database's one write lock.
READ_ONLY_POSTS = frozenset(
    {
        group_resources.translate,
        group_resources.find_candidates,
        group_resources.explain_candidates,
        devices.find_candidates,
        devices.explain_candidates,
        gangs.find_candidates,
        gangs.explain_candidates,
        k8s_scheduler.prioritize_nodes,
        k8s_scheduler.preempt,
    }
)
# Views whose several reads must see one snapshot of the database. SQLite's transactions
# always do; PostgreSQL's at READ COMMITTED see each statement's own. The reads of the
# copy of the providers: what they answer is what the database held at their start.
SNAPSHOT_VIEWS = frozenset(
    {
        allocation_candidate.list_allocation_candidates,
        allocation_candidate.explain_allocation_candidates,
        group_resources.list_nodes,
        group_resources.show_node,
        group_resources.translate,
        group_resources.find_candidates,
        group_resources.explain_candidates,
        devices.list_nodes,
        devices.show_node,
        devices.find_candidates,
        devices.explain_candidates,
        gangs.show_network,
        gangs.find_candidates,
        gangs.explain_candidates,
        k8s_scheduler.prioritize_nodes,
        k8s_scheduler.preempt,
    }
)


# GET views that answer 406 to an ``Accept`` without JSON, before policy, as upstream's
# (its root, GET /traits/{name} and every write ignore ``Accept``).
ACCEPT_CHECKED_VIEWS = frozenset(
    {
        aggregate.show_aggregates,
        allocation.show_allocations,
        allocation.provider_allocations,
        allocation_candidate.list_allocation_candidates,
        allocation_candidate.explain_allocation_candidates,
        inventory.list_inventories,
        inventory.show_inventory,
        resource_class.show_resource_class,
        resource_class.list_resource_classes,
        resource_provider.show_provider,
        resource_provider.list_providers,
        trait.list_traits,
        trait.list_provider_traits,
        usage.provider_usages,
        usage.project_usages,
        # This service's own routes check it too.
        group_resources.list_nodes,
        group_resources.show_node,
        devices.list_nodes,
        devices.show_node,
        gangs.show_network,
        gangs.show_network_node,
        gangs.show_gang,
    }
)


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
    extender = scheduler_extender_routes(scheduler_prefix)
    for path, methods in [*ROUTES.items(), *extender.items()]:
        kind = SCHEDULER_EXTENDER_ENDPOINT if path in extender else ""
        for method, view in methods.items():
            writes = method not in READ_METHODS and view not in READ_ONLY_POSTS
            endpoint = _transactional(view, write=writes, snapshot=view in SNAPSHOT_VIEWS)
            endpoint.checks_accept = view in ACCEPT_CHECKED_VIEWS  # type: ignore[attr-defined]
            endpoint.checks_first = checks_first(view)  # type: ignore[attr-defined]
            app.add_url_rule(
                path,
                endpoint=f"{kind}{method} {path}",
                view_func=endpoint,
                methods=[method],
                provide_automatic_options=False,
            )


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
    LOG.info("Request %s lost a race in the database (attempt %d), running it again: %s",
             flask.g.get("request_id"), attempt, exc.orig)
    return True


def _run_once(services, view, write: bool, snapshot: bool, kwargs):
    with services.engine.connect() as conn:
        if write:
            conn = conn.execution_options(**{WRITE_TRANSACTION_OPTION: True})
        if snapshot:
            conn = reading_one_snapshot(conn)
        with conn.begin():
            ctx = RequestContext(
                conn=conn,
                version=flask.g.version,
                request=flask.request,
                request_id=flask.g.request_id,
                services=services,
            )
            return view(ctx, **kwargs)
