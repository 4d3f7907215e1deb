"""Every URL and method the service answers, in one table (``API``), each declared once
with all that is known of it: its view, how it runs, the policy rule that guards it, the
body it reads and the answers it gives. The other tables (the views by URL, the views that
run a way, the rules' operations, the OpenAPI document's bodies and answers) are derived
from it.

Each view takes a RequestContext first; ``endpoints`` runs it. Methods missing from a
URL's entry get an automatic 405.
"""

from collections.abc import Callable

from oslo_policy import policy as oslo_policy

from placement import policy
from placement.k8s import DEFAULT_SCHEDULER_PREFIX
from placement.routes.group_resources import GROUP_RESOURCES
from placement.routes.outside import METRICS, METRICS_PATH, OUTSIDE_THE_API
from placement.routes.placement_api import PLACEMENT_API
from placement.routes.route import NO_BODY, Empty, Route, Runs
from placement.routes.scheduler_extender import (
    SCHEDULER_EXTENDER_ENDPOINT,
    scheduler_extender_api,
)

__all__ = [
    "METRICS",
    "METRICS_PATH",
    "NO_BODY",
    "OUTSIDE_THE_API",
    "SCHEDULER_EXTENDER_ENDPOINT",
    "Empty",
    "Route",
    "Runs",
]

READ_METHODS = frozenset({"GET", "HEAD"})
# The API's requests answered without a token: the version document.
ANONYMOUS = frozenset({("GET", "/"), ("HEAD", "/")})
API: dict[str, dict[str, Route]] = {**PLACEMENT_API, **GROUP_RESOURCES}


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


def operation_path(route: str) -> str:
    """A route as the rules' operations write it: ``/traits/<name>`` -> ``/traits/{name}``."""
    return route.replace("<", "{").replace(">", "}")


def every_route(
    scheduler_prefix: str = DEFAULT_SCHEDULER_PREFIX,
) -> list[tuple[str, str, Route]]:
    """(method, path, route) of every request a token may make, in the tables' order."""
    table = {**API, **scheduler_extender_api(scheduler_prefix), METRICS_PATH: {"GET": METRICS}}
    return [
        (method, path, route)
        for path, methods in table.items()
        for method, route in methods.items()
    ]


def documented_rules() -> list[oslo_policy.RuleDefault]:
    """Every policy rule and its default, each API rule with the operations it guards
    (the ``oslo.policy.policies`` entry point's: what the sample policy file documents)."""
    operations: dict[str, list[oslo_policy.Operation]] = {}
    for method, path, route in every_route():
        if route.rule is not None:
            operations.setdefault(route.rule, []).append(
                {"method": method, "path": operation_path(path)}
            )
    return policy.BASE_RULES + policy.documented(operations)
