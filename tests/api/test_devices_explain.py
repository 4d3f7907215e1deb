"""POST /group_resources/device_candidates/explain: each device type's checks counted in turn,
the node steps, the step that empties the answer, the nearest misses; on stories, and on
the random worlds of ``test_devices_oracle`` against the real search (the last count is
the nodes it answers) and the brute force (each type's devices, the node's resources)."""

import random

import pytest

from tests.api.device_helpers import (
    EIGHT_SWITCHES,
    annotations,
    candidates,
    claim,
    import_node,
    switch_box,
)
from tests.api.test_devices_oracle import (
    SEED,
    Reader,
    fits,
    node_fits,
    random_ask,
    selected,
    set_up_world,
)


def explained(api, resources: dict, joint=None, hint=None, **options) -> dict:
    body = {"resources": resources, "annotations": annotations(joint, hint), **options}
    response = api.post("/group_resources/device_candidates/explain", json=body)
    assert response.status_code == 200, response.json
    return response.json


def counts(filters: list[dict]) -> list[tuple[str, int]]:
    return [(f["filter"], f["passing"]) for f in filters]


GIVES = "can give what is asked of each (free; not in use when whole or exclusive)"
SWITCH = "on a PCIe switch that allows it (tenancy; PCIeLevel: no device of the type there in use)"
RESOURCES = "the node's own resources (cpu, memory, ...) free"
EVERY_TYPE = "every device type has the devices asked"
CHOICE = "a choice of every type"
JOINT = (
    "a choice of every type together (device-joint-allocate: the other types beside the "
    "primary type's devices, in one scope)"
)


@pytest.fixture
def two_nodes(api):
    """p: 4 GPUs on 2 switches, 2 of them held by a claim; q: 2 GPUs. Both 4 cpu."""
    import_node(
        api, "p", switch_box(gpus_per_switch=(2, 2), nics_per_switch=(0, 0), resources={"cpu": 4})
    )
    import_node(
        api, "q", switch_box(gpus_per_switch=(2,), nics_per_switch=(0,), resources={"cpu": 4})
    )
    claim(api, {"nvidia.com/gpu": 2}, nodes=["p"])
    return api


def test_each_check_is_counted_in_turn_and_the_nearest_misses_are_one_device_short(
    two_nodes,
):
    body = explained(two_nodes, {"nvidia.com/gpu": 3})
    [gpu] = body["types"]
    assert (gpu["type"], gpu["devices"]) == ("gpu", 3)
    assert counts(gpu["filters"]) == [
        ("nodes", 2),
        ("gpu devices", 1),
        ("healthy", 1),
        (GIVES, 0),
        (SWITCH, 0),
    ]
    assert counts(body["nodes"]) == [("device nodes", 2), (EVERY_TYPE, 0), (CHOICE, 0)]
    assert body["empties_at"] == f"gpu: {GIVES}"
    assert [(m["node"], m["fails"], m["short"]) for m in body["nearest_misses"]] == [
        ("p", f"gpu: {GIVES}", {"gpu": 1}),  # 2 of its 4 GPUs held
        ("q", "gpu: gpu devices", {"gpu": 1}),  # 2 GPUs only
    ]
    assert body["nodes_out_of_sync"] == []


def test_the_nodes_own_resources_come_first_among_the_node_steps(two_nodes):
    body = explained(two_nodes, {"nvidia.com/gpu": 2, "cpu": 6}, limit=1, budget_ms=1)
    assert counts(body["nodes"]) == [
        ("device nodes", 2),
        (RESOURCES, 0),
        (EVERY_TYPE, 0),
        (CHOICE, 0),
    ]
    assert body["empties_at"] == f"nodes: {RESOURCES}"
    # Both have 2 free GPUs and lack cpu alone.
    assert [(m["node"], m["fails"], m["short"]) for m in body["nearest_misses"]] == [
        ("p", RESOURCES, {"VCPU": 2}),
        ("q", RESOURCES, {"VCPU": 2}),
    ]
    # Three GPUs and cpu: each node fails two checks, so none is a near miss.
    assert explained(two_nodes, {"nvidia.com/gpu": 3, "cpu": 6})["nearest_misses"] == []


