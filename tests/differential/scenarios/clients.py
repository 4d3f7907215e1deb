"""The requests openstacksdk (4.x, ``openstack.placement.v1``) and the ``openstack``
CLI (osc-placement 4.x) send for their write commands, as those clients build them
(read from their sources; neither is a dependency of this project).

openstacksdk sends each resource at the lower of the server's maximum and the
resource's own maximum microversion: providers 1.20, traits and provider traits
1.6, resource classes 1.2, allocations 1.38, and inventories none at all (no
``OpenStack-API-Version`` header: 1.0). osc-placement sends what
``--os-placement-api-version`` says, reads a provider (or a consumer's allocations)
before writing to learn its generation, and writes back what it read.
"""

from tests.differential.builders import compute_node, provider, traits
from tests.differential.scenario import (
    AGG1,
    AGG2,
    CN1,
    CN2,
    INSTANCE1,
    NUMA0,
    PROJECT,
    USER,
    Generation,
    Merged,
    Scenario,
    delete,
    get,
    header,
    joined,
    post,
    put,
    ref,
    scenario,
    version_at_least,
)

INVENTORIES = f"/resource_providers/{CN1}/inventories"


def _sdk() -> list[Scenario]:
    return [
        scenario(
            "sdk-create-provider",
            post("/resource_providers", "1.20", {"name": "cn1", "uuid": CN1}, label="create"),
            post(
                "/resource_providers",
                "1.20",
                {"name": "numa0", "uuid": NUMA0, "parent_provider_uuid": CN1},
                label="child",
            ),
            post("/resource_providers", "1.20", {"name": "cn3"}, label="generated-uuid"),
            get(joined("/resource_providers/", ref("generated-uuid", "uuid")), "1.20"),
        ),
        scenario(
            "sdk-update-provider",
            provider(CN1),
            provider(CN2),
            put(f"/resource_providers/{CN1}", "1.20", {"name": "cn1-renamed"}, label="rename"),
            provider(NUMA0, parent=CN1),
            put(
                f"/resource_providers/{NUMA0}",
                "1.20",
                {"parent_provider_uuid": CN2},
                label="reparent-without-name",
            ),
        ),
        scenario(
            "sdk-delete-provider",
            provider(CN1),
            delete(f"/resource_providers/{CN1}", "1.20", label="delete"),
            delete(f"/resource_providers/{CN1}", "1.20", label="again"),
        ),
        # create_resource_provider_inventory: no version header, no generation.
        scenario(
            "sdk-create-inventory",
            provider(CN1),
            post(INVENTORIES, None, {"resource_class": "VCPU", "total": 8}, label="create"),
            post(
                INVENTORIES,
                None,
                {
                    "resource_class": "MEMORY_MB",
                    "total": 4096,
                    "reserved": 512,
                    "allocation_ratio": 1.5,
                },
                label="create-2",
            ),
            get(INVENTORIES, None),
        ),
        scenario(
            "sdk-create-inventory-exists",
            *compute_node(CN1),
            post(INVENTORIES, None, {"resource_class": "VCPU", "total": 8}, label="create"),
        ),
        # update_resource_provider_inventory: PUT of the changed fields and the generation.
        scenario(
            "sdk-update-inventory",
            *compute_node(CN1),
            put(
                f"{INVENTORIES}/VCPU",
                None,
                {"resource_provider_generation": Generation(CN1), "total": 16},
                label="update",
            ),
            get(f"{INVENTORIES}/VCPU", None),
        ),
        scenario(
            "sdk-update-inventory-without-generation",
            *compute_node(CN1),
            put(
                f"{INVENTORIES}/VCPU",
                None,
                {"resource_provider_generation": None, "total": 16},
                label="update",
            ),
        ),
        scenario(
            "sdk-delete-inventory",
            *compute_node(CN1),
            delete(f"{INVENTORIES}/VCPU", None, label="delete"),
            delete(f"{INVENTORIES}/VCPU", None, label="again"),
        ),
        scenario(
            "sdk-set-inventories",
            *compute_node(CN1),
            put(
                INVENTORIES,
                "1.20",
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"VCPU": {"total": 4}},
                },
                label="set",
            ),
        ),
        scenario(
            "sdk-delete-inventories",
            *compute_node(CN1),
            delete(INVENTORIES, "1.20", label="delete"),
        ),
        # set_resource_provider_aggregates with a fetched provider (its generation known)...
        scenario(
            "sdk-set-aggregates",
            provider(CN1),
            get(f"/resource_providers/{CN1}", "1.20", label="fetched"),
            put(
                f"/resource_providers/{CN1}/aggregates",
                "1.20",
                {
                    "aggregates": [AGG1, AGG2],
                    "resource_provider_generation": ref("fetched", "generation"),
                },
                label="set",
            ),
        ),
        # ... and with only a uuid: the generation it sends is null.
        scenario(
            "sdk-set-aggregates-by-uuid",
            provider(CN1),
            put(
                f"/resource_providers/{CN1}/aggregates",
                "1.20",
                {"aggregates": [AGG1], "resource_provider_generation": None},
                label="set",
            ),
        ),
        scenario(
            "sdk-set-provider-traits",
            provider(CN1),
            put("/traits/CUSTOM_FAST", "1.6", {}, label="create-trait"),
            put(
                f"/resource_providers/{CN1}/traits",
                "1.6",
                {
                    "traits": ["CUSTOM_FAST", "HW_CPU_X86_AVX2"],
                    "resource_provider_generation": Generation(CN1),
                },
                label="set",
            ),
            delete(f"/resource_providers/{CN1}/traits", "1.6", label="delete"),
            delete("/traits/CUSTOM_FAST", "1.6", label="delete-trait"),
        ),
        scenario(
            "sdk-resource-classes",
            post("/resource_classes", "1.2", {"name": "CUSTOM_GOLD"}, label="create"),
            put(
                "/resource_classes/CUSTOM_GOLD", "1.2", {"name": "CUSTOM_PLATINUM"}, label="update"
            ),
            get("/resource_classes/CUSTOM_PLATINUM", "1.2"),
            delete("/resource_classes/CUSTOM_PLATINUM", "1.2", label="delete"),
        ),
        scenario(
            "sdk-allocations",
            *compute_node(CN1),
            put(
                f"/allocations/{INSTANCE1}",
                "1.38",
                {
                    "allocations": {CN1: {"resources": {"VCPU": 2}}},
                    "project_id": PROJECT,
                    "user_id": USER,
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                },
                label="update",
            ),
            get(f"/allocations/{INSTANCE1}", "1.38", label="fetched"),
            post(
                "/allocations",
                "1.38",
                {
                    INSTANCE1: {
                        "allocations": {CN1: {"resources": {"VCPU": 3}}},
                        "project_id": PROJECT,
                        "user_id": USER,
                        "consumer_generation": ref("fetched", "consumer_generation"),
                        "consumer_type": "INSTANCE",
                    },
                },
                label="create",
            ),
            delete(f"/allocations/{INSTANCE1}", "1.38", label="delete"),
        ),
    ]


