"""Reads with query strings on one world, at the versions that introduced each
parameter: GET /allocation_candidates, GET /resource_providers, GET /usages,
GET /traits, GET /resource_classes.

The world: CN1, a flat compute node in AGG1 with AVX2; CN2, a host whose VCPU and
memory are in two NUMA nodes, each with a PF of VFs on its own physnet, disk from
SHARED (a sharing provider in AGG2, with CN2). INSTANCE1 uses most of CN1, so
capacity matters to the answers. Queries avoid the cases api-ref/differences.md
lists for candidates; the body comparison sorts lists, so the order of candidates
(which the API does not define) never counts, and no query uses ``limit``.
"""

from tests.differential.builders import aggregates, allocate, inventory, provider, traits
from tests.differential.scenario import (
    AGG1,
    AGG2,
    AGG3,
    CN1,
    CN2,
    INSTANCE1,
    NUMA0,
    NUMA1,
    PF0,
    PF1,
    PROJECT,
    SHARED,
    USER,
    Scenario,
    get,
    scenario,
)

WORLD = (
    provider(CN1),
    inventory(CN1, VCPU=8, MEMORY_MB=4096, DISK_GB=100),
    *traits(CN1, "HW_CPU_X86_AVX2"),
    aggregates(CN1, AGG1),
    provider(CN2),
    aggregates(CN2, AGG2),
    *traits(CN2, "HW_CPU_X86_SSE42"),
    provider(NUMA0, parent=CN2),
    inventory(NUMA0, VCPU=4, MEMORY_MB=2048),
    *traits(NUMA0, "HW_NUMA_ROOT"),
    provider(NUMA1, parent=CN2),
    inventory(NUMA1, VCPU=4, MEMORY_MB=2048),
    *traits(NUMA1, "HW_NUMA_ROOT"),
    provider(PF0, parent=NUMA0),
    inventory(PF0, SRIOV_NET_VF=8),
    *traits(PF0, "CUSTOM_PHYSNET_A"),
    provider(PF1, parent=NUMA1),
    inventory(PF1, SRIOV_NET_VF=8),
    *traits(PF1, "CUSTOM_PHYSNET_B"),
    provider(SHARED),
    inventory(SHARED, DISK_GB=1000),
    *traits(SHARED, "MISC_SHARES_VIA_AGGREGATE"),
    aggregates(SHARED, AGG2, AGG3),
    allocate(INSTANCE1, {CN1: {"VCPU": 6, "MEMORY_MB": 1024, "DISK_GB": 20}}),
)

# (version, [query, ...]): each query at the version that introduced what it uses.
CANDIDATE_QUERIES = (
    (
        "1.10",
        [
            "resources=VCPU:1,MEMORY_MB:512",
            "resources=VCPU:4",
            "resources=DISK_GB:10",
            "resources=VCPU:1,DISK_GB:10",
        ],
    ),
    ("1.12", ["resources=VCPU:1,MEMORY_MB:512,DISK_GB:10"]),
    (
        "1.17",
        ["resources=VCPU:1&required=HW_CPU_X86_AVX2", "resources=VCPU:1&required=HW_CPU_X86_SSE42"],
    ),
    (
        "1.21",
        ["resources=VCPU:1&member_of=" + AGG1, f"resources=VCPU:1&member_of=in:{AGG1},{AGG2}"],
    ),
    ("1.22", ["resources=VCPU:1&required=!HW_CPU_X86_AVX2"]),
    ("1.24", [f"resources=VCPU:1&member_of={AGG1}&member_of={AGG2}"]),
    (
        "1.25",
        [
            "resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate",
            "resources1=VCPU:1&resources2=VCPU:1&group_policy=none",
        ],
    ),
    ("1.27", ["resources=VCPU:1,MEMORY_MB:512"]),
    (
        "1.29",
        [
            "resources=VCPU:1,MEMORY_MB:512",
            "resources=VCPU:1,SRIOV_NET_VF:1",
            "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10",
        ],
    ),
    (
        "1.31",
        [
            f"resources=VCPU:1&in_tree={CN2}",
            f"resources1=SRIOV_NET_VF:1&in_tree1={PF1}&resources=VCPU:1",
        ],
    ),
    ("1.32", [f"resources=VCPU:1&member_of=!{AGG1}"]),
    (
        "1.33",
        [
            "resources_PHYS=SRIOV_NET_VF:1&required_PHYS=CUSTOM_PHYSNET_A"
            "&resources=VCPU:1&group_policy=none"
        ],
    ),
    (
        "1.34",
        [
            "resources_PHYS=SRIOV_NET_VF:1&required_PHYS=CUSTOM_PHYSNET_B"
            "&resources_CPU=VCPU:1&group_policy=none",
            "resources=VCPU:1,MEMORY_MB:512",
        ],
    ),
    (
        "1.35",
        [
            "resources=VCPU:1&root_required=HW_CPU_X86_SSE42",
            "resources=VCPU:1&root_required=!HW_CPU_X86_SSE42",
        ],
    ),
    (
        "1.36",
        [
            "resources_CPU=VCPU:1&required_NUMA=HW_NUMA_ROOT"
            "&resources_NET=SRIOV_NET_VF:1&same_subtree=_CPU,_NET,_NUMA&group_policy=none"
        ],
    ),
    (
        "1.39",
        [
            "resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42",
            "resources_PHYS=SRIOV_NET_VF:1"
            "&required_PHYS=in:CUSTOM_PHYSNET_A,CUSTOM_PHYSNET_B&group_policy=none",
        ],
    ),
)

