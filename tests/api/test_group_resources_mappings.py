"""Group-resource requests mapped onto nodes' keys, end to end through HTTP: GPUs of
differing memory, GPUs asked for in affinity groups (pairs on a fast link under a slower
one), and requests that name only a lower group, each given a higher group of its own."""

import uuid

from tests.api.group_resource_helpers import (
    AFFINITY_REQUEST,
    MIXED_MEMORY_NODE,
    MIXED_MEMORY_REQUEST,
    candidates,
    claim,
    eight_gpu_node,
    sync,
)
from tests.conftest import error_code


def test_gpus_of_differing_memory_map_to_devices_with_room(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    answer = candidates(api, MIXED_MEMORY_REQUEST)
    [best] = answer["candidates"]
    mappings = best["mappings"]
    assert mappings["cpu"] == "cpu"
    assert mappings["memory"] == "memory"
    # Packing: the smallest devices that have room (1GiB on dev0, 2GiB on dev2).
    assert mappings["gpu/0/cards"] == "gpu/dev0/cards"
    assert mappings["gpu/0/memory"] == "gpu/dev0/memory"
    assert mappings["gpu/1/cards"] == "gpu/dev2/cards"
    assert mappings["gpu/1/memory"] == "gpu/dev2/memory"


def test_spread_prefers_the_largest_devices(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    [best] = candidates(api, MIXED_MEMORY_REQUEST, scorer="spread")["candidates"]
    assert {best["mappings"]["gpu/0/cards"], best["mappings"]["gpu/1/cards"]} == {
        "gpu/dev3/cards",
        "gpu/dev1/cards",
    }


def test_affinity_request_maps_each_pair_onto_one_fast_link(api):
    sync(api, "n1", eight_gpu_node(memory=None))
    [best] = candidates(api, AFFINITY_REQUEST)["candidates"]
    mappings = best["mappings"]
    r0 = {mappings[f"Gpugrp1/R0/Gpugrp0/RA/gpu/gpu{i}/cards"] for i in (0, 1)}
    r1a = {mappings[f"Gpugrp1/R1/Gpugrp0/RA/gpu/gpu{i}/cards"] for i in (2, 3)}
    r1b = {mappings[f"Gpugrp1/R1/Gpugrp0/RB/gpu/gpu{i}/cards"] for i in (4, 5)}
    assert r0 == {"Gpugrp1/0/Gpugrp0/0/gpu/dev0/cards", "Gpugrp1/0/Gpugrp0/0/gpu/dev1/cards"}
    assert r1a == {"Gpugrp1/1/Gpugrp0/2/gpu/dev4/cards", "Gpugrp1/1/Gpugrp0/2/gpu/dev5/cards"}
    assert mappings["Gpugrp1/R1/Gpugrp0/RB/gpu/gpu4/cards"] == "Gpugrp1/1/Gpugrp0/3/gpu/dev6/cards"
    assert r1b == {"Gpugrp1/1/Gpugrp0/3/gpu/dev6/cards", "Gpugrp1/1/Gpugrp0/3/gpu/dev7/cards"}


def test_lower_groups_get_a_unique_higher_group_each(api):
    sync(api, "n1", eight_gpu_node(memory=None))
    request = {
        "Gpugrp0/RA/gpu/gpu0/cards": 1,
        "Gpugrp0/RA/gpu/gpu1/cards": 1,
        "Gpugrp0/RB/gpu/gpu2/cards": 1,
        "Gpugrp0/RB/gpu/gpu3/cards": 1,
    }
    [best] = candidates(api, request)["candidates"]
    mappings = best["mappings"]
    group1_of = {key: value.split("/")[1] for key, value in mappings.items()}
    group0_of = {key: value.split("/")[3] for key, value in mappings.items()}
    ra = [k for k in mappings if k.startswith("Gpugrp0/RA/")]
    rb = [k for k in mappings if k.startswith("Gpugrp0/RB/")]
    assert len({group0_of[k] for k in ra}) == 1 and len({group0_of[k] for k in rb}) == 1
    assert {group1_of[k] for k in ra}.isdisjoint({group1_of[k] for k in rb})


def test_three_lower_groups_do_not_fit_two_higher_groups(api):
    sync(api, "n1", eight_gpu_node(memory=None))
    request = {f"Gpugrp0/R{i}/gpu/g{i}/cards": 1 for i in range(3)}
    answer = candidates(api, request)
    assert answer["candidates"] == []
    assert answer["unplaced"][0]["key"].startswith("Gpugrp0/R")


def test_claim_writes_the_mapped_allocations_and_a_second_claim_gets_other_devices(api):
    sync(api, "n1", eight_gpu_node(memory=None))
    request = {"Gpugrp0/RA/gpu/a/cards": 1, "Gpugrp0/RA/gpu/b/cards": 1}
    taken = set()
    for _ in range(4):
        consumer = str(uuid.uuid4())
        response = claim(api, request, consumer)
        assert response.status_code == 200, response.json
        devices = set(response.json["mappings"].values())
        assert devices.isdisjoint(taken)
        taken |= devices
        stored = api.get(f"/allocations/{consumer}").json["allocations"]
        assert {uuid_: entry["resources"] for uuid_, entry in stored.items()} == {
            u: e["resources"] for u, e in response.json["allocations"].items()
        }
    response = claim(api, request, str(uuid.uuid4()))
    assert response.status_code == 409
    assert error_code(response) == "placement.group_resources.unplaceable"
    assert "Gpugrp0/RA/gpu/" in response.json["errors"][0]["detail"]


def test_dry_run_query_gives_the_same_answer_through_allocation_candidates(api):
    sync(api, "n1", eight_gpu_node(memory=None))
    response = api.post("/group_resources/queries", json={"resources": AFFINITY_REQUEST})
    assert response.status_code == 200, response.json
    [translation] = response.json["queries"]
    assert translation["nodes"] == ["n1"]
    listed = api.get(
        f"/allocation_candidates?{translation['query']}", version=translation["microversion"]
    )
    assert listed.status_code == 200, listed.json
    # R0's Gpugrp1 (2 ways) x R0/RA's Gpugrp0 (2) x RA/RB of R1 on its two Gpugrp0 (2)
    # x the order of the GPUs in each of the three pairs (2^3).
    assert len(listed.json["allocation_requests"]) == 64
