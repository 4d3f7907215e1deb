"""GPU topologies end to end through HTTP: imported from nvidia-smi topo -m and from
device lists, as provider trees, and the tightest-linked GPUs chosen first."""

from pathlib import Path

import pytest
import yaml

from tests.api.device_helpers import candidates, claim, import_node, minors, switches
from tests.conftest import error_code

SAMPLES = Path(__file__).parent.parent / "data" / "topologies"


def matrix(name: str, memory: str = "32Gi", **details) -> dict:
    return {"matrix": (SAMPLES / name).read_text(), "gpu": {"memory": memory}, **details}


def device_list(name: str) -> dict:
    return yaml.safe_load((SAMPLES / name).read_text())


def test_a_dgx1_matrix_becomes_a_tree_of_numa_nodes_switches_and_devices(api):
    body = import_node(api, "dgx1", matrix("dgx1_v100.txt"), expect=(201,)).json
    assert body["changed"] is True and body["in_sync"] is True
    gpu3 = next(d for d in body["devices"] if d["type"] == "gpu" and d["minor"] == 3)
    nic = next(d for d in body["devices"] if d["id"] == "mlx5_1")
    assert (gpu3["numa"], gpu3["pcie"]) == (nic["numa"], nic["pcie"])
    # One NVLink set spans both sockets: the nvlink level sits above the NUMA nodes.
    assert gpu3["path"].startswith("nvlink/0/numa/0/bridge/")
    providers = api.get(f"/resource_providers?in_tree={body['uuid']}").json
    names = {p["name"]: p["uuid"] for p in providers["resource_providers"]}
    numa0 = names["dgx1/nvlink/0/numa/0"]
    traits = api.get(f"/resource_providers/{numa0}/traits").json["traits"]
    assert "HW_NUMA_ROOT" in traits and "CUSTOM_GROUP_LEVEL_NUMA" in traits
    assert len(providers["resource_providers"]) == 1 + 1 + 2 + 2 + 4 + 8 + 4


def test_importing_the_same_topology_again_changes_nothing(api):
    first = import_node(api, "dgx1", matrix("dgx1_v100.txt")).json
    again = import_node(api, "dgx1", matrix("dgx1_v100.txt"), expect=(200,)).json
    assert again["changed"] is False
    generation = api.get(f"/resource_providers/{first['uuid']}").json["generation"]
    import_node(api, "dgx1", matrix("dgx1_v100.txt"), expect=(200,))
    assert api.get(f"/resource_providers/{first['uuid']}").json["generation"] == generation


def test_the_most_nvlinked_gpus_come_first(api):
    """DGX-1 hybrid cube-mesh: GPUs 0-3 are all NVLinked to each other (9 links in all);
    of the pairs with two links, GPU2/GPU3 also share a PCIe switch."""
    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    [four] = candidates(api, {"nvidia.com/gpu": 4})["candidates"]
    assert minors(four, "gpu") == [0, 1, 2, 3]
    assert four["links"]["gpu"]["nvlinks"] == 9
    [two] = candidates(api, {"nvidia.com/gpu": 2})["candidates"]
    assert minors(two, "gpu") == [2, 3]
    assert two["links"]["gpu"] == {
        "nvlinks": 2,
        "samePCIe": 1,
        "sameHostBridge": 0,
        "sameNUMA": 0,
        "crossNUMA": 0,
    }


