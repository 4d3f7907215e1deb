"""Inventories through HTTP: replace all, create one, show, update, delete, validation.

Capacity-below-usage and in-use refusals need allocations and are tested with them.
"""

import uuid

import pytest

from tests.conftest import error_code

MAX_INT = 2147483647


@pytest.fixture
def provider(api) -> dict:
    return api.create_provider("cn1")


def _path(provider: dict, resource_class: str | None = None) -> str:
    base = f"/resource_providers/{provider['uuid']}/inventories"
    return f"{base}/{resource_class}" if resource_class else base


def _replace(api, provider, inventories, generation=None, **kwargs):
    body = {
        "resource_provider_generation": (
            api.generation(provider["uuid"]) if generation is None else generation
        ),
        "inventories": inventories,
    }
    return api.put(_path(provider), json=body, **kwargs)


def test_empty_provider_lists_no_inventories_with_its_generation(api, provider):
    response = api.get(_path(provider), version="1.0")
    assert response.status_code == 200
    assert response.json == {"inventories": {}, "resource_provider_generation": 0}


def test_replace_fills_defaults_and_bumps_the_generation(api, provider):
    response = _replace(api, provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    assert response.status_code == 200
    assert response.json["resource_provider_generation"] == 1
    assert response.json["inventories"]["VCPU"] == {
        "total": 8,
        "reserved": 0,
        "min_unit": 1,
        "max_unit": MAX_INT,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }
    assert set(response.json["inventories"]) == {"VCPU", "DISK_GB"}
    assert api.get(_path(provider)).json == response.json
    assert api.generation(provider["uuid"]) == 1


def test_replace_keeps_every_given_field(api, provider):
    fields = {
        "total": 16,
        "reserved": 2,
        "min_unit": 2,
        "max_unit": 8,
        "step_size": 2,
        "allocation_ratio": 16.0,
    }
    response = _replace(api, provider, {"VCPU": fields})
    assert response.status_code == 200
    assert response.json["inventories"]["VCPU"] == fields
    assert api.get(_path(provider, "VCPU")).json == {
        "resource_provider_generation": 1,
        **fields,
    }


def test_replace_removes_classes_left_out_and_updates_the_rest(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    response = _replace(api, provider, {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 1024}})
    assert response.status_code == 200
    assert response.json["resource_provider_generation"] == 2
    current = api.get(_path(provider)).json["inventories"]
    assert set(current) == {"VCPU", "MEMORY_MB"}
    assert current["VCPU"]["total"] == 4


def test_replace_with_a_custom_class(api, provider):
    assert api.put("/resource_classes/CUSTOM_GPU").status_code == 201
    response = _replace(api, provider, {"CUSTOM_GPU": {"total": 2}})
    assert response.status_code == 200
    assert response.json["inventories"]["CUSTOM_GPU"]["total"] == 2


@pytest.mark.parametrize("generation", [1, 7])
def test_replace_with_a_wrong_generation_is_409_concurrent_update(api, provider, generation):
    response = _replace(api, provider, {"VCPU": {"total": 8}}, generation=generation)
    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"
    assert api.get(_path(provider)).json["inventories"] == {}
    assert api.generation(provider["uuid"]) == 0


def test_replace_without_a_generation_is_400(api, provider):
    response = api.put(_path(provider), json={"inventories": {"VCPU": {"total": 8}}})
    assert response.status_code == 400
    assert error_code(response) == "placement.undefined_code"
    assert api.generation(provider["uuid"]) == 0


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"total": 0},
        {"total": -1},
        {"total": MAX_INT + 1},
        {"total": "8"},
        {"total": True},
        {"total": 1.5},
        {"total": None},
        {"total": 8, "reserved": -1},
        {"total": 8, "reserved": "1"},
        {"total": 8, "min_unit": 0},
        {"total": 8, "min_unit": True},
        {"total": 8, "max_unit": 0},
        {"total": 8, "max_unit": 2.5},
        {"total": 8, "step_size": 0},
        {"total": 8, "step_size": "1"},
        {"total": 8, "allocation_ratio": -1.0},
        {"total": 8, "allocation_ratio": "1.0"},
        {"total": 8, "allocation_ratio": True},
        {"total": 8, "foo": 1},
    ],
)
def test_invalid_inventory_fields_are_400_and_change_nothing(api, provider, fields):
    response = _replace(api, provider, {"VCPU": fields})
    assert response.status_code == 400, response.json
    assert response.json["errors"][0]["status"] == 400
    assert api.get(_path(provider)).json == {
        "inventories": {},
        "resource_provider_generation": 0,
    }


