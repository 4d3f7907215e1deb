"""Every write that may change a generation, at the versions where its format or meaning
changes, including the writes that change nothing (the same inventory, traits or
aggregates again). The runner reads back every provider's and consumer's generation
after each step, so the effect of each write is compared, not only its answer."""

from tests.differential.builders import (
    aggregates,
    allocate,
    allocation_body,
    compute_node,
    inventory,
    provider,
    show,
    traits,
)
from tests.differential.scenario import (
    AGG1,
    AGG2,
    CN1,
    CN2,
    INSTANCE1,
    INSTANCE2,
    MIGRATION1,
    NUMA0,
    NUMA1,
    PF0,
    PROJECT,
    USER,
    ConsumerGeneration,
    Generation,
    Scenario,
    delete,
    get,
    post,
    put,
    scenario,
    version_at_least,
)

SERVICE = {"X-Roles": "admin,service"}
INVENTORIES = f"/resource_providers/{CN1}/inventories"


def _inventory_scenarios() -> list[Scenario]:
    found = []
    for version in ("1.0", "1.26", "1.39"):
        found += [
            scenario(
                f"inventory-replace-all-{version}",
                provider(CN1),
                inventory(CN1, version, VCPU=8),
                inventory(CN1, version, VCPU=8, MEMORY_MB=1024),
                inventory(
                    CN1,
                    version,
                    VCPU={"total": 8, "reserved": 8 if version_at_least(version, "1.26") else 7},
                ),
                get(INVENTORIES, version),
            ),
            scenario(
                f"inventory-replace-with-nothing-{version}",
                *compute_node(CN1),
                put(
                    INVENTORIES,
                    version,
                    {"resource_provider_generation": Generation(CN1), "inventories": {}},
                    label="empty",
                ),
                get(INVENTORIES, version),
            ),
            scenario(
                f"inventory-create-one-{version}",
                provider(CN1),
                post(
                    INVENTORIES,
                    version,
                    {
                        "resource_class": "VCPU",
                        "total": 4,
                        "resource_provider_generation": Generation(CN1),
                    },
                ),
                post(
                    INVENTORIES,
                    version,
                    {
                        "resource_class": "DISK_GB",
                        "total": 40,
                        "reserved": 2,
                        "min_unit": 2,
                        "max_unit": 20,
                        "step_size": 2,
                        "allocation_ratio": 1.5,
                        "resource_provider_generation": Generation(CN1),
                    },
                ),
                get(INVENTORIES, version),
            ),
            scenario(
                f"inventory-update-one-{version}",
                *compute_node(CN1),
                put(
                    f"{INVENTORIES}/VCPU",
                    version,
                    {"resource_provider_generation": Generation(CN1), "total": 16},
                ),
                put(
                    f"{INVENTORIES}/VCPU",
                    version,
                    {
                        "resource_provider_generation": Generation(CN1),
                        "total": 16,
                        "allocation_ratio": 4.0,
                        "max_unit": 8,
                    },
                ),
                get(f"{INVENTORIES}/VCPU", version),
            ),
            scenario(
                f"inventory-delete-one-{version}",
                *compute_node(CN1),
                delete(f"{INVENTORIES}/DISK_GB", version),
                get(INVENTORIES, version),
            ),
        ]
    for version in ("1.5", "1.39"):
        found.append(
            scenario(
                f"inventory-delete-all-{version}",
                *compute_node(CN1),
                delete(INVENTORIES, version),
                get(INVENTORIES, version),
            )
        )
    return found


def _trait_scenarios() -> list[Scenario]:
    found = []
    for version in ("1.6", "1.39"):
        found += [
            scenario(
                f"traits-set-{version}",
                provider(CN1),
                *traits(CN1, "HW_CPU_X86_AVX2", "CUSTOM_FAST", version=version),
                *traits(CN1, "HW_CPU_X86_SSE42", version=version),
                *traits(CN1, version=version),
                get(f"/resource_providers/{CN1}/traits", version),
            ),
            scenario(
                f"traits-delete-{version}",
                provider(CN1),
                *traits(CN1, "HW_CPU_X86_AVX2", version=version),
                delete(f"/resource_providers/{CN1}/traits", version),
                get(f"/resource_providers/{CN1}/traits", version),
            ),
        ]
    return found


