"""Joint GPU + NIC allocation end to end through HTTP: its scopes (PCIe switch, NUMA node,
node) and its hints."""

from tests.api.device_helpers import (
    EIGHT_SWITCHES,
    HETEROGENEOUS,
    candidates,
    claim,
    import_node,
    minors,
    switch_box,
    switches,
)

GPU_AND_NIC = {"nvidia.com/gpu": 4, "koordinator.sh/rdma": 1}
JOINT = {"deviceTypes": ["gpu", "rdma"]}
SAME_PCIE = {"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"}


def test_each_gpu_comes_with_the_nic_of_its_switch(api):
    """A server of 8 PCIe switches with one GPU and one NIC on each: 4 GPUs + rdma 1 gives
    4 GPUs and 4 NICs, each NIC on the switch of one of the GPUs."""
    import_node(api, "box", EIGHT_SWITCHES)
    [best] = candidates(api, GPU_AND_NIC, joint=JOINT)["candidates"]
    assert best["scope"] == "SamePCIe"
    assert len(minors(best, "gpu")) == 4
    assert sorted(switches(best, "rdma")) == sorted(switches(best, "gpu"))
    # Tightest first: the four GPUs of one NUMA node (same-NUMA pairs), lowest minors.
    assert minors(best, "gpu") == [0, 1, 2, 3]
    for nic in best["devices"]["rdma"]:
        assert nic["resources"] == {"koordinator.sh/rdma": 1}


def test_heterogeneous_machine_falls_back_to_the_numa_node_with_the_nic(api):
    """A server of 2 NUMA nodes of 4 switches with a GPU each and one NIC in all: 4 GPUs and
    one NIC, and the GPUs are on the NIC's NUMA node."""
    import_node(api, "hetero", HETEROGENEOUS)
    [best] = candidates(api, GPU_AND_NIC, joint=JOINT)["candidates"]
    assert best["scope"] == "SameNUMA"
    assert minors(best, "gpu") == [0, 1, 2, 3]
    assert {gpu["numa"] for gpu in best["devices"]["gpu"]} == {0}
    assert minors(best, "rdma") == [0]


def test_falls_back_to_the_whole_node_when_no_numa_node_is_enough(api):
    import_node(api, "hetero", HETEROGENEOUS)
    [best] = candidates(api, {**GPU_AND_NIC, "nvidia.com/gpu": 6}, joint=JOINT)["candidates"]
    assert best["scope"] == "Node"
    assert len(minors(best, "gpu")) == 6
    assert minors(best, "rdma") == [0]


def test_required_same_pcie_gives_no_candidate_without_a_nic_per_switch(api):
    import_node(api, "hetero", HETEROGENEOUS)
    response = api.post(
        "/group_resources/device_candidates",
        json={
            "resources": GPU_AND_NIC,
            "annotations": {"scheduling.koordinator.sh/device-joint-allocate": SAME_PCIE},
        },
    )
    assert response.status_code == 200
    assert response.json["candidates"] == []
    [unplaced] = response.json["unplaced"]
    assert "one PCIe switch" in unplaced["reason"]
    # One GPU fits: the one beside the NIC.
    [best] = candidates(api, {**GPU_AND_NIC, "nvidia.com/gpu": 1}, joint=SAME_PCIE)["candidates"]
    assert (minors(best, "gpu"), minors(best, "rdma")) == ([0], [0])


def test_required_same_pcie_claims_until_the_switches_run_out(api):
    import_node(api, "box", EIGHT_SWITCHES)
    first = claim(api, GPU_AND_NIC, joint=SAME_PCIE)
    second = claim(api, GPU_AND_NIC, joint=SAME_PCIE)
    assert set(minors(first, "gpu")).isdisjoint(minors(second, "gpu"))
    # rdma 1 is a share of a NIC: the NICs still have room, the GPUs do not.
    third = claim(api, GPU_AND_NIC, joint=SAME_PCIE, expect=409)
    assert third["errors"][0]["code"] == "placement.group_resources.unplaceable"


def test_pcie_level_exclusive_nics_are_not_shared_by_switch(api):
    """SamePCIe with rdma exclusive at PCIe level: a second claim gets other switches;
    once every switch is taken, an rdma request of anyone else fails."""
    import_node(api, "box", switch_box(vfs=8))
    hint = {"rdma": {"vfSelector": {}, "exclusivePolicy": "PCIeLevel"}}
    first = claim(api, GPU_AND_NIC, joint=SAME_PCIE, hint=hint)
    for nic in first["devices"]["rdma"]:
        assert nic["resources"] == {"vfs": 1, "exclusive": True}
    second = claim(api, {"nvidia.com/gpu": 2, "koordinator.sh/rdma": 1}, joint=SAME_PCIE, hint=hint)
    assert set(switches(first, "rdma")).isdisjoint(switches(second, "rdma"))
    # Two switches are left with their NICs free: a plain VF request takes one of them.
    plain = claim(api, {"koordinator.sh/rdma": 1}, hint={"rdma": {"vfSelector": {}}})
    assert switches(plain, "rdma")[0] not in switches(first, "rdma") + switches(second, "rdma")
    # And now a PCIe-exclusive request cannot use that switch either: one switch is left.
    last = claim(
        api, {"nvidia.com/gpu": 2, "koordinator.sh/rdma": 1}, joint=SAME_PCIE, hint=hint, expect=409
    )
    assert last["errors"][0]["code"] == "placement.group_resources.unplaceable"
    claim(api, {"nvidia.com/gpu": 1, "koordinator.sh/rdma": 1}, joint=SAME_PCIE, hint=hint)


