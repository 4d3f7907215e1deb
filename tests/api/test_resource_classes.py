"""Resource classes through HTTP: list, create, show, rename (1.2-1.6), ensure (1.7+), delete."""

import os_resource_classes
import pytest

from tests.conftest import error_code


def _names(api, version="1.2") -> list[str]:
    response = api.get("/resource_classes", version=version)
    assert response.status_code == 200
    return [entry["name"] for entry in response.json["resource_classes"]]


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/resource_classes"),
        ("POST", "/resource_classes"),
        ("GET", "/resource_classes/VCPU"),
        ("PUT", "/resource_classes/CUSTOM_X"),
        ("DELETE", "/resource_classes/CUSTOM_X"),
    ],
)
def test_resource_classes_do_not_exist_below_1_2(api, method, path):
    response = api.request(method, path, version="1.1", json={"name": "CUSTOM_X"})
    assert response.status_code == 404
    assert api.get("/resource_classes/CUSTOM_X", version="1.2").status_code == 404


def test_list_has_every_standard_class_with_a_self_link(api):
    response = api.get("/resource_classes", version="1.2")
    assert response.status_code == 200
    entries = response.json["resource_classes"]
    names = [entry["name"] for entry in entries]
    assert set(os_resource_classes.STANDARDS) <= set(names)
    assert len(names) == len(os_resource_classes.STANDARDS)
    vcpu = next(entry for entry in entries if entry["name"] == "VCPU")
    assert vcpu == {"name": "VCPU", "links": [{"rel": "self", "href": "/resource_classes/VCPU"}]}


def test_list_is_sorted_by_name(api):
    api.post("/resource_classes", json={"name": "CUSTOM_A"})
    names = _names(api)
    assert names == sorted(names)
    assert "CUSTOM_A" in names


def test_post_creates_a_custom_class_with_location_and_no_body(api):
    response = api.post("/resource_classes", json={"name": "CUSTOM_GPU"}, version="1.2")
    assert response.status_code == 201
    assert response.data == b""
    assert response.headers["Location"].startswith("http")
    assert response.headers["Location"].endswith("/resource_classes/CUSTOM_GPU")
    assert "CUSTOM_GPU" in _names(api)


def test_post_duplicate_is_409(api):
    assert api.post("/resource_classes", json={"name": "CUSTOM_GPU"}).status_code == 201
    response = api.post("/resource_classes", json={"name": "CUSTOM_GPU"})
    assert response.status_code == 409
    assert error_code(response) == "placement.undefined_code"
    assert _names(api).count("CUSTOM_GPU") == 1


@pytest.mark.parametrize(
    "body",
    [
        {"name": "FOO"},
        {"name": "VCPU"},
        {"name": "CUSTOM_foo"},
        {"name": "CUSTOM_"},
        {"name": "CUSTOM-X"},
        {"name": "CUSTOM_" + "X" * 249},
        {"name": 5},
        {},
        {"name": "CUSTOM_X", "foo": 1},
    ],
)
def test_post_invalid_names_are_400(api, body):
    before = _names(api)
    response = api.post("/resource_classes", json=body)
    assert response.status_code == 400, body
    assert _names(api) == before


def test_show_standard_and_custom(api):
    api.post("/resource_classes", json={"name": "CUSTOM_GPU"})
    for name in ("VCPU", "CUSTOM_GPU"):
        response = api.get(f"/resource_classes/{name}", version="1.2")
        assert response.status_code == 200
        assert response.json == {
            "name": name,
            "links": [{"rel": "self", "href": f"/resource_classes/{name}"}],
        }


def test_show_missing_is_404(api):
    response = api.get("/resource_classes/CUSTOM_NOPE")
    assert response.status_code == 404
    assert error_code(response) == "placement.undefined_code"


def test_last_modified_from_1_15(api):
    for path in ("/resource_classes", "/resource_classes/VCPU"):
        assert "Last-Modified" not in api.get(path, version="1.14").headers
        new = api.get(path, version="1.15")
        assert new.headers["Last-Modified"].endswith("GMT")
        assert new.headers["Cache-Control"] == "no-cache"


@pytest.mark.parametrize("version", ["1.2", "1.6"])
def test_put_before_1_7_renames_a_custom_class(api, version):
    api.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    response = api.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version=version)
    assert response.status_code == 200
    assert response.json == {
        "name": "CUSTOM_NEW",
        "links": [{"rel": "self", "href": "/resource_classes/CUSTOM_NEW"}],
    }
    names = _names(api)
    assert "CUSTOM_NEW" in names and "CUSTOM_OLD" not in names


def test_rename_keeps_inventory_of_the_class(api):
    provider = api.create_provider("cn1")
    api.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    api.set_inventory(provider["uuid"], CUSTOM_OLD=4)
    response = api.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version="1.6")
    assert response.status_code == 200
    inventories = api.get(f"/resource_providers/{provider['uuid']}/inventories").json
    assert inventories["inventories"] == {
        "CUSTOM_NEW": {
            "total": 4,
            "reserved": 0,
            "min_unit": 1,
            "max_unit": 2147483647,
            "step_size": 1,
            "allocation_ratio": 1.0,
        }
    }


