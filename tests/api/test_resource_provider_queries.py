"""GET /resource_providers reads its query string as upstream 16.0.0 does (each case
checked against it on a loopback server): repeated parameters, contradictions, uuid
notations."""

import pytest

from tests.conftest import error_code

AGGREGATE_A = "aaaaaaaa-0000-4000-8000-000000000001"
AGGREGATE_B = "aaaaaaaa-0000-4000-8000-000000000002"


@pytest.fixture
def hosts(api) -> dict[str, str]:
    """cn1 (VCPU 8, HW_CPU_X86_AVX2, in A), cn2 (VCPU 4, CUSTOM_GOLD, in A and B), ss
    (DISK_GB, in B); their uuids by name."""
    uuids = {}
    for name, vcpus, trait, aggregates in (
        ("cn1", 8, "HW_CPU_X86_AVX2", [AGGREGATE_A]),
        ("cn2", 4, "CUSTOM_GOLD", [AGGREGATE_A, AGGREGATE_B]),
    ):
        uuids[name] = api.create_provider(name)["uuid"]
        api.set_inventory(uuids[name], VCPU=vcpus)
        api.set_traits(uuids[name], trait)
        api.set_aggregates(uuids[name], *aggregates)
    uuids["ss"] = api.create_provider("ss")["uuid"]
    api.set_inventory(uuids["ss"], DISK_GB=100)
    api.set_aggregates(uuids["ss"], AGGREGATE_B)
    return uuids


def _names(api, query: str, version: str = "1.39") -> list[str]:
    response = api.get(f"/resource_providers?{query}", version=version)
    assert response.status_code == 200, response.json
    return sorted(p["name"] for p in response.json["resource_providers"])


def test_a_parameter_read_once_takes_its_last_value(api, hosts):
    assert _names(api, "name=cn1&name=cn2") == ["cn2"]
    assert _names(api, "name=cn1&name=cn2", version="1.0") == ["cn2"]
    assert _names(api, f"uuid={hosts['cn1']}&uuid={hosts['cn2']}") == ["cn2"]
    assert _names(api, f"in_tree={hosts['cn1']}&in_tree={hosts['cn2']}") == ["cn2"]
    assert _names(api, "resources=VCPU:6&resources=VCPU:1") == ["cn1", "cn2"]
    assert _names(api, "resources=VCPU:1&resources=VCPU:6") == ["cn1"]
    assert _names(api, "required=HW_CPU_X86_AVX2&required=CUSTOM_GOLD", version="1.38") == ["cn2"]
    # From 1.39 required repeats are ANDed, member_of ones from 1.24.
    assert _names(api, "required=HW_CPU_X86_AVX2&required=CUSTOM_GOLD") == []
    assert _names(api, f"member_of={AGGREGATE_A}&member_of={AGGREGATE_B}", version="1.24") == [
        "cn2"
    ]


def test_only_the_last_value_is_validated(api, hosts):
    assert _names(api, f"uuid=bogus&uuid={hosts['cn2']}") == ["cn2"]
    assert _names(api, f"in_tree=bogus&in_tree={hosts['cn2']}") == ["cn2"]
    assert _names(api, "resources=VCPU:0&resources=VCPU:6") == ["cn1"]
    assert _names(api, "required=!!&required=CUSTOM_GOLD", version="1.38") == ["cn2"]
    for query in (f"uuid={hosts['cn2']}&uuid=bogus", "resources=VCPU:1&resources=VCPU:0"):
        response = api.get(f"/resource_providers?{query}")
        assert response.status_code == 400, query
        assert error_code(response) == "placement.query.bad_value"


def test_member_of_repeated_before_1_24_is_400(api, hosts):
    response = api.get(
        f"/resource_providers?member_of={AGGREGATE_A}&member_of={AGGREGATE_B}", version="1.23"
    )

    assert response.status_code == 400
    assert error_code(response) == "placement.query.duplicate_key"


