"""Fine-grained GPU resources (cores, memory, memory ratio, fractional GPUs) and per-device
results, end to end through HTTP."""

import pytest

from tests.api.device_helpers import candidates, claim, import_node, minors, switch_box
from tests.conftest import error_code

# A node of 4 GPUs of 8 GB each (here: two switches of two GPUs).
NODE_A = switch_box(
    gpus_per_switch=(2, 2),
    nics_per_switch=(0, 0),
    switches_per_numa=2,
    memory="8Gi",
    resources={"cpu": 16, "memory": "64Gi"},
)


def gpus(candidate) -> list[dict]:
    return candidate["devices"]["gpu"]


def test_the_node_reports_core_memory_and_ratio_per_gpu(api):
    body = import_node(api, "a", NODE_A).json
    gpu0 = next(d for d in body["devices"] if d["type"] == "gpu" and d["minor"] == 0)
    assert gpu0["inventories"]["core"] == {"total": 100, "used": 0}
    assert gpu0["inventories"]["memory-ratio"] == {"total": 100, "used": 0}
    assert gpu0["inventories"]["memory"] == {"total": 8 * 2**20, "used": 0}  # KiB
    provider = api.get(f"/resource_providers/{gpu0['provider']}/inventories").json
    assert set(provider["inventories"]) == {
        "CUSTOM_GPU_CORE",
        "CUSTOM_GPU_MEMORY_KB",
        "CUSTOM_GPU_MEMORY_RATIO",
        "CUSTOM_GPU_TENANCY",
    }


def test_whole_gpus_are_translated_to_every_dimension(api):
    """nvidia.com/gpu: 2 becomes gpu-core 200, gpu-memory-ratio 200 and 16Gi, per device."""
    import_node(api, "a", NODE_A)
    [best] = candidates(api, {"nvidia.com/gpu": 2, "cpu": 4, "memory": "8Gi"})["candidates"]
    assert minors(best, "gpu") == [0, 1]  # the pair on one switch
    for device in gpus(best):
        assert device["resources"] == {
            "kubernetes.io/gpu-core": 100,
            "kubernetes.io/gpu-memory-ratio": 100,
            "kubernetes.io/gpu-memory": "8192Mi",
            "exclusive": True,
        }
    assert best["allocations"][best["uuid"]]["resources"] == {"VCPU": 4, "MEMORY_MB": 8192}


def test_half_a_gpu_packs_onto_one_device_before_the_next(api):
    """kubernetes.io/gpu: 50 is core 50 and memory ratio 50, i.e. 4Gi of an 8Gi GPU."""
    import_node(api, "a", NODE_A)
    first = claim(api, {"kubernetes.io/gpu": 50})
    assert gpus(first) == [
        {
            **gpus(first)[0],
            "resources": {
                "kubernetes.io/gpu-core": 50,
                "kubernetes.io/gpu-memory-ratio": 50,
                "kubernetes.io/gpu-memory": "4096Mi",
            },
        }
    ]
    second = claim(api, {"kubernetes.io/gpu": 50})
    third = claim(api, {"kubernetes.io/gpu": 50})
    assert minors(first, "gpu") == minors(second, "gpu") == [0]
    assert minors(third, "gpu") == [1]
    # spread puts the next one on an idle GPU instead.
    [spread] = candidates(api, {"kubernetes.io/gpu": 50}, scorer="spread")["candidates"]
    assert minors(spread, "gpu") == [2]


def test_core_with_memory_ratio_and_core_with_memory(api):
    import_node(api, "a", NODE_A)
    [by_ratio] = candidates(
        api, {"kubernetes.io/gpu-core": 50, "kubernetes.io/gpu-memory-ratio": 60}
    )["candidates"]
    assert gpus(by_ratio)[0]["resources"] == {
        "kubernetes.io/gpu-core": 50,
        "kubernetes.io/gpu-memory-ratio": 60,
        # 60 % of 8388608 KiB is 5033164.8 KiB, rounded down to whole KiB (not a whole MiB)
        "kubernetes.io/gpu-memory": "5033164Ki",
    }
    [by_memory] = candidates(
        api, {"koordinator.sh/gpu-core": 60, "koordinator.sh/gpu-memory": "4Gi"}
    )["candidates"]
    assert gpus(by_memory)[0]["resources"] == {
        "koordinator.sh/gpu-core": 60,
        "koordinator.sh/gpu-memory-ratio": 50,
        "koordinator.sh/gpu-memory": "4096Mi",
    }


