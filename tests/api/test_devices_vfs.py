"""Asking for specific VFs, through HTTP. A NIC's VFs listed one by one (``vfGroups``:
labels shared by a group, each VF its minor and bus id) are matched by ``vfSelector``
on their own labels, and each answer names the VFs it gives, which no later request
is given again."""

import copy

from tests.api.device_helpers import candidates, claim, import_node, minors

FULL = {"type": "fullmode"}
SHARED = {"type": "sharedmode"}


def vf(minor: int, bus: str) -> dict:
    return {"minor": minor, "busID": bus}


# Two switches, a GPU and a NIC on each: NIC0 has two fullmode VFs and one sharedmode,
# NIC1 three sharedmode VFs.
NODE = {
    "devices": [
        {"type": "gpu", "minor": 0, "numa": 0, "pcie": 0, "memory": "16Gi"},
        {
            "type": "rdma",
            "minor": 0,
            "numa": 0,
            "pcie": 0,
            "id": "mlx5_0",
            "vfGroups": [
                {"labels": FULL, "vfs": [vf(0, "0000:1f:00.2"), vf(1, "0000:1f:00.3")]},
                {"labels": SHARED, "vfs": [vf(2, "0000:1f:00.4")]},
            ],
        },
        {"type": "gpu", "minor": 1, "numa": 0, "pcie": 1, "memory": "16Gi"},
        {
            "type": "rdma",
            "minor": 1,
            "numa": 0,
            "pcie": 1,
            "id": "mlx5_1",
            "vfGroups": [
                {
                    "labels": SHARED,
                    "vfs": [vf(0, "0000:2f:00.2"), vf(1, "0000:2f:00.3"), vf(2, "0000:2f:00.4")],
                },
            ],
        },
    ]
}


def hint(vf_selector: dict, **more) -> dict:
    return {"rdma": {"vfSelector": vf_selector, **more}}


def given_vfs(candidate) -> list[tuple[int, list[str]]]:
    """(NIC minor, the bus ids of the VFs it gives) per NIC of the candidate."""
    return [
        (nic["minor"], [v["busID"] for v in nic.get("virtualFunctions", [])])
        for nic in candidate["devices"].get("rdma", [])
    ]


def test_listed_vfs_are_kept_with_the_topology_and_counted_per_nic(api):
    body = import_node(api, "n", NODE).json
    nic0 = body["devices"][1]
    assert nic0["vfGroups"] == NODE["devices"][1]["vfGroups"]
    assert "vfs" not in nic0
    assert nic0["inventories"]["vf"] == {"total": 3, "used": 0}
    assert nic0["inventories"]["vf-2"] == {"total": 1, "used": 0}
    assert nic0["inventories"]["tenancy"] == {"total": 1003, "used": 0}
    assert import_node(api, "n", NODE).json["changed"] is False


def test_vf_selector_matches_each_vfs_labels_and_the_answer_names_the_vf(api):
    import_node(api, "n", NODE)
    answer = candidates(api, {"koordinator.sh/rdma": 1}, hint=hint({"matchLabels": FULL}))
    [best] = answer["candidates"]
    assert given_vfs(best) == [(0, ["0000:1f:00.2"])]
    [nic] = best["devices"]["rdma"]
    assert nic["virtualFunctions"] == [{"minor": 0, "busID": "0000:1f:00.2"}]
    assert nic["resources"] == {"vfs": 1}
    assert best["allocations"][nic["provider"]]["resources"] == {
        "CUSTOM_RDMA_VF": 1,
        "CUSTOM_RDMA_VF_0": 1,
        "CUSTOM_RDMA_TENANCY": 1,
    }
    # Two sharedmode VFs of one NIC: only NIC1 has two.
    [shared] = candidates(api, {"koordinator.sh/rdma": 2}, hint=hint({"matchLabels": SHARED}))[
        "candidates"
    ]
    assert given_vfs(shared) == [(1, ["0000:2f:00.2", "0000:2f:00.3"])]


def test_a_vf_given_is_never_given_again(api):
    import_node(api, "n", NODE)
    full = hint({"matchLabels": FULL})
    first = claim(api, {"koordinator.sh/rdma": 1}, hint=full)
    second = claim(api, {"koordinator.sh/rdma": 1}, hint=full)
    assert [given_vfs(first), given_vfs(second)] == [
        [(0, ["0000:1f:00.2"])],
        [(0, ["0000:1f:00.3"])],
    ]
    answer = candidates(api, {"koordinator.sh/rdma": 1}, hint=full)
    assert answer["candidates"] == []
    assert answer["unplaced"] == [
        {"reason": "rdma: 1 device(s) needed, 0 can give the request", "nodes": 1}
    ]
    # The NIC's other VF is still there for a sharedmode request.
    [shared] = candidates(api, {"koordinator.sh/rdma": 1}, hint=hint({"matchLabels": SHARED}))[
        "candidates"
    ]
    assert given_vfs(shared) == [(0, ["0000:1f:00.4"])]
    shown = api.get("/group_resources/device_nodes/n").json["devices"][1]["inventories"]
    assert (shown["vf-0"], shown["vf-1"], shown["vf"]) == (
        {"total": 1, "used": 1},
        {"total": 1, "used": 1},
        {"total": 3, "used": 2},
    )