def test_an_empty_name_filters_nothing(api, hosts):
    assert _names(api, "name=") == ["cn1", "cn2", "ss"]


def test_a_class_repeated_in_resources_takes_its_last_amount(api, hosts):
    assert _names(api, "resources=VCPU:1,VCPU:6") == ["cn1"]
    assert _names(api, "resources=VCPU:6,VCPU:1") == ["cn1", "cn2"]


def test_required_and_forbidden_at_once_match_nothing(api, hosts):
    assert _names(api, "required=!HW_CPU_X86_AVX2,HW_CPU_X86_AVX2") == []
    assert _names(api, "required=HW_CPU_X86_AVX2&required=!HW_CPU_X86_AVX2") == []
    assert (
        _names(
            api, "required=in:HW_CPU_X86_AVX2,CUSTOM_GOLD&required=!HW_CPU_X86_AVX2,!CUSTOM_GOLD"
        )
        == []
    )
    assert _names(api, f"member_of={AGGREGATE_A}&member_of=!{AGGREGATE_A}") == []


def test_every_leading_bang_forbids(api, hosts):
    assert _names(api, "required=!!HW_CPU_X86_AVX2") == ["cn2", "ss"]


def test_uuid_and_in_tree_want_the_dashes_in_place(api, hosts):
    cn1 = hosts["cn1"]
    # Upstream compares upper case as text (no match on SQLite): api-ref/differences.md.
    assert _names(api, f"uuid={cn1.upper()}") == ["cn1"]
    # Its check passes "+" for the first digit (int() reads a sign); it names nothing.
    assert _names(api, f"uuid=%2B{cn1[1:]}") == []
    for notation in ("{" + cn1 + "}", cn1.replace("-", ""), f"urn:uuid:{cn1}", f"%20{cn1}"):
        for key in ("uuid", "in_tree"):
            response = api.get(f"/resource_providers?{key}={notation}")
            assert response.status_code == 400, (key, notation)
            assert error_code(response) == "placement.query.bad_value"


def test_member_of_takes_every_notation_of_a_uuid_but_blanks(api, hosts):
    for notation in (f"urn:uuid:{AGGREGATE_B}", "{" + AGGREGATE_B + "}", AGGREGATE_B.upper()):
        assert _names(api, f"member_of={notation}") == ["cn2", "ss"], notation
    for query in (f"member_of=%20{AGGREGATE_B}", f"member_of=in:{AGGREGATE_A},%20{AGGREGATE_B}"):
        response = api.get(f"/resource_providers?{query}")
        assert response.status_code == 400, query
        assert error_code(response) == "placement.query.bad_value"


@pytest.mark.parametrize(
    "query", ["resources=%20VCPU:1", "resources=VCPU%20:1", "name=%FF", "required=%FF"]
)
def test_what_upstream_refuses_is_400(api, hosts, query):
    response = api.get(f"/resource_providers?{query}")

    assert response.status_code == 400, response.json


