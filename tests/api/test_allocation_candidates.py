"""GET /allocation_candidates: formats per microversion, capacity, limits, validation."""

import dataclasses
import math

import pytest

from placement.app import create_app
from tests.api.candidate_helpers import Providers, alloc
from tests.conftest import Api, error_code


@pytest.fixture
def tree(api) -> Providers:
    return Providers(api)


@pytest.fixture
def numa_host(tree) -> Providers:
    """CN (DISK_GB, trait STORAGE_DISK_SSD) with NUMA0 and NUMA1 (VCPU 4 each), one PGPU."""
    tree.add("CN", inventory={"DISK_GB": 100}, traits=["STORAGE_DISK_SSD"])
    tree.add("NUMA0", parent="CN", inventory={"VCPU": 4}, traits=["HW_NUMA_ROOT"])
    tree.add("NUMA1", parent="CN", inventory={"VCPU": 4}, traits=["HW_NUMA_ROOT"])
    tree.add("GPU", parent="CN", inventory={"PGPU": 1})
    return tree


def test_below_1_10_the_resource_does_not_exist(api):
    response = api.get("/allocation_candidates?resources=VCPU:1", version="1.9")
    assert response.status_code == 404


def test_1_10_lists_allocations_and_summaries_without_traits(tree):
    tree.add("CN", inventory={"VCPU": 8, "MEMORY_MB": 1024}, traits=["HW_CPU_X86_AVX2"])

    body = tree.get("resources=VCPU:2,MEMORY_MB:128", version="1.10")

    assert body["allocation_requests"] == [
        {
            "allocations": [
                {
                    "resource_provider": {"uuid": tree.uuid["CN"]},
                    "resources": {"VCPU": 2, "MEMORY_MB": 128},
                }
            ]
        }
    ]
    assert body["provider_summaries"] == {
        tree.uuid["CN"]: {
            "resources": {
                "VCPU": {"capacity": 8, "used": 0},
                "MEMORY_MB": {"capacity": 1024, "used": 0},
            }
        }
    }


def test_1_12_keys_allocations_by_provider_and_1_17_adds_traits(tree):
    tree.add("CN", inventory={"VCPU": 8}, traits=["HW_CPU_X86_AVX2"])

    at_1_12 = tree.get("resources=VCPU:1", version="1.12")
    at_1_17 = tree.get("resources=VCPU:1", version="1.17")

    assert at_1_12["allocation_requests"] == [
        {"allocations": {tree.uuid["CN"]: {"resources": {"VCPU": 1}}}}
    ]
    assert "traits" not in at_1_12["provider_summaries"][tree.uuid["CN"]]
    assert at_1_17["provider_summaries"][tree.uuid["CN"]]["traits"] == ["HW_CPU_X86_AVX2"]


