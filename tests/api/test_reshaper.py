"""POST /reshaper: inventory and allocations move from a root to a child in one step."""

import uuid

import pytest

from tests.conftest import error_code


@pytest.fixture
def reshape_setup(api):
    root = api.create_provider("root")["uuid"]
    api.set_inventory(root, VGPU={"total": 4})
    consumer = str(uuid.uuid4())
    body = {
        "allocations": {root: {"resources": {"VGPU": 2}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    assert api.put(f"/allocations/{consumer}", json=body).status_code == 204
    child = api.create_provider("gpu0", parent=root)["uuid"]
    return root, child, consumer


def _body(api, root, child, consumer, child_total=4, used=2, consumer_generation=1):
    return {
        "inventories": {
            root: {"resource_provider_generation": api.generation(root), "inventories": {}},
            child: {
                "resource_provider_generation": api.generation(child),
                "inventories": {"VGPU": {"total": child_total}},
            },
        },
        "allocations": {
            consumer: {
                "allocations": {child: {"resources": {"VGPU": used}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": consumer_generation,
                "consumer_type": "INSTANCE",
            }
        },
    }


def test_moves_inventory_and_allocations_atomically(api, reshape_setup):
    root, child, consumer = reshape_setup
    response = api.post("/reshaper", json=_body(api, root, child, consumer))
    assert response.status_code == 204, response.json
    assert api.get(f"/resource_providers/{root}/inventories").json["inventories"] == {}
    assert api.get(f"/resource_providers/{child}/usages").json["usages"] == {"VGPU": 2}
    shown = api.get(f"/allocations/{consumer}").json
    assert list(shown["allocations"]) == [child]
    assert shown["consumer_generation"] == 2


def test_generations_move_as_upstreams_do(api, reshape_setup):
    # Upstream writes each provider's inventory twice (interim, final) around the
    # allocations: root (emptied, not allocated from) +1; child +3.
    root, child, consumer = reshape_setup
    before = {rp: api.generation(rp) for rp in (root, child)}
    assert api.post("/reshaper", json=_body(api, root, child, consumer)).status_code == 204
    assert api.generation(root) == before[root] + 1
    assert api.generation(child) == before[child] + 3
    # Back again: root gets an inventory (+2) and the allocation (+1); child is emptied
    # of inventory and only moved away from (+1).
    back = {
        "inventories": {
            root: {
                "resource_provider_generation": api.generation(root),
                "inventories": {"VGPU": {"total": 4}},
            },
            child: {"resource_provider_generation": api.generation(child), "inventories": {}},
        },
        "allocations": {
            consumer: {
                "allocations": {root: {"resources": {"VGPU": 2}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": 2,
                "consumer_type": "INSTANCE",
            }
        },
    }
    moved = {rp: api.generation(rp) for rp in (root, child)}
    assert api.post("/reshaper", json=back).status_code == 204
    assert api.generation(root) == moved[root] + 3
    assert api.generation(child) == moved[child] + 1


def test_a_reshape_that_does_not_fit_changes_nothing(api, reshape_setup):
    root, child, consumer = reshape_setup
    response = api.post("/reshaper", json=_body(api, root, child, consumer, child_total=1))
    assert response.status_code == 409
    assert api.get(f"/resource_providers/{root}/usages").json["usages"] == {"VGPU": 2}
    assert api.get(f"/resource_providers/{child}/inventories").json["inventories"] == {}


def test_stale_generations_are_409(api, reshape_setup):
    root, child, consumer = reshape_setup
    body = _body(api, root, child, consumer)
    body["inventories"][root]["resource_provider_generation"] -= 1
    assert error_code(api.post("/reshaper", json=body)) == "placement.concurrent_update"
    body = _body(api, root, child, consumer, consumer_generation=5)
    assert error_code(api.post("/reshaper", json=body)) == "placement.concurrent_update"


def test_needs_1_30_and_a_valid_body(api, reshape_setup):
    root, child, consumer = reshape_setup
    assert api.post("/reshaper", json={}, version="1.29").status_code == 404
    assert api.post("/reshaper", json={"inventories": {}}).status_code == 400
    body = _body(api, root, child, consumer)
    body["inventories"][str(uuid.uuid4())] = body["inventories"].pop(child)
    assert api.post("/reshaper", json=body).status_code == 400


def test_removing_inventory_still_allocated_is_inventory_inuse(api, reshape_setup):
    root, child, consumer = reshape_setup
    body = _body(api, root, child, consumer)
    body["allocations"] = {}  # the consumer's allocation stays on root, whose VGPU goes
    response = api.post("/reshaper", json=body)
    assert response.status_code == 409
    assert error_code(response) == "placement.inventory.inuse"