def test_amounts_over_100_are_whole_devices(api):
    import_node(api, "a", NODE_A)
    [best] = candidates(
        api, {"kubernetes.io/gpu-core": 200, "kubernetes.io/gpu-memory-ratio": 200}
    )["candidates"]
    assert minors(best, "gpu") == [0, 1]
    assert all(d["resources"]["kubernetes.io/gpu-core"] == 100 for d in gpus(best))


def test_a_gpu_too_small_for_the_memory_is_skipped(api):
    document = switch_box(gpus_per_switch=(1, 1), nics_per_switch=(0, 0), switches_per_numa=2)
    document["devices"][0]["memory"] = "4Gi"
    import_node(api, "a", document)
    [best] = candidates(api, {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory": "6Gi"})[
        "candidates"
    ]
    assert minors(best, "gpu") == [1]


@pytest.mark.parametrize(
    ("resources", "words"),
    [
        ({"kubernetes.io/gpu-core": 150, "kubernetes.io/gpu-memory-ratio": 150}, "multiple of 100"),
        ({"kubernetes.io/gpu": 250}, "multiple of 100"),
        ({"kubernetes.io/gpu-core": 50}, "exactly one of"),
        ({"kubernetes.io/gpu-memory-ratio": 50}, "needs kubernetes.io/gpu-core"),
        (
            {
                "kubernetes.io/gpu-core": 50,
                "kubernetes.io/gpu-memory-ratio": 50,
                "kubernetes.io/gpu-memory": "1Gi",
            },
            "exactly one of",
        ),
        ({"nvidia.com/gpu": 1, "kubernetes.io/gpu": 50}, "cannot be combined"),
        (
            {"kubernetes.io/gpu-core": 200, "kubernetes.io/gpu-memory-ratio": 100},
            "same number of whole GPUs",
        ),
        ({"nvidia.com/gpu": "1.5"}, "not a whole number"),
        ({"example.com/foo": 1}, "Unknown resource 'example.com/foo'"),
        ({"nvidia.com/gpu": "lots"}, "is not an amount"),
        ({}, "asks for no resource"),
    ],
)
def test_bad_amounts_are_400_naming_the_problem(api, resources, words):
    import_node(api, "a", NODE_A)
    response = api.post("/group_resources/device_candidates", json={"resources": resources})
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]


def test_claims_are_placement_allocations(api):
    import_node(api, "a", NODE_A)
    body = claim(api, {"kubernetes.io/gpu": 50})
    allocations = api.get(f"/allocations/{body['consumer_uuid']}").json["allocations"]
    assert {uuid: a["resources"] for uuid, a in allocations.items()} == {
        uuid: a["resources"] for uuid, a in body["allocations"].items()
    }
    device = gpus(body)[0]
    assert allocations[device["provider"]]["resources"] == {
        "CUSTOM_GPU_CORE": 50,
        "CUSTOM_GPU_MEMORY_RATIO": 50,
        "CUSTOM_GPU_MEMORY_KB": 4194304,
        "CUSTOM_GPU_TENANCY": 1,
    }
    again = api.post(
        "/group_resources/device_claims",
        json={
            "resources": {"kubernetes.io/gpu": 50},
            "consumer_uuid": body["consumer_uuid"],
            "project_id": "p",
            "user_id": "u",
        },
    )
    assert again.status_code == 409
    assert error_code(again) == "placement.group_resources.consumer_exists"


