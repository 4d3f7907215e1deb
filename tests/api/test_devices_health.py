"""Per-device health through HTTP: the device report says whether each
device is healthy; an unhealthy device is never offered or claimed, whatever the
request (whole, shares, joint, ApplyForAll); what is allocated on it stays, shown as
such; health changes by importing the node again, without touching allocations."""

import copy

import pytest

from tests.api.device_helpers import (
    EIGHT_SWITCHES,
    HETEROGENEOUS,
    HINT,
    candidates,
    claim,
    import_node,
    minors,
    switch_box,
)

FOUR_GPUS = switch_box(
    gpus_per_switch=(2, 2), nics_per_switch=(0, 0), switches_per_numa=2, memory="8Gi"
)
JOINT_GPU_RDMA = {"deviceTypes": ["gpu", "rdma"]}


def with_health(document: dict, unhealthy: set[tuple[str, int]]) -> dict:
    """``document`` with ``health: false`` on the devices named (type, minor)."""
    changed = copy.deepcopy(document)
    for device in changed["devices"]:
        if (device["type"], device["minor"]) in unhealthy:
            device["health"] = False
    return changed


def device(view: dict, device_type: str, minor: int) -> dict:
    return next(d for d in view["devices"] if d["type"] == device_type and d["minor"] == minor)


def test_the_node_reports_each_devices_health(api):
    body = import_node(api, "n", with_health(FOUR_GPUS, {("gpu", 1)})).json
    assert [(d["minor"], d["health"]) for d in body["devices"]] == [
        (0, True),
        (1, False),
        (2, True),
        (3, True),
    ]
    shown = api.get("/group_resources/device_nodes/n").json
    assert device(shown, "gpu", 1)["health"] is False
    # Healthy by default: a document that says nothing is all healthy.
    assert all(d["health"] for d in import_node(api, "m", FOUR_GPUS).json["devices"])


def test_health_must_be_a_boolean(api):
    document = copy.deepcopy(FOUR_GPUS)
    document["devices"][0]["health"] = "yes"
    response = api.put("/group_resources/device_nodes/n", json=document)
    assert response.status_code == 400, response.json
    assert (
        "devices.0.health: 'yes' is not of type 'boolean'" in (response.json["errors"][0]["detail"])
    )


