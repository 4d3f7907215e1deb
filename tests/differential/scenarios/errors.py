"""Requests upstream refuses (or accepts where one might expect a refusal): bad bodies,
stale generations, missing providers, claims over capacity, inventory changes below
current usage, deletions of things in use, bad versions. Each scenario ends with
the state read back, so a refusal that still changed something is caught too."""

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
    MISSING,
    NUMA0,
    Generation,
    Scenario,
    Step,
    delete,
    get,
    post,
    put,
    scenario,
    version_at_least,
)

INVENTORIES = f"/resource_providers/{CN1}/inventories"
SERVICE = {"X-Roles": "admin,service"}
ERROR_VERSIONS = ("1.22", "1.39")  # without and with error codes


def _bad_bodies(version: str) -> list[Scenario]:
    return [
        scenario(
            f"bad-provider-bodies-{version}",
            provider(CN1),
            post("/resource_providers", version, {}, label="no-name"),
            post("/resource_providers", version, {"name": "x" * 201}, label="long-name"),
            post(
                "/resource_providers",
                version,
                {"name": "x", "uuid": "not-a-uuid"},
                label="bad-uuid",
            ),
            post(
                "/resource_providers", version, {"name": "x", "color": "red"}, label="unknown-field"
            ),
            post("/resource_providers", version, {"name": "cn1"}, label="duplicate-name"),
            post(
                "/resource_providers",
                version,
                {"name": "other", "uuid": CN1},
                label="duplicate-uuid",
            ),
            post("/resource_providers", version, raw="{", label="malformed-json"),
            post(
                "/resource_providers",
                version,
                raw='{"name": "x"}',
                label="not-json-type",
                headers={"Content-Type": "text/plain"},
            ),
            put(f"/resource_providers/{CN1}", version, {}, label="update-no-name"),
            put(
                f"/resource_providers/{CN1}",
                version,
                {"name": "x", "uuid": CN1},
                label="update-uuid",
            ),
            get("/resource_providers", version),
        ),
        scenario(
            f"bad-inventory-bodies-{version}",
            *compute_node(CN1),
            put(
                INVENTORIES, version, {"inventories": {"VCPU": {"total": 8}}}, label="no-generation"
            ),
            put(
                INVENTORIES,
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"VCPU": {"total": 0}},
                },
                label="zero-total",
            ),
            put(
                INVENTORIES,
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"VCPU": {"reserved": 1}},
                },
                label="no-total",
            ),
            put(
                INVENTORIES,
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"VCPU": {"total": 8, "reserved": 9}},
                },
                label="reserved-over-total",
            ),
            put(
                INVENTORIES,
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"VCPU": {"total": 8, "step_size": 0}},
                },
                label="zero-step",
            ),
            put(
                INVENTORIES,
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"VCPU": {"total": 8, "allocation_ratio": 0}},
                },
                label="zero-ratio",
            ),
            put(
                INVENTORIES,
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"CUSTOM_NOPE": {"total": 8}},
                },
                label="unknown-class",
            ),
            put(
                INVENTORIES,
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "inventories": {"VCPU": {"total": 8}},
                    "x": 1,
                },
                label="unknown-field",
            ),
            post(INVENTORIES, version, {"resource_class": "VGPU"}, label="post-no-total"),
            post(INVENTORIES, version, {"total": 1}, label="post-no-class"),
            put(f"{INVENTORIES}/VCPU", version, {"total": 8}, label="one-no-generation"),
            put(
                f"{INVENTORIES}/VGPU",
                version,
                {"resource_provider_generation": Generation(CN1), "total": 2},
                label="one-not-there",
            ),
            get(INVENTORIES, version),
        ),
        scenario(
            f"bad-trait-and-aggregate-bodies-{version}",
            provider(CN1),
            put(
                f"/resource_providers/{CN1}/traits",
                version,
                {"traits": ["HW_CPU_X86_AVX2"]},
                label="traits-no-generation",
            ),
            put(
                f"/resource_providers/{CN1}/traits",
                version,
                {"traits": ["CUSTOM_NOT_THERE"], "resource_provider_generation": Generation(CN1)},
                label="traits-unknown",
            ),
            put(
                f"/resource_providers/{CN1}/traits",
                version,
                {"traits": "HW_CPU_X86_AVX2", "resource_provider_generation": Generation(CN1)},
                label="traits-not-a-list",
            ),
            put(
                f"/resource_providers/{CN1}/aggregates",
                version,
                {"aggregates": ["nope"], "resource_provider_generation": Generation(CN1)},
                label="aggregates-bad-uuid",
            ),
            put(
                f"/resource_providers/{CN1}/aggregates",
                version,
                ["nope"],
                label="aggregates-old-format",
            ),
            put("/traits/HW_NOT_CUSTOM", version, label="trait-not-custom"),
            put("/traits/CUSTOM_lower", version, label="trait-bad-name"),
            post("/resource_classes", version, {"name": "GOLD"}, label="class-not-custom"),
            post(
                "/resource_classes",
                version,
                {"name": "CUSTOM_GOLD", "x": 1},
                label="class-unknown-field",
            ),
            get(f"/resource_providers/{CN1}/traits", version),
        ),
        scenario(
            f"bad-allocation-bodies-{version}",
            *compute_node(CN1),
            put(f"/allocations/{INSTANCE1}", version, {"allocations": {}}, label="no-project"),
            put(
                f"/allocations/{INSTANCE1}",
                version,
                {**allocation_body({CN1: {"VCPU": 0}}, version, INSTANCE1)},
                label="zero-amount",
            ),
            put(
                f"/allocations/{INSTANCE1}",
                version,
                allocation_body({CN1: {"CUSTOM_NOPE": 1}}, version, INSTANCE1),
                label="unknown-class",
            ),
            put(
                f"/allocations/{INSTANCE1}",
                version,
                allocation_body({CN1: {"VGPU": 1}}, version, INSTANCE1),
                label="no-inventory",
            ),
            put(
                f"/allocations/{INSTANCE1}",
                version,
                allocation_body({"not-a-uuid": {"VCPU": 1}}, version, INSTANCE1),
                label="bad-provider-uuid",
            ),
            put(
                "/allocations/not-a-uuid",
                version,
                allocation_body({CN1: {"VCPU": 1}}, version, INSTANCE1),
                label="bad-consumer",
            ),
            post(
                "/allocations", version, {INSTANCE1: {"allocations": {}}}, label="post-no-project"
            ),
            post("/allocations", version, {}, label="post-empty"),
            get(f"/allocations/{INSTANCE1}", version),
            get(f"/resource_providers/{CN1}/usages", version),
        ),
    ]