@pytest.mark.parametrize(
    ("query", "version", "sentence"),
    [
        (
            "required=HW_CPU_X86_SGX",
            "1.17",
            "Invalid query string parameters: Additional properties are not allowed ('required' "
            "was unexpected)\n\nFailed validating 'additionalProperties' in schema",
        ),
        (
            "uuid=x&in_tree=y",
            "1.14",
            "'x' is not a 'uuid'\n\nFailed validating 'format' in schema['properties']['uuid']",
        ),
        ("in_tree=y", "1.14", "'y' is not a 'uuid'"),
        (
            f"member_of={AGGREGATE_A}&member_of={AGGREGATE_B}",
            "1.23",
            "Multiple member_of parameters are not supported",
        ),
        (
            f"member_of=!{AGGREGATE_A}",
            "1.31",
            "Forbidden member_of parameters are not supported in the specified microversion",
        ),
        (
            f"member_of=!in:{AGGREGATE_A},{AGGREGATE_B}",
            "1.31",
            "Forbidden member_of parameters are not supported in the specified microversion",
        ),
        (
            "resources=VCPU:fred",
            "1.4",
            "Requested resource VCPU expected positive integer amount. Got: fred.",
        ),
        ("resources=VCPU:-2", "1.4", "Requested resource VCPU requires amount >= 1. Got: -2."),
        ("resources=DISK_GB:500,", "1.4", "?resources=VCPU:2,MEMORY_MB:1024. Got: ."),
        (
            "resources=MYMISSINGCLASS:1",
            "1.4",
            "Invalid resource class in resources parameter: No such resource class MYMISSINGCLASS.",
        ),
        (
            "required=!STORAGE_DISK_SSD",
            "1.21",
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: "
            "!STORAGE_DISK_SSD",
        ),
        (
            "required=",
            "1.22",
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC.",
        ),
        (
            "required=STORAGE_DISK_SSD,,MISC_SHARES_VIA_AGGREGATE",
            "1.22",
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC.",
        ),
        (
            "required=in:CUSTOM_FOO,HW_CPU_X86_MMX",
            "1.38",
            "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39.",
        ),
        (
            "required=BOGUS_TRAIT",
            "1.39",
            'Invalid trait(s) in "required" parameter: No such trait(s): BOGUS_TRAIT.',
        ),
        # Upstream's order: the schema, member_of, required, resources.
        ("resources=VCPU:x&required=&member_of=nope", "1.39", "UUID(s). Got: nope"),
        ("resources=VCPU:x&required=", "1.39", "Got an empty trait in: "),
    ],
)
def test_a_refusal_says_what_upstream_says(api, hosts, query, version, sentence):
    response = api.get(f"/resource_providers?{query}", version=version)

    assert response.status_code == 400, response.json
    assert sentence in response.json["errors"][0]["detail"]


@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        # Upstream's order: in_tree, required traits, forbidden ones, member_of, resources;
        # a filter that matches nothing answers nothing before a later name is looked up.
        ("in_tree=00000000-0000-4000-8000-000000000009&required=CUSTOM_NOPE", None),
        ("required=HW_NUMA_ROOT&resources=CUSTOM_NOPE:1", None),
        ("required=HW_NUMA_ROOT,!CUSTOM_NOPE", None),
        ("required=in:HW_NUMA_ROOT,HW_CPU_X86_SSE&required=!CUSTOM_NOPE", None),
        ("member_of=00000000-0000-4000-8000-000000000009&resources=CUSTOM_NOPE:1", None),
        (
            f"member_of={AGGREGATE_A}&member_of={AGGREGATE_B}&member_of=!{AGGREGATE_A}"
            "&resources=CUSTOM_NOPE:1",
            "class",
        ),
        ("required=HW_CPU_X86_AVX2&resources=CUSTOM_NOPE:1", "class"),
        ("name=nobody&uuid=00000000-0000-4000-8000-000000000009&resources=CUSTOM_NOPE:1", "class"),
        ("member_of=00000000-0000-4000-8000-000000000009&required=CUSTOM_NOPE", "trait"),
        ("required=CUSTOM_NOPE&resources=CUSTOM_NOPE:1", "trait"),
        ("required=HW_CPU_X86_AVX2,!CUSTOM_NOPE&resources=CUSTOM_NOPE:1", "trait"),
    ],
)
def test_an_unknown_name_is_refused_unless_upstream_found_nothing_before_it(
    api, hosts, query, refusal
):
    response = api.get(f"/resource_providers?{query}")

    if refusal is None:
        assert response.status_code == 200, response.json
        assert response.json["resource_providers"] == []
    else:
        assert response.status_code == 400, response.json
        assert (
            response.json["errors"][0]["detail"]
            == {
                "class": "Invalid resource class in resources parameter: No such resource class "
                "CUSTOM_NOPE.",
                "trait": 'Invalid trait(s) in "required" parameter: No such trait(s): CUSTOM_NOPE.',
            }[refusal]
        )