def _aggregate_scenarios() -> list[Scenario]:
    found = []
    for version in ("1.1", "1.18", "1.19", "1.39"):
        found.append(
            scenario(
                f"aggregates-set-{version}",
                provider(CN1),
                aggregates(CN1, AGG1, version=version),
                aggregates(CN1, AGG1, AGG2, version=version),
                aggregates(CN1, version=version),
                get(f"/resource_providers/{CN1}/aggregates", version),
            )
        )
    return found


def _allocation_scenarios() -> list[Scenario]:
    found = []
    world = (*compute_node(CN1), *compute_node(CN2))
    for version in ("1.0", "1.8", "1.12", "1.28", "1.38", "1.39"):
        found.append(
            scenario(
                f"allocations-put-{version}",
                *world,
                allocate(INSTANCE1, {CN1: {"VCPU": 2, "MEMORY_MB": 1024}}, version),
                allocate(INSTANCE1, {CN1: {"VCPU": 4}}, version),  # resized on the same host
                allocate(INSTANCE1, {CN2: {"VCPU": 4}}, version),  # moved to another host
                get(f"/allocations/{INSTANCE1}", version),
                get(f"/resource_providers/{CN1}/usages", version),
                get(f"/resource_providers/{CN2}/usages", version),
            )
        )
        found.append(
            scenario(
                f"allocations-delete-{version}",
                *world,
                allocate(INSTANCE1, {CN1: {"VCPU": 2}, CN2: {"DISK_GB": 10}}, version),
                delete(f"/allocations/{INSTANCE1}", version, label="delete"),
                get(f"/allocations/{INSTANCE1}", version),
                get(f"/resource_providers/{CN1}/usages", version),
            )
        )
    for version in ("1.28", "1.38", "1.39"):
        # An empty allocations object removes them all (PUT, from 1.28 on).
        found.append(
            scenario(
                f"allocations-put-empty-{version}",
                *world,
                allocate(INSTANCE1, {CN1: {"VCPU": 2}, CN2: {"DISK_GB": 10}}, version),
                allocate(INSTANCE1, {}, version, label="empty"),
                get(f"/allocations/{INSTANCE1}", version),
                allocate(INSTANCE1, {CN1: {"VCPU": 1}}, version, label="again"),
            )
        )
    for version in ("1.13", "1.28", "1.38", "1.39"):
        found.append(
            scenario(
                f"allocations-post-{version}",
                *world,
                post(
                    "/allocations",
                    version,
                    {
                        INSTANCE1: allocation_body({CN1: {"VCPU": 2}}, version, INSTANCE1),
                        INSTANCE2: allocation_body(
                            {CN1: {"VCPU": 1}, CN2: {"DISK_GB": 5}}, version, INSTANCE2
                        ),
                    },
                ),
                # A move as Nova makes it: the source host's allocations go to a migration
                # consumer, the instance holds the destination's.
                post(
                    "/allocations",
                    version,
                    {
                        MIGRATION1: allocation_body({CN1: {"VCPU": 2}}, version, MIGRATION1),
                        INSTANCE1: allocation_body({CN2: {"VCPU": 2}}, version, INSTANCE1),
                    },
                    label="move",
                ),
                # Giving a consumer nothing removes its allocations.
                post(
                    "/allocations",
                    version,
                    {
                        MIGRATION1: allocation_body({}, version, MIGRATION1),
                    },
                    label="empty",
                ),
                get(f"/allocations/{MIGRATION1}", version),
                get(f"/resource_providers/{CN1}/usages", version),
            )
        )
    return found