def test_one_vf_from_each_of_two_nics(api):
    """rdma 2 counted as VFs: one VF from each of two NICs, each VF named."""
    import_node(api, "n", NODE)
    [best] = candidates(
        api, {"koordinator.sh/rdma": 2}, hint=hint({}, allocateStrategy="RequestsAsCount")
    )["candidates"]
    assert given_vfs(best) == [(0, ["0000:1f:00.2"]), (1, ["0000:2f:00.2"])]


def test_requests_without_a_vf_selector_give_no_vf(api):
    import_node(api, "n", NODE)
    [best] = candidates(api, {"koordinator.sh/rdma": 1})["candidates"]
    assert given_vfs(best) == [(0, [])]
    assert best["devices"]["rdma"][0]["resources"] == {"koordinator.sh/rdma": 1}
    # A whole NIC gives every VF, named.
    [whole] = candidates(api, {"koordinator.sh/rdma": 100})["candidates"]
    assert given_vfs(whole) == [(0, ["0000:1f:00.2", "0000:1f:00.3", "0000:1f:00.4"])]
    assert minors(whole, "rdma") == [0]


def test_vf_lists_that_do_not_hold_together_are_400(api):
    def refused(change, expected):
        document = copy.deepcopy(NODE)
        change(document["devices"])
        response = api.put("/group_resources/device_nodes/bad", json=document)
        assert response.status_code == 400, response.json
        assert response.json["errors"][0]["detail"] == expected

    refused(
        lambda d: d[0].update(vfGroups=[{"vfs": [vf(0, "x")]}]),
        "Invalid device list: devices.0.vfGroups: only rdma devices have VFs.",
    )
    refused(
        lambda d: d[1].update(vfs=3),
        "Invalid device list: devices.1.vfGroups: give vfGroups, or vfs with vfLabels, not both.",
    )
    refused(
        lambda d: d[1]["vfGroups"][1]["vfs"].append(vf(0, "0000:1f:00.9")),
        "Device rdma0: VF 0 is listed twice.",
    )
    refused(
        lambda d: d[3]["vfGroups"][0]["vfs"].append(vf(3, "0000:1f:00.2")),
        "Device rdma1: VF 3's busID '0000:1f:00.2' is empty or used twice.",
    )
    refused(
        lambda d: d[1]["vfGroups"].append({"vfs": []}),
        "Invalid device list: devices.1.vfGroups.2.vfs: Length must be between 1 and 256.",
    )


def test_a_checkpoint_naming_vfs_by_bus_id_holds_those_vfs(api):
    """An SR-IOV device plugin gives a pod VFs by their PCI addresses: the checkpoint holds
    those VFs only, named in the answer, and they are never given again."""
    node = import_node(api, "n", NODE).json
    nic0 = node["devices"][1]["provider"]
    entry = {
        "podUID": "pod-a",
        "resourceName": "koordinator.sh/rdma",
        "deviceIDs": ["0000:1f:00.3", "0000:1f:00.2"],
    }
    response = api.put("/group_resources/device_nodes/n/checkpoints", json={"checkpoints": [entry]})
    assert response.status_code == 200, response.json
    [pod] = response.json["pods"]
    [nic] = pod["devices"]["rdma"]
    assert (nic["minor"], nic["virtualFunctions"]) == (
        0,
        [{"minor": 0, "busID": "0000:1f:00.2"}, {"minor": 1, "busID": "0000:1f:00.3"}],
    )
    held = api.get(f"/allocations/{pod['consumer_uuid']}").json["allocations"]
    assert held[nic0]["resources"] == {
        "CUSTOM_RDMA_VF": 2,
        "CUSTOM_RDMA_VF_0": 1,
        "CUSTOM_RDMA_VF_1": 1,
        "CUSTOM_RDMA_TENANCY": 1,
    }
    assert (
        candidates(api, {"koordinator.sh/rdma": 1}, hint=hint({"matchLabels": FULL}))["candidates"]
        == []
    )
    [shared] = candidates(api, {"koordinator.sh/rdma": 1}, hint=hint({"matchLabels": SHARED}))[
        "candidates"
    ]
    assert given_vfs(shared) == [(0, ["0000:1f:00.4"])]
    [whole] = candidates(api, {"koordinator.sh/rdma": 100})["candidates"]
    assert minors(whole, "rdma") == [1]
    for ids in (
        ["0000:1f:00.2", "mlx5_0"],
        ["mlx5_0", "0000:1f:00.4"],
        ["0000:1f:00.2", "0000:1f:00.2"],
    ):
        response = api.put(
            "/group_resources/device_nodes/n/checkpoints",
            json={"checkpoints": [{**entry, "deviceIDs": ids}]},
        )
        assert response.status_code == 400, response.json
        assert (
            "of node n is given twice: to pod pod-a and to pod pod-a."
            in (response.json["errors"][0]["detail"])
        )
