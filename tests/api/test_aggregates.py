"""Provider aggregates through HTTP: bare lists at 1.1-1.18, generations from 1.19."""

import uuid

import pytest

from tests.conftest import error_code

AGG_1 = "aaaaaaaa-0000-4000-8000-000000000001"
AGG_2 = "aaaaaaaa-0000-4000-8000-000000000002"


@pytest.fixture
def provider(api) -> dict:
    return api.create_provider("cn1")


def _path(provider) -> str:
    return f"/resource_providers/{provider['uuid']}/aggregates"


def test_aggregates_do_not_exist_at_1_0(api, provider):
    assert api.get(_path(provider), version="1.0").status_code == 404
    assert api.put(_path(provider), json=[AGG_1], version="1.0").status_code == 404
    assert api.get(_path(provider), version="1.1").json == {"aggregates": []}


@pytest.mark.parametrize("version", ["1.1", "1.18"])
def test_before_1_19_put_takes_a_bare_list_and_answers_without_generation(api, provider, version):
    response = api.put(_path(provider), json=[AGG_2, AGG_1], version=version)
    assert response.status_code == 200
    # As upstream: the answer echoes the request; a GET lists them as first seen.
    assert response.json == {"aggregates": [AGG_2, AGG_1]}
    shown = api.get(_path(provider), version=version)
    assert shown.status_code == 200
    assert shown.json == {"aggregates": [AGG_2, AGG_1]}
    # As upstream: no generation in the body, none bumped (a client holding it writes on).
    assert api.generation(provider["uuid"]) == 0


@pytest.mark.parametrize("version", ["1.1", "1.18"])
def test_before_1_19_an_object_body_is_400(api, provider, version):
    for body in (
        {"aggregates": [AGG_1], "resource_provider_generation": 0},
        {"aggregates": [AGG_1]},
    ):
        response = api.put(_path(provider), json=body, version=version)
        assert response.status_code == 400, body
    assert api.get(_path(provider), version=version).json == {"aggregates": []}


def test_before_1_19_an_empty_list_removes_every_aggregate(api, provider):
    api.put(_path(provider), json=[AGG_1], version="1.1")
    response = api.put(_path(provider), json=[], version="1.1")
    assert response.status_code == 200
    assert response.json == {"aggregates": []}


@pytest.mark.parametrize("body", [["not-a-uuid"], [5], "x", [AGG_1, None]])
def test_before_1_19_invalid_lists_are_400(api, provider, body):
    response = api.put(_path(provider), json=body, version="1.18")
    assert response.status_code == 400, body
    assert api.get(_path(provider), version="1.18").json == {"aggregates": []}


def test_from_1_19_the_body_carries_the_generation(api, provider):
    response = api.put(
        _path(provider),
        json={"aggregates": [AGG_1], "resource_provider_generation": 0},
        version="1.19",
    )
    assert response.status_code == 200
    assert response.json == {"aggregates": [AGG_1], "resource_provider_generation": 1}
    shown = api.get(_path(provider), version="1.19")
    assert shown.json == {"aggregates": [AGG_1], "resource_provider_generation": 1}
    assert api.generation(provider["uuid"]) == 1


def test_from_1_19_a_bare_list_is_400(api, provider):
    response = api.put(_path(provider), json=[AGG_1], version="1.19")
    assert response.status_code == 400
    assert api.get(_path(provider)).json["aggregates"] == []


def test_from_1_19_a_wrong_generation_is_409_concurrent_update(api, provider):
    api.set_aggregates(provider["uuid"], AGG_1)
    response = api.put(
        _path(provider),
        json={"aggregates": [AGG_2], "resource_provider_generation": 0},
        version="1.23",
    )
    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"
    assert api.get(_path(provider)).json == {
        "aggregates": [AGG_1],
        "resource_provider_generation": 1,
    }
    old = api.put(
        _path(provider),
        json={"aggregates": [AGG_2], "resource_provider_generation": 0},
        version="1.22",
    )
    assert old.status_code == 409
    assert "code" not in old.json["errors"][0]


@pytest.mark.parametrize(
    "body",
    [
        {"aggregates": [AGG_1]},
        {"resource_provider_generation": 0},
        {"aggregates": ["not-a-uuid"], "resource_provider_generation": 0},
        {"aggregates": AGG_1, "resource_provider_generation": 0},
        {"aggregates": [AGG_1], "resource_provider_generation": "0"},
        {"aggregates": [AGG_1], "resource_provider_generation": 0, "foo": 1},
    ],
)
def test_from_1_19_invalid_bodies_are_400(api, provider, body):
    response = api.put(_path(provider), json=body, version="1.19")
    assert response.status_code == 400, body
    assert api.generation(provider["uuid"]) == 0


def test_aggregate_uuids_are_normalized(api, provider):
    raw = uuid.UUID(AGG_1)
    response = api.put(
        _path(provider),
        json={"aggregates": [raw.hex.upper()], "resource_provider_generation": 0},
    )
    assert response.status_code == 200
    assert response.json["aggregates"] == [AGG_1]


def test_an_aggregate_can_be_shared_by_providers(api, provider):
    other = api.create_provider("cn2")
    api.set_aggregates(provider["uuid"], AGG_1, AGG_2)
    api.set_aggregates(other["uuid"], AGG_1)
    api.set_aggregates(provider["uuid"], AGG_2)
    assert api.get(_path(other)).json["aggregates"] == [AGG_1]
    assert api.get(_path(provider)).json["aggregates"] == [AGG_2]


@pytest.mark.parametrize("version", ["1.1", "1.19"])
def test_unknown_or_malformed_provider_is_404(api, version):
    for provider_uuid in (str(uuid.uuid4()), "not-a-uuid"):
        path = f"/resource_providers/{provider_uuid}/aggregates"
        assert api.get(path, version=version).status_code == 404
        body = (
            [AGG_1]
            if version == "1.1"
            else {"aggregates": [AGG_1], "resource_provider_generation": 0}
        )
        assert api.put(path, json=body, version=version).status_code == 404
    response = api.get(f"/resource_providers/{uuid.uuid4()}/aggregates", version="1.23")
    assert error_code(response) == "placement.resource_provider.not_found"


def test_last_modified_from_1_15(api, provider):
    assert "Last-Modified" not in api.get(_path(provider), version="1.14").headers
    new = api.get(_path(provider), version="1.15")
    assert new.headers["Last-Modified"].endswith("GMT")
    assert new.headers["Cache-Control"] == "no-cache"


def test_duplicate_aggregates_are_400(api):
    provider = api.create_provider("dup-aggs")["uuid"]
    aggregate = "11111111-1111-1111-1111-111111111111"
    body = {"resource_provider_generation": 0, "aggregates": [aggregate, aggregate.upper()]}
    response = api.put(f"/resource_providers/{provider}/aggregates", json=body)
    assert response.status_code == 400
    legacy = api.put(
        f"/resource_providers/{provider}/aggregates", json=[aggregate, aggregate], version="1.1"
    )
    assert legacy.status_code == 400
    assert api.get(f"/resource_providers/{provider}/aggregates").json["aggregates"] == []