def _osc_inventory() -> list[Scenario]:
    found = []
    for version in ("1.0", "1.39"):
        found += [
            # resource provider inventory set <uuid> --resource VCPU=16 --resource ...
            scenario(
                f"osc-inventory-set-{version}",
                *compute_node(CN1),
                get(f"/resource_providers/{CN1}", version, label="rp"),
                put(
                    INVENTORIES,
                    version,
                    {
                        "inventories": {
                            "VCPU": {"total": 16},
                            "MEMORY_MB": {"total": 8192, "step_size": 128},
                        },
                        "resource_provider_generation": ref("rp", "generation"),
                    },
                    label="set",
                ),
            ),
            # resource provider inventory set <uuid> --amend --resource DISK_GB:reserved=10
            scenario(
                f"osc-inventory-set-amend-{version}",
                *compute_node(CN1),
                get(f"/resource_providers/{CN1}", version, label="rp"),
                get(INVENTORIES, version, label="inventories"),
                put(
                    INVENTORIES,
                    version,
                    Merged(
                        ref("inventories"),
                        {
                            "inventories": Merged(
                                ref("inventories", "inventories"),
                                {
                                    "DISK_GB": Merged(
                                        ref("inventories", "inventories", "DISK_GB"),
                                        {"reserved": 10},
                                    ),
                                    "VGPU": {"total": 2},
                                },
                            ),
                        },
                    ),
                    label="set",
                ),
            ),
            # resource provider inventory class set <uuid> VCPU --total 32 --max_unit 8
            scenario(
                f"osc-inventory-class-set-{version}",
                *compute_node(CN1),
                get(f"/resource_providers/{CN1}", version, label="rp"),
                put(
                    f"{INVENTORIES}/VCPU",
                    version,
                    {
                        "resource_provider_generation": ref("rp", "generation"),
                        "total": 32,
                        "max_unit": 8,
                    },
                    label="set",
                ),
                get(f"/resource_providers/{CN1}", version, label="rp-2"),
                put(
                    f"{INVENTORIES}/VGPU",
                    version,
                    {
                        "resource_provider_generation": ref("rp-2", "generation"),
                        "total": 2,
                    },
                    label="set-new-class",
                ),
            ),
            # resource provider inventory delete <uuid> --resource-class DISK_GB
            scenario(
                f"osc-inventory-delete-class-{version}",
                *compute_node(CN1),
                delete(f"{INVENTORIES}/DISK_GB", version, label="delete"),
            ),
        ]
    for version in ("1.5", "1.39"):
        # resource provider inventory delete <uuid>
        found.append(
            scenario(
                f"osc-inventory-delete-all-{version}",
                *compute_node(CN1),
                delete(INVENTORIES, version, label="delete"),
            )
        )
    return found


