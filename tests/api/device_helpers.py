"""Device lists and calls shared by the device API tests."""

import json
import uuid

JOINT = "scheduling.koordinator.sh/device-joint-allocate"
HINT = "scheduling.koordinator.sh/device-allocate-hint"


def switch_box(
    gpus_per_switch=(1,) * 8,
    nics_per_switch=(1,) * 8,
    switches_per_numa=4,
    memory="16Gi",
    vfs=0,
    nvlinks=(),
    resources=None,
) -> dict:
    """A device list: switches numbered from 0, ``switches_per_numa`` per NUMA node, each
    switch on a host bridge of its own, GPUs and NICs numbered in switch order."""
    devices = []
    gpu_minor = nic_minor = 0
    for switch, (gpus, nics) in enumerate(zip(gpus_per_switch, nics_per_switch, strict=True)):
        numa = switch // switches_per_numa
        for _ in range(gpus):
            devices.append(
                {
                    "type": "gpu",
                    "minor": gpu_minor,
                    "numa": numa,
                    "pcie": switch,
                    "memory": memory,
                    "id": f"GPU-{gpu_minor:04d}",
                }
            )
            gpu_minor += 1
        for _ in range(nics):
            nic = {
                "type": "rdma",
                "minor": nic_minor,
                "numa": numa,
                "pcie": switch,
                "id": f"mlx5_{nic_minor}",
            }
            if vfs:
                nic["vfs"] = vfs
            devices.append(nic)
            nic_minor += 1
    document: dict = {"devices": devices}
    if nvlinks:
        document["nvlinks"] = [{"gpus": list(pair), "links": links} for pair, links in nvlinks]
    if resources is not None:
        document["resources"] = resources
    return document


# A server of 8 PCIe switches with one GPU and one NIC on each.
EIGHT_SWITCHES = switch_box()
# A heterogeneous server: 2 NUMA nodes of 4 switches with a GPU each, and one NIC in all.
HETEROGENEOUS = switch_box(nics_per_switch=(1, 0, 0, 0, 0, 0, 0, 0))


def import_node(api, name, document, expect=(200, 201)):
    response = api.put(f"/group_resources/device_nodes/{name}", json=document)
    assert response.status_code in expect, response.json
    return response


def annotations(joint=None, hint=None) -> dict:
    """The annotations as a Pod carries them: JSON text."""
    found = {}
    if joint is not None:
        found[JOINT] = json.dumps(joint)
    if hint is not None:
        found[HINT] = json.dumps(hint)
    return found


def candidates(api, resources, joint=None, hint=None, expect=200, **options):
    body = {"resources": resources, "annotations": annotations(joint, hint), **options}
    response = api.post("/group_resources/device_candidates", json=body)
    assert response.status_code == expect, response.json
    return response.json


def claim(api, resources, joint=None, hint=None, expect=200, **options):
    body = {
        "resources": resources,
        "annotations": annotations(joint, hint),
        "consumer_uuid": str(uuid.uuid4()),
        "project_id": "p",
        "user_id": "u",
        **options,
    }
    response = api.post("/group_resources/device_claims", json=body)
    assert response.status_code == expect, response.json
    return response.json


def minors(candidate, device_type) -> list[int]:
    return [device["minor"] for device in candidate["devices"].get(device_type, [])]


def switches(candidate, device_type) -> list[int]:
    return [device["pcie"] for device in candidate["devices"].get(device_type, [])]