PROVIDER_QUERIES = (
    ("1.0", ["name=cn1", f"uuid={CN2}"]),
    ("1.3", [f"member_of={AGG1}", f"member_of=in:{AGG1},{AGG2}"]),
    ("1.4", ["resources=VCPU:2", "resources=VCPU:4,MEMORY_MB:1024"]),
    ("1.14", [f"in_tree={NUMA1}"]),
    ("1.18", ["required=HW_NUMA_ROOT"]),
    ("1.22", ["required=!HW_NUMA_ROOT"]),
    ("1.32", [f"member_of=!{AGG2}"]),
    ("1.39", ["required=in:CUSTOM_PHYSNET_A,CUSTOM_PHYSNET_B"]),
)


def _scenarios() -> list[Scenario]:
    found = []
    for version, queries in CANDIDATE_QUERIES:
        found.append(
            scenario(
                f"candidates-{version}",
                *WORLD,
                *(
                    get(f"/allocation_candidates?{q}", version, label=f"query-{n}")
                    for n, q in enumerate(queries, start=1)
                ),
            )
        )
    found.append(
        scenario(
            "provider-queries",
            *WORLD,
            *(
                get(f"/resource_providers?{q}", version, label=f"{version}-query-{n}")
                for version, queries in PROVIDER_QUERIES
                for n, q in enumerate(queries, start=1)
            ),
        )
    )
    found.append(
        scenario(
            "other-queries",
            *WORLD,
            get(f"/usages?project_id={PROJECT}", "1.9", label="usages-1.9"),
            get(f"/usages?project_id={PROJECT}&user_id={USER}", "1.9", label="usages-user"),
            get(f"/usages?project_id={PROJECT}", "1.38", label="usages-1.38"),
            get(
                f"/usages?project_id={PROJECT}&consumer_type=INSTANCE", "1.38", label="usages-type"
            ),
            get("/usages?project_id=nobody", "1.38", label="usages-none"),
            get("/traits?associated=true", "1.6", label="traits-associated"),
            get(
                "/traits?name=in:HW_NUMA_ROOT,CUSTOM_PHYSNET_A,CUSTOM_NOPE",
                "1.6",
                label="traits-in",
            ),
            get("/traits?name=startswith:CUSTOM_", "1.6", label="traits-prefix"),
            get("/resource_classes", "1.2", label="classes"),
            get(f"/resource_providers/{CN1}/allocations", "1.0", label="provider-allocations"),
            get(f"/resource_providers/{CN1}/usages", "1.0", label="provider-usages"),
            get(f"/resource_providers/{CN2}/aggregates", "1.19", label="aggregates"),
        )
    )
    return found


SCENARIOS = tuple(_scenarios())