def test_a_pod_manifest_is_read_as_kubernetes_would(api):
    """Requests summed over containers; an extended resource given only as a limit is
    requested at that limit."""
    import_node(api, "a", NODE_A)
    pod = {
        "kind": "Pod",
        "metadata": {"name": "test-pod"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "limits": {"nvidia.com/gpu": 1},
                        "requests": {"cpu": "4", "memory": "8Gi"},
                    },
                },
                {"name": "side", "resources": {"requests": {"cpu": "500m"}}},
            ]
        },
    }
    response = api.post("/group_resources/device_candidates", json={"pod": pod})
    assert response.status_code == 200, response.json
    [best] = response.json["candidates"]
    assert best["allocations"][best["uuid"]]["resources"] == {"VCPU": 5, "MEMORY_MB": 8192}
    assert len(gpus(best)) == 1


@pytest.mark.parametrize(
    ("resources", "words"),
    [
        ({"kubernetes.io/rdma": 20, "koordinator.sh/rdma": 50}, "asked twice"),
        ({"kubernetes.io/gpu-core": 20, "koordinator.sh/gpu-memory-ratio": 50}, "one prefix"),
        (
            {"kubernetes.io/gpu-core": 50, "kubernetes.io/gpu-memory-ratio": 200},
            "same number of whole GPUs",
        ),
    ],
)
def test_one_resource_is_asked_once_under_one_prefix(api, resources, words):
    response = api.post("/group_resources/device_candidates", json={"resources": resources})
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]


def test_a_whole_gpu_by_percent_is_one_gpu_to_itself(api):
    """kubernetes.io/gpu: 100 (and gpu-core 100 with gpu-memory-ratio 100) is one whole
    GPU, as nvidia.com/gpu: 1: no one else may share it."""
    import_node(api, "a", NODE_A)
    for resources in (
        {"kubernetes.io/gpu": 100},
        {"kubernetes.io/gpu-core": 100, "kubernetes.io/gpu-memory-ratio": 100},
    ):
        [best] = candidates(api, resources)["candidates"]
        assert gpus(best)[0]["resources"]["exclusive"] is True


def test_inventory_units_set_through_placement_are_respected(api):
    """A GPU whose core inventory allows at most 50 per allocation cannot be taken whole:
    the candidate and the claim go to a GPU that can."""
    a = import_node(
        api, "a", switch_box(gpus_per_switch=(1,), nics_per_switch=(0,), switches_per_numa=1)
    ).json
    gpu = a["devices"][0]["provider"]
    inventories = api.get(f"/resource_providers/{gpu}/inventories").json
    core = {**inventories["inventories"]["CUSTOM_GPU_CORE"], "max_unit": 50}
    response = api.put(
        f"/resource_providers/{gpu}/inventories/CUSTOM_GPU_CORE",
        json={**core, "resource_provider_generation": inventories["resource_provider_generation"]},
    )
    assert response.status_code == 200, response.json
    import_node(
        api, "b", switch_box(gpus_per_switch=(1,), nics_per_switch=(0,), switches_per_numa=1)
    )
    answer = candidates(api, {"nvidia.com/gpu": 1})
    assert len(answer["candidates"]) == 1, answer
    [only] = answer["candidates"]
    assert only["node"] == "b"
    assert claim(api, {"nvidia.com/gpu": 1})["node"] == "b"
    # A share within the unit limit still fits on a.
    assert claim(api, {"kubernetes.io/gpu": 50})["node"] == "a"


def test_tenancy_grows_with_the_vfs(api):
    body = import_node(
        api,
        "n",
        switch_box(gpus_per_switch=(0,), nics_per_switch=(2,), switches_per_numa=1, vfs=1200),
    ).json
    nic = body["devices"][0]
    assert nic["inventories"]["tenancy"]["total"] == 1000 + 1200
    tree = api.get("/group_resources/nodes/n").json["groups"]
    switch = next(g for g in tree if g["key"].endswith("pcie/0"))
    assert switch["inventories"]["CUSTOM_PCIE_RDMA_TENANCY"]["total"] == 1000 + 2 * 1200


