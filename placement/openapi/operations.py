"""What the OpenAPI document says of each view: its request body and its own answers, as
its route declares them (``placement.routes``), and its page.

The answers are each view's own, as api-ref/ documents them (a test checks that every
status api-ref/ gives a route is here); those of the request's way to the view (the
microversion header, the token, policy, the version a view needs, a body that is not
JSON) are added by ``document``.
"""

from collections.abc import Callable

import marshmallow

from placement.routes import API, NO_BODY, OUTSIDE_THE_API, Route, scheduler_extender_api

# The page of api-ref/ that documents the routes of each handler module (and names its tag).
PAGES = {
    "aggregate": "aggregates",
    "allocation": "allocations",
    "allocation_candidate": "allocation_candidates",
    "devices": "devices",
    "gangs": "gangs",
    "group_resources": "group_resources",
    "health": "root",
    "inventory": "inventories",
    "k8s_scheduler": "k8s_scheduler",
    "openapi": "root",
    "reshaper": "reshaper",
    "resource_class": "resource_classes",
    "resource_provider": "resource_providers",
    "root": "root",
    "trait": "traits",
    "usage": "usages",
}


def page(view: Callable) -> str:
    return PAGES[view.__module__.rpartition(".")[2]]


def _every_route() -> list[Route]:
    table = [*API.values(), *scheduler_extender_api().values()]
    return [route for methods in table for route in methods.values()] + [*OUTSIDE_THE_API.values()]


def request_bodies() -> dict[Callable, marshmallow.Schema | marshmallow.fields.Field]:
    """The body each view reads, at the latest microversion (the views' own dispatch
    functions choose it where it changed)."""
    return {
        route.view: route.body
        for route in _every_route()
        if route.body is not None and route.body is not NO_BODY
    }


# Writes that read no body at the latest microversion.
WITHOUT_BODY = frozenset(route.view for route in _every_route() if route.body is NO_BODY)
# Each view's own answers.
ANSWERS: dict[Callable, dict[int, str]] = {route.view: route.answers for route in _every_route()}