def _stale(version: str) -> list[Scenario]:
    stale = 0  # every provider here has moved past generation 0
    return [
        scenario(
            f"stale-provider-generations-{version}",
            *compute_node(CN1),
            put(
                INVENTORIES,
                version,
                {"resource_provider_generation": stale, "inventories": {"VCPU": {"total": 4}}},
                label="inventories",
            ),
            put(
                f"{INVENTORIES}/VCPU",
                version,
                {"resource_provider_generation": stale, "total": 4},
                label="inventory",
            ),
            post(
                INVENTORIES,
                version,
                {"resource_provider_generation": stale, "resource_class": "VGPU", "total": 1},
                label="create",
            ),
            put(
                f"/resource_providers/{CN1}/traits",
                version,
                {"resource_provider_generation": stale, "traits": []},
                label="traits",
            ),
            put(
                f"/resource_providers/{CN1}/aggregates",
                version,
                {"resource_provider_generation": stale, "aggregates": []},
                label="aggregates",
            ),
            get(INVENTORIES, version),
        ),
        scenario(
            f"stale-consumer-generations-{version}",
            *compute_node(CN1),
            allocate(INSTANCE1, {CN1: {"VCPU": 1}}),
            put(
                f"/allocations/{INSTANCE1}",
                version,
                allocation_body({CN1: {"VCPU": 2}}, version, consumer_generation=None),
                label="null-for-existing",
            ),
            put(
                f"/allocations/{INSTANCE1}",
                version,
                allocation_body({CN1: {"VCPU": 2}}, version, consumer_generation=7),
                label="wrong",
            ),
            put(
                f"/allocations/{INSTANCE2}",
                version,
                allocation_body({CN1: {"VCPU": 2}}, version, consumer_generation=0),
                label="number-for-new",
            ),
            post(
                "/allocations",
                version,
                {
                    INSTANCE1: allocation_body({CN1: {"VCPU": 3}}, version, consumer_generation=7),
                    INSTANCE2: allocation_body({CN1: {"VCPU": 1}}, version, INSTANCE2),
                },
                label="post-one-stale",
            ),
            get(f"/allocations/{INSTANCE1}", version),
            get(f"/allocations/{INSTANCE2}", version),
        ),
    ]


