"""kube-scheduler's filter and prioritize verbs over the device nodes imported here
(``NodeNames``: a node-cache capable extender), with pods as the scheduler sends them."""

import json

import pytest

from tests.api.device_helpers import HINT, JOINT, claim, import_node, switch_box
from tests.api.k8s_helpers import PREFIX, call, filter_names, pod

# 4 GPUs: two switches of two, one NIC per switch, NVLinks within each switch.
FOUR = switch_box(
    gpus_per_switch=(2, 2),
    nics_per_switch=(1, 1),
    switches_per_numa=1,
    nvlinks=(((0, 1), 2), ((2, 3), 2)),
)
TWO = switch_box(gpus_per_switch=(1, 1), nics_per_switch=(0, 0), switches_per_numa=1)


@pytest.fixture
def cluster(api):
    import_node(api, "four", FOUR)
    import_node(api, "two", TWO)
    return api


def test_a_pod_goes_to_the_nodes_that_can_give_its_gpus(cluster):
    result = filter_names(
        cluster, pod(resources={"nvidia.com/gpu": 3}), ["four", "two", "cpu-only"]
    )
    assert result["NodeNames"] == ["four"]
    assert result["Error"] == ""
    # Two GPUs could never be three: no eviction helps, nor on a node not known here.
    assert result["FailedNodes"] == {}
    assert set(result["FailedAndUnresolvableNodes"]) == {"two", "cpu-only"}
    assert "import its topology" in result["FailedAndUnresolvableNodes"]["cpu-only"]
    assert result["FailedAndUnresolvableNodes"]["two"] == (
        "gpu: 3 device(s) needed, 2 can give the request"
    )


def test_a_node_busy_now_fails_with_the_search_reason_and_may_be_preempted(cluster):
    claim(cluster, {"nvidia.com/gpu": 2}, nodes=["four"])
    result = filter_names(cluster, pod(resources={"aliyun.com/gpu": 3}), ["four", "two"])
    assert result["NodeNames"] == []
    assert result["FailedNodes"] == {"four": "gpu: 3 device(s) needed, 2 can give the request"}
    assert set(result["FailedAndUnresolvableNodes"]) == {"two"}


def test_a_pod_that_asks_for_no_device_passes_every_node(cluster):
    cpu_pod = pod(resources={"cpu": "2", "memory": "4Gi"})
    result = filter_names(cluster, cpu_pod, ["four", "two", "cpu-only"])
    assert result["NodeNames"] == ["four", "two", "cpu-only"]
    assert result["FailedNodes"] == {} and result["FailedAndUnresolvableNodes"] == {}
    scores = call(cluster, "prioritize", {"Pod": cpu_pod, "NodeNames": ["four", "two"]}).json
    assert scores == [{"Host": "four", "Score": 0}, {"Host": "two", "Score": 0}]


def test_init_containers_ask_the_larger_of_their_own_and_the_containers_sum(cluster):
    # The containers ask 1 GPU, an init container 3: the pod needs 3 (not 4).
    asking = pod(resources={"nvidia.com/gpu": 1}, init=[{"nvidia.com/gpu": 3}])
    assert filter_names(cluster, asking, ["four", "two"])["NodeNames"] == ["four"]
    smaller = pod(resources={"nvidia.com/gpu": 2}, init=[{"nvidia.com/gpu": 1}])
    assert filter_names(cluster, smaller, ["four", "two"])["NodeNames"] == ["four", "two"]


def test_a_limit_alone_is_the_request(cluster):
    limits = pod(resources={"nvidia.com/gpu": 4}, limits_only=True)
    assert filter_names(cluster, limits, ["four", "two"])["NodeNames"] == ["four"]


def test_shares_and_koordinator_annotations_are_read_as_the_device_routes_read_them(cluster):
    half = pod(resources={"koordinator.sh/gpu-core": 50, "koordinator.sh/gpu-memory-ratio": 50})
    assert filter_names(cluster, half, ["four", "two"])["NodeNames"] == ["four", "two"]
    joint = pod(
        resources={"nvidia.com/gpu": 2, "koordinator.sh/rdma": 1},
        annotations={
            JOINT: json.dumps({"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"})
        },
    )
    result = filter_names(cluster, joint, ["four", "two"])
    assert result["NodeNames"] == ["four"]
    assert "two" in result["FailedAndUnresolvableNodes"]
    hinted = pod(
        resources={"nvidia.com/gpu": 1},
        annotations={HINT: json.dumps({"gpu": {"selector": {"matchLabels": {"model": "H100"}}}})},
    )
    result = filter_names(cluster, hinted, ["four"])
    assert result["NodeNames"] == []
    assert "selected by the hint" in result["FailedAndUnresolvableNodes"]["four"]


def test_prioritize_scores_the_most_tightly_linked_node_10(cluster):
    import_node(
        cluster,
        "four-apart",
        switch_box(gpus_per_switch=(1, 1, 1, 1), nics_per_switch=(0, 0, 0, 0)),
    )
    two_gpus = pod(resources={"nvidia.com/gpu": 2})
    names = ["four-apart", "two", "four", "nowhere"]
    for verb in ("prioritize", "sort"):
        response = call(cluster, verb, {"Pod": two_gpus, "NodeNames": names})
        assert response.status_code == 200
        scores = {entry["Host"]: entry["Score"] for entry in response.json}
        assert scores["four"] == 10  # two NVLinked GPUs on one switch
        assert 0 < scores["four-apart"] < 10 and 0 < scores["two"] < 10
        assert scores["nowhere"] == 0
        assert [entry["Host"] for entry in response.json] == names