def test_gpus_of_one_board_come_before_gpus_of_one_switch(api):
    """nvml's order puts PSB (GPU2/GPU3: one board, behind its on-board switch) above PIX
    (GPU0/GPU1: one PCIe switch): the board pair is chosen, although the lowest minors
    would be GPU0 and GPU1; the node shows the board, and claims take that pair too."""
    text = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\n" + "".join(
        "\t".join(row) + "\t0-7\n"
        for row in (
            ("GPU0", "X", "PIX", "PHB", "PHB"),
            ("GPU1", "PIX", "X", "PHB", "PHB"),
            ("GPU2", "PHB", "PHB", "X", "PSB"),
            ("GPU3", "PHB", "PHB", "PSB", "X"),
        )
    )
    body = import_node(api, "k80s", {"matrix": text, "gpu": {"memory": "12Gi"}}).json
    assert [d.get("board", -1) for d in body["devices"]] == [-1, -1, 0, 0]
    [two] = candidates(api, {"nvidia.com/gpu": 2})["candidates"]
    assert minors(two, "gpu") == [2, 3]
    assert minors(claim(api, {"nvidia.com/gpu": 2}), "gpu") == [2, 3]


def test_after_a_claim_the_next_best_set_is_chosen(api):
    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    claim(api, {"nvidia.com/gpu": 4})
    [four] = candidates(api, {"nvidia.com/gpu": 4})["candidates"]
    assert minors(four, "gpu") == [4, 5, 6, 7]


def test_dgx_a100_device_list_joint_allocation_uses_whole_switches(api):
    """All GPUs are NV12 to each other: the switch pairs decide. 4 GPUs with their NICs are
    the two switches of one NUMA node, one NIC per switch."""
    import_node(api, "a100", device_list("dgx_a100.yaml"))
    [best] = candidates(
        api,
        {"nvidia.com/gpu": 4, "koordinator.sh/rdma": 1},
        joint={"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"},
    )["candidates"]
    assert best["scope"] == "SamePCIe"
    assert len(set(switches(best, "gpu"))) == 2
    assert sorted(switches(best, "rdma")) == sorted(set(switches(best, "gpu")))
    assert best["links"]["gpu"]["samePCIe"] == 2


def test_selector_over_labels_from_a_device_list(api):
    import_node(api, "a100", device_list("dgx_a100.yaml"))
    hint = {"gpu": {"selector": {"matchLabels": {"model": "H100"}}}}
    answer = candidates(api, {"nvidia.com/gpu": 1}, hint=hint)
    assert answer["candidates"] == []
    assert "selected by the hint" in answer["unplaced"][0]["reason"]
    hint = {"gpu": {"selector": {"matchLabels": {"model": "A100"}}}}
    assert candidates(api, {"nvidia.com/gpu": 1}, hint=hint)["candidates"]


def test_pcie_box_required_scope_takes_the_switch_with_the_nic(api):
    import_node(api, "box", matrix("pcie_4gpu.txt", memory="24Gi"))
    joint = {"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"}
    [best] = candidates(api, {"nvidia.com/gpu": 2, "koordinator.sh/rdma": 1}, joint=joint)[
        "candidates"
    ]
    assert minors(best, "gpu") == [0, 1]
    assert minors(best, "rdma") == [0]
    assert (
        candidates(api, {"nvidia.com/gpu": 3, "koordinator.sh/rdma": 1}, joint=joint)["candidates"]
        == []
    )


def test_the_heterogeneous_box_from_its_matrix_and_from_its_device_list_is_one_tree(api):
    from_matrix = import_node(api, "m", matrix("hetero_1nic.txt", memory="16Gi")).json
    from_list = import_node(api, "l", device_list("hetero_1nic.yaml")).json

    def shape(body):
        return sorted(
            (d["type"], d["minor"], d["numa"], d["pcie"], d["path"]) for d in body["devices"]
        )

    assert shape(from_matrix) == shape(from_list)


@pytest.mark.parametrize(
    ("sample", "words"),
    [
        ("malformed_missing_cell.txt", "GPU2"),
        ("malformed_asymmetric.txt", "GPU0"),
        ("malformed_unknown_cell.txt", "N0DE"),
        ("malformed_numa_conflict.txt", "NUMA"),
    ],
)
def test_a_malformed_matrix_is_a_400_naming_the_problem(api, sample, words):
    response = api.put("/group_resources/device_nodes/bad", json=matrix(sample))
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]
    assert api.get("/group_resources/device_nodes/bad").status_code == 404