def _osc_providers() -> list[Scenario]:
    found = []
    for version in ("1.0", "1.14", "1.20"):
        body = {"name": "cn1", "uuid": CN1}
        child = {"name": "numa0", "uuid": NUMA0, "parent_provider_uuid": CN1}
        steps = [
            # resource provider create cn1 --uuid <uuid>: POST, then GET of its Location
            post("/resource_providers", version, body, label="create"),
            get(header("create", "Location"), version),
            # ... and without --uuid
            post("/resource_providers", version, {"name": "cn3"}, label="create-generated"),
            get(header("create-generated", "Location"), version),
        ]
        if version_at_least(version, "1.14"):
            steps += [
                post("/resource_providers", version, child, label="create-child"),
                get(header("create-child", "Location"), version),
            ]
        found.append(scenario(f"osc-provider-create-{version}", *steps))
    for version in ("1.0", "1.14", "1.37", "1.39"):
        steps = [
            provider(CN1),
            provider(CN2),
            provider(NUMA0, parent=CN1),
            # resource provider set <uuid> --name ... [--parent-provider ...]
            put(f"/resource_providers/{CN1}", version, {"name": "cn1-renamed"}, label="set"),
        ]
        if version_at_least(version, "1.14"):
            steps.append(
                put(
                    f"/resource_providers/{NUMA0}",
                    version,
                    {"name": "numa0", "parent_provider_uuid": CN2},
                    label="set-parent",
                )
            )
        found.append(scenario(f"osc-provider-set-{version}", *steps))
    for version in ("1.6", "1.39"):
        found.append(
            scenario(
                # resource provider trait set <uuid> --trait HW_CPU_X86_AVX2 --trait CUSTOM_FAST
                f"osc-provider-trait-set-{version}",
                provider(CN1),
                put("/traits/CUSTOM_FAST", version, label="trait-create"),
                get(f"/resource_providers/{CN1}", version, label="rp"),
                put(
                    f"/resource_providers/{CN1}/traits",
                    version,
                    {
                        "traits": ["HW_CPU_X86_AVX2", "CUSTOM_FAST"],
                        "resource_provider_generation": ref("rp", "generation"),
                    },
                    label="set",
                ),
                # resource provider trait delete <uuid>
                delete(f"/resource_providers/{CN1}/traits", version, label="delete"),
            )
        )
    # aggregate set <uuid> --aggregate ... : a plain list before 1.19 ...
    found.append(
        scenario(
            "osc-aggregate-set-1.1",
            provider(CN1),
            put(f"/resource_providers/{CN1}/aggregates", "1.1", [AGG1, AGG2], label="set"),
            put(f"/resource_providers/{CN1}/aggregates", "1.1", [], label="clear"),
        )
    )
    # ... and from 1.19 with --generation, which the user read first.
    found.append(
        scenario(
            "osc-aggregate-set-1.19",
            provider(CN1),
            get(f"/resource_providers/{CN1}", "1.19", label="rp"),
            put(
                f"/resource_providers/{CN1}/aggregates",
                "1.19",
                {
                    "aggregates": [AGG1, AGG2],
                    "resource_provider_generation": ref("rp", "generation"),
                },
                label="set",
            ),
            put(
                f"/resource_providers/{CN1}/aggregates",
                "1.19",
                {"aggregates": [], "resource_provider_generation": ref("rp", "generation")},
                label="stale",
            ),
        )
    )
    return found