def test_capacity_counts_reserved_ratio_and_usage(tree, api):
    tree.add("CN", inventory={"VCPU": {"total": 4, "reserved": 1, "allocation_ratio": 2.0}})
    consumer = "11111111-2222-3333-4444-555555555555"
    claim = {
        "allocations": {tree.uuid["CN"]: {"resources": {"VCPU": 2}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
    }
    assert api.put(f"/allocations/{consumer}", json=claim, version="1.28").status_code == 204

    fits = tree.get("resources=VCPU:4")
    too_much = tree.get("resources=VCPU:5")

    assert len(fits["allocation_requests"]) == 1
    assert fits["provider_summaries"][tree.uuid["CN"]]["resources"]["VCPU"] == {
        "capacity": 6,
        "used": 2,
    }
    assert too_much["allocation_requests"] == []


@pytest.mark.parametrize(
    ("amount", "fits"), [(1, False), (2, True), (3, False), (4, True), (6, False)]
)
def test_min_unit_max_unit_and_step_size(tree, amount, fits):
    tree.add("CN", inventory={"VCPU": {"total": 8, "min_unit": 2, "max_unit": 4, "step_size": 2}})

    found = tree.candidates(f"resources=VCPU:{amount}")

    assert bool(found) is fits


def test_groups_on_one_provider_must_fit_together(tree):
    tree.add("CN", inventory={"VCPU": 3})

    together = tree.candidates("resources1=VCPU:2&resources2=VCPU:1&group_policy=none")
    too_much = tree.candidates("resources1=VCPU:2&resources2=VCPU:2&group_policy=none")

    assert together == [alloc(("CN", "VCPU", 3))]
    assert too_much == []


def test_unsuffixed_and_granular_groups_add_up_on_one_provider(tree):
    tree.add("CN", inventory={"VCPU": 4})

    found = tree.candidates("resources=VCPU:1&resources1=VCPU:2")

    assert found == [alloc(("CN", "VCPU", 3))]


def test_before_1_29_nested_candidates_are_left_out(numa_host):
    nested = numa_host.candidates("resources=VCPU:1,DISK_GB:10", version="1.29")
    flat_only = numa_host.get("resources=VCPU:1,DISK_GB:10", version="1.28")

    assert set(nested) == {
        alloc(("NUMA0", "VCPU", 1), ("CN", "DISK_GB", 10)),
        alloc(("NUMA1", "VCPU", 1), ("CN", "DISK_GB", 10)),
    }
    assert flat_only == {"allocation_requests": [], "provider_summaries": {}}


def test_before_1_29_summaries_show_only_the_providers_used(numa_host):
    body = numa_host.get("resources=VCPU:1", version="1.28")

    assert {numa_host.name[u] for u in body["provider_summaries"]} == {"NUMA0", "NUMA1"}


def test_from_1_29_summaries_show_every_provider_of_the_tree(numa_host):
    body = numa_host.get("resources=VCPU:1", version="1.29")

    summaries = body["provider_summaries"]
    assert {numa_host.name[u] for u in summaries} == {"CN", "NUMA0", "NUMA1", "GPU"}
    gpu = summaries[numa_host.uuid["GPU"]]
    assert gpu["parent_provider_uuid"] == numa_host.uuid["CN"]
    assert gpu["root_provider_uuid"] == numa_host.uuid["CN"]


def test_before_1_27_summaries_show_only_requested_classes(tree):
    tree.add("CN", inventory={"VCPU": 4, "MEMORY_MB": 64})

    before = tree.get("resources=VCPU:1", version="1.26")
    after = tree.get("resources=VCPU:1", version="1.27")

    cn = tree.uuid["CN"]
    assert before["provider_summaries"][cn]["resources"] == {"VCPU": {"capacity": 4, "used": 0}}
    assert after["provider_summaries"][cn]["resources"] == {
        "VCPU": {"capacity": 4, "used": 0},
        "MEMORY_MB": {"capacity": 64, "used": 0},
    }


def test_1_34_maps_each_group_to_its_providers(numa_host):
    body = numa_host.get("resources=DISK_GB:1&resources_G=PGPU:1")

    [request] = body["allocation_requests"]
    assert numa_host.mappings(request) == {"": {"CN"}, "_G": {"GPU"}}
    older = numa_host.get("resources=DISK_GB:1&resources1=PGPU:1", version="1.33")
    assert "mappings" not in older["allocation_requests"][0]


def test_unsuffixed_traits_may_come_from_any_provider_it_uses(numa_host):
    # STORAGE_DISK_SSD is on CN, which serves DISK_GB: the trait is met.
    found = numa_host.candidates("resources=VCPU:1,DISK_GB:1&required=STORAGE_DISK_SSD")
    # CN serves nothing here, so its trait cannot count.
    unmet = numa_host.candidates("resources=VCPU:1&required=STORAGE_DISK_SSD")

    assert len(found) == 2
    assert unmet == []


def test_forbidden_trait_in_a_nested_request_without_sharing_providers(numa_host):
    # Upstream 16.0.0 answers 500 here; the answer is the trees whose providers lack it.
    found = numa_host.candidates("resources=VCPU:1,DISK_GB:1&required=!HW_NUMA_ROOT")
    allowed = numa_host.candidates("resources=DISK_GB:1&required=!HW_NUMA_ROOT")

    assert found == []
    assert allowed == [alloc(("CN", "DISK_GB", 1))]


def test_any_of_traits_from_1_39(numa_host):
    found = numa_host.candidates(
        "resources=VCPU:1&required=in:HW_NUMA_ROOT,CUSTOM_NOPE_NOT_THERE".replace(
            ",CUSTOM_NOPE_NOT_THERE", ",STORAGE_DISK_SSD"
        )
    )
    refused = numa_host.api.get(
        "/allocation_candidates?resources=VCPU:1&required=in:HW_NUMA_ROOT", version="1.38"
    )

    assert len(found) == 2
    assert refused.status_code == 400


def test_member_of_forbidden_on_the_root_excludes_its_tree(tree):
    tree.add("CN", inventory={"DISK_GB": 10}, aggregates=["A"])
    tree.add("NUMA", parent="CN", inventory={"VCPU": 4})

    excluded = tree.candidates("resources=VCPU:1&member_of=!{A}")
    granular = tree.candidates("resources1=VCPU:1&member_of1=!{A}")

    assert excluded == []
    # member_of$S looks at the provider itself only.
    assert granular == [alloc(("NUMA", "VCPU", 1))]


def test_unknown_aggregate_or_tree_matches_nothing(tree):
    tree.add("CN", inventory={"VCPU": 4})

    assert tree.candidates("resources=VCPU:1&member_of=00000000-0000-0000-0000-000000000001") == []
    assert tree.candidates("resources=VCPU:1&in_tree=00000000-0000-0000-0000-000000000001") == []


def test_a_sharing_provider_alone_is_listed_once(tree):
    tree.add(
        "SS", inventory={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
    )
    for name in ("CN1", "CN2"):
        tree.add(name, inventory={"DISK_GB": 100}, aggregates=["A"])

    found = tree.candidates("resources=DISK_GB:10")

    assert sorted(found, key=sorted) == sorted(
        [
            alloc(("CN1", "DISK_GB", 10)),
            alloc(("CN2", "DISK_GB", 10)),
            alloc(("SS", "DISK_GB", 10)),
        ],
        key=sorted,
    )


def test_summaries_cover_the_trees_the_candidates_use_not_the_anchors(tree):
    """From 1.29 the summaries show every provider of the trees a candidate uses: a
    candidate served by a sharing provider alone uses no provider of its anchor tree."""
    tree.add("CN", inventory={"VCPU": 8}, aggregates=["A"])  # the first tree: the anchor
    tree.add("NUMA", parent="CN", inventory={"VCPU": 4})
    tree.add(
        "SS", inventory={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
    )

    body = tree.get("resources=DISK_GB:10", version="1.29")

    assert [sorted(r["allocations"]) for r in body["allocation_requests"]] == [[tree.uuid["SS"]]]
    assert set(body["provider_summaries"]) == {tree.uuid["SS"]}


@pytest.fixture
def gpu_hosts(tree) -> Providers:
    """Three hosts, each with 2 NUMA nodes of 2 GPUs."""
    for host in range(3):
        tree.add(f"H{host}", inventory={"VCPU": 16})
        for numa in range(2):
            tree.add(f"H{host}N{numa}", parent=f"H{host}", traits=["HW_NUMA_ROOT"])
            for gpu in range(2):
                tree.add(f"H{host}N{numa}G{gpu}", parent=f"H{host}N{numa}", inventory={"PGPU": 1})
    return tree


def _gpu_groups(count: int) -> str:
    return "&".join(f"resources_G{i}=PGPU:1" for i in range(count))


def test_identical_isolated_groups_list_every_mapping(gpu_hosts):
    body = gpu_hosts.get(f"{_gpu_groups(4)}&group_policy=isolate")

    requests = body["allocation_requests"]
    # Each host's 4 GPUs, in every order of the 4 identical groups.
    assert len(requests) == 3 * math.factorial(4)
    mappings = {tuple(sorted((k, v[0]) for k, v in r["mappings"].items())) for r in requests}
    assert len(mappings) == len(requests)


def test_same_subtree_with_identical_groups(gpu_hosts):
    query = (
        f"required_NUMA=HW_NUMA_ROOT&{_gpu_groups(2)}&group_policy=isolate"
        "&same_subtree=_NUMA,_G0,_G1"
    )
    found = gpu_hosts.get(query)["allocation_requests"]

    # 3 hosts x 2 NUMA nodes x 2 orders of their two GPUs.
    assert len(found) == 12
    for request in found:
        mapping = gpu_hosts.mappings(request)
        numa = next(iter(mapping["_NUMA"]))
        assert {g for group in ("_G0", "_G1") for g in mapping[group]} == {
            f"{numa}G0",
            f"{numa}G1",
        }


def test_limit_spreads_over_trees(gpu_hosts):
    body = gpu_hosts.get(f"{_gpu_groups(2)}&group_policy=isolate&limit=3")

    roots = {
        gpu_hosts.name[body["provider_summaries"][uuid]["root_provider_uuid"]]
        for request in body["allocation_requests"]
        for uuid in request["allocations"]
    }
    assert len(body["allocation_requests"]) == 3
    assert roots == {"H0", "H1", "H2"}
    # Summaries cover only the trees of the returned candidates.
    assert {gpu_hosts.name[u][:2] for u in body["provider_summaries"]} == {"H0", "H1", "H2"}


def _with_config(tree: Providers, config, engine, **changes) -> Providers:
    """The same providers, read through an app built with ``changes`` to the config."""
    app = create_app(dataclasses.replace(config, **changes), engine=engine)
    clone = Providers(Api(app.test_client()))
    clone.uuid, clone.name, clone.aggregates = tree.uuid, tree.name, tree.aggregates
    return clone


def test_max_allocation_candidates_caps_an_unlimited_answer(gpu_hosts, config, engine):
    capped = _with_config(gpu_hosts, config, engine, max_allocation_candidates=5)

    body = capped.get(f"{_gpu_groups(4)}&group_policy=isolate")

    assert len(body["allocation_requests"]) == 5


def test_randomized_answers_are_the_same_set(gpu_hosts, config, engine):
    query = f"{_gpu_groups(2)}&group_policy=isolate"
    ordered = gpu_hosts.candidates(query)

    shuffled = _with_config(
        gpu_hosts, config, engine, randomize_allocation_candidates=True
    ).candidates(query)

    assert sorted(ordered, key=sorted) == sorted(shuffled, key=sorted)


def test_every_candidate_can_be_claimed(numa_host, api):
    body = numa_host.get("resources=VCPU:1,DISK_GB:10&resources_G=PGPU:1")
    # VCPU from either NUMA node, DISK_GB from CN, the PGPU: two candidates to claim.
    assert len(body["allocation_requests"]) == 2

    for number, request in enumerate(body["allocation_requests"]):
        consumer = f"00000000-0000-0000-0000-{number:012d}"
        claim = {**request, "project_id": "p", "user_id": "u", "consumer_generation": None}
        claim.pop("mappings")
        response = api.put(f"/allocations/{consumer}", json=claim, version="1.34")
        assert response.status_code == 204, response.json
        api.delete(f"/allocations/{consumer}")


@pytest.mark.parametrize(
    ("query", "version", "code"),
    [
        ("", "1.39", "placement.query.missing_value"),
        ("required=HW_NUMA_ROOT", "1.39", "placement.query.missing_value"),
        ("resources=VCPU:0", "1.39", "placement.query.bad_value"),
        ("resources=VCPU", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&limit=0", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&limit=1", "1.15", None),  # no codes in bodies before 1.23
        ("resources=VCPU:1&required=HW_NUMA_ROOT", "1.16", None),
        ("resources=VCPU:1&required=!HW_NUMA_ROOT", "1.21", None),
        ("resources=VCPU:1&resources1=VCPU:1", "1.24", "placement.query.bad_value"),
        ("resources1=VCPU:1&resources2=VCPU:1", "1.25", "placement.query.missing_value"),
        ("resources_A=VCPU:1", "1.32", "placement.query.bad_value"),
        ("resources=VCPU:1&group_policy=sometimes", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&foo=bar", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:0&resources=VCPU:1", "1.39", "placement.query.bad_value"),
        (
            "resources=VCPU:1&root_required=STORAGE_DISK_SSD&root_required=STORAGE_DISK_SSD",
            "1.39",
            "placement.query.duplicate_key",
        ),
        (
            "resources=VCPU:1&member_of=00000000-0000-0000-0000-000000000001"
            "&member_of=00000000-0000-0000-0000-000000000002",
            "1.23",
            "placement.query.duplicate_key",
        ),
        ("resources=VCPU:1&limit=1&limit=0", "1.39", "placement.query.bad_value"),
        (
            "resources=VCPU:1&group_policy=none&group_policy=bogus",
            "1.39",
            "placement.query.bad_value",
        ),
        (
            "resources=VCPU:1&in_tree=00000000-0000-0000-0000-000000000001&in_tree=nope",
            "1.39",
            "placement.query.bad_value",
        ),
        ("resources=%20VCPU:1", "1.39", None),  # no class " VCPU"
        (
            "resources=VCPU:1&member_of=in:00000000-0000-0000-0000-000000000001,"
            "%2000000000-0000-0000-0000-000000000002",
            "1.39",
            "placement.query.bad_value",
        ),
        ("resources=VCPU:1&required=%FF", "1.39", "placement.query.bad_value"),
        # Upstream's request-wide checks come first, with their specific codes.
        ("root_required=HW_NUMA_ROOT,!HW_NUMA_ROOT", "1.39", "placement.query.bad_value"),
        ("same_subtree=,_X", "1.39", "placement.query.bad_value"),
        (
            "resources=VCPU:1&required=HW_NUMA_ROOT,!HW_NUMA_ROOT",
            "1.39",
            "placement.query.bad_value",
        ),
        (
            "resources=VCPU:1&required=HW_NUMA_ROOT&required=!HW_NUMA_ROOT",
            "1.39",
            "placement.query.bad_value",
        ),
        (
            "resources=VCPU:1&required=in:HW_NUMA_ROOT,STORAGE_DISK_SSD"
            "&required=!HW_NUMA_ROOT,!STORAGE_DISK_SSD",
            "1.39",
            "placement.query.bad_value",
        ),
        (
            "resources_A=VCPU:1&required_A=!HW_NUMA_ROOT,HW_NUMA_ROOT",
            "1.39",
            "placement.query.bad_value",
        ),
        ("resources=VCPU:1&same_subtree=_X", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&same_subtree=,_X", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&required_X=HW_NUMA_ROOT", "1.39", "placement.query.bad_value"),
        (
            "resources=VCPU:1&required_X=HW_NUMA_ROOT&same_subtree=_X",
            "1.35",
            "placement.query.bad_value",
        ),
        ("resources1=VCPU:1&required=HW_NUMA_ROOT", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&root_required=in:HW_NUMA_ROOT", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&in_tree=not-a-uuid", "1.39", "placement.query.bad_value"),
        ("resources=VCPU:1&member_of=not-a-uuid", "1.39", "placement.query.bad_value"),
        (
            "resources=VCPU:1&member_of=!00000000-0000-0000-0000-000000000001",
            "1.31",
            "placement.query.bad_value",
        ),
        ("resources=CUSTOM_NO_SUCH_CLASS:1", "1.39", None),
        ("resources=VCPU:1&required=CUSTOM_NO_SUCH_TRAIT", "1.39", None),
    ],
)
def test_bad_queries_are_400(api, query, version, code):
    response = api.get(f"/allocation_candidates?{query}", version=version)

    assert response.status_code == 400, response.json
    if code:
        assert error_code(response) == code


AGG_A = "aaaaaaaa-0000-4000-8000-000000000001"
AGG_B = "aaaaaaaa-0000-4000-8000-000000000002"
IN_1_39 = "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39."


@pytest.mark.parametrize(
    ("query", "version", "sentence"),
    [
        # Upstream's JSON Schema of the query string, worded as its validator words it.
        ("", "1.10", "Invalid query string parameters: 'resources' is a required property"),
        (
            "resources=VCPU:1&limit=5",
            "1.10",
            "Additional properties are not allowed ('limit' was unexpected)",
        ),
        (
            "resources=VCPU:1&required=HW_NUMA_ROOT&foo=1",
            "1.16",
            "Additional properties are not allowed ('foo', 'required' were unexpected)",
        ),
        (
            "resources=VCPU:1&limit=cow",
            "1.16",
            "'cow' does not match '^[1-9][0-9]*$'\n\nFailed validating 'pattern' in "
            "schema['properties']['limit']",
        ),
        ("resources=VCPU:1&limit=0&group_policy=bogus", "1.25", "Failed validating 'pattern'"),
        (
            "resources=VCPU:1&group_policy=bogus",
            "1.25",
            "'bogus' is not one of ['none', 'isolate']\n\nFailed validating 'enum'",
        ),
        (
            "resources01=VCPU:1",
            "1.25",
            "'resources01' does not match any of the regexes: '^member_of([1-9][0-9]*)?$', "
            "'^required([1-9][0-9]*)?$', '^resources([1-9][0-9]*)?$'",
        ),
        (
            "resources=VCPU:1&root_required=HW_NUMA_ROOT",
            "1.34",
            "'root_required' does not match any of the regexes",
        ),
        # The request-wide parameters.
        (
            "resources=VCPU:1&root_required=HW_NUMA_ROOT&root_required=!HW_NUMA_ROOT",
            "1.35",
            "Query parameter 'root_required' may be specified only once.",
        ),
        ("resources=VCPU:1&root_required=in:HW_NUMA_ROOT", "1.39", IN_1_39),
        # The groups' parameters, in the order given.
        (
            "resources=VCPU:1&in_tree=life-is-beautiful",
            "1.31",
            "Expected 'in_tree' parameter to be a format of uuid. Got: life-is-beautiful",
        ),
        ("resources=VCPU:1&in_tree=x&resources=VCPU", "1.31", "Got: x"),
        (
            "resources=VCPU&in_tree=x&resources=VCPU:1",
            "1.31",
            "Badly formed resources parameter. Expected resources query string parameter in "
            "form: ?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU.",
        ),
        ("resources=VCPU:-2", "1.39", "Requested resource VCPU requires amount >= 1. Got: -2."),
        (
            "resources=VCPU:1&required=",
            "1.22",
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC.",
        ),
        (
            "resources=VCPU:1&required=!CUSTOM_MAGIC",
            "1.21",
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. "
            "Got: !CUSTOM_MAGIC",
        ),
        ("resources=VCPU:1&required=in:CUSTOM_FOO,HW_CPU_X86_MMX", "1.38", IN_1_39),
        ("resourcesX=VCPU:1&requiredX=in:CUSTOM_FOO,HW_CPU_X86_MMX", "1.38", IN_1_39),
        (
            f"resources=VCPU:1&member_of={AGG_A}&member_of={AGG_B}",
            "1.23",
            "Multiple member_of parameters are not supported",
        ),
        (
            f"resources=VCPU:1&member_of={AGG_A},{AGG_B}",
            "1.24",
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword",
        ),
        (
            f"resources=VCPU:1&member_of=!in:{AGG_A},{AGG_B}",
            "1.31",
            "Forbidden member_of parameters are not supported in the specified microversion",
        ),
        # The groups as a whole.
        (
            "group_policy=isolate",
            "1.25",
            "At least one request group (`resources` or `resources{$S}`) is required.",
        ),
        (
            "required=HW_NUMA_ROOT&required1=HW_NUMA_ROOT",
            "1.25",
            "Found the following orphaned traits keys: required, required1",
        ),
        (
            f"member_of={AGG_A}&member_of3={AGG_B}",
            "1.25",
            "Found the following orphaned member_of keys: member_of, member_of3",
        ),
        (
            f"member_of=!{AGG_A}",
            "1.32",
            "All member_of parameters must be associated with resources",
        ),
        (
            f"resources=VCPU:1&in_tree1={AGG_A}",
            "1.31",
            "All request groups must specify resources.",
        ),
        (
            "resources1=VCPU:1&required=HW_NUMA_ROOT",
            "1.36",
            "Resourceless suffixed group request should be specified in `same_subtree` query "
            "param: bad group(s) - [''].",
        ),
        (
            "resources=VCPU:1&resources1=VCPU:1&same_subtree=1,x&group_policy=none",
            "1.36",
            "Real suffixes should be specified in `same_subtree`: ['x'] not found in ['', '1'].",
        ),
        (
            "resources=MCPU:99",
            "1.39",
            "Invalid resource class in resources parameter: No such resource class MCPU.",
        ),
    ],
)
def test_a_refusal_says_what_upstream_says(api, query, version, sentence):
    response = api.get(f"/allocation_candidates?{query}", version=version)

    assert response.status_code == 400, response.json
    assert sentence in response.json["errors"][0]["detail"]


@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        # An earlier group (in the query's order) with no candidates of its own.
        ("resources=VCPU:100&resources1=CUSTOM_NOPE:1&group_policy=none", None),
        ("resources1=VCPU:100&resources=CUSTOM_NOPE:1&group_policy=none", None),
        ("resources1=CUSTOM_NOPE:1&resources=VCPU:100&group_policy=none", "class"),
        ("resources=VCPU:1&resources1=CUSTOM_NOPE:1&group_policy=none", "class"),
        (
            "resources=VCPU:1&required=HW_CPU_X86_AVX2&resources1=CUSTOM_NOPE:1&group_policy=none",
            None,
        ),
        ("resources=VCPU:1&resources1=VCPU:1&required1=CUSTOM_NOPE&group_policy=none", "trait"),
        # root_required comes first: no root meets it, or an unknown trait of its own.
        ("resources=CUSTOM_NOPE:1&root_required=HW_NUMA_ROOT", None),
        ("resources=CUSTOM_NOPE:1&root_required=STORAGE_DISK_SSD", "class"),
        ("resources=CUSTOM_NOPE:1&root_required=CUSTOM_NOPE", "trait"),
        # Within a group: classes, then member_of (no provider in it), then traits.
        ("resources=VCPU:1&member_of={A}&required=CUSTOM_NOPE", None),
        ("resources=VCPU:1&member_of={A}&required=!CUSTOM_NOPE", None),
        ("resources=CUSTOM_NOPE:1&member_of={A}", "class"),
        (
            "resources=VCPU:1&in_tree=00000000-0000-0000-0000-000000000001&required=CUSTOM_NOPE",
            "trait",
        ),
        # A resourceless group that no provider serves (1.36).
        (
            "resources=VCPU:1&required1=HW_CPU_X86_AVX2&resources2=CUSTOM_NOPE:1"
            "&same_subtree=1,2&group_policy=none",
            None,
        ),
        (
            "resources=VCPU:1&required1=HW_NUMA_ROOT&resources2=CUSTOM_NOPE:1"
            "&same_subtree=1,2&group_policy=none",
            "class",
        ),
    ],
)
def test_an_unknown_name_is_refused_unless_upstream_found_nothing_before_it(
    numa_host, query, refusal
):
    # As upstream: it looks names up as it filters, and answers no candidates as soon
    # as a filter it applies first leaves nothing (api-ref/differences.md no longer
    # lists this).
    numa_host.aggregate("A")
    response = numa_host.api.get(f"/allocation_candidates?{numa_host.query(query)}")

    if refusal is None:
        assert response.status_code == 200, response.json
        assert response.json == {"allocation_requests": [], "provider_summaries": {}}
    else:
        assert response.status_code == 400, response.json
        expected = {
            "class": "Invalid resource class in resources parameter: No such resource class "
            "CUSTOM_NOPE.",
            "trait": "No such trait(s): CUSTOM_NOPE.",
        }[refusal]
        assert response.json["errors"][0]["detail"] == expected


def test_a_known_name_with_nothing_before_it_searches_as_ever(numa_host):
    # The unknown-name path runs only without a plan; a plan answers as before.
    assert numa_host.candidates("resources=VCPU:100") == []
    assert len(numa_host.candidates("resources=VCPU:1&resources1=PGPU:1&group_policy=none")) == 2


@pytest.mark.parametrize("version", ["1.19", "1.39"])
def test_a_sharing_provider_reached_through_a_child_is_listed_once(tree, version):
    tree.add("T")
    tree.add("T1", parent="T", aggregates=["A"])
    tree.add(
        "S", inventory={"IPV4_ADDRESS": 4}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
    )

    found = tree.candidates("resources=IPV4_ADDRESS:1", version=version)

    assert found == [alloc(("S", "IPV4_ADDRESS", 1))]


def test_unsuffixed_group_served_by_a_sharing_provider_alone(tree):
    # Upstream 16.0.0 answers nothing here: it keeps the sharing-only unsuffixed
    # request anchored in the sharing provider's own tree only.
    tree.add("T")
    tree.add("T1", parent="T", inventory={"FPGA": 8}, aggregates=["A"])
    tree.add("S", inventory={"DISK_GB": 6}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"])

    found = tree.candidates("resources=DISK_GB:1&resources2=FPGA:1")

    assert found == [alloc(("S", "DISK_GB", 1), ("T1", "FPGA", 1))]


def test_a_resourceless_group_with_only_a_forbidden_trait(tree):
    tree.add("R", inventory={"DISK_GB": 20})

    body = tree.get("resources=DISK_GB:1&required3=!HW_CPU_X86_AVX2&same_subtree=3")

    [request] = body["allocation_requests"]
    assert tree.named(request) == alloc(("R", "DISK_GB", 1))
    assert tree.mappings(request) == {"": {"R"}, "3": {"R"}}


def test_in_tree_applies_to_a_resourceless_group(tree):
    tree.add("T0", inventory={"FPGA": 16})
    tree.add("T0_B", parent="T0", traits=["CUSTOM_B"])
    tree.add("T3")
    query = "resources_F=FPGA:1&required_N=CUSTOM_B&group_policy=isolate&same_subtree=_F,_N"

    assert len(tree.candidates(query)) == 1
    assert tree.candidates(f"{query}&in_tree_N=<T3>") == []


def test_repeated_member_of_met_by_the_provider_and_by_its_root(tree):
    tree.add("T0", aggregates=["A0"])
    tree.add("T0_1", parent="T0", inventory={"FPGA": 8}, aggregates=["A1"])

    found = tree.candidates("resources=FPGA:1&member_of={A0}&member_of={A1}")

    assert found == [alloc(("T0_1", "FPGA", 1))]


# Query strings read as upstream 16.0.0 reads them (checked against it on a
# loopback server): repeated parameters, contradictions, uuid notations.


@pytest.fixture
def two_hosts(tree) -> Providers:
    """CN1 (VCPU 8, HW_CPU_X86_AVX2, in A) and CN2 (VCPU 4, CUSTOM_GOLD, in A and B)."""
    tree.add("CN1", inventory={"VCPU": 8}, traits=["HW_CPU_X86_AVX2"], aggregates=["A"])
    tree.add("CN2", inventory={"VCPU": 4}, traits=["CUSTOM_GOLD"], aggregates=["A", "B"])
    return tree


def test_repeated_resources_and_in_tree_take_the_last_value(two_hosts):
    both = [alloc(("CN1", "VCPU", 1)), alloc(("CN2", "VCPU", 1))]

    assert two_hosts.candidates("resources=VCPU:6&resources=VCPU:1") == both
    assert two_hosts.candidates("resources=VCPU:1&resources=VCPU:6") == [alloc(("CN1", "VCPU", 6))]
    assert two_hosts.candidates("resources=VCPU:1&resources=VCPU:6", version="1.10") == [
        alloc(("CN1", "VCPU", 6))
    ]
    assert two_hosts.candidates("resources_A=VCPU:1&resources_A=VCPU:6") == [
        alloc(("CN1", "VCPU", 6))
    ]
    assert two_hosts.candidates("resources=VCPU:1&in_tree=<CN1>&in_tree=<CN2>") == [
        alloc(("CN2", "VCPU", 1))
    ]


def test_repeated_required_before_1_39_takes_the_last_value_alone(two_hosts):
    gold = [alloc(("CN2", "VCPU", 1))]

    assert (
        two_hosts.candidates(
            "resources=VCPU:1&required=HW_CPU_X86_AVX2&required=CUSTOM_GOLD", version="1.38"
        )
        == gold
    )
    assert (
        two_hosts.candidates(
            "resources1=VCPU:1&required1=HW_CPU_X86_AVX2&required1=CUSTOM_GOLD", version="1.25"
        )
        == gold
    )
    # The earlier values are not even read.
    assert (
        two_hosts.candidates("resources=VCPU:1&required=!!&required=CUSTOM_GOLD", version="1.38")
        == gold
    )
    # From 1.39 the values are ANDed: no host has both.
    assert (
        two_hosts.candidates("resources=VCPU:1&required=HW_CPU_X86_AVX2&required=CUSTOM_GOLD") == []
    )


def test_repeated_limit_and_group_policy_take_the_first_value(two_hosts):
    assert len(two_hosts.candidates("resources=VCPU:1&limit=1&limit=5")) == 1
    assert len(two_hosts.candidates("resources=VCPU:1&limit=5&limit=1")) == 2
    # Upstream reads limit=0 as no limit once the last value passed its check.
    assert len(two_hosts.candidates("resources=VCPU:1&limit=0&limit=1")) == 2
    groups = "resources1=VCPU:1&resources2=VCPU:1"
    together = [alloc(("CN1", "VCPU", 2)), alloc(("CN2", "VCPU", 2))]
    assert two_hosts.candidates(f"{groups}&group_policy=isolate&group_policy=none") == []
    assert two_hosts.candidates(f"{groups}&group_policy=none&group_policy=isolate") == together
    # Any first value but "isolate" is "none".
    assert two_hosts.candidates(f"{groups}&group_policy=bogus&group_policy=none") == together


def test_a_class_repeated_in_resources_takes_its_last_amount(two_hosts):
    assert two_hosts.candidates("resources=VCPU:1,VCPU:6") == [alloc(("CN1", "VCPU", 6))]
    assert two_hosts.candidates("resources=VCPU:6,VCPU:1") == [
        alloc(("CN1", "VCPU", 1)),
        alloc(("CN2", "VCPU", 1)),
    ]
    assert two_hosts.candidates("resources1=VCPU:6,VCPU:1", version="1.25") == [
        alloc(("CN1", "VCPU", 1)),
        alloc(("CN2", "VCPU", 1)),
    ]


def test_an_aggregate_both_required_and_forbidden_matches_nothing(two_hosts):
    body = two_hosts.get("resources=VCPU:1&member_of={A}&member_of=!{A}")
    granular = two_hosts.get("resources1=VCPU:1&member_of1={B}&member_of1=!{B}")

    assert body == {"allocation_requests": [], "provider_summaries": {}}
    assert granular == {"allocation_requests": [], "provider_summaries": {}}


def test_an_any_of_set_partly_forbidden_is_no_contradiction(two_hosts):
    found = two_hosts.candidates(
        "resources=VCPU:1&required=in:HW_CPU_X86_AVX2,CUSTOM_GOLD&required=!HW_CPU_X86_AVX2"
    )

    assert found == [alloc(("CN2", "VCPU", 1))]


def test_every_leading_bang_forbids(two_hosts):
    without_avx2 = [alloc(("CN2", "VCPU", 1))]

    assert two_hosts.candidates("resources=VCPU:1&required=!!HW_CPU_X86_AVX2") == without_avx2
    assert (
        two_hosts.candidates("resources=VCPU:1&required=!!HW_CPU_X86_AVX2", version="1.22")
        == without_avx2
    )
    assert two_hosts.candidates("resources=VCPU:1&root_required=!!HW_CPU_X86_AVX2") == (
        without_avx2
    )


def test_in_tree_and_member_of_take_every_notation_of_a_uuid(two_hosts):
    # Upstream accepts these too (in_tree stripped of blanks), then compares the text
    # with the stored uuid: but for the blanks, it matches nothing (api-ref/differences.md).
    cn1 = two_hosts.uuid["CN1"]
    aggregate_b = two_hosts.aggregate("B")
    for notation in (f"%20{cn1}%20", f"urn:uuid:{cn1}", "{" + cn1 + "}", cn1.upper()):
        assert two_hosts.candidates(f"resources=VCPU:1&in_tree={notation}") == [
            alloc(("CN1", "VCPU", 1))
        ], notation
    for notation in (f"urn:uuid:{aggregate_b}", aggregate_b.replace("-", "").upper()):
        assert two_hosts.candidates(f"resources=VCPU:1&member_of={notation}") == [
            alloc(("CN2", "VCPU", 1))
        ], notation


def test_a_final_newline_in_limit_is_let_by(two_hosts):
    assert len(two_hosts.candidates("resources=VCPU:1&limit=1%0A")) == 1


def test_summaries_leave_out_a_sharing_provider_only_a_resourceless_group_uses(tree):
    """As upstream: the summaries cover the trees of the providers the allocations
    use; a sharing provider a resourceless group is mapped to is in the mappings only."""
    tree.add("CN", inventory={"VCPU": 8}, aggregates=["A"])
    tree.add("NUMA", parent="CN", inventory={"MEMORY_MB": 1024})
    tree.add(
        "SS",
        inventory={"DISK_GB": 100},
        traits=["MISC_SHARES_VIA_AGGREGATE", "CUSTOM_X"],
        aggregates=["A"],
    )

    body = tree.get("resources=VCPU:1&required_S=CUSTOM_X&same_subtree=_S")
    with_disk = tree.get("resources=VCPU:1,DISK_GB:1&required_S=CUSTOM_X&same_subtree=_S")

    [request] = body["allocation_requests"]
    assert tree.named(request) == alloc(("CN", "VCPU", 1))
    assert tree.mappings(request) == {"": {"CN"}, "_S": {"SS"}}
    assert {tree.name[u] for u in body["provider_summaries"]} == {"CN", "NUMA"}
    assert {tree.name[u] for u in with_disk["provider_summaries"]} == {"CN", "NUMA", "SS"}