def test_requests_as_count_counts_whole_gpus(api):
    """RequestsAsCount holds for any device type, GPUs too: kubernetes.io/gpu: 2 is then
    two whole GPUs (without it, 2% of one)."""
    import_node(
        api, "n", switch_box(gpus_per_switch=(2, 2), nics_per_switch=(0, 0), switches_per_numa=2)
    )
    as_count = {"gpu": {"allocateStrategy": "RequestsAsCount"}}
    [best] = candidates(api, {"kubernetes.io/gpu": 2}, hint=as_count, limit=1)["candidates"]
    assert len(minors(best, "gpu")) == 2
    assert {gpu["resources"]["kubernetes.io/gpu-core"] for gpu in best["devices"]["gpu"]} == {100}
    [share] = candidates(api, {"kubernetes.io/gpu": 2}, limit=1)["candidates"]
    assert [gpu["resources"]["kubernetes.io/gpu-core"] for gpu in share["devices"]["gpu"]] == [2]
    # nvidia.com/gpu counts already: the same two GPUs.
    [counted] = candidates(api, {"nvidia.com/gpu": 2}, hint=as_count, limit=1)["candidates"]
    assert minors(counted, "gpu") == minors(best, "gpu")
    # Fine-grained amounts are amounts of one GPU, not counts.
    refused = candidates(
        api,
        {"kubernetes.io/gpu-core": 2, "kubernetes.io/gpu-memory-ratio": 2},
        hint=as_count,
        expect=400,
    )
    assert "RequestsAsCount" in refused["errors"][0]["detail"]
    # Claimed: two whole GPUs allocated.
    claimed = claim(api, {"kubernetes.io/gpu": 2}, hint=as_count)
    assert len(minors(claimed, "gpu")) == 2


ONE_8G_GPU = switch_box(
    gpus_per_switch=(1,), nics_per_switch=(0,), switches_per_numa=1, memory="8Gi"
)


def test_memory_asked_as_an_amount_can_fill_a_gpu(api):
    """Issue 18's examples on one 8 GiB GPU: core 50 + 4097Mi, then core 50 + 4095Mi (exactly
    the rest), both fit; so do three of core 33 + 2730Mi. Memory asked as an amount is
    accounted as that amount (its ratio rounded down), and neither form over-commits."""
    import_node(api, "one", ONE_8G_GPU)
    first = claim(api, {"kubernetes.io/gpu-core": 50, "kubernetes.io/gpu-memory": "4097Mi"})
    assert gpus(first)[0]["resources"]["kubernetes.io/gpu-memory-ratio"] == 50
    second = claim(api, {"kubernetes.io/gpu-core": 50, "kubernetes.io/gpu-memory": "4095Mi"})
    assert gpus(second)[0]["resources"]["kubernetes.io/gpu-memory"] == "4095Mi"