@pytest.mark.parametrize(
    ("memory", "words"),
    [
        (
            "80GB",
            "gpu.memory 80GB is in decimal units (80GB = 80 x 1000^3 bytes, 76293 MiB). "
            "Give GPU memory in binary units: 80Gi is 81920 MiB.",
        ),
        ("16G", "16Gi is 16384 MiB"),
        ("1.5T", "1.5Ti is 1572864 MiB"),
    ],
)
def test_a_matrix_gpu_memory_in_decimal_units_is_refused(api, memory, words):
    response = api.put("/group_resources/device_nodes/box", json=matrix("pcie_4gpu.txt", memory))
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]
    assert api.get("/group_resources/device_nodes/box").status_code == 404


@pytest.mark.parametrize("memory", ["80Gi", "81920Mi", str(80 * 2**30)])
def test_a_matrix_gpu_memory_in_binary_units_or_bytes_is_taken(api, memory):
    response = api.put("/group_resources/device_nodes/box", json=matrix("pcie_4gpu.txt", memory))
    assert response.status_code == 201, response.json
    gpus = [d for d in response.json["devices"] if d["type"] == "gpu"]
    assert gpus and all(gpu["memory"] == "81920Mi" for gpu in gpus)


@pytest.mark.parametrize(
    ("memory", "shown", "kib"),
    [
        ("15472384Ki", "15472384Ki", 15472384),
        (str(15472384 * 1024), "15472384Ki", 15472384),
        ("16Gi", "16384Mi", 16 * 2**20),
    ],
)
def test_a_matrix_gpu_memory_is_kept_to_the_kib(api, memory, shown, kib):
    response = api.put("/group_resources/device_nodes/box", json=matrix("pcie_4gpu.txt", memory))
    assert response.status_code == 201, response.json
    gpus = [d for d in response.json["devices"] if d["type"] == "gpu"]
    assert {gpu["memory"] for gpu in gpus} == {shown}
    assert {gpu["inventories"]["memory"]["total"] for gpu in gpus} == {kib}


@pytest.mark.parametrize(
    ("memory", "words"),
    [
        (str(2**30 + 1), "gpu.memory: '1073741825' is not a whole number of KiB (1048576.001 KiB)"),
        ("512Ki", "gpu.memory: '512Ki' is less than 1 MiB."),
    ],
)
def test_a_matrix_gpu_memory_that_is_not_whole_kib_is_refused(api, memory, words):
    response = api.put("/group_resources/device_nodes/box", json=matrix("pcie_4gpu.txt", memory))
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]


@pytest.mark.parametrize("text", ["", " \n\t\n"])
def test_an_empty_matrix_is_a_400_that_says_it_is_empty(api, text):
    # What `nvidia-smi topo -m > topo.txt` leaves on a machine without a GPU.
    response = api.put(
        "/group_resources/device_nodes/empty", json={"matrix": text, "gpu": {"memory": "80Gi"}}
    )
    assert response.status_code == 400, response.json
    detail = response.json["errors"][0]["detail"]
    assert "the matrix is empty" in detail and "nvidia-smi topo -m" in detail


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"matrix": "GPU0\n"}, "needs 'gpu'"),
        ({"devices": []}, "devices"),
        (
            {"devices": [{"type": "tpu", "minor": 0, "numa": 0, "pcie": 0}]},
            "Unknown device type 'tpu'",
        ),
        ({"devices": [{"type": "gpu", "minor": 0, "numa": 0, "pcie": 0}]}, "memory"),
        (
            {
                "devices": [{"type": "gpu", "minor": 0, "numa": 0, "pcie": 0, "memory": "1Gi"}],
                "nvlinks": [{"gpus": [0, 1], "links": 2}],
            },
            "gpu1",
        ),
        ({"matrix": "x", "devices": []}, "either"),
    ],
)
def test_a_bad_import_is_a_400_naming_the_problem(api, body, words):
    response = api.put("/group_resources/device_nodes/bad", json=body)
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]