def test_device_level_exclusive_refuses_a_nic_someone_uses(api):
    import_node(
        api, "box", switch_box(gpus_per_switch=(0, 0), nics_per_switch=(1, 1), switches_per_numa=2)
    )
    claim(api, {"koordinator.sh/rdma": 10})
    exclusive = {"rdma": {"exclusivePolicy": "DeviceLevel"}}
    [best] = candidates(api, {"koordinator.sh/rdma": 10}, hint=exclusive)["candidates"]
    assert minors(best, "rdma") == [1]  # NIC 0 is shared already
    claim(api, {"koordinator.sh/rdma": 10}, hint=exclusive)
    # Both NICs are now held: one exclusively, so a plain request fits only on the other.
    [shared] = candidates(api, {"koordinator.sh/rdma": 10})["candidates"]
    assert minors(shared, "rdma") == [0]
    claim(api, {"koordinator.sh/rdma": 10}, hint=exclusive, expect=409)


def test_apply_for_all_takes_every_nic_of_the_node(api):
    """ApplyForAll with rdma 100 (per card) takes every NIC, each whole."""
    import_node(api, "box", EIGHT_SWITCHES)
    [best] = candidates(
        api, {"koordinator.sh/rdma": 100}, hint={"rdma": {"allocateStrategy": "ApplyForAll"}}
    )["candidates"]
    assert minors(best, "rdma") == list(range(8))
    assert all(nic["resources"]["koordinator.sh/rdma"] == 100 for nic in best["devices"]["rdma"])
    # Once one NIC is used, ApplyForAll cannot have them all.
    claim(api, {"koordinator.sh/rdma": 5})
    answer = candidates(
        api, {"koordinator.sh/rdma": 100}, hint={"rdma": {"allocateStrategy": "ApplyForAll"}}
    )
    assert answer["candidates"] == []
    assert "ApplyForAll" in answer["unplaced"][0]["reason"]


def test_requests_as_count_takes_one_vf_from_each_of_two_nics(api):
    """rdma 2 with vfSelector and RequestsAsCount is one VF of each of two NICs."""
    import_node(api, "box", switch_box(vfs=4))
    hint = {"rdma": {"vfSelector": {}, "allocateStrategy": "RequestsAsCount"}}
    [best] = candidates(api, {"koordinator.sh/rdma": 2}, hint=hint)["candidates"]
    assert len(minors(best, "rdma")) == 2
    assert [nic["resources"] for nic in best["devices"]["rdma"]] == [{"vfs": 1}, {"vfs": 1}]


def test_selector_picks_devices_by_label(api):
    document = switch_box(
        gpus_per_switch=(1, 1), nics_per_switch=(1, 1), switches_per_numa=2, vfs=2
    )
    document["devices"][1]["labels"] = {"fabric": "roce"}
    document["devices"][3]["labels"] = {"fabric": "ib"}
    import_node(api, "box", document)
    hint = {"rdma": {"selector": {"matchLabels": {"fabric": "ib"}}}}
    [best] = candidates(api, {"koordinator.sh/rdma": 50}, hint=hint)["candidates"]
    assert minors(best, "rdma") == [1]
    hint = {
        "rdma": {
            "selector": {
                "matchExpressions": [{"key": "fabric", "operator": "NotIn", "values": ["ib"]}]
            }
        }
    }
    [best] = candidates(api, {"koordinator.sh/rdma": 50}, hint=hint)["candidates"]
    assert minors(best, "rdma") == [0]


def test_the_order_of_device_types_changes_nothing(api):
    """deviceTypes is a set, not an order: the GPUs (asked for the most devices) lead
    whichever type is listed first, with or without requiredScope."""
    import_node(api, "box", EIGHT_SWITCHES)
    import_node(api, "hetero", HETEROGENEOUS)
    for scope in ({}, {"requiredScope": "SamePCIe"}):
        answers = []
        for device_types in (["gpu", "rdma"], ["rdma", "gpu"]):
            body = candidates(api, GPU_AND_NIC, joint={"deviceTypes": device_types, **scope})
            answers.append(
                [
                    (c["node"], c["scope"], minors(c, "gpu"), minors(c, "rdma"))
                    for c in body["candidates"]
                ]
            )
        assert answers[0] == answers[1], scope
        box = next(a for a in answers[1] if a[0] == "box")
        assert (box[1], len(box[2]), len(box[3])) == ("SamePCIe", 4, 4)
    # A tie (one of each): the GPU leads, the NIC follows it on its switch.
    for device_types in (["gpu", "rdma"], ["rdma", "gpu"]):
        body = candidates(
            api,
            {"nvidia.com/gpu": 1, "koordinator.sh/rdma": 1},
            joint={"deviceTypes": device_types, "requiredScope": "SamePCIe"},
        )
        best = next(c for c in body["candidates"] if c["node"] == "box")
        assert switches(best, "gpu") == switches(best, "rdma")