def test_allocation_ratio_accepts_integers_and_fractions(api, provider):
    response = _replace(
        api,
        provider,
        {
            "VCPU": {"total": 8, "allocation_ratio": 2},
            "DISK_GB": {"total": 8, "allocation_ratio": 0.5},
        },
    )
    assert response.status_code == 200
    assert response.json["inventories"]["VCPU"]["allocation_ratio"] == 2.0
    assert response.json["inventories"]["DISK_GB"]["allocation_ratio"] == 0.5


@pytest.mark.parametrize(
    "body",
    [
        {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}, "foo": 1},
        {"resource_provider_generation": 0},
        {"resource_provider_generation": "0", "inventories": {}},
        {"resource_provider_generation": 0, "inventories": []},
        {"resource_provider_generation": 0, "inventories": {"VCPU": 8}},
        [],
    ],
)
def test_invalid_replace_bodies_are_400(api, provider, body):
    response = api.put(_path(provider), json=body)
    assert response.status_code == 400, body
    assert api.generation(provider["uuid"]) == 0


@pytest.mark.parametrize("resource_class", ["FOO", "CUSTOM_NOPE", "vcpu", "CUSTOM-X"])
def test_unknown_or_badly_named_class_is_400(api, provider, resource_class):
    response = _replace(api, provider, {resource_class: {"total": 1}})
    assert response.status_code == 400
    assert error_code(response) == "placement.undefined_code"
    assert api.generation(provider["uuid"]) == 0


def test_reserved_equal_to_total_is_400_at_1_25_and_allowed_from_1_26(api, provider):
    full = {"VCPU": {"total": 4, "reserved": 4}}
    refused = _replace(api, provider, full, version="1.25")
    assert refused.status_code == 400
    assert error_code(refused) == "placement.undefined_code"
    assert api.get(_path(provider)).json["inventories"] == {}
    allowed = _replace(api, provider, full, version="1.26")
    assert allowed.status_code == 200
    assert allowed.json["inventories"]["VCPU"]["reserved"] == 4


@pytest.mark.parametrize("version", ["1.0", "1.25", "1.26", "1.39"])
def test_reserved_above_total_is_always_400(api, provider, version):
    response = _replace(api, provider, {"VCPU": {"total": 4, "reserved": 5}}, version=version)
    assert response.status_code == 400
    assert "reserved" in response.json["errors"][0]["detail"]


def test_min_unit_above_max_unit_is_stored_as_upstream_does(api, provider):
    response = _replace(api, provider, {"VCPU": {"total": 8, "min_unit": 4, "max_unit": 2}})
    assert response.status_code == 200
    assert response.json["inventories"]["VCPU"]["min_unit"] == 4
    assert response.json["inventories"]["VCPU"]["max_unit"] == 2


def test_a_generation_inside_an_inventory_record_is_accepted_and_ignored(api, provider):
    response = _replace(api, provider, {"VCPU": {"total": 8, "resource_provider_generation": 99}})
    assert response.status_code == 200
    assert response.json["resource_provider_generation"] == 1
    assert "resource_provider_generation" not in response.json["inventories"]["VCPU"]


@pytest.mark.parametrize(
    ("version", "ratio", "status"),
    [
        ("1.25", 0, 400),
        ("1.26", 0, 200),
        ("1.39", 0.0, 200),
        ("1.39", 0.1, 200),
        ("1.25", 0.1, 400),
        ("1.39", -1, 400),
    ],
)
def test_allocation_ratio_follows_the_capacity_rule(api, provider, version, ratio, status):
    # The capacity int((total - reserved) * ratio): positive before 1.26, zero allowed after.
    response = _replace(
        api, provider, {"VCPU": {"total": 8, "allocation_ratio": ratio}}, version=version
    )
    assert response.status_code == status, response.json
    if status == 400:
        assert api.generation(provider["uuid"]) == 0


def test_a_stale_generation_is_409_before_a_bad_capacity_is_400(api, provider):
    response = _replace(api, provider, {"VCPU": {"total": 4, "reserved": 5}}, generation=7)
    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"


def test_max_unit_above_total_is_allowed(api, provider):
    response = _replace(api, provider, {"VCPU": {"total": 8, "max_unit": 16}})
    assert response.status_code == 200
    assert response.json["inventories"]["VCPU"]["max_unit"] == 16


def test_inventories_of_an_unknown_provider_are_404(api):
    path = f"/resource_providers/{uuid.uuid4()}/inventories"
    body = {"resource_provider_generation": 0, "inventories": {}}
    for response in (
        api.get(path),
        api.put(path, json=body),
        api.post(
            path, json={"resource_provider_generation": 0, "resource_class": "VCPU", "total": 1}
        ),
        api.delete(path),
        api.get(f"{path}/VCPU"),
        api.put(f"{path}/VCPU", json={"resource_provider_generation": 0, "total": 1}),
        api.delete(f"{path}/VCPU"),
    ):
        assert response.status_code == 404
        assert error_code(response) == "placement.resource_provider.not_found"