def test_device_nodes_are_listed_shown_and_deleted(api):
    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    assert [n["name"] for n in api.get("/group_resources/device_nodes").json["nodes"]] == ["dgx1"]
    held = claim(api, {"nvidia.com/gpu": 1})
    refused = api.delete("/group_resources/device_nodes/dgx1")
    assert refused.status_code == 409
    assert error_code(refused) == "placement.resource_provider.inuse"
    api.delete(f"/allocations/{held['consumer_uuid']}")
    assert api.delete("/group_resources/device_nodes/dgx1").status_code == 204
    assert api.get("/group_resources/device_nodes").json["nodes"] == []
    assert api.get("/group_resources/device_nodes/dgx1").status_code == 404


def test_unknown_device_types_and_bad_annotations_are_400(api):
    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    cases = [
        (
            {"scheduling.koordinator.sh/device-joint-allocate": '{"deviceTypes": ["gpu", "tpu"]}'},
            "unknown device type 'tpu'",
        ),
        (
            {"scheduling.koordinator.sh/device-allocate-hint": '{"tpu": {}}'},
            "unknown device type 'tpu'",
        ),
        ({"scheduling.koordinator.sh/device-joint-allocate": "{not json"}, "is not JSON"),
        (
            {
                "scheduling.koordinator.sh/device-joint-allocate": (
                    '{"deviceTypes": ["gpu", "rdma"], "requiredScope": "SameNUMA"}'
                )
            },
            "requiredScope",
        ),
        (
            {
                "scheduling.koordinator.sh/device-allocate-hint": (
                    '{"gpu": {"exclusivePolicy": "NodeLevel"}}'
                )
            },
            "exclusivePolicy",
        ),
        ({"scheduling.koordinator.sh/device-allocate-hint": '{"rdma": {}}'}, "asks for no rdma"),
        (
            {"scheduling.koordinator.sh/device-allocate-hint": '{"gpu": {"vfSelector": {}}}'},
            "vfSelector is for rdma",
        ),
    ]
    for annotations, words in cases:
        response = api.post(
            "/group_resources/device_candidates",
            json={"resources": {"nvidia.com/gpu": 1}, "annotations": annotations},
        )
        assert response.status_code == 400, (annotations, response.json)
        assert words in response.json["errors"][0]["detail"], response.json


def test_node_resources_are_plain_names(api):
    body = {
        "devices": [{"type": "rdma", "minor": 0, "numa": 0, "pcie": 0}],
        "resources": {"cpu": 8, "numa/0/extra": 1},
    }
    response = api.put("/group_resources/device_nodes/n", json=body)
    assert response.status_code == 400
    assert "'numa/0/extra'" in response.json["errors"][0]["detail"]


def test_a_device_node_is_not_rewritten_by_the_translator_and_its_delete_takes_the_topology(
    api,
):
    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    refused = api.put("/group_resources/nodes/dgx1", json={"resources": {"cpu": 1}})
    assert refused.status_code == 409
    assert error_code(refused) == "placement.group_resources.device_node"
    assert api.delete("/group_resources/nodes/dgx1").status_code == 204
    assert api.get("/group_resources/device_nodes").json["nodes"] == []
    # The name is free again for a plain translator node, which is no device node.
    assert api.put("/group_resources/nodes/dgx1", json={"resources": {"cpu": 1}}).status_code == 201
    assert api.get("/group_resources/device_nodes/dgx1").status_code == 404