def _reshaper_scenarios() -> list[Scenario]:
    found = []
    for version in ("1.30", "1.38", "1.39"):
        consumer = {
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_generation": ConsumerGeneration(INSTANCE1),
        }
        if version_at_least(version, "1.38"):
            consumer["consumer_type"] = "INSTANCE"
        found.append(
            scenario(
                f"reshaper-vcpu-to-numa-{version}",
                *compute_node(CN1),
                provider(NUMA0, parent=CN1),
                provider(NUMA1, parent=CN1),
                allocate(INSTANCE1, {CN1: {"VCPU": 2, "MEMORY_MB": 1024}}),
                # The compute node's VCPU moves to its two NUMA nodes; the instance follows.
                post(
                    "/reshaper",
                    version,
                    {
                        "inventories": {
                            CN1: {
                                "inventories": {
                                    "MEMORY_MB": {"total": 4096},
                                    "DISK_GB": {"total": 100},
                                },
                                "resource_provider_generation": Generation(CN1),
                            },
                            NUMA0: {
                                "inventories": {"VCPU": {"total": 4}},
                                "resource_provider_generation": Generation(NUMA0),
                            },
                            NUMA1: {
                                "inventories": {"VCPU": {"total": 4}},
                                "resource_provider_generation": Generation(NUMA1),
                            },
                        },
                        "allocations": {
                            INSTANCE1: {
                                "allocations": {
                                    CN1: {"resources": {"MEMORY_MB": 1024}},
                                    NUMA0: {"resources": {"VCPU": 2}},
                                },
                                **consumer,
                            },
                        },
                    },
                    headers=SERVICE,
                    label="reshape",
                ),
                get(f"/allocations/{INSTANCE1}", version),
                get(f"/resource_providers/{NUMA0}/usages", version),
            )
        )
    return found


def _provider_scenarios() -> list[Scenario]:
    found = []
    for version in ("1.0", "1.14", "1.39"):
        body = {"name": "cn1-renamed"}
        found.append(
            scenario(
                f"provider-rename-{version}",
                provider(CN1),
                put(f"/resource_providers/{CN1}", version, body),
                show(CN1, version),
            )
        )
    for version in ("1.37", "1.39"):
        found.append(
            scenario(
                f"provider-reparent-{version}",
                provider(CN1),
                provider(CN2),
                provider(NUMA0, parent=CN1),
                # NUMA0 moves with its child and its consumer's allocations.
                provider(PF0, parent=NUMA0),
                inventory(NUMA0, VCPU=4),
                allocate(INSTANCE1, {NUMA0: {"VCPU": 1}}),
                provider(NUMA1),
                put(
                    f"/resource_providers/{NUMA0}",
                    version,
                    {"name": "numa0", "parent_provider_uuid": CN2},
                    label="reparent",
                ),
                show(PF0, version),
                get(f"/allocation_candidates?resources=VCPU:1&in_tree={CN2}", version),
                put(
                    f"/resource_providers/{NUMA1}",
                    version,
                    {"name": "numa1", "parent_provider_uuid": CN1},
                    label="adopt-root",
                ),
                put(
                    f"/resource_providers/{NUMA0}",
                    version,
                    {"name": "numa0", "parent_provider_uuid": None},
                    label="unparent",
                ),
                show(NUMA0, version),
                show(NUMA1, version),
                get(f"/resource_providers?in_tree={CN1}", version),
            )
        )
    found.append(
        scenario(
            "provider-reparent-refused-1.36",
            provider(CN1),
            provider(CN2),
            provider(NUMA0, parent=CN1),
            put(
                f"/resource_providers/{NUMA0}",
                "1.36",
                {"name": "numa0", "parent_provider_uuid": CN2},
                label="reparent",
            ),
            put(
                f"/resource_providers/{NUMA0}",
                "1.36",
                {"name": "numa0", "parent_provider_uuid": None},
                label="unparent",
            ),
            show(NUMA0, "1.36"),
        )
    )
    for version in ("1.0", "1.39"):
        found.append(
            scenario(
                f"provider-delete-{version}",
                *compute_node(CN1),
                *traits(CN1, "CUSTOM_FAST"),
                aggregates(CN1, AGG1),
                delete(f"/resource_providers/{CN1}", version, label="delete"),
                get("/resource_providers", version),
                delete("/traits/CUSTOM_FAST", "1.39", label="trait-now-unused"),
            )
        )
    return found