def _missing_requests(version: str) -> dict[str, Step]:
    """Requests naming things that do not exist, by name."""
    path = f"/resource_providers/{MISSING}"
    return {
        "show": get(path, version),
        "update": put(path, version, {"name": "x"}),
        "delete": delete(path, version),
        "inventories": get(f"{path}/inventories", version),
        "set-inventories": put(
            f"{path}/inventories", version, {"resource_provider_generation": 0, "inventories": {}}
        ),
        "create-inventory": post(
            f"{path}/inventories",
            version,
            {"resource_provider_generation": 0, "resource_class": "VCPU", "total": 1},
        ),
        "delete-inventories": delete(f"{path}/inventories", version),
        "inventory": get(f"{path}/inventories/VCPU", version),
        "set-inventory": put(
            f"{path}/inventories/VCPU", version, {"resource_provider_generation": 0, "total": 1}
        ),
        "delete-inventory": delete(f"{path}/inventories/VCPU", version),
        "usages": get(f"{path}/usages", version),
        "aggregates": get(f"{path}/aggregates", version),
        "set-aggregates": put(
            f"{path}/aggregates", version, {"resource_provider_generation": 0, "aggregates": []}
        ),
        "traits": get(f"{path}/traits", version),
        "set-traits": put(
            f"{path}/traits", version, {"resource_provider_generation": 0, "traits": []}
        ),
        "delete-traits": delete(f"{path}/traits", version),
        "allocations": get(f"{path}/allocations", version),
        "no-such-inventory": get(f"{INVENTORIES}/VGPU", version),
        "class": get("/resource_classes/CUSTOM_NOPE", version),
        "delete-class": delete("/resource_classes/CUSTOM_NOPE", version),
        "trait": get("/traits/CUSTOM_NOPE", version),
        "delete-trait": delete("/traits/CUSTOM_NOPE", version),
        "delete-consumer": delete(f"/allocations/{INSTANCE2}", version),
        "child-of-missing": post(
            "/resource_providers", version, {"name": "child", "parent_provider_uuid": MISSING}
        ),
    }


def _missing(version: str) -> list[Scenario]:
    found = []
    if version_at_least(version, "1.23"):
        # With error codes: one scenario per request, so each code is compared.
        for name, step in _missing_requests(version).items():
            found.append(
                scenario(f"missing-{name}-{version}", *compute_node(CN1), step.labelled(name))
            )
    else:
        found.append(
            scenario(
                f"missing-{version}",
                *compute_node(CN1),
                *(step.labelled(name) for name, step in _missing_requests(version).items()),
            )
        )
    return [
        *found,
        # Allocating against a provider that does not exist, for a new consumer: upstream
        # leaves the consumer behind, so the retry with a null generation conflicts.
        scenario(
            f"missing-provider-allocation-{version}",
            *compute_node(CN1),
            allocate(
                INSTANCE1, {CN1: {"VCPU": 1}, MISSING: {"VCPU": 1}}, version, label="allocate"
            ),
            allocate(INSTANCE1, {CN1: {"VCPU": 1}}, version, label="retry"),
            get(f"/allocations/{INSTANCE1}", version),
        ),
    ]