@pytest.mark.parametrize("scorer", ["pack", "spread"])
def test_an_unhealthy_gpu_is_never_offered(api, scorer):
    import_node(api, "n", with_health(FOUR_GPUS, {("gpu", 0)}))
    for resources in (
        {"nvidia.com/gpu": 1},
        {"kubernetes.io/gpu": 50},
        {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory": "1Gi"},
        {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory-ratio": 10},
    ):
        [best] = candidates(api, resources, scorer=scorer)["candidates"]
        assert 0 not in minors(best, "gpu"), resources
    # GPU1, alone on its switch now, pairs with the others across switches.
    [three] = candidates(api, {"nvidia.com/gpu": 3}, scorer=scorer)["candidates"]
    assert minors(three, "gpu") == [1, 2, 3]
    answer = candidates(api, {"nvidia.com/gpu": 4}, scorer=scorer)
    assert answer["candidates"] == []
    assert answer["unplaced"] == [
        {"reason": "gpu: 4 device(s) needed, 3 can give the request (1 unhealthy)", "nodes": 1}
    ]


def test_an_unhealthy_gpu_is_never_claimed_and_its_shares_stay_visible(api):
    """Shares pack onto GPU0; once it is unhealthy, the next share goes to another GPU,
    while GPU0 still shows what it holds."""
    import_node(api, "n", FOUR_GPUS)
    held = [claim(api, {"kubernetes.io/gpu": 25}) for _ in range(2)]
    assert [minors(c, "gpu") for c in held] == [[0], [0]]

    def resources(consumer: str) -> dict:
        shown = api.get(f"/allocations/{consumer}").json["allocations"]
        return {uuid: a["resources"] for uuid, a in shown.items()}

    before = {c["consumer_uuid"]: resources(c["consumer_uuid"]) for c in held}
    marked = import_node(api, "n", with_health(FOUR_GPUS, {("gpu", 0)})).json
    assert marked["changed"] is True
    gpu0 = device(marked, "gpu", 0)
    assert gpu0["health"] is False
    assert gpu0["inventories"]["core"] == {"total": 100, "used": 50}
    for consumer, allocations in before.items():
        assert resources(consumer) == allocations
    for _ in range(3):
        assert minors(claim(api, {"kubernetes.io/gpu": 25}), "gpu") == [1]
    # A GPU's last free room is no longer offered either: the whole node is the other
    # three GPUs (GPU1 now holds 75).
    claim(api, {"nvidia.com/gpu": 3}, expect=409)
    assert minors(claim(api, {"nvidia.com/gpu": 2}), "gpu") == [2, 3]


def test_health_changes_only_through_the_import_and_touches_no_allocation(api):
    first = import_node(api, "n", FOUR_GPUS).json
    taken = claim(api, {"kubernetes.io/gpu": 50})
    gpu0 = device(first, "gpu", 0)["provider"]
    inventories = api.get(f"/resource_providers/{gpu0}/inventories").json
    usages = api.get(f"/resource_providers/{gpu0}/usages").json

    def allocated() -> dict:
        shown = api.get(f"/allocations/{taken['consumer_uuid']}").json["allocations"]
        return {uuid: a["resources"] for uuid, a in shown.items()}

    held = allocated()
    assert held == {uuid: a["resources"] for uuid, a in taken["allocations"].items()}
    unhealthy = with_health(FOUR_GPUS, {("gpu", 0)})
    assert import_node(api, "n", unhealthy).json["changed"] is True
    assert import_node(api, "n", unhealthy).json["changed"] is False  # nothing new
    after = api.get(f"/resource_providers/{gpu0}/inventories").json
    # Inventories and usage as they were; the generation moved (the device changed).
    assert after["inventories"] == inventories["inventories"]
    assert after["resource_provider_generation"] > inventories["resource_provider_generation"]
    assert api.get(f"/resource_providers/{gpu0}/usages").json["usages"] == usages["usages"]
    assert allocated() == held
    # Healthy again: offered again (pack puts the next half beside the first).
    import_node(api, "n", FOUR_GPUS)
    assert minors(claim(api, {"kubernetes.io/gpu": 50}), "gpu") == [0]


def test_joint_allocation_skips_an_unhealthy_nic_or_gpu(api):
    """8 switches with one GPU and one NIC on each: with NIC 0 and GPU 1 unhealthy,
    switches 0 and 1 have no pair left, so 4 GPUs each with a NIC on its switch are
    those of NUMA node 1 (all pairs on one socket), and 2 those of switches 2 and 3."""
    import_node(api, "box", with_health(EIGHT_SWITCHES, {("rdma", 0), ("gpu", 1)}))
    [best] = candidates(
        api,
        {"nvidia.com/gpu": 4, "koordinator.sh/rdma": 1},
        joint={**JOINT_GPU_RDMA, "requiredScope": "SamePCIe"},
    )["candidates"]
    assert best["scope"] == "SamePCIe"
    assert minors(best, "gpu") == [4, 5, 6, 7]
    assert minors(best, "rdma") == [4, 5, 6, 7]
    # Two pairs fit on NUMA node 0 (switches 2 and 3) and are preferred there by minor.
    [two] = candidates(
        api,
        {"nvidia.com/gpu": 2, "koordinator.sh/rdma": 1},
        joint={**JOINT_GPU_RDMA, "requiredScope": "SamePCIe"},
    )["candidates"]
    assert (minors(two, "gpu"), minors(two, "rdma")) == ([2, 3], [2, 3])


def test_the_one_nic_unhealthy_leaves_no_same_pcie_pair(api):
    """A server of 8 switches with one NIC in all: that NIC unhealthy, no scope has a NIC
    to give, and a NIC alone is not offered either."""
    import_node(api, "hetero", with_health(HETEROGENEOUS, {("rdma", 0)}))
    answer = candidates(
        api,
        {"nvidia.com/gpu": 1, "koordinator.sh/rdma": 1},
        joint={**JOINT_GPU_RDMA, "requiredScope": "SamePCIe"},
    )
    assert answer["candidates"] == []
    assert answer["unplaced"] == [
        {"reason": "gpu+rdma: no 1 gpu device(s) with their rdma on one PCIe switch", "nodes": 1}
    ]
    alone = candidates(api, {"koordinator.sh/rdma": 1})
    assert alone["unplaced"] == [
        {"reason": "rdma: no device of the node is of that type (1 unhealthy)", "nodes": 1}
    ]
    claim(api, {"koordinator.sh/rdma": 1}, expect=409)


def test_apply_for_all_takes_every_healthy_device(api):
    import_node(api, "box", with_health(EIGHT_SWITCHES, {("rdma", 3)}))
    hint = {"rdma": {"allocateStrategy": "ApplyForAll"}}
    [best] = candidates(api, {"koordinator.sh/rdma": 100}, hint=hint)["candidates"]
    assert minors(best, "rdma") == [0, 1, 2, 4, 5, 6, 7]
    claimed = claim(api, {"koordinator.sh/rdma": 100}, hint=hint)
    assert 3 not in minors(claimed, "rdma")


def test_a_pod_is_never_placed_on_an_unhealthy_device(api):
    import_node(api, "n", with_health(FOUR_GPUS, {("gpu", 0), ("gpu", 2)}))
    pod = {
        "kind": "Pod",
        "metadata": {"annotations": {HINT: '{"gpu": {}}'}},
        "spec": {
            "containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": 2}}}]
        },
    }
    response = api.post("/group_resources/device_candidates", json={"pod": pod})
    assert response.status_code == 200, response.json
    [best] = response.json["candidates"]
    assert minors(best, "gpu") == [1, 3]