def test_post_creates_one_inventory_with_location_and_body(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}})
    response = api.post(
        _path(provider),
        json={
            "resource_provider_generation": 1,
            "resource_class": "DISK_GB",
            "total": 100,
            "reserved": 10,
        },
    )
    assert response.status_code == 201
    assert response.headers["Location"].startswith("http")
    assert response.headers["Location"].endswith(_path(provider, "DISK_GB"))
    assert response.json == {
        "resource_provider_generation": 2,
        "total": 100,
        "reserved": 10,
        "min_unit": 1,
        "max_unit": MAX_INT,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }
    assert set(api.get(_path(provider)).json["inventories"]) == {"VCPU", "DISK_GB"}


@pytest.mark.parametrize("generation", [None, 0, 5])
def test_post_needs_no_generation_and_ignores_a_stale_one(api, provider, generation):
    # openstacksdk sends none; upstream ignores any it is given.
    body = {"resource_class": "VCPU", "total": 1}
    if generation is not None:
        body["resource_provider_generation"] = generation
    response = api.post(_path(provider), json=body)
    assert response.status_code == 201, response.json
    assert response.json["resource_provider_generation"] == 1
    assert api.get(_path(provider)).json["inventories"]["VCPU"]["total"] == 1


def test_post_of_a_class_the_provider_has_is_409(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}})
    response = api.post(
        _path(provider),
        json={"resource_provider_generation": 1, "resource_class": "VCPU", "total": 2},
    )
    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"
    assert api.get(_path(provider, "VCPU")).json["total"] == 8
    assert api.generation(provider["uuid"]) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"resource_provider_generation": 0, "total": 1},
        {"resource_provider_generation": 0, "resource_class": "VCPU"},
        {"resource_provider_generation": 0, "resource_class": "FOO", "total": 1},
        {"resource_provider_generation": 0, "resource_class": "vcpu", "total": 1},
        {"resource_provider_generation": 0, "resource_class": 5, "total": 1},
        {"resource_provider_generation": 0, "resource_class": "VCPU", "total": "1"},
        {"resource_provider_generation": 0, "resource_class": "VCPU", "total": 1, "x": 1},
        {"resource_provider_generation": 0, "resource_class": "VCPU", "total": 2, "reserved": 3},
    ],
)
def test_post_invalid_bodies_are_400(api, provider, body):
    response = api.post(_path(provider), json=body)
    assert response.status_code == 400, body
    assert api.get(_path(provider)).json == {
        "inventories": {},
        "resource_provider_generation": 0,
    }


def test_show_one_inventory(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8, "reserved": 1}})
    response = api.get(_path(provider, "VCPU"), version="1.0")
    assert response.status_code == 200
    assert response.json["resource_provider_generation"] == 1
    assert response.json["total"] == 8
    assert response.json["reserved"] == 1


@pytest.mark.parametrize("resource_class", ["DISK_GB", "FOO"])
def test_show_a_class_without_inventory_is_404(api, provider, resource_class):
    _replace(api, provider, {"VCPU": {"total": 8}})
    response = api.get(_path(provider, resource_class))
    assert response.status_code == 404
    assert error_code(response) == "placement.undefined_code"


def test_put_one_updates_it_and_bumps_the_generation(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    response = api.put(
        _path(provider, "VCPU"),
        json={"resource_provider_generation": 1, "total": 16, "allocation_ratio": 4.0},
    )
    assert response.status_code == 200
    assert response.json["resource_provider_generation"] == 2
    assert response.json["total"] == 16
    assert response.json["allocation_ratio"] == 4.0
    # Fields left out return to their defaults: PUT replaces the record.
    assert response.json["reserved"] == 0
    current = api.get(_path(provider)).json
    assert current["resource_provider_generation"] == 2
    assert current["inventories"]["VCPU"]["total"] == 16
    assert current["inventories"]["DISK_GB"]["total"] == 100


def test_put_one_the_provider_lacks_is_400(api, provider):
    # As upstream (and `openstack resource provider inventory class set` relies on
    # it to tell "create it with POST"): PUT of one record only updates.
    response = api.put(
        _path(provider, "SRIOV_NET_VF"), json={"resource_provider_generation": 0, "total": 4}
    )
    assert response.status_code == 400
    assert "No inventory record with resource class" in response.json["errors"][0]["detail"]
    assert api.generation(provider["uuid"]) == 0
    assert api.get(_path(provider, "SRIOV_NET_VF")).status_code == 404


def test_put_one_with_a_wrong_generation_is_409(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}})
    response = api.put(
        _path(provider, "VCPU"), json={"resource_provider_generation": 0, "total": 16}
    )
    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"
    assert api.get(_path(provider, "VCPU")).json["total"] == 8