def _unchanging_scenarios() -> list[Scenario]:
    """Writes that change nothing: the same inventory, traits, aggregates, allocations or
    name again, and deleting what is already gone. Each in its own scenario, so that a
    difference in one does not hide the others."""
    found = []
    for version in ("1.1", "1.18", "1.19", "1.39"):
        found.append(
            scenario(
                f"unchanged-aggregates-{version}",
                provider(CN1),
                aggregates(CN1, AGG1, version=version),
                aggregates(CN1, AGG1, version=version).labelled("again"),
            )
        )
    for version in ("1.6", "1.39"):
        found += [
            scenario(
                f"unchanged-traits-{version}",
                provider(CN1),
                *traits(CN1, "HW_CPU_X86_AVX2", version=version),
                traits(CN1, "HW_CPU_X86_AVX2", version=version)[-1].labelled("again"),
            ),
            scenario(
                f"unchanged-traits-delete-none-{version}",
                provider(CN1),
                delete(f"/resource_providers/{CN1}/traits", version, label="again"),
            ),
        ]
    for version in ("1.0", "1.39"):
        found += [
            scenario(
                f"unchanged-inventories-{version}",
                *compute_node(CN1),
                inventory(CN1, version, VCPU=8, MEMORY_MB=4096, DISK_GB=100).labelled("again"),
            ),
            scenario(
                f"unchanged-inventory-{version}",
                *compute_node(CN1),
                put(
                    f"{INVENTORIES}/VCPU",
                    version,
                    {"resource_provider_generation": Generation(CN1), "total": 8},
                    label="again",
                ),
            ),
            scenario(
                f"unchanged-allocations-{version}",
                *compute_node(CN1),
                allocate(INSTANCE1, {CN1: {"VCPU": 2}}, version),
                allocate(INSTANCE1, {CN1: {"VCPU": 2}}, version, label="again"),
            ),
            scenario(
                f"unchanged-name-{version}",
                provider(CN1),
                put(f"/resource_providers/{CN1}", version, {"name": "cn1"}, label="again"),
            ),
        ]
    found.append(
        scenario(
            "unchanged-allocations-post-1.39",
            *compute_node(CN1),
            *compute_node(CN2),
            allocate(INSTANCE1, {CN1: {"VCPU": 2}}),
            allocate(INSTANCE2, {CN2: {"VCPU": 2}}),
            # INSTANCE1's allocations again, INSTANCE2's changed.
            post(
                "/allocations",
                "1.39",
                {
                    INSTANCE1: allocation_body({CN1: {"VCPU": 2}}, "1.39", INSTANCE1),
                    INSTANCE2: allocation_body({CN2: {"VCPU": 3}}, "1.39", INSTANCE2),
                },
                label="again",
            ),
        )
    )
    found.append(
        scenario(
            "allocations-same-amounts-new-owner-1.38",
            *compute_node(CN1),
            allocate(INSTANCE1, {CN1: {"VCPU": 2}}, "1.38"),
            put(
                f"/allocations/{INSTANCE1}",
                "1.38",
                {
                    **allocation_body({CN1: {"VCPU": 2}}, "1.38", INSTANCE1),
                    "consumer_type": "MIGRATION",
                },
                label="new-type",
            ),
            put(
                f"/allocations/{INSTANCE1}",
                "1.38",
                {
                    **allocation_body({CN1: {"VCPU": 2}}, "1.38", INSTANCE1),
                    "project_id": "project-b",
                    "user_id": "user-b",
                },
                label="new-project",
            ),
            get(f"/allocations/{INSTANCE1}", "1.38"),
            get("/usages?project_id=project-b", "1.38"),
        )
    )
    found.append(
        scenario(
            "unchanged-inventories-delete-none-1.39",
            provider(CN1),
            delete(INVENTORIES, "1.39", label="again"),
        )
    )
    return found


SCENARIOS = tuple(
    _inventory_scenarios()
    + _trait_scenarios()
    + _aggregate_scenarios()
    + _allocation_scenarios()
    + _reshaper_scenarios()
    + _provider_scenarios()
    + _unchanging_scenarios()
)