def _capacity(version: str) -> list[Scenario]:
    limited = {
        "total": 8,
        "reserved": 2,
        "min_unit": 2,
        "max_unit": 4,
        "step_size": 2,
        "allocation_ratio": 1.0,
    }
    world = (provider(CN1), inventory(CN1, VCPU=limited, MEMORY_MB=1024))
    return [
        scenario(
            f"over-capacity-{version}",
            *world,
            allocate(INSTANCE1, {CN1: {"VCPU": 6}}, version, label="over-max-unit"),
            allocate(INSTANCE1, {CN1: {"VCPU": 1}}, version, label="under-min-unit"),
            allocate(INSTANCE1, {CN1: {"VCPU": 3}}, version, label="off-step"),
            allocate(INSTANCE1, {CN1: {"VCPU": 4, "MEMORY_MB": 1025}}, version, label="over-total"),
            allocate(INSTANCE1, {CN1: {"VCPU": 4}}, version, label="fits"),
            allocate(INSTANCE2, {CN1: {"VCPU": 4}}, version, label="over-reserved"),
            post(
                "/allocations",
                version,
                {
                    INSTANCE2: allocation_body({CN1: {"VCPU": 2}}, version, INSTANCE2),
                    INSTANCE1: allocation_body(
                        {CN1: {"VCPU": 4, "MEMORY_MB": 2048}}, version, INSTANCE1
                    ),
                },
                label="post-one-over",
            ),
            get(f"/resource_providers/{CN1}/usages", version),
            get(f"/allocations/{INSTANCE2}", version),
        ),
    ]


def _below_usage(version: str) -> list[Scenario]:
    world = (*compute_node(CN1), allocate(INSTANCE1, {CN1: {"VCPU": 4, "DISK_GB": 50}}))
    return [
        # Upstream accepts these (and logs a warning); the provider is over-committed.
        scenario(
            f"below-usage-replace-all-{version}",
            *world,
            inventory(CN1, version, VCPU=2, MEMORY_MB=4096, DISK_GB=100).labelled("lower"),
            get(f"/resource_providers/{CN1}/usages", version),
        ),
        scenario(
            f"below-usage-update-one-{version}",
            *world,
            put(
                f"{INVENTORIES}/VCPU",
                version,
                {"resource_provider_generation": Generation(CN1), "total": 2},
                label="lower",
            ),
            get(f"{INVENTORIES}/VCPU", version),
        ),
        scenario(
            f"below-usage-reserved-{version}",
            *world,
            put(
                f"{INVENTORIES}/DISK_GB",
                version,
                {"resource_provider_generation": Generation(CN1), "total": 100, "reserved": 90},
                label="reserve",
            ),
        ),
        scenario(
            f"below-usage-ratio-{version}",
            *world,
            put(
                f"{INVENTORIES}/VCPU",
                version,
                {
                    "resource_provider_generation": Generation(CN1),
                    "total": 8,
                    "allocation_ratio": 0.25,
                },
                label="ratio",
            ),
        ),
        # Removing a class that is in use is refused (409) by upstream as well.
        scenario(
            f"in-use-inventory-removed-{version}",
            *world,
            # A misspelt class in place of one in use: upstream names the unknown class.
            inventory(CN1, version, VCPUS=8, MEMORY_MB=4096, DISK_GB=100).labelled("misspelt"),
            inventory(CN1, version, MEMORY_MB=4096, DISK_GB=100).labelled("replace-without"),
            delete(f"{INVENTORIES}/VCPU", version, label="delete-one"),
            delete(INVENTORIES, version, label="delete-all"),
            get(INVENTORIES, version),
        ),
    ]