def test_keys_are_read_without_regard_to_case_as_go_reads_them(cluster):
    body = {"pod": pod(resources={"nvidia.com/gpu": 3}), "nodenames": ["four", "two"], "Unknown": 1}
    response = call(cluster, "filter", body)
    assert response.json["NodeNames"] == ["four"]


@pytest.mark.parametrize(
    "body, words",
    [
        ({"NodeNames": ["four"]}, "Pod"),
        ({"Pod": pod(resources={"nvidia.com/gpu": 1})}, "neither NodeNames nor Nodes"),
        ({"Pod": [], "NodeNames": []}, "Pod"),
        ({"Pod": {"spec": {"containers": "x"}}, "NodeNames": ["four"]}, "Pod is not a valid Pod"),
        ({"Pod": pod(resources={"nvidia.com/gpu": "two"}), "NodeNames": ["four"]}, "not an amount"),
        ({"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNames": "four"}, "NodeNames"),
        (
            {
                "Pod": pod(resources={"kubernetes.io/gpu": 1}, annotations={JOINT: "{not json"}),
                "NodeNames": ["four"],
            },
            "not JSON",
        ),
        ([], "object"),
    ],
)
def test_malformed_bodies_answer_the_error_field(cluster, body, words):
    response = call(cluster, "filter", body)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert words in response.json["Error"], response.json
    # prioritize's answer (a list) has no Error field: its error keeps its status.
    response = call(cluster, "prioritize", body)
    assert response.status_code == 400
    assert words in response.json["Error"]


def test_a_body_that_is_not_json_answers_the_error_field(cluster):
    response = call(cluster, "filter", None, raw="{")
    assert response.status_code == 200
    assert response.json["Error"].startswith("Malformed JSON")
    response = call(cluster, "bind", None, raw="[1")
    assert response.status_code == 200 and "Malformed JSON" in response.json["Error"]


def test_other_methods_and_verbs_are_not_answered(cluster):
    assert cluster.client.get(PREFIX + "/filter").status_code in (401, 405)
    assert cluster.client.post(PREFIX + "/unknown", json={}).status_code in (401, 404)


# A node with every device type: two switches, each with 2 GPUs, a NIC and an FPGA.
EVERY_TYPE = {
    "devices": [
        *(
            {"type": "gpu", "minor": m, "numa": 0, "pcie": m // 2, "memory": "8Gi"}
            for m in range(4)
        ),
        *({"type": "rdma", "minor": m, "numa": 0, "pcie": m} for m in range(2)),
        *({"type": "fpga", "minor": m, "numa": 0, "pcie": m} for m in range(2)),
    ]
}
JOINT_GPU_RDMA = {JOINT: json.dumps({"deviceTypes": ["gpu", "rdma"]})}
JOINT_GPU_RDMA_SAME_PCIE = {
    JOINT: json.dumps({"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"})
}


@pytest.mark.parametrize(
    "resources, annotations, passes",
    [
        # Koordinator's joint pods: 4 GPUs and a NIC, jointly; then on one PCIe switch each.
        ({"nvidia.com/gpu": 4, "koordinator.sh/rdma": 1}, JOINT_GPU_RDMA, True),
        ({"nvidia.com/gpu": 4, "koordinator.sh/rdma": 1}, JOINT_GPU_RDMA_SAME_PCIE, True),
        # Fine-grained GPU pods: two whole GPUs by core and ratio; a half; a memory no GPU has.
        ({"kubernetes.io/gpu-core": 200, "kubernetes.io/gpu-memory-ratio": 200}, {}, True),
        ({"kubernetes.io/gpu": 50}, {}, True),
        ({"kubernetes.io/gpu-core": 50, "kubernetes.io/gpu-memory": "9Gi"}, {}, False),
        ({"koordinator.sh/fpga": 200}, {}, True),
        ({"koordinator.sh/fpga": 300}, {}, False),
        ({"koordinator.sh/rdma": 50, "aliyun.com/gpu": 1}, {}, True),
    ],
)
def test_the_documents_pods_and_every_device_type(api, resources, annotations, passes):
    import_node(api, "every", EVERY_TYPE)
    result = filter_names(api, pod(resources=resources, annotations=annotations), ["every"])
    assert result["NodeNames"] == (["every"] if passes else [])
    if not passes:
        assert set(result["FailedAndUnresolvableNodes"]) == {"every"}


def test_a_request_the_device_routes_refuse_is_the_filters_error(api):
    # Core with both ratio and memory (as one of Koordinator's examples writes it).
    asking = pod(
        resources={
            "kubernetes.io/gpu-core": 200,
            "kubernetes.io/gpu-memory-ratio": 200,
            "kubernetes.io/gpu-memory": "16Gi",
        }
    )
    error = filter_names(api, asking, ["every"])["Error"]
    assert error == (
        "kubernetes.io/gpu-core needs exactly one of kubernetes.io/gpu-memory-ratio "
        "and kubernetes.io/gpu-memory."
    )
