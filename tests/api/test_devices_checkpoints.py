"""Device checkpoints through HTTP: the devices kubelet gave pods before
the scheduler saw them (``kubelet_internal_checkpoint``, reported per pod, container,
resource name and device ids) are held so that they are never given twice; the
same report again writes nothing; a pod the report no longer lists gives its
devices back; a report naming what the node lacks, or what another consumer holds,
is refused and writes nothing."""

import copy
import json
import uuid

from tests.api.device_helpers import candidates, claim, import_node, minors, switch_box

# A node of two GPUs of 15472384Ki, known by their UUIDs.
GPU0_ID = "GPU-98583a5c-c155-9cf6-f955-03c189d3dbfb"
GPU1_ID = "GPU-7f6410b9-bdf7-f9a5-de09-aa5ec31a7124"
NODE = {
    "devices": [
        {"type": "gpu", "minor": 0, "numa": 0, "pcie": 0, "memory": "15472384Ki", "id": GPU0_ID},
        {"type": "gpu", "minor": 1, "numa": 0, "pcie": 0, "memory": "15472384Ki", "id": GPU1_ID},
    ]
}
POD = "fa8983dc-bb76-4eeb-8dcc-556fbd44d7ce"
# A pod's checkpoint entry as kubelet writes it, naming a GPU of the node; ABSENT_ID is
# a GPU the node does not list (see
# test_an_entry_naming_a_gpu_the_node_lacks_is_reported_not_refused).
ENTRY = {
    "podUID": POD,
    "containerName": "cuda-container",
    "resourceName": "nvidia.com/gpu",
    "deviceIDs": [GPU0_ID],
}
ABSENT_ID = "GPU-36b27e44-b086-46f7-f2dc-73c36dc65991"
CHECKPOINT_NAMESPACE = uuid.UUID("9aa9ddc1-8a0a-4611-a873-08332f60972b")


def put_checkpoints(api, node, entries, expect=200, **extra):
    response = api.put(
        f"/group_resources/device_nodes/{node}/checkpoints", json={"checkpoints": entries, **extra}
    )
    assert response.status_code == expect, response.json
    return response.json


def consumer_of(pod_uid: str) -> str:
    return str(uuid.uuid5(CHECKPOINT_NAMESPACE, pod_uid))


def allocations_of(api, consumer_uuid) -> dict:
    return api.get(f"/allocations/{consumer_uuid}").json


def generations(api) -> dict[str, int]:
    providers = api.get("/resource_providers").json["resource_providers"]
    return {p["name"]: p["generation"] for p in providers}


def detail(response_json) -> str:
    return response_json["errors"][0]["detail"]


def test_a_pods_checkpointed_gpu_is_held_whole_by_the_pods_consumer(api):
    node = import_node(api, "node-1", NODE).json
    gpu0 = node["devices"][0]["provider"]
    body = put_checkpoints(api, "node-1", [ENTRY])
    assert body["changed"] is True and body["released"] == []
    [pod] = body["pods"]
    assert pod["podUID"] == POD and pod["consumer_uuid"] == consumer_of(POD)
    assert [(d["minor"], d["id"], d["provider"]) for d in pod["devices"]["gpu"]] == [
        (0, GPU0_ID, gpu0)
    ]
    held = allocations_of(api, consumer_of(POD))
    assert held["consumer_type"] == "KUBELET_CHECKPOINT"
    assert held["project_id"] == held["user_id"] == "00000000-0000-0000-0000-000000000000"
    assert held["allocations"][gpu0]["resources"] == {
        "CUSTOM_GPU_CORE": 100,
        "CUSTOM_GPU_MEMORY_KB": 15472384,
        "CUSTOM_GPU_MEMORY_RATIO": 100,
        "CUSTOM_GPU_TENANCY": 1000,
    }
    [switch] = [uuid for uuid in held["allocations"] if uuid != gpu0]
    assert held["allocations"][switch]["resources"] == {"CUSTOM_PCIE_GPU_TENANCY": 1}