def _in_use(version: str) -> list[Scenario]:
    return [
        scenario(
            f"in-use-deletions-{version}",
            *compute_node(CN1),
            provider(NUMA0, parent=CN1),
            *traits(CN1, "CUSTOM_FAST"),
            put("/resource_classes/CUSTOM_GOLD", "1.39"),
            inventory(NUMA0, CUSTOM_GOLD=4),
            allocate(INSTANCE1, {CN1: {"VCPU": 1}, NUMA0: {"CUSTOM_GOLD": 1}}),
            delete(f"/resource_providers/{CN1}", version, label="provider-with-child"),
            delete(f"/resource_providers/{NUMA0}", version, label="provider-with-allocations"),
            delete("/traits/CUSTOM_FAST", version, label="trait"),
            delete("/traits/HW_CPU_X86_AVX2", version, label="standard-trait"),
            delete("/resource_classes/CUSTOM_GOLD", version, label="class"),
            delete("/resource_classes/VCPU", version, label="standard-class"),
            put(
                "/resource_classes/CUSTOM_GOLD",
                "1.6",
                {"name": "CUSTOM_SILVER"},
                label="rename-in-use",
            ),
            post("/resource_classes", version, {"name": "CUSTOM_GOLD"}, label="class-again"),
            show(NUMA0, version),
        ),
    ]


def _versions() -> list[Scenario]:
    return [
        scenario(
            "version-negotiation",
            get("/", "1.40", label="too-new"),
            get("/resource_providers", "1.40", label="too-new-route"),
            get("/resource_providers", "2.0", label="other-major"),
            get(
                "/resource_providers",
                None,
                headers={"OpenStack-API-Version": "placement foo"},
                label="malformed",
            ),
            get(
                "/resource_providers",
                None,
                headers={"OpenStack-API-Version": "placement latest"},
                label="latest",
            ),
            get(
                "/resource_providers",
                None,
                headers={"OpenStack-API-Version": "compute 1.39"},
                label="other-service",
            ),
        ),
        scenario(
            "methods-not-allowed",
            provider(CN1),
            Step("PATCH", f"/resource_providers/{CN1}", "1.39", label="patch"),
            delete("/resource_providers", "1.39", label="delete-collection"),
            delete(INVENTORIES, "1.4", label="delete-inventories-1.4"),
            post("/allocation_candidates", "1.39", {}, label="post-candidates"),
            get("/nowhere", "1.39", label="no-route"),
        ),
        scenario(
            "provider-tree-errors",
            provider(CN1),
            provider(CN2),
            provider(NUMA0, parent=CN1),
            put(
                f"/resource_providers/{CN1}",
                "1.39",
                {"name": "cn1", "parent_provider_uuid": NUMA0},
                label="loop",
            ),
            put(
                f"/resource_providers/{NUMA0}",
                "1.39",
                {"name": "numa0", "parent_provider_uuid": NUMA0},
                label="own-parent",
            ),
            put(
                f"/resource_providers/{NUMA0}",
                "1.39",
                {"name": "numa0", "parent_provider_uuid": MISSING},
                label="missing-parent",
            ),
            post(
                "/resource_providers",
                "1.39",
                {"name": "x", "uuid": NUMA0, "parent_provider_uuid": CN2},
                label="dup-child",
            ),
            aggregates(CN1, "not-a-uuid"),
            get(f"/resource_providers?in_tree={CN1}", "1.39"),
        ),
    ]


