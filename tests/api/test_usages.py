"""GET /resource_providers/{uuid}/usages without allocations: zero per inventoried class."""

import uuid

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