def test_a_gpu_filled_by_memory_amounts_takes_no_more_memory_in_either_form(api):
    import_node(api, "one", ONE_8G_GPU)
    claim(api, {"kubernetes.io/gpu-core": 40, "kubernetes.io/gpu-memory": "4097Mi"})
    claim(api, {"kubernetes.io/gpu-core": 40, "kubernetes.io/gpu-memory": "4095Mi"})
    # Core is left, and 1 % of the ratio, but no memory: neither form gets any.
    claim(api, {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory": "1Mi"}, expect=409)
    claim(api, {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory-ratio": 1}, expect=409)


def test_three_thirds_of_memory_fit_and_a_ratio_cannot_overcommit_them(api):
    import_node(api, "one", ONE_8G_GPU)
    for _ in range(3):
        claim(api, {"kubernetes.io/gpu-core": 33, "kubernetes.io/gpu-memory": "2730Mi"})
    # 2 MiB and 1 % of the ratio are left: a ratio of 1 % (81 MiB) does not fit the memory.
    claim(api, {"kubernetes.io/gpu-core": 1, "kubernetes.io/gpu-memory-ratio": 1}, expect=409)
    claim(api, {"kubernetes.io/gpu-core": 1, "kubernetes.io/gpu-memory": "2Mi"})


# GPUs reporting 15472384Ki of memory, which is not a whole MiB.
ODD_GPU_MEMORY = "15472384Ki"
TWO_ODD_MEMORY_GPUS = switch_box(
    gpus_per_switch=(2,), nics_per_switch=(0,), switches_per_numa=1, memory=ODD_GPU_MEMORY
)


def test_gpu_memory_not_a_whole_mib_is_kept_exactly(api):
    """Issue 18, item 3: the GPU keeps all of its 15472384Ki (it was 15109 MiB, 768 KiB
    lost): the node shows it, a whole GPU gives it, and asking for all of it finds it."""
    body = import_node(api, "g", TWO_ODD_MEMORY_GPUS).json
    gpu0 = body["devices"][0]
    assert gpu0["memory"] == ODD_GPU_MEMORY
    assert gpu0["inventories"]["memory"] == {"total": 15472384, "used": 0}
    [whole] = candidates(api, {"nvidia.com/gpu": 1})["candidates"]
    assert gpus(whole)[0]["resources"]["kubernetes.io/gpu-memory"] == ODD_GPU_MEMORY
    [provider] = [
        uuid for uuid, a in whole["allocations"].items() if "CUSTOM_GPU_MEMORY_KB" in a["resources"]
    ]
    assert whole["allocations"][provider]["resources"]["CUSTOM_GPU_MEMORY_KB"] == 15472384
    all_of_it = {"kubernetes.io/gpu-core": 100, "kubernetes.io/gpu-memory": ODD_GPU_MEMORY}
    [best] = candidates(api, all_of_it)["candidates"]
    assert gpus(best)[0]["resources"] == {
        "kubernetes.io/gpu-core": 100,
        "kubernetes.io/gpu-memory-ratio": 100,
        "kubernetes.io/gpu-memory": ODD_GPU_MEMORY,
    }
    # Two whole GPUs each with at least half of the amount asked: all of each, exactly.
    both = {"kubernetes.io/gpu-core": 200, "kubernetes.io/gpu-memory": f"{2 * 15472384}Ki"}
    assert minors(candidates(api, both)["candidates"][0], "gpu") == [0, 1]
    more = {"kubernetes.io/gpu-core": 200, "kubernetes.io/gpu-memory": f"{2 * 15472384 + 2}Ki"}
    assert candidates(api, more)["candidates"] == []


@pytest.mark.parametrize(
    ("memory", "kib"),
    [
        (ODD_GPU_MEMORY, 15472384),
        ("15110Mi", None),  # a whole MiB more than the GPU has
        (15472384 * 1024, 15472384),  # bytes
        (15472384 * 1024 + 1, None),  # one byte more: rounded up to a KiB more
        ("14.75Gi", 15466496),
        ("1500", 2),  # 1500 bytes: rounded up to 2 KiB
        ("1Ki", 1),
    ],
)
def test_memory_asked_in_any_unit_is_whole_kib_rounded_up(api, memory, kib):
    import_node(api, "g", TWO_ODD_MEMORY_GPUS)
    answer = candidates(api, {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory": memory})
    if kib is None:
        assert answer["candidates"] == []
        assert answer["unplaced"] == [
            {"reason": "gpu: 1 device(s) needed, 0 can give the request", "nodes": 1}
        ]
        return
    [best] = answer["candidates"]
    gpu = gpus(best)[0]
    assert best["allocations"][gpu["provider"]]["resources"]["CUSTOM_GPU_MEMORY_KB"] == kib
    claimed = claim(api, {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory": memory})
    used = api.get(f"/resource_providers/{gpus(claimed)[0]['provider']}/usages").json
    assert used["usages"]["CUSTOM_GPU_MEMORY_KB"] == kib