def _bodiless() -> list[Scenario]:
    """Writes without a body (no Content-Type either), or with a body that is not JSON:
    one scenario each."""
    requests = {
        "post-provider": post("/resource_providers", "1.39"),
        "put-provider": put(f"/resource_providers/{CN1}", "1.39"),
        "put-inventories": put(INVENTORIES, "1.39"),
        "post-inventory": post(INVENTORIES, "1.39"),
        "put-traits": put(f"/resource_providers/{CN1}/traits", "1.39"),
        "put-aggregates": put(f"/resource_providers/{CN1}/aggregates", "1.39"),
        "post-class": post("/resource_classes", "1.39"),
        "put-class-1.2": put("/resource_classes/CUSTOM_X", "1.2"),
        "put-allocations": put(f"/allocations/{INSTANCE1}", "1.39"),
        "post-allocations": post("/allocations", "1.39"),
        "reshaper": post("/reshaper", "1.39", headers=SERVICE),
        "put-provider-as-text": put(
            f"/resource_providers/{CN1}",
            "1.39",
            raw='{"name": "x"}',
            headers={"Content-Type": "text/plain"},
        ),
    }
    return [
        scenario(f"no-body-{name}", provider(CN1), step.labelled(name))
        for name, step in requests.items()
    ]


def _too_early() -> list[Scenario]:
    """Query parameters and body fields one version before the version that added them."""
    rps, candidates = "/resource_providers", "/allocation_candidates"
    requests = {
        "rp-member-of-1.2": get(f"{rps}?member_of={AGG1}", "1.2"),
        "rp-resources-1.3": get(f"{rps}?resources=VCPU:1", "1.3"),
        "rp-in-tree-1.13": get(f"{rps}?in_tree={CN1}", "1.13"),
        "rp-required-1.17": get(f"{rps}?required=HW_CPU_X86_AVX2", "1.17"),
        "rp-forbidden-1.21": get(f"{rps}?required=!HW_CPU_X86_AVX2", "1.21"),
        "rp-member-of-in-1.2": get(f"{rps}?member_of=in:{AGG1},{AGG2}", "1.2"),
        "rp-forbidden-aggregate-1.31": get(f"{rps}?member_of=!{AGG1}", "1.31"),
        "rp-any-traits-1.38": get(f"{rps}?required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42", "1.38"),
        "ac-required-1.16": get(f"{candidates}?resources=VCPU:1&required=HW_CPU_X86_AVX2", "1.16"),
        "ac-member-of-1.20": get(f"{candidates}?resources=VCPU:1&member_of={AGG1}", "1.20"),
        "ac-forbidden-1.21": get(
            f"{candidates}?resources=VCPU:1&required=!HW_CPU_X86_AVX2", "1.21"
        ),
        "ac-granular-1.24": get(f"{candidates}?resources1=VCPU:1", "1.24"),
        "ac-in-tree-1.30": get(f"{candidates}?resources=VCPU:1&in_tree={CN1}", "1.30"),
        "ac-suffix-1.32": get(f"{candidates}?resources_A=VCPU:1", "1.32"),
        "ac-root-required-1.34": get(
            f"{candidates}?resources=VCPU:1&root_required=HW_CPU_X86_AVX2", "1.34"
        ),
        "ac-same-subtree-1.35": get(
            f"{candidates}?resources_A=VCPU:1&resources_B=MEMORY_MB:1&same_subtree=_A,_B"
            "&group_policy=none",
            "1.35",
        ),
        "ac-no-resources-1.34": get(f"{candidates}?required=HW_CPU_X86_AVX2", "1.34"),
        "reserved-equal-total-1.25": inventory(CN1, "1.25", VCPU={"total": 8, "reserved": 8}),
        "consumer-type-1.37": put(
            f"/allocations/{INSTANCE1}",
            "1.37",
            {
                **allocation_body({CN1: {"VCPU": 1}}, "1.37", consumer_generation=None),
                "consumer_type": "INSTANCE",
            },
        ),
        "mappings-1.33": put(
            f"/allocations/{INSTANCE1}",
            "1.33",
            {
                **allocation_body({CN1: {"VCPU": 1}}, "1.33", consumer_generation=None),
                "mappings": {"": [CN1]},
            },
        ),
    }
    return [
        scenario(f"too-early-{name}", *compute_node(CN1), step.labelled(name))
        for name, step in requests.items()
    ]