def test_a_held_device_is_never_offered_nor_claimed(api):
    import_node(api, "node-1", NODE)
    put_checkpoints(api, "node-1", [ENTRY])
    for resources in (
        {"nvidia.com/gpu": 1},
        {"kubernetes.io/gpu": 50},
        {"kubernetes.io/gpu-core": 1, "kubernetes.io/gpu-memory": "1Mi"},
    ):
        for scorer in ("pack", "spread"):
            [best] = candidates(api, resources, scorer=scorer)["candidates"]
            assert minors(best, "gpu") == [1], (resources, scorer)
    answer = candidates(api, {"nvidia.com/gpu": 2})
    assert answer["candidates"] == []
    assert answer["unplaced"] == [
        {"reason": "gpu: 2 device(s) needed, 1 can give the request", "nodes": 1}
    ]
    assert minors(claim(api, {"kubernetes.io/gpu": 50}), "gpu") == [1]
    claim(api, {"nvidia.com/gpu": 1}, expect=409)


def test_the_same_checkpoint_again_writes_nothing(api):
    import_node(api, "node-1", NODE)
    first = put_checkpoints(api, "node-1", [ENTRY])
    before = generations(api)
    consumer_generation = allocations_of(api, consumer_of(POD))["consumer_generation"]
    again = put_checkpoints(api, "node-1", [ENTRY])
    # As the annotation's value too: the JSON text of the list.
    as_text = put_checkpoints(api, "node-1", json.dumps([ENTRY]))
    for answer in (again, as_text):
        assert answer["changed"] is False
        assert answer["pods"] == first["pods"] and answer["released"] == []
    assert generations(api) == before
    assert allocations_of(api, consumer_of(POD))["consumer_generation"] == consumer_generation


def test_a_pod_left_out_of_the_checkpoint_gives_its_devices_back(api):
    import_node(api, "node-1", NODE)
    other = {**ENTRY, "podUID": "pod-2", "deviceIDs": [GPU1_ID]}
    put_checkpoints(api, "node-1", [ENTRY, other])
    assert candidates(api, {"nvidia.com/gpu": 1})["candidates"] == []
    body = put_checkpoints(api, "node-1", [other])
    assert body["changed"] is True and body["released"] == [consumer_of(POD)]
    assert allocations_of(api, consumer_of(POD))["allocations"] == {}
    [best] = candidates(api, {"nvidia.com/gpu": 1})["candidates"]
    assert minors(best, "gpu") == [0]
    emptied = put_checkpoints(api, "node-1", [])
    assert emptied["released"] == [consumer_of("pod-2")] and emptied["pods"] == []
    assert put_checkpoints(api, "node-1", [])["changed"] is False


def test_a_pods_containers_are_one_consumer_and_nics_are_held_with_their_vfs(api):
    node = import_node(
        api,
        "box",
        switch_box(gpus_per_switch=(2,), nics_per_switch=(1,), switches_per_numa=1, vfs=4),
    ).json
    nic = next(d["provider"] for d in node["devices"] if d["type"] == "rdma")
    entries = [
        {
            "podUID": "p",
            "containerName": "a",
            "resourceName": "nvidia.com/gpu",
            "deviceIDs": ["GPU-0000"],
        },
        {
            "podUID": "p",
            "containerName": "b",
            "resourceName": "koordinator.sh/rdma",
            "deviceIDs": ["mlx5_0"],
            "allocResp": "CgQKAggB",
        },
        {
            "podUID": "p",
            "containerName": "c",
            "resourceName": "nvidia.com/gpu",
            "deviceIDs": ["GPU-0001"],
        },
    ]
    [pod] = put_checkpoints(api, "box", entries)["pods"]
    assert {t: [d["minor"] for d in found] for t, found in pod["devices"].items()} == {
        "gpu": [0, 1],
        "rdma": [0],
    }
    held = allocations_of(api, pod["consumer_uuid"])["allocations"]
    assert held[nic]["resources"] == {
        "CUSTOM_RDMA_SHARE": 100,
        "CUSTOM_RDMA_VF": 4,
        "CUSTOM_RDMA_TENANCY": 1004,
    }
    switch = node["devices"][0]["path"].rsplit("/gpu/", 1)[0]
    assert switch == "numa/0/bridge/0/pcie/0"
    # One unit of the switch's tenancy per type, as a claim takes.
    switch_takes = [
        a["resources"] for uuid, a in held.items() if "CUSTOM_PCIE_GPU_TENANCY" in a["resources"]
    ]
    assert switch_takes == [{"CUSTOM_PCIE_GPU_TENANCY": 1, "CUSTOM_PCIE_RDMA_TENANCY": 1}]
    answer = candidates(api, {"koordinator.sh/rdma": 1})
    assert answer["candidates"] == []


