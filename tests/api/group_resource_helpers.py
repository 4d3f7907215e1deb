"""Shared node maps and calls for the group-resource translator tests."""


# 8 GPUs, pairs on a fast link (Gpugrp0), pairs of pairs on a slower one (Gpugrp1).
def eight_gpu_node(memory="16GiB", cpu=16, node_memory="64GiB") -> dict:
    resources: dict = {"cpu": cpu, "memory": node_memory}
    for device in range(8):
        group1, group0 = device // 4, device // 2
        prefix = f"Gpugrp1/{group1}/Gpugrp0/{group0}/gpu/dev{device}"
        resources[f"{prefix}/cards"] = 1
        if memory is not None:
            resources[f"{prefix}/memory"] = memory
    return resources


# 4 GPUs of differing memory.
MIXED_MEMORY_NODE = {
    "cpu": 4,
    "memory": "2GiB",
    "gpu/dev0/cards": 1,
    "gpu/dev0/memory": "1GiB",
    "gpu/dev1/cards": 1,
    "gpu/dev1/memory": "3GiB",
    "gpu/dev2/cards": 1,
    "gpu/dev2/memory": "2GiB",
    "gpu/dev3/cards": 1,
    "gpu/dev3/memory": "4GiB",
}

# Two GPUs, of at least 1GiB and 2GiB, with node cpu and memory.
MIXED_MEMORY_REQUEST = {
    "cpu": 2,
    "memory": "1GiB",
    "gpu/0/cards": 1,
    "gpu/0/memory": "1GiB",
    "gpu/1/cards": 1,
    "gpu/1/memory": "2GiB",
}

# An affinity request: R0 is one pair on a fast link; R1 is two such pairs (RA, RB)
# under one slower link, a Gpugrp1 other than R0's.
AFFINITY_REQUEST = {
    "Gpugrp1/R0/Gpugrp0/RA/gpu/gpu0/cards": 1,
    "Gpugrp1/R0/Gpugrp0/RA/gpu/gpu1/cards": 1,
    "Gpugrp1/R1/Gpugrp0/RA/gpu/gpu2/cards": 1,
    "Gpugrp1/R1/Gpugrp0/RA/gpu/gpu3/cards": 1,
    "Gpugrp1/R1/Gpugrp0/RB/gpu/gpu4/cards": 1,
    "Gpugrp1/R1/Gpugrp0/RB/gpu/gpu5/cards": 1,
}


def sync(api, name, resources, expect=(200, 201)):
    response = api.put(f"/group_resources/nodes/{name}", json={"resources": resources})
    assert response.status_code in expect, response.json
    return response


def candidates(api, resources, **options):
    response = api.post("/group_resources/candidates", json={"resources": resources, **options})
    assert response.status_code == 200, response.json
    return response.json


def claim(api, resources, consumer, **options):
    body = {
        "resources": resources,
        "consumer_uuid": consumer,
        "project_id": "p1",
        "user_id": "u1",
        **options,
    }
    return api.post("/group_resources/claims", json=body)
