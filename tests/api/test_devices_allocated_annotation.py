"""Answers in Koordinator's own format, on request: ``"device_allocated": true`` adds to
each candidate and claim ``annotations`` with ``scheduling.koordinator.sh/device-allocated``,
whose value (a JSON string, as a Pod carries it) is Koordinator's DeviceAllocations: per
device type, each device's ``minor`` and ``resources`` (Kubernetes quantities)."""

import json

from tests.api.device_helpers import EIGHT_SWITCHES, candidates, claim, import_node, switch_box

ANNOTATION = "scheduling.koordinator.sh/device-allocated"
NODE_A = switch_box(
    gpus_per_switch=(2, 2), nics_per_switch=(0, 0), switches_per_numa=2, memory="8Gi"
)


def allocated(candidate: dict) -> dict:
    return json.loads(candidate["annotations"][ANNOTATION])


def test_whole_gpus_as_the_annotation(api):
    import_node(api, "a", NODE_A)
    [best] = candidates(api, {"nvidia.com/gpu": 2}, device_allocated=True)["candidates"]
    whole = {
        "kubernetes.io/gpu-core": "100",
        "kubernetes.io/gpu-memory-ratio": "100",
        "kubernetes.io/gpu-memory": "8192Mi",
    }
    assert allocated(best) == {
        "gpu": [{"minor": 0, "resources": whole}, {"minor": 1, "resources": whole}]
    }


def test_a_share_and_a_claim_answer_the_annotation_too(api):
    import_node(api, "a", NODE_A)
    body = claim(
        api,
        {"koordinator.sh/gpu-core": 50, "koordinator.sh/gpu-memory-ratio": 60},
        device_allocated=True,
    )
    assert allocated(body) == {
        "gpu": [
            {
                "minor": 0,
                "resources": {
                    "koordinator.sh/gpu-core": "50",
                    "koordinator.sh/gpu-memory-ratio": "60",
                    "koordinator.sh/gpu-memory": "5033164Ki",
                },
            }
        ]
    }
    # The annotation says what devices says, in strings.
    [device] = body["devices"]["gpu"]
    assert {k: str(v) for k, v in device["resources"].items()} == (
        allocated(body)["gpu"][0]["resources"]
    )


def test_joint_gpus_and_nics_and_vfs_as_the_annotation(api):
    import_node(api, "box", switch_box(vfs=4))
    [best] = candidates(
        api,
        {"nvidia.com/gpu": 2, "koordinator.sh/rdma": 1},
        joint={"deviceTypes": ["gpu", "rdma"]},
        device_allocated=True,
    )["candidates"]
    value = allocated(best)
    assert [d["minor"] for d in value["gpu"]] == [0, 1]
    assert value["rdma"] == [
        {"minor": 0, "resources": {"koordinator.sh/rdma": "1"}},
        {"minor": 1, "resources": {"koordinator.sh/rdma": "1"}},
    ]
    # Two VFs of one NIC: counted, as the request counts them.
    [vfs] = candidates(
        api, {"koordinator.sh/rdma": 2}, hint={"rdma": {"vfSelector": {}}}, device_allocated=True
    )["candidates"]
    assert allocated(vfs) == {"rdma": [{"minor": 0, "resources": {"koordinator.sh/rdma": "2"}}]}


def test_without_the_option_answers_are_as_before(api):
    import_node(api, "box", EIGHT_SWITCHES)
    [plain] = candidates(api, {"nvidia.com/gpu": 1})["candidates"]
    [off] = candidates(api, {"nvidia.com/gpu": 1}, device_allocated=False)["candidates"]
    assert "annotations" not in plain
    assert plain == off


def test_the_option_must_be_a_boolean(api):
    import_node(api, "a", NODE_A)
    refused = candidates(api, {"nvidia.com/gpu": 1}, device_allocated="yes", expect=400)
    assert "device_allocated: 'yes' is not of type 'boolean'" in refused["errors"][0]["detail"]