@pytest.mark.parametrize(
    "body",
    [
        {"total": 16},
        {"resource_provider_generation": 1},
        {"resource_provider_generation": 1, "total": 16, "resource_class": "VCPU"},
        {"resource_provider_generation": 1, "total": 0},
        {"resource_provider_generation": 1, "total": 4, "reserved": 5},
    ],
)
def test_put_one_invalid_bodies_are_400(api, provider, body):
    _replace(api, provider, {"VCPU": {"total": 8}})
    response = api.put(_path(provider, "VCPU"), json=body)
    assert response.status_code == 400, body
    assert api.get(_path(provider, "VCPU")).json["total"] == 8


@pytest.mark.parametrize("resource_class", ["FOO", "CUSTOM_NOPE"])
def test_put_one_of_an_unknown_class_is_404(api, provider, resource_class):
    # As upstream: the class in the URL is not found.
    response = api.put(
        _path(provider, resource_class), json={"resource_provider_generation": 0, "total": 1}
    )
    assert response.status_code == 404
    assert response.json["errors"][0]["detail"] == f"No such resource class {resource_class}."
    assert api.generation(provider["uuid"]) == 0


def test_put_one_reserved_equal_to_total_follows_1_26(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}})
    body = {"resource_provider_generation": 1, "total": 2, "reserved": 2}
    assert api.put(_path(provider, "VCPU"), json=body, version="1.25").status_code == 400
    assert api.put(_path(provider, "VCPU"), json=body, version="1.26").status_code == 200


def test_delete_one_removes_it_and_bumps_the_generation(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    response = api.delete(_path(provider, "DISK_GB"))
    assert response.status_code == 204
    assert response.data == b""
    current = api.get(_path(provider)).json
    assert set(current["inventories"]) == {"VCPU"}
    assert current["resource_provider_generation"] == 2


def test_delete_one_that_is_missing_is_404(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}})
    for resource_class in ("DISK_GB", "FOO"):
        response = api.delete(_path(provider, resource_class))
        assert response.status_code == 404
    assert api.generation(provider["uuid"]) == 1


def test_delete_all_is_405_at_1_4_with_allow(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}})
    response = api.delete(_path(provider), version="1.4")
    assert response.status_code == 405
    assert "DELETE" not in response.headers["Allow"]
    assert set(response.headers["Allow"].split(", ")) == {"GET", "POST", "PUT"}
    assert set(api.get(_path(provider)).json["inventories"]) == {"VCPU"}


def test_delete_all_from_1_5_empties_and_bumps_the_generation(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    response = api.delete(_path(provider), version="1.5")
    assert response.status_code == 204
    assert api.get(_path(provider)).json == {
        "inventories": {},
        "resource_provider_generation": 2,
    }


def test_each_change_increments_the_generation_by_one(api, provider):
    generations = [
        _replace(api, provider, {"VCPU": {"total": 8}}).json["resource_provider_generation"],
        api.post(
            _path(provider),
            json={"resource_provider_generation": 1, "resource_class": "DISK_GB", "total": 1},
        ).json["resource_provider_generation"],
        api.put(
            _path(provider, "DISK_GB"), json={"resource_provider_generation": 2, "total": 2}
        ).json["resource_provider_generation"],
    ]
    assert generations == [1, 2, 3]
    api.delete(_path(provider, "DISK_GB"))
    assert api.generation(provider["uuid"]) == 4
    api.delete(_path(provider))
    assert api.generation(provider["uuid"]) == 5


def test_last_modified_and_cache_control_from_1_15(api, provider):
    _replace(api, provider, {"VCPU": {"total": 8}})
    for path in (_path(provider), _path(provider, "VCPU")):
        old = api.get(path, version="1.14")
        assert "Last-Modified" not in old.headers
        assert "Cache-Control" not in old.headers
        new = api.get(path, version="1.15")
        assert new.headers["Cache-Control"] == "no-cache"
        assert new.headers["Last-Modified"].endswith("GMT")
    replaced = _replace(api, provider, {"VCPU": {"total": 4}}, version="1.15")
    assert replaced.headers["Last-Modified"].endswith("GMT")


def test_error_code_only_from_1_23(api, provider):
    body = {"resource_provider_generation": 9, "inventories": {}}
    old = api.put(_path(provider), json=body, version="1.22")
    assert old.status_code == 409
    assert "code" not in old.json["errors"][0]
    new = api.put(_path(provider), json=body, version="1.23")
    assert error_code(new) == "placement.concurrent_update"