def test_a_joint_request_each_type_of_which_fits_can_still_fail_together(api):
    import_node(api, "eight", EIGHT_SWITCHES)  # one GPU and one NIC per switch
    # Two NICs beside the GPUs on each switch they touch: no switch has two.
    resources = {"nvidia.com/gpu": 2, "koordinator.sh/rdma": 200}
    joint = {"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"}
    body = explained(api, resources, joint=joint)
    assert [t["filters"][-1]["passing"] for t in body["types"]] == [1, 1]
    assert counts(body["nodes"]) == [("device nodes", 1), (EVERY_TYPE, 1), (JOINT, 0)]
    assert body["empties_at"] == f"nodes: {JOINT}"
    assert candidates(api, resources, joint=joint)["candidates"] == []
    # Without the required scope the same request finds its node.
    found = explained(api, resources, joint={"deviceTypes": ["gpu", "rdma"]})
    assert found["nodes"][-1]["passing"] == 1 and found["empties_at"] is None


def test_apply_for_all_needs_every_selected_device(two_nodes):
    hint = {"gpu": {"allocateStrategy": "ApplyForAll"}}
    body = explained(two_nodes, {"nvidia.com/gpu": 1}, hint=hint)
    [gpu] = body["types"]
    assert gpu["devices"] == "all"
    # p has 4 GPUs selected, 2 of which held: not all can give; q's 2 both can.
    assert counts(gpu["filters"]) == [
        ("nodes", 2),
        ("gpu devices", 2),
        ("healthy", 2),
        (GIVES, 1),
        (SWITCH, 1),
    ]
    assert [(m["node"], m["short"]) for m in body["nearest_misses"]] == [("p", {"gpu": 2})]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"resources": {"example.com/foo": 1}},
        {"resources": {"nvidia.com/gpu": 1}, "pod": {}},
        {"resources": {"nvidia.com/gpu": 1}, "limit": 0},
        {
            "resources": {"nvidia.com/gpu": 1},
            "annotations": {"scheduling.koordinator.sh/device-joint-allocate": "{not json"},
        },
    ],
)
def test_what_the_candidates_refuse_is_refused(api, body):
    response = api.post("/group_resources/device_candidates/explain", json=body)
    assert response.status_code == 400, response.json
    assert api.post("/group_resources/device_candidates", json=body).status_code == 400


# Random worlds ---------------------------------------------------------------------


def enough(node, want) -> bool:
    """The brute force: enough devices of the type can give the request."""
    chosen_from = selected(node, want)
    able = [device for device in chosen_from if fits(node, device, want)]
    if want.count is None:
        return bool(chosen_from) and len(able) == len(chosen_from)
    return len(able) >= want.count


@pytest.mark.parametrize("world", range(10))
def test_the_counts_are_the_searchs_and_the_brute_forces(api, world):
    rng = random.Random(SEED * 1000 + 500 + world)
    reader = Reader(api, set_up_world(api, rng))
    for index in range(6):
        ask = random_ask(rng)
        context = f"world {world} request {index}: {ask.body()}"
        body = {key: value for key, value in ask.body().items() if key != "limit"}
        response = api.post("/group_resources/device_candidates/explain", json=body)
        assert response.status_code == 200, (context, response.json)
        explanation = response.json
        whole = api.post("/group_resources/device_candidates", json=body).json
        nodes = reader.nodes()
        steps = [step["passing"] for step in explanation["nodes"]]
        assert steps[0] == whole["nodes_considered"] == len(nodes), context
        assert steps[-1] == len(whole["candidates"]), context
        assert steps == sorted(steps, reverse=True), context
        assert (explanation["empties_at"] is None) == bool(whole["candidates"]), context
        if ask.node_resources:
            assert steps[1] == sum(node_fits(n, ask) for n in nodes.values()), context
        types = [t["type"] for t in explanation["types"]]
        assert sorted(types) == sorted(ask.wants), context
        if ask.joint_types:  # in the chooser's order: the primary type first
            assert types[0] == ask.primary_first[0], context
        for entry in explanation["types"]:
            want = ask.wants[entry["type"]]
            passing = [f["passing"] for f in entry["filters"]]
            assert passing == sorted(passing, reverse=True), context
            assert passing[-1] == sum(enough(n, want) for n in nodes.values()), (context, entry)
        if len(ask.wants) == 1 and not ask.joint_types and not ask.node_resources:
            # One type alone: its devices are the whole choice.
            assert explanation["types"][0]["filters"][-1]["passing"] == steps[-1], context
        answered = {c["node"] for c in whole["candidates"]}
        assert not answered & {m["node"] for m in explanation["nearest_misses"]}, context