def test_an_unhealthy_device_a_pod_holds_is_held_all_the_same(api):
    sick = copy.deepcopy(NODE)
    sick["devices"][0]["health"] = False
    import_node(api, "node-1", sick)
    [pod] = put_checkpoints(api, "node-1", [ENTRY])["pods"]
    view = api.get("/group_resources/device_nodes/node-1").json
    assert view["devices"][0]["inventories"]["core"] == {"total": 100, "used": 100}


def test_checkpoints_that_do_not_fit_the_node_are_400_and_write_nothing(api):
    import_node(
        api, "node-1", switch_box(gpus_per_switch=(2,), nics_per_switch=(1,), switches_per_numa=1)
    )
    good = {"podUID": "good", "resourceName": "nvidia.com/gpu", "deviceIDs": ["GPU-0000"]}
    refused = [
        (
            {**good, "podUID": "p", "containerName": "c", "deviceIDs": ["mlx5_0"]},
            "Checkpoint of pod p, container c: device 'mlx5_0' is of type rdma, not gpu "
            "(nvidia.com/gpu).",
        ),
        (
            {**good, "podUID": "p", "resourceName": "example.com/foo"},
            "Checkpoint of pod p: resourceName 'example.com/foo' is not a device resource "
            "(known: nvidia.com/gpu, or kubernetes.io/ or koordinator.sh/ followed by gpu, "
            "rdma, fpga).",
        ),
        (
            {**good, "podUID": "p", "containerName": "c"},
            "Device 'GPU-0000' of node node-1 is given twice: to pod good and to pod p, "
            "container c.",
        ),
    ]
    for entry, expected in refused:
        response = api.put(
            "/group_resources/device_nodes/node-1/checkpoints", json={"checkpoints": [good, entry]}
        )
        assert response.status_code == 400, response.json
        assert detail(response.json) == expected
    twice = {**good, "deviceIDs": ["GPU-0001", "GPU-0001"]}
    response = api.put(
        "/group_resources/device_nodes/node-1/checkpoints", json={"checkpoints": [twice]}
    )
    assert response.status_code == 400
    assert "'GPU-0001' of node node-1 is given twice" in detail(response.json)
    assert allocations_of(api, consumer_of("good"))["allocations"] == {}
    assert len(candidates(api, {"nvidia.com/gpu": 2})["candidates"]) == 1


def test_bodies_that_do_not_validate_are_400(api):
    import_node(api, "node-1", NODE)
    for body, expected in [
        ({}, "JSON does not validate: checkpoints: 'checkpoints' is a required property"),
        ({"checkpoints": "[{"}, "JSON does not validate: checkpoints: the text is not JSON: "),
        (
            {"checkpoints": {"podUID": POD}},
            f"JSON does not validate: checkpoints: {{'podUID': '{POD}'}} is not of type 'array'",
        ),
        (
            {"checkpoints": [{"resourceName": "nvidia.com/gpu"}]},
            "JSON does not validate: checkpoints.0.podUID: 'podUID' is a required property",
        ),
        (
            {"checkpoints": [{**ENTRY, "deviceIDs": GPU0_ID}]},
            "JSON does not validate: checkpoints.0.deviceIDs: ",
        ),
        (
            {"checkpoints": [{**ENTRY, "extra": 1}]},
            "JSON does not validate: checkpoints.0.extra: Additional properties are not allowed "
            "('extra' was unexpected)",
        ),
        ({"checkpoints": [], "project_id": ""}, "JSON does not validate: project_id: "),
    ]:
        response = api.put("/group_resources/device_nodes/node-1/checkpoints", json=body)
        assert response.status_code == 400, (body, response.json)
        assert detail(response.json).startswith(expected), (body, response.json)
    response = api.put("/group_resources/device_nodes/nope/checkpoints", json={"checkpoints": []})
    assert response.status_code == 404
    assert detail(response.json) == "No device node named nope."