def test_the_translators_own_delete_refuses_a_device_node_and_leaves_it_whole(api, engine):
    """The translator's delete (``group_resources.sync.delete_node``) knows a device node by
    its kind and refuses it; the route above deletes it through the device feature."""
    from placement import errors
    from placement.group_resources import sync

    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    with engine.connect() as conn, conn.begin(), pytest.raises(errors.Conflict) as refused:
        sync.delete_node(conn, "dgx1")
    assert refused.value.code == "placement.group_resources.device_node"
    assert api.get("/group_resources/device_nodes").json["nodes"][0]["name"] == "dgx1"
    assert api.get("/group_resources/device_nodes/dgx1").json["in_sync"] is True


def test_a_node_whose_tree_was_changed_is_left_out_and_named(api):
    body = import_node(api, "dgx1", matrix("dgx1_v100.txt")).json
    gpu0 = next(d for d in body["devices"] if d["type"] == "gpu" and d["minor"] == 0)
    assert api.delete(f"/resource_providers/{gpu0['provider']}").status_code == 204
    answer = candidates(api, {"nvidia.com/gpu": 1})
    assert (answer["candidates"], answer["nodes_out_of_sync"]) == ([], ["dgx1"])
    refused = api.post(
        "/group_resources/device_claims",
        json={
            "resources": {"nvidia.com/gpu": 1},
            "consumer_uuid": "7b1d8b5e-0d3a-4c4e-9d7e-2f0e0a3b9c11",
            "project_id": "p",
            "user_id": "u",
        },
    )
    assert refused.status_code == 409
    assert "dgx1" in refused.json["errors"][0]["detail"]
    assert api.get("/group_resources/device_nodes/dgx1").json["in_sync"] is False
    # Importing it again puts the GPU back.
    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    assert len(candidates(api, {"nvidia.com/gpu": 1})["candidates"]) == 1


def test_a_topology_whose_tree_was_deleted_is_gone_and_can_be_deleted(api):
    body = import_node(api, "orphan", matrix("pcie_4gpu.txt")).json
    tree = api.get(f"/resource_providers?in_tree={body['uuid']}").json["resource_providers"]
    for provider in sorted(tree, key=lambda p: p["name"].count("/"), reverse=True):
        assert api.delete(f"/resource_providers/{provider['uuid']}").status_code == 204
    answer = candidates(api, {"nvidia.com/gpu": 1})
    assert (answer["candidates"], answer["nodes_out_of_sync"]) == ([], [])
    assert api.delete("/group_resources/device_nodes/orphan").status_code == 204
    assert api.delete("/group_resources/device_nodes/orphan").status_code == 404


def test_device_resources_need_their_prefix(api):
    response = api.post("/group_resources/device_candidates", json={"resources": {"gpu": 1}})
    assert response.status_code == 400
    assert "kubernetes.io/gpu" in response.json["errors"][0]["detail"]
    mixed = {"nvidia.com/gpu": 1, "koordinator.sh/gpu-core": 50}
    response = api.post("/group_resources/device_candidates", json={"resources": mixed})
    assert "cannot be combined" in response.json["errors"][0]["detail"]


def test_the_translator_searches_leave_device_nodes_out(api):
    """A translator request naming a device node's classes could take a share of a GPU
    held exclusively through the device routes without its tenancy: device nodes are
    allocated through the device routes only."""
    import_node(api, "dgx1", matrix("dgx1_v100.txt"))
    request = {"resources": {"gpu/0/core": 10}}
    answer = api.post("/group_resources/candidates", json=request).json
    assert answer["candidates"] == []
    limited = api.post("/group_resources/candidates", json={**request, "limit": 1}).json
    assert limited["candidates"] == []
    refused = api.post(
        "/group_resources/claims",
        json={
            **request,
            "consumer_uuid": "1d3c2b8e-7f0a-4b6e-9c55-0a1b2c3d4e5f",
            "project_id": "p",
            "user_id": "u",
        },
    )
    assert refused.status_code == 409
    assert api.post("/group_resources/queries", json=request).json["queries"] == []
    # The tree is still shown by the translator's view.
    assert api.get("/group_resources/nodes/dgx1").status_code == 200
