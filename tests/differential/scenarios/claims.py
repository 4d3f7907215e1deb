"""The claim loop as Nova runs it, at each of 1.34-1.39 (where candidates carry
``mappings``; the unsuffixed group's key is the empty string).

GET /allocation_candidates, then the first allocation request exactly as returned
(with its ``mappings``) plus the consumer fields, written three ways: PUT
/allocations/{consumer}, POST /allocations, and as the allocation of a POST
/reshaper. "First" is the one that sorts first, so both sides claim the same one.
"""

from tests.differential.builders import allocate, compute_node, inventory, provider, traits
from tests.differential.scenario import (
    CN1,
    INSTANCE1,
    INSTANCE2,
    NUMA0,
    NUMA1,
    PROJECT,
    SORTED_FIRST,
    USER,
    ConsumerGeneration,
    Generation,
    Merged,
    Scenario,
    get,
    post,
    put,
    ref,
    scenario,
    version_at_least,
)

CLAIM_VERSIONS = ("1.34", "1.35", "1.36", "1.37", "1.38", "1.39")
SERVICE = {"X-Roles": "admin,service"}

# A compute node with two NUMA nodes holding its VCPU and memory.
NUMA_HOST = (
    provider(CN1),
    inventory(CN1, DISK_GB=100),
    provider(NUMA0, parent=CN1),
    inventory(NUMA0, VCPU=4, MEMORY_MB=2048),
    *traits(NUMA0, "HW_NUMA_ROOT"),
    provider(NUMA1, parent=CN1),
    inventory(NUMA1, VCPU=4, MEMORY_MB=2048),
    *traits(NUMA1, "HW_NUMA_ROOT"),
)


def _consumer_fields(version: str) -> dict:
    fields = {
        "project_id": PROJECT,
        "user_id": USER,
        "consumer_generation": ConsumerGeneration(INSTANCE1),
    }
    if version_at_least(version, "1.38"):
        fields["consumer_type"] = "INSTANCE"
    return fields


def _claimed(version: str) -> Merged:
    """The first candidate's allocation request, with the consumer's fields."""
    return Merged(ref("candidates", "allocation_requests", SORTED_FIRST), _consumer_fields(version))


def _claims(
    name: str, world: tuple, query: str, version: str, root_inventories: dict
) -> list[Scenario]:
    candidates = get(f"/allocation_candidates?{query}", version, label="candidates")
    after = (
        get(f"/allocations/{INSTANCE1}", version, label="claimed"),
        get(f"/allocation_candidates?{query}", version, label="candidates-after"),
    )
    return [
        scenario(
            f"claim-{name}-put-{version}",
            *world,
            candidates,
            put(f"/allocations/{INSTANCE1}", version, _claimed(version), label="claim"),
            *after,
        ),
        scenario(
            f"claim-{name}-post-{version}",
            *world,
            candidates,
            post("/allocations", version, {INSTANCE1: _claimed(version)}, label="claim"),
            *after,
        ),
        scenario(
            f"claim-{name}-reshaper-{version}",
            *world,
            candidates,
            # The same claim, made while the compute node's disk grows.
            post(
                "/reshaper",
                version,
                {
                    "inventories": {
                        CN1: {
                            "inventories": root_inventories,
                            "resource_provider_generation": Generation(CN1),
                        },
                    },
                    "allocations": {INSTANCE1: _claimed(version)},
                },
                headers=SERVICE,
                label="claim",
            ),
            *after,
        ),
    ]


def _scenarios() -> list[Scenario]:
    found = []
    for version in CLAIM_VERSIONS:
        # The unsuffixed group only: its mappings key is "".
        found += _claims(
            "flat",
            compute_node(CN1),
            "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10",
            version,
            {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}, "DISK_GB": {"total": 200}},
        )
        # Nested and granular, as Nova asks for a NUMA guest: one group per NUMA node,
        # disk from the root in the unsuffixed group.
        found += _claims(
            "numa",
            NUMA_HOST,
            "resources=DISK_GB:10&resources_NUMA0=VCPU:2,MEMORY_MB:1024"
            "&required_NUMA0=HW_NUMA_ROOT&resources_NUMA1=VCPU:2,MEMORY_MB:1024"
            "&required_NUMA1=HW_NUMA_ROOT&group_policy=isolate",
            version,
            {"DISK_GB": {"total": 200}},
        )
    return found + _conflicts()


def _conflicts() -> list[Scenario]:
    """The claim loop's conflicts: another consumer claimed the capacity between the
    query and the claim; the same consumer claims twice from the same answer."""
    query = "/allocation_candidates?resources=VCPU:3"
    return [
        scenario(
            "claim-lost-race-1.39",
            *compute_node(CN1, vcpu=4),
            get(query, "1.39", label="candidates"),
            allocate(INSTANCE2, {CN1: {"VCPU": 2}}, label="other-claim"),
            put(f"/allocations/{INSTANCE1}", "1.39", _claimed("1.39"), label="claim"),
            get(query, "1.39", label="candidates-after"),
        ),
        scenario(
            "claim-twice-1.39",
            *compute_node(CN1),
            get(query, "1.39", label="candidates"),
            put(f"/allocations/{INSTANCE1}", "1.39", _claimed("1.39"), label="claim"),
            # The second claim was built before the first (a null consumer generation).
            put(
                f"/allocations/{INSTANCE1}",
                "1.39",
                Merged(
                    ref("candidates", "allocation_requests", SORTED_FIRST),
                    {**_consumer_fields("1.39"), "consumer_generation": None},
                ),
                label="claim-again",
            ),
            get(f"/allocations/{INSTANCE1}", "1.39"),
        ),
    ]


SCENARIOS = tuple(_scenarios())