def test_a_device_another_consumer_holds_is_409_and_nothing_is_written(api):
    import_node(api, "node-1", NODE)
    shared = claim(api, {"kubernetes.io/gpu": 50})
    assert minors(shared, "gpu") == [0]
    other = {**ENTRY, "podUID": "pod-2", "deviceIDs": [GPU1_ID]}
    response = api.put(
        "/group_resources/device_nodes/node-1/checkpoints", json={"checkpoints": [other, ENTRY]}
    )
    assert response.status_code == 409, response.json
    assert "would exceed the capacity" in detail(response.json)
    assert allocations_of(api, consumer_of("pod-2"))["allocations"] == {}
    assert allocations_of(api, consumer_of(POD))["allocations"] == {}


def test_a_pod_held_on_another_node_is_409(api):
    import_node(api, "node-1", NODE)
    import_node(api, "node-2", switch_box(gpus_per_switch=(1,), nics_per_switch=(0,)))
    put_checkpoints(api, "node-1", [ENTRY])
    elsewhere = {**ENTRY, "deviceIDs": ["GPU-0000"]}
    response = api.put(
        "/group_resources/device_nodes/node-2/checkpoints", json={"checkpoints": [elsewhere]}
    )
    assert response.status_code == 409
    assert response.json["errors"][0]["code"] == "placement.group_resources.consumer_exists"
    assert detail(response.json) == (
        f"Consumer {consumer_of(POD)} of pod {POD} already has allocations not written "
        "from node node-2's checkpoints."
    )


def test_a_held_device_keeps_its_node_and_provider(api):
    """Held devices are allocations as any others: the node cannot be deleted, nor the
    device dropped by a re-import, until the checkpoint lets them go."""
    import_node(api, "node-1", NODE)
    put_checkpoints(api, "node-1", [ENTRY])
    assert api.delete("/group_resources/device_nodes/node-1").status_code == 409
    without_gpu0 = {"devices": NODE["devices"][1:]}
    response = api.put("/group_resources/device_nodes/node-1", json=without_gpu0)
    assert response.status_code == 409
    assert response.json["errors"][0]["code"] == "placement.resource_provider.inuse"
    import_node(api, "node-1", {"devices": NODE["devices"][:1]}, expect=(200,))
    put_checkpoints(api, "node-1", [])
    assert api.delete("/group_resources/device_nodes/node-1").status_code == 204


def test_a_node_whose_tree_no_longer_matches_its_topology_is_409(api):
    node = import_node(api, "node-1", NODE).json
    gpu1 = node["devices"][1]["provider"]
    assert api.delete(f"/resource_providers/{gpu1}").status_code == 204
    response = api.put(
        "/group_resources/device_nodes/node-1/checkpoints", json={"checkpoints": [ENTRY]}
    )
    assert response.status_code == 409
    assert detail(response.json) == (
        "Node node-1's tree no longer matches its topology; import it again before its checkpoint."
    )
    import_node(api, "node-1", NODE)
    put_checkpoints(api, "node-1", [ENTRY])


def test_an_entry_naming_a_gpu_the_node_lacks_is_reported_not_refused(api):
    """A checkpoint entry may name a GPU the node does not list: nothing can be
    held for it (no search offers a device the topology lacks), so it is reported, not
    refused, and the pod's other devices are held."""
    import_node(api, "node-1", NODE)
    absent_entry = {**ENTRY, "deviceIDs": [ABSENT_ID]}
    body = put_checkpoints(api, "node-1", [absent_entry])
    assert body["pods"] == [] and body["changed"] is False
    assert body["unknownDevices"] == [
        {"podUID": POD, "containerName": "cuda-container", "deviceID": ABSENT_ID}
    ]
    both = put_checkpoints(api, "node-1", [{**ENTRY, "deviceIDs": [ABSENT_ID, GPU1_ID]}])
    [pod] = both["pods"]
    assert [g["minor"] for g in pod["devices"]["gpu"]] == [1]
    assert [u["deviceID"] for u in both["unknownDevices"]] == [ABSENT_ID]
    assert candidates(api, {"nvidia.com/gpu": "2"})["candidates"] == []  # GPU 1 is held
    assert len(candidates(api, {"nvidia.com/gpu": "1"})["candidates"]) == 1
