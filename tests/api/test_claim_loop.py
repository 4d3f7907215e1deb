"""Nova's claim loop at every candidates microversion: GET /allocation_candidates, then
the chosen allocation request written back exactly as it came (``mappings`` and all,
whose unsuffixed group's key is the empty string), by PUT /allocations/{consumer},
POST /allocations and POST /reshaper."""

import uuid

import pytest

VERSIONS = [f"1.{minor}" for minor in range(34, 40)]


@pytest.fixture
def host(api):
    provider = api.create_provider("cn1")["uuid"]
    api.set_inventory(provider, VCPU={"total": 8}, MEMORY_MB={"total": 2048})
    return provider


def _consumer_fields(version: str) -> dict:
    fields = {"project_id": "p", "user_id": "u", "consumer_generation": None}
    if version >= "1.38":
        fields["consumer_type"] = "INSTANCE"
    return fields


def _first_request(api, version: str, query: str = "resources=VCPU:2,MEMORY_MB:512") -> dict:
    response = api.get(f"/allocation_candidates?{query}", version=version)
    assert response.status_code == 200, response.json
    chosen = response.json["allocation_requests"][0]
    assert "" in chosen["mappings"]  # the unsuffixed group, as Nova gets it
    return chosen


@pytest.mark.parametrize("version", VERSIONS)
def test_put_the_candidate_as_returned(api, host, version):
    chosen = _first_request(api, version)
    consumer = str(uuid.uuid4())
    response = api.put(
        f"/allocations/{consumer}", json={**chosen, **_consumer_fields(version)}, version=version
    )
    assert response.status_code == 204, response.json
    usages = api.get(f"/resource_providers/{host}/usages").json["usages"]
    assert usages == {"VCPU": 2, "MEMORY_MB": 512}


@pytest.mark.parametrize("version", VERSIONS)
def test_post_the_candidate_as_returned(api, host, version):
    chosen = _first_request(api, version)
    consumer = str(uuid.uuid4())
    body = {consumer: {**chosen, **_consumer_fields(version)}}
    response = api.post("/allocations", json=body, version=version)
    assert response.status_code == 204, response.json
    assert api.get(f"/allocations/{consumer}").json["allocations"][host]["resources"] == {
        "VCPU": 2,
        "MEMORY_MB": 512,
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_reshape_with_the_candidate_as_returned(api, host, version):
    chosen = _first_request(api, version)
    consumer = str(uuid.uuid4())
    inventories = api.get(f"/resource_providers/{host}/inventories").json
    body = {
        "inventories": {host: inventories},
        "allocations": {consumer: {**chosen, **_consumer_fields(version)}},
    }
    response = api.post("/reshaper", json=body, version=version)
    assert response.status_code == 204, response.json
    assert api.get(f"/resource_providers/{host}/usages").json["usages"]["VCPU"] == 2


@pytest.mark.parametrize("version", ["1.34", "1.39"])
def test_granular_mappings_are_accepted_back(api, host, version):
    chosen = _first_request(
        api, version, "resources=VCPU:1&resources1=MEMORY_MB:256&group_policy=none"
    )
    assert set(chosen["mappings"]) == {"", "1"}
    response = api.put(
        f"/allocations/{uuid.uuid4()}",
        json={**chosen, **_consumer_fields(version)},
        version=version,
    )
    assert response.status_code == 204, response.json


@pytest.mark.parametrize(
    "mappings",
    [{"": ["not-a-uuid"]}, {"1": []}, {"1": "x"}, {}, []],
)
def test_malformed_mappings_of_a_group_are_400(api, host, mappings):
    body = {
        "allocations": {host: {"resources": {"VCPU": 1}}},
        "mappings": mappings,
        **_consumer_fields("1.39"),
    }
    # The empty key names no group: anything goes there, as upstream.
    expected = 204 if mappings == {"": ["not-a-uuid"]} else 400
    response = api.put(f"/allocations/{uuid.uuid4()}", json=body)
    assert response.status_code == expected, response.json
