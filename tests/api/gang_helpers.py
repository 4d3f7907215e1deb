"""Clusters and calls shared by the gang tests."""

import uuid

from tests.api.device_helpers import import_node, switch_box

LEVELS = ["spine", "leaf", "nvlink_domain"]


def gpu_box(gpus: int = 4) -> dict:
    """A device node of ``gpus`` GPUs, two per PCIe switch, two switches per NUMA node."""
    per_switch = [2] * (gpus // 2)
    return switch_box(
        gpus_per_switch=per_switch,
        nics_per_switch=[0] * len(per_switch),
        switches_per_numa=2,
        resources={"cpu": 32},
    )


def build_cluster(api, placements: dict[str, tuple[str, ...]], gpus: int = 4) -> None:
    """Import a GPU box per node and set the network: node -> its domain per level."""
    for name in placements:
        import_node(api, name, gpu_box(gpus))
    set_network(api, placements)


def set_network(api, placements: dict[str, tuple[str, ...]], levels=LEVELS, expect=200):
    body = {
        "levels": levels,
        "nodes": {name: dict(zip(levels, path, strict=True)) for name, path in placements.items()},
    }
    response = api.put("/group_resources/network", json=body)
    assert response.status_code == expect, response.json
    return response.json


def gang_body(members, gpus, required, preferred=None, share_nodes=False, **extra) -> dict:
    body = {
        "members": members,
        "member": {"resources": {"nvidia.com/gpu": gpus}},
        "required": required,
        **extra,
    }
    if preferred is not None:
        body["preferred"] = preferred
    if share_nodes:
        body["share_nodes"] = True
    return body


def gangs(api, body, expect=200):
    response = api.post("/group_resources/gang_candidates", json=body)
    assert response.status_code == expect, response.json
    return response.json


def claim_gang(api, body, expect=200, gang_uuid=None, consumer_uuids=None):
    body = {
        **body,
        "gang_uuid": gang_uuid or str(uuid.uuid4()),
        "consumer_uuids": consumer_uuids or [str(uuid.uuid4()) for _ in range(total_members(body))],
        "project_id": "p",
        "user_id": "u",
    }
    response = api.post("/group_resources/gang_claims", json=body)
    assert response.status_code == expect, response.json
    return body, response.json


def total_members(body: dict) -> int:
    """The members a gang body asks for: M, or the counts of its kinds summed."""
    members = body["members"]
    return members if isinstance(members, int) else sum(group["count"] for group in members)
