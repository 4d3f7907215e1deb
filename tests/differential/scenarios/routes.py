"""Every route and method at its first and at its last microversion, and (where the
route is newer than 1.0) at the version just before its first, where it must not
exist yet.

Each scenario builds the small world its route needs (a compute node with an
instance's allocation, a second provider without allocations, a custom class or
trait) and then sends the route's request; the runner compares the answer and
the generations read back after it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.differential.builders import (
    aggregates,
    allocate,
    allocation_body,
    compute_node,
    inventory,
    provider,
    traits,
)
from tests.differential.scenario import (
    AGG1,
    AGG2,
    CN1,
    CN2,
    INSTANCE1,
    INSTANCE2,
    LATEST,
    NO_BODY,
    PROJECT,
    ConsumerGeneration,
    Generation,
    Scenario,
    Step,
    get,
    put,
    scenario,
)

SERVICE = {"X-Roles": "admin,service"}
# CN1 with VCPU/MEMORY_MB/DISK_GB, INSTANCE1 on it; CN2 with only DISK_GB, unused.
WORLD = (
    *compute_node(CN1),
    allocate(INSTANCE1, {CN1: {"VCPU": 1, "MEMORY_MB": 512}}),
    provider(CN2),
    inventory(CN2, DISK_GB=50),
    *traits(CN1, "HW_CPU_X86_AVX2", "CUSTOM_FAST"),
    aggregates(CN1, AGG1),
    put("/resource_classes/CUSTOM_GOLD"),
)


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: str
    first: str
    # The body the route takes at a version (NO_BODY for none).
    body: Callable[[str], Any] = lambda version: NO_BODY


def _before(version: str) -> str:
    major, minor = version.split(".")
    return f"{major}.{int(minor) - 1}"


def _at_least(version: str, minimum: str) -> bool:
    return tuple(map(int, version.split("."))) >= tuple(map(int, minimum.split(".")))


def _provider_update(version: str) -> dict:
    return {"name": "cn1-renamed"}


def _aggregates(version: str) -> Any:
    if _at_least(version, "1.19"):
        return {"aggregates": [AGG1, AGG2], "resource_provider_generation": Generation(CN1)}
    return [AGG1, AGG2]


def _traits(version: str) -> dict:
    return {"traits": ["HW_CPU_X86_SSE42"], "resource_provider_generation": Generation(CN1)}


def _resource_class_put(version: str) -> Any:
    # 1.2-1.6 renames a custom class; from 1.7 PUT creates one and takes no body.
    return {"name": "CUSTOM_SILVER"} if not _at_least(version, "1.7") else NO_BODY


def _post_allocations(version: str) -> dict:
    return {INSTANCE2: allocation_body({CN1: {"VCPU": 2}}, version, INSTANCE2)}


def _reshape(version: str) -> dict:
    # Move INSTANCE1's VCPU from CN1 to CN2 while CN2 gains VCPU inventory.
    body: dict[str, Any] = {
        "inventories": {
            CN2: {
                "inventories": {"DISK_GB": {"total": 50}, "VCPU": {"total": 4}},
                "resource_provider_generation": Generation(CN2),
            }
        },
        "allocations": {
            INSTANCE1: {
                "allocations": {
                    CN1: {"resources": {"MEMORY_MB": 512}},
                    CN2: {"resources": {"VCPU": 1}},
                },
                "project_id": PROJECT,
                "user_id": "user-a",
                "consumer_generation": ConsumerGeneration(INSTANCE1),
            }
        },
    }
    if _at_least(version, "1.38"):
        body["allocations"][INSTANCE1]["consumer_type"] = "INSTANCE"
    return body


INVENTORIES = f"/resource_providers/{CN1}/inventories"
ROUTES = (
    Route("root", "GET", "/", "1.0"),
    Route("providers-list", "GET", "/resource_providers", "1.0"),
    Route("providers-create", "POST", "/resource_providers", "1.0", lambda v: {"name": "cn3"}),
    Route("provider-show", "GET", f"/resource_providers/{CN1}", "1.0"),
    Route("provider-update", "PUT", f"/resource_providers/{CN1}", "1.0", _provider_update),
    Route("provider-delete", "DELETE", f"/resource_providers/{CN2}", "1.0"),
    Route("inventories-list", "GET", INVENTORIES, "1.0"),
    Route(
        "inventories-create",
        "POST",
        INVENTORIES,
        "1.0",
        lambda v: {
            "resource_class": "VGPU",
            "total": 4,
            "resource_provider_generation": Generation(CN1),
        },
    ),
    Route(
        "inventories-replace",
        "PUT",
        INVENTORIES,
        "1.0",
        lambda v: {
            "resource_provider_generation": Generation(CN1),
            "inventories": {
                "VCPU": {"total": 16},
                "MEMORY_MB": {"total": 8192},
                "DISK_GB": {"total": 100},
            },
        },
    ),
    Route("inventories-delete", "DELETE", f"/resource_providers/{CN2}/inventories", "1.5"),
    Route("inventory-show", "GET", f"{INVENTORIES}/VCPU", "1.0"),
    Route(
        "inventory-update",
        "PUT",
        f"{INVENTORIES}/VCPU",
        "1.0",
        lambda v: {
            "resource_provider_generation": Generation(CN1),
            "total": 16,
            "allocation_ratio": 2.0,
        },
    ),
    Route("inventory-delete", "DELETE", f"/resource_providers/{CN2}/inventories/DISK_GB", "1.0"),
    Route("provider-usages", "GET", f"/resource_providers/{CN1}/usages", "1.0"),
    Route("provider-aggregates-show", "GET", f"/resource_providers/{CN1}/aggregates", "1.1"),
    Route(
        "provider-aggregates-set",
        "PUT",
        f"/resource_providers/{CN1}/aggregates",
        "1.1",
        _aggregates,
    ),
    Route("provider-traits-show", "GET", f"/resource_providers/{CN1}/traits", "1.6"),
    Route("provider-traits-set", "PUT", f"/resource_providers/{CN1}/traits", "1.6", _traits),
    Route("provider-traits-delete", "DELETE", f"/resource_providers/{CN1}/traits", "1.6"),
    Route("provider-allocations", "GET", f"/resource_providers/{CN1}/allocations", "1.0"),
    Route("resource-classes-list", "GET", "/resource_classes", "1.2"),
    Route(
        "resource-classes-create",
        "POST",
        "/resource_classes",
        "1.2",
        lambda v: {"name": "CUSTOM_BRONZE"},
    ),
    Route("resource-class-show", "GET", "/resource_classes/CUSTOM_GOLD", "1.2"),
    Route("resource-class-put", "PUT", "/resource_classes/CUSTOM_GOLD", "1.2", _resource_class_put),
    Route("resource-class-delete", "DELETE", "/resource_classes/CUSTOM_GOLD", "1.2"),
    Route("traits-list", "GET", "/traits?name=startswith:CUSTOM_", "1.6"),
    Route("trait-show", "GET", "/traits/CUSTOM_FAST", "1.6"),
    Route("trait-put", "PUT", "/traits/CUSTOM_SLOW", "1.6"),
    Route("trait-delete", "DELETE", "/traits/CUSTOM_UNUSED", "1.6"),
    Route("consumer-allocations-show", "GET", f"/allocations/{INSTANCE1}", "1.0"),
    Route(
        "consumer-allocations-set",
        "PUT",
        f"/allocations/{INSTANCE2}",
        "1.0",
        lambda v: allocation_body({CN1: {"VCPU": 2}, CN2: {"DISK_GB": 5}}, v, INSTANCE2),
    ),
    Route("consumer-allocations-delete", "DELETE", f"/allocations/{INSTANCE1}", "1.0"),
    Route("allocations-post", "POST", "/allocations", "1.13", _post_allocations),
    Route("usages", "GET", f"/usages?project_id={PROJECT}", "1.9"),
    Route(
        "allocation-candidates",
        "GET",
        "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512",
        "1.10",
    ),
    Route("reshaper", "POST", "/reshaper", "1.30", _reshape),
)


def _scenario(route: Route, version: str, suffix: str) -> Scenario:
    setup: tuple[Step, ...] = WORLD
    if route.name == "trait-delete":
        setup = (*WORLD, put("/traits/CUSTOM_UNUSED"))
    # The reshaper is a service's call (upstream's policy wants the service role).
    headers = SERVICE if route.path == "/reshaper" else {}
    step = Step(
        route.method, route.path, version, body=route.body(version), headers=headers, label="route"
    )
    # A write is followed by a read of what it wrote, at the same version.
    after: tuple[Step, ...] = ()
    if route.method != "GET" and route.path != "/reshaper" and route.method != "POST":
        # A deleted provider is read back in the list (a 404's code is compared elsewhere).
        read = "/resource_providers" if route.name == "provider-delete" else route.path
        after = (get(read, version, label="read-after"),)
    return scenario(
        f"route-{route.name}-{suffix}",
        setup,
        step,
        *after,
        about=f"{route.method} {route.path} at {version}",
    )


def _scenarios() -> tuple[Scenario, ...]:
    found = []
    for route in ROUTES:
        found.append(_scenario(route, route.first, "first"))
        found.append(_scenario(route, LATEST, "last"))
        if route.first != "1.0":
            found.append(_scenario(route, _before(route.first), "before"))
    return tuple(found)


SCENARIOS = _scenarios()