def test_rename_to_its_own_name_is_a_no_op(api):
    api.post("/resource_classes", json={"name": "CUSTOM_SAME"})
    response = api.put("/resource_classes/CUSTOM_SAME", json={"name": "CUSTOM_SAME"}, version="1.2")
    assert response.status_code == 200
    assert response.json["name"] == "CUSTOM_SAME"


def test_rename_to_an_existing_name_is_409_duplicate_name(api):
    api.post("/resource_classes", json={"name": "CUSTOM_A"})
    api.post("/resource_classes", json={"name": "CUSTOM_B"})
    response = api.put("/resource_classes/CUSTOM_A", json={"name": "CUSTOM_B"}, version="1.6")
    assert response.status_code == 409
    assert error_code(response) is None  # codes only from 1.23
    names = _names(api)
    assert "CUSTOM_A" in names and "CUSTOM_B" in names


@pytest.mark.parametrize("name", ["VCPU", "DISK_GB"])
def test_rename_of_a_standard_class_is_400(api, name):
    response = api.put(f"/resource_classes/{name}", json={"name": "CUSTOM_X"}, version="1.2")
    assert response.status_code == 400
    assert name in _names(api)
    assert "CUSTOM_X" not in _names(api)


def test_rename_of_a_missing_class_is_404(api):
    response = api.put("/resource_classes/CUSTOM_NOPE", json={"name": "CUSTOM_X"}, version="1.6")
    assert response.status_code == 404


@pytest.mark.parametrize(
    "body", [{"name": "FOO"}, {"name": "VCPU"}, {}, {"name": "CUSTOM_X", "x": 1}]
)
def test_rename_to_an_invalid_name_is_400(api, body):
    api.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    response = api.put("/resource_classes/CUSTOM_OLD", json=body, version="1.6")
    assert response.status_code == 400, body
    assert "CUSTOM_OLD" in _names(api)


def test_put_from_1_7_creates_then_answers_204_both_with_location(api):
    first = api.put("/resource_classes/CUSTOM_X", version="1.7")
    assert first.status_code == 201
    assert first.data == b""
    assert first.headers["Location"].endswith("/resource_classes/CUSTOM_X")
    again = api.put("/resource_classes/CUSTOM_X", version="1.7")
    assert again.status_code == 204
    assert again.headers["Location"].endswith("/resource_classes/CUSTOM_X")
    assert _names(api, version="1.7").count("CUSTOM_X") == 1


def test_put_from_1_7_ignores_the_body(api):
    response = api.put("/resource_classes/CUSTOM_X", json={"name": "CUSTOM_Y"}, version="1.39")
    assert response.status_code == 201
    names = _names(api)
    assert "CUSTOM_X" in names and "CUSTOM_Y" not in names


@pytest.mark.parametrize("name", ["VCPU", "FOO", "CUSTOM_lower", "CUSTOM_"])
def test_put_from_1_7_of_a_standard_or_non_custom_name_is_400(api, name):
    response = api.put(f"/resource_classes/{name}", version="1.7")
    assert response.status_code == 400
    assert error_code(api.put(f"/resource_classes/{name}", version="1.23")) == (
        "placement.undefined_code"
    )


@pytest.mark.parametrize("name", ["VCPU", "MEMORY_MB"])
def test_delete_of_a_standard_class_is_400(api, name):
    response = api.delete(f"/resource_classes/{name}")
    assert response.status_code == 400
    assert name in _names(api)


def test_delete_of_a_class_in_inventory_is_409(api):
    provider = api.create_provider("cn1")
    api.put("/resource_classes/CUSTOM_GPU")
    api.set_inventory(provider["uuid"], CUSTOM_GPU=2)
    response = api.delete("/resource_classes/CUSTOM_GPU")
    assert response.status_code == 409
    assert "CUSTOM_GPU" in _names(api)


def test_delete_of_a_missing_class_is_404(api):
    response = api.delete("/resource_classes/CUSTOM_NOPE")
    assert response.status_code == 404
    assert error_code(response) == "placement.undefined_code"


def test_delete_of_an_unused_custom_class_is_204(api):
    api.put("/resource_classes/CUSTOM_GPU")
    response = api.delete("/resource_classes/CUSTOM_GPU", version="1.2")
    assert response.status_code == 204
    assert response.data == b""
    assert api.get("/resource_classes/CUSTOM_GPU").status_code == 404
    assert api.delete("/resource_classes/CUSTOM_GPU").status_code == 404


def test_delete_after_its_inventory_is_gone(api):
    provider = api.create_provider("cn1")
    api.put("/resource_classes/CUSTOM_GPU")
    api.set_inventory(provider["uuid"], CUSTOM_GPU=2)
    api.delete(f"/resource_providers/{provider['uuid']}/inventories")
    assert api.delete("/resource_classes/CUSTOM_GPU").status_code == 204
