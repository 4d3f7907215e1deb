"""GET /resource_providers/{uuid}/usages without allocations: zero per inventoried class;
GET /usages and its query string."""

import uuid

import pytest

from tests.conftest import error_code


def test_provider_without_inventory_has_no_usages(api):
    provider = api.create_provider("cn1")
    response = api.get(f"/resource_providers/{provider['uuid']}/usages", version="1.0")
    assert response.status_code == 200
    assert response.json == {"resource_provider_generation": 0, "usages": {}}


def test_every_inventoried_class_is_listed_with_zero(api):
    provider = api.create_provider("cn1")
    api.set_inventory(provider["uuid"], VCPU=8, MEMORY_MB=1024, DISK_GB=100)
    response = api.get(f"/resource_providers/{provider['uuid']}/usages")
    assert response.status_code == 200
    assert response.json == {
        "resource_provider_generation": 1,
        "usages": {"DISK_GB": 0, "MEMORY_MB": 0, "VCPU": 0},
    }


def test_a_removed_class_disappears_from_usages(api):
    provider = api.create_provider("cn1")
    api.set_inventory(provider["uuid"], VCPU=8, DISK_GB=100)
    api.delete(f"/resource_providers/{provider['uuid']}/inventories/DISK_GB")
    response = api.get(f"/resource_providers/{provider['uuid']}/usages")
    assert response.json == {"resource_provider_generation": 2, "usages": {"VCPU": 0}}


def test_usages_of_another_provider_are_not_mixed_in(api):
    one = api.create_provider("one")
    two = api.create_provider("two")
    api.set_inventory(one["uuid"], VCPU=8)
    api.set_inventory(two["uuid"], DISK_GB=100)
    assert api.get(f"/resource_providers/{one['uuid']}/usages").json["usages"] == {"VCPU": 0}


def test_unknown_or_malformed_provider_is_404(api):
    for provider_uuid in (str(uuid.uuid4()), "not-a-uuid"):
        response = api.get(f"/resource_providers/{provider_uuid}/usages", version="1.23")
        assert response.status_code == 404
        assert error_code(response) == "placement.resource_provider.not_found"


def test_cache_headers_from_1_15(api):
    provider = api.create_provider("cn1")
    path = f"/resource_providers/{provider['uuid']}/usages"
    assert "Cache-Control" not in api.get(path, version="1.14").headers
    new = api.get(path, version="1.15")
    assert new.headers["Cache-Control"] == "no-cache"
    assert new.headers["Last-Modified"].endswith("GMT")


@pytest.fixture
def project_usage(api) -> dict:
    """2 VCPU used by an INSTANCE of project p1, user u1."""
    provider = api.create_provider("cn1")
    api.set_inventory(provider["uuid"], VCPU=8)
    claim = api.allocate(
        str(uuid.uuid4()), {provider["uuid"]: {"VCPU": 2}}, project="p1", user="u1"
    )
    assert claim.status_code == 204, claim.json
    return provider


def _usages(api, query, version="1.39"):
    response = api.get(f"/usages?{query}", version=version)
    assert response.status_code == 200, response.json
    return response.json["usages"]


def test_a_repeated_parameter_takes_its_last_value(api, project_usage):
    instance = {"INSTANCE": {"VCPU": 2, "consumer_count": 1}}
    assert _usages(api, "project_id=p2&project_id=p1") == instance
    assert _usages(api, "project_id=p1&project_id=p2") == {}
    assert _usages(api, "project_id=p1&user_id=u2&user_id=u1") == instance
    assert _usages(api, "project_id=p1&consumer_type=all&consumer_type=INSTANCE") == instance
    assert _usages(api, "project_id=p1&user_id=u2&user_id=u1", version="1.9") == {"VCPU": 2}
    # Only the last value is validated.
    assert _usages(api, "project_id=&project_id=p1") == instance
    assert _usages(api, "project_id=p1&consumer_type=bad-one&consumer_type=INSTANCE") == (instance)


def test_a_consumer_type_starting_with_all_is_a_type_name(api, project_usage):
    # Upstream's pattern lets "all..." by, and looks it up as a type: none has it.
    assert _usages(api, "project_id=p1&consumer_type=all-of-it") == {}
    assert _usages(api, "project_id=p1&consumer_type=all") == {
        "all": {"VCPU": 2, "consumer_count": 1}
    }


@pytest.mark.parametrize(
    "query",
    [
        "project_id=p1&project_id=",
        "project_id=p1&user_id=u1&user_id=",
        "project_id=p1&consumer_type=unknownfoo",
        "project_id=p1&consumer_type=" + "A" * 256,
        "project_id=p1&consumer_type=INSTANCE&consumer_type=",
        "user_id=u1",
    ],
)
def test_bad_usage_queries_are_400(api, query):
    response = api.get(f"/usages?{query}")
    assert response.status_code == 400, response.json
    assert error_code(response) in ("placement.query.bad_value", "placement.query.missing_value")


@pytest.mark.parametrize(
    ("query", "version", "sentence"),
    [
        ("", "1.9", "'project_id' is a required property\n\nFailed validating 'required'"),
        ("dummy=1", "1.9", "'project_id' is a required property"),
        (
            f"project_id={uuid.UUID(int=1)}&dummy=1",
            "1.9",
            "Additional properties are not allowed ('dummy' was unexpected)",
        ),
        (
            "project_id=p1&consumer_type=INSTANCE",
            "1.37",
            "Additional properties are not allowed ('consumer_type' was unexpected)",
        ),
        (
            "project_id=",
            "1.9",
            "'' should be non-empty\n\nFailed validating 'minLength' in "
            "schema['properties']['project_id']",
        ),
        (
            "project_id=p1&user_id=",
            "1.9",
            "Failed validating 'minLength' in schema['properties']['user_id']",
        ),
        # Upstream reports the parameter whose name sorts last.
        ("project_id=&user_id=", "1.9", "schema['properties']['user_id']"),
        (
            "project_id=" + "x" * 256,
            "1.9",
            "Failed validating 'maxLength' in schema['properties']['project_id']",
        ),
        ("project_id=p1&user_id=" + "x" * 256, "1.9", f"'{'x' * 256}' is too long"),
        (
            "project_id=p1&consumer_type=lower",
            "1.38",
            "'lower' does not match '^[A-Z0-9_]+$|^all|^unknown$'\n\nFailed validating 'pattern'",
        ),
        ("project_id=p1&consumer_type=", "1.38", "Failed validating 'pattern'"),
        ("project_id=p1&consumer_type=" + "A" * 256, "1.38", "Failed validating 'maxLength'"),
    ],
)
def test_a_refusal_says_what_upstream_says(api, query, version, sentence):
    response = api.get(f"/usages?{query}", version=version)

    assert response.status_code == 400, response.json
    detail = response.json["errors"][0]["detail"]
    assert detail.startswith("Invalid query string parameters: ")
    assert sentence in detail