def _bad_candidate_queries() -> list[Scenario]:
    """Malformed GET /allocation_candidates queries at 1.39, one scenario each."""
    queries = {
        "no-resources": "required=HW_CPU_X86_AVX2",
        "bad-resources": "resources=VCPU",
        "zero-amount": "resources=VCPU:0",
        "unknown-class": "resources=CUSTOM_NOPE:1",
        "unknown-trait": "resources=VCPU:1&required=CUSTOM_NOPE",
        "bad-member-of": "resources=VCPU:1&member_of=nope",
        "no-group-policy": "resources1=VCPU:1&resources2=MEMORY_MB:1",
        "bad-group-policy": "resources1=VCPU:1&resources2=MEMORY_MB:1&group_policy=some",
        "bad-limit": "resources=VCPU:1&limit=0",
        "unknown-parameter": "resources=VCPU:1&colour=red",
        "same-subtree-unknown-suffix": "resources_A=VCPU:1&same_subtree=_A,_B",
        "orphan-required": "resources=VCPU:1&required1=HW_CPU_X86_AVX2",
        "bad-in-tree": "resources=VCPU:1&in_tree=nope",
    }
    return [
        scenario(
            f"bad-candidates-{name}",
            *compute_node(CN1),
            get(f"/allocation_candidates?{query}", "1.39", label=name),
        )
        for name, query in queries.items()
    ]


NON_ADMIN = {"X-Auth-Token": "someone"}  # no role: policy refuses every route to it
TEXT = {**NON_ADMIN, "Content-Type": "text/plain"}


def _before_policy() -> list[Scenario]:
    """A client that policy refuses still hears first what upstream's views check before
    they ask policy: a route below its microversion (404, or 405 for a method that came
    later) and a body that is not JSON (415). At the route's version and with JSON, the
    same requests are 403."""
    return [
        scenario(
            "non-admin-below-the-route-version",
            provider(CN1),
            get("/traits", "1.5", headers=NON_ADMIN, label="traits-1.5"),
            put("/traits/CUSTOM_X", "1.5", headers=NON_ADMIN, label="put-trait-1.5"),
            get(
                f"/resource_providers/{CN1}/traits",
                "1.5",
                headers=NON_ADMIN,
                label="provider-traits-1.5",
            ),
            get(
                f"/resource_providers/{CN1}/aggregates",
                "1.0",
                headers=NON_ADMIN,
                label="aggregates-1.0",
            ),
            get("/resource_classes", "1.1", headers=NON_ADMIN, label="classes-1.1"),
            put("/resource_classes/CUSTOM_X", "1.1", headers=NON_ADMIN, label="put-class-1.1"),
            get("/usages?project_id=p", "1.8", headers=NON_ADMIN, label="usages-1.8"),
            get(
                "/allocation_candidates?resources=VCPU:1",
                "1.9",
                headers=NON_ADMIN,
                label="candidates-1.9",
            ),
            post("/allocations", "1.12", {}, headers=NON_ADMIN, label="post-allocations-1.12"),
            post("/reshaper", "1.29", {}, headers=NON_ADMIN, label="reshaper-1.29"),
            delete(INVENTORIES, "1.4", headers=NON_ADMIN, label="delete-inventories-1.4"),
            get("/traits", "1.6", headers=NON_ADMIN, label="traits-1.6"),
            delete(INVENTORIES, "1.5", headers=NON_ADMIN, label="delete-inventories-1.5"),
        ),
        scenario(
            "non-admin-body-not-json",
            provider(CN1),
            post(
                "/resource_providers",
                "1.39",
                raw='{"name": "x"}',
                headers=TEXT,
                label="post-provider",
            ),
            put(
                f"/resource_providers/{CN1}",
                "1.39",
                raw='{"name": "x"}',
                headers=TEXT,
                label="put-provider",
            ),
            put(INVENTORIES, "1.39", raw="{}", headers=TEXT, label="put-inventories"),
            post(INVENTORIES, "1.39", raw="{}", headers=TEXT, label="post-inventory"),
            put(f"{INVENTORIES}/VCPU", "1.39", raw="{}", headers=TEXT, label="put-inventory"),
            put(
                f"/resource_providers/{CN1}/traits",
                "1.39",
                raw="{}",
                headers=TEXT,
                label="put-traits",
            ),
            put(
                f"/resource_providers/{CN1}/aggregates",
                "1.0",
                raw="{}",
                headers=TEXT,
                label="put-aggregates-1.0",
            ),
            put(
                f"/resource_providers/{CN1}/aggregates",
                "1.39",
                raw="{}",
                headers=TEXT,
                label="put-aggregates",
            ),
            post("/resource_classes", "1.39", raw="{}", headers=TEXT, label="post-class"),
            put("/resource_classes/CUSTOM_X", "1.6", raw="{}", headers=TEXT, label="put-class-1.6"),
            put("/resource_classes/CUSTOM_X", "1.7", raw="{}", headers=TEXT, label="put-class-1.7"),
            put(
                f"/allocations/{INSTANCE1}", "1.39", raw="{}", headers=TEXT, label="put-allocations"
            ),
            post("/allocations", "1.39", raw="{}", headers=TEXT, label="post-allocations"),
            post("/reshaper", "1.39", raw="{}", headers=TEXT, label="reshaper"),
            post(
                "/resource_providers",
                "1.39",
                {"name": "x"},
                headers=NON_ADMIN,
                label="post-provider-json",
            ),
            show(CN1, "1.39"),
        ),
    ]