def _osc_allocations() -> list[Scenario]:
    found = []
    world = (*compute_node(CN1), *compute_node(CN2))
    for version in ("1.0", "1.8", "1.12", "1.28", "1.38", "1.39"):
        # resource provider allocation set <consumer> --allocation rp=<cn1>,VCPU=2,MEMORY_MB=512
        #     --allocation rp=<cn2>,DISK_GB=10 [--project-id --user-id] [--consumer-type]
        steps: list = list(world)
        if version_at_least(version, "1.28"):
            steps.append(get(f"/allocations/{INSTANCE1}", version, label="read"))
        if version_at_least(version, "1.12"):
            allocations: object = {
                CN1: {"resources": {"VCPU": 2, "MEMORY_MB": 512}},
                CN2: {"resources": {"DISK_GB": 10}},
            }
        else:
            allocations = [
                {"resource_provider": {"uuid": CN1}, "resources": {"VCPU": 2, "MEMORY_MB": 512}},
                {"resource_provider": {"uuid": CN2}, "resources": {"DISK_GB": 10}},
            ]
        body: dict = {"allocations": allocations}
        if version_at_least(version, "1.28"):
            body["consumer_generation"] = None  # the GET of a new consumer has none
        if version_at_least(version, "1.8"):
            body |= {"project_id": PROJECT, "user_id": USER}
        if version_at_least(version, "1.38"):
            body["consumer_type"] = "INSTANCE"
        steps += [
            put(f"/allocations/{INSTANCE1}", version, body, label="set"),
            get(f"/allocations/{INSTANCE1}", version, label="shown"),
        ]
        if version_at_least(version, "1.12"):
            # resource provider allocation unset <consumer> --provider <cn2>: the GET's
            # body written back without that provider (its generations included).
            steps += [
                put(
                    f"/allocations/{INSTANCE1}",
                    version,
                    Merged(
                        ref("shown"),
                        {"allocations": Merged(ref("shown", "allocations"), drop=(CN2,))},
                    ),
                    label="unset-provider",
                ),
                get(f"/allocations/{INSTANCE1}", version, label="shown-2"),
            ]
            if version_at_least(version, "1.28"):
                # ... unset without options: the same with no allocations at all.
                steps.append(
                    put(
                        f"/allocations/{INSTANCE1}",
                        version,
                        Merged(ref("shown-2"), {"allocations": {}}),
                        label="unset-all",
                    )
                )
            else:
                steps.append(delete(f"/allocations/{INSTANCE1}", version, label="unset-all"))
        else:
            # resource provider allocation delete <consumer>
            steps.append(delete(f"/allocations/{INSTANCE1}", version, label="delete"))
        steps.append(get(f"/allocations/{INSTANCE1}", version))
        found.append(scenario(f"osc-allocation-set-unset-{version}", *steps))
    return found


def _osc_names() -> list[Scenario]:
    return [
        scenario(
            # resource class create / set (1.7) / delete
            "osc-resource-class",
            post("/resource_classes", "1.2", {"name": "CUSTOM_GOLD"}, label="create"),
            put("/resource_classes/CUSTOM_SILVER", "1.7", label="set"),
            put("/resource_classes/CUSTOM_SILVER", "1.7", label="set-again"),
            delete("/resource_classes/CUSTOM_GOLD", "1.2", label="delete"),
            get("/resource_classes/CUSTOM_GOLD", "1.2"),
        ),
        scenario(
            # trait create / delete
            "osc-trait",
            put("/traits/CUSTOM_FAST", "1.6", label="create"),
            put("/traits/CUSTOM_FAST", "1.6", label="create-again"),
            get("/traits/CUSTOM_FAST", "1.6"),
            delete("/traits/CUSTOM_FAST", "1.6", label="delete"),
            get("/traits/CUSTOM_FAST", "1.6"),
        ),
        scenario(
            "osc-trait-delete-in-use",
            provider(CN1),
            *traits(CN1, "CUSTOM_FAST"),
            delete("/traits/CUSTOM_FAST", "1.6", label="delete"),
        ),
    ]


SCENARIOS = tuple(_sdk() + _osc_inventory() + _osc_providers() + _osc_allocations() + _osc_names())