def _scenarios() -> list[Scenario]:
    found: list[Scenario] = []
    for version in ERROR_VERSIONS:
        for make in (_bad_bodies, _stale, _missing, _capacity, _below_usage, _in_use):
            found += make(version)
    return (
        found
        + _versions()
        + _bodiless()
        + _too_early()
        + _bad_candidate_queries()
        + _before_policy()
        + [
            scenario(
                "inventory-create-without-generation-1.39",
                provider(CN1),
                post(INVENTORIES, "1.39", {"resource_class": "VCPU", "total": 8}, label="create"),
                get(INVENTORIES, "1.39"),
            ),
            scenario(
                "inventory-create-stale-generation-1.39",
                *compute_node(CN1),
                post(
                    INVENTORIES,
                    "1.39",
                    {"resource_class": "VGPU", "total": 8, "resource_provider_generation": 0},
                    label="create",
                ),
            ),
            scenario(
                "min-unit-over-max-unit-1.39",
                provider(CN1),
                inventory(CN1, VCPU={"total": 8, "min_unit": 4, "max_unit": 2}).labelled("set"),
            ),
            # Upstream's default policy keeps the reshaper to the service role.
            scenario(
                "reshaper-admin-without-service-role-1.39",
                *compute_node(CN1),
                post(
                    "/reshaper",
                    "1.39",
                    {
                        "inventories": {
                            CN1: {
                                "inventories": {"VCPU": {"total": 16}},
                                "resource_provider_generation": Generation(CN1),
                            }
                        },
                        "allocations": {},
                    },
                    label="reshape",
                ),
            ),
            scenario(
                "consumer-generation-after-failed-write-1.39",
                *compute_node(CN1),
                allocate(INSTANCE1, {CN1: {"VCPU": 100}}, label="too-much"),
                put(
                    f"/allocations/{INSTANCE1}",
                    "1.39",
                    allocation_body({CN1: {"VCPU": 1}}, "1.39", INSTANCE1),
                    label="retry",
                ),
                get(f"/allocations/{INSTANCE1}", "1.39"),
            ),
        ]
    )


SCENARIOS = tuple(_scenarios())
