"""The extender when it is not node-cache capable (whole ``v1.Node`` objects, their GPU
topology in annotations), its preempt verb, and who may call it."""

import json

import pytest

from tests.api.device_helpers import claim, import_node, switch_box
from tests.api.k8s_helpers import call, node, pod

TOPOLOGY = "gpu-topology.placement/"


def topology_annotations(links: dict[tuple[int, int], str], memory="80Gi") -> dict:
    found = {f"{TOPOLOGY}{link}_{a}_{b}": "described" for (a, b), link in links.items()}
    found[f"{TOPOLOGY}memory"] = memory
    return found


# A GPU topology node: 4 GPUs, NVLinked in pairs, the pairs on two sockets.
DGX4 = {(0, 1): "NV2", (2, 3): "NV2", (0, 2): "SYS", (0, 3): "SYS", (1, 2): "SYS", (1, 3): "SYS"}


def nodes_filter(api, pod_body, nodes):
    response = call(api, "filter", {"Pod": pod_body, "Nodes": {"items": nodes}})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json


def test_nodes_are_imported_from_their_annotations_and_answered_back_whole(api):
    gpu_node = node("gpu-a", topology_annotations(DGX4), {"nvidia.com/gpu": "4", "cpu": "64"})
    plain = node("plain")
    result = nodes_filter(api, pod(resources={"nvidia.com/gpu": 2}), [gpu_node, plain])
    assert result["Nodes"] == {"items": [gpu_node]}
    assert "NodeNames" not in result
    assert set(result["FailedAndUnresolvableNodes"]) == {"plain"}
    shown = api.get("/group_resources/device_nodes/gpu-a").json
    assert [d["minor"] for d in shown["devices"]] == [0, 1, 2, 3]
    assert shown["nvlinks"] == [{"gpus": [0, 1], "links": 2}, {"gpus": [2, 3], "links": 2}]
    # The best two GPUs are an NVLinked pair: its score is 10.
    scores = call(
        api,
        "prioritize",
        {"Pod": pod(resources={"nvidia.com/gpu": 2}), "Nodes": {"items": [gpu_node]}},
    ).json
    assert scores == [{"Host": "gpu-a", "Score": 10}]


def test_a_node_is_imported_again_when_its_annotations_change(api):
    first = node("gpu-b", topology_annotations({(0, 1): "PIX"}), {"aliyun.com/gpu": "2"})
    assert nodes_filter(api, pod(resources={"aliyun.com/gpu": 2}), [first])["Nodes"]["items"]
    links = {(0, 1): "NV1", (0, 2): "SYS", (1, 2): "SYS"}
    grown = node("gpu-b", topology_annotations(links), {"aliyun.com/gpu": "3"})
    result = nodes_filter(api, pod(resources={"aliyun.com/gpu": 3}), [grown])
    assert result["Nodes"]["items"] == [grown]
    assert len(api.get("/group_resources/device_nodes/gpu-b").json["devices"]) == 3


@pytest.mark.parametrize(
    "annotations, allocatable, words",
    [
        (topology_annotations(DGX4), {"nvidia.com/gpu": "8"}, "describe 4 GPU(s)"),
        (
            {k: v for k, v in topology_annotations(DGX4).items() if "_1_3" not in k},
            {"nvidia.com/gpu": "4"},
            "no annotation links GPUs 1 and 3",
        ),
        ({**topology_annotations(DGX4), f"{TOPOLOGY}NV2_x_1": "?"}, {}, "is not"),
        ({f"{TOPOLOGY}NV2_0_1": "?"}, {}, "memory"),
        ({**topology_annotations(DGX4), f"{TOPOLOGY}PIX_1_0": "?"}, {}, "two links"),
        ({**topology_annotations({(0, 1): "QQ"})}, {}, "Malformed topology matrix"),
    ],
)
def test_annotations_that_do_not_read_make_the_node_unresolvable(
    api, annotations, allocatable, words
):
    bad = node("gpu-c", annotations, allocatable)
    result = nodes_filter(api, pod(resources={"nvidia.com/gpu": 1}), [bad])
    assert result["Nodes"] == {"items": []}
    assert words in result["FailedAndUnresolvableNodes"]["gpu-c"]
    assert result["Error"] == ""


def test_nodes_without_topology_annotations_use_the_device_nodes_imported(api):
    import_node(api, "imported", switch_box(gpus_per_switch=(2,), nics_per_switch=(0,)))
    result = nodes_filter(api, pod(resources={"nvidia.com/gpu": 2}), [node("imported")])
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["imported"]


# --- preempt ---------------------------------------------------------------------------


@pytest.fixture
def busy(api):
    """Two nodes of 2 GPUs, each GPU held by one pod."""
    holders = {}
    for name in ("n1", "n2"):
        import_node(api, name, switch_box(gpus_per_switch=(2,), nics_per_switch=(0,)))
        holders[name] = [
            claim(api, {"nvidia.com/gpu": 1}, nodes=[name], consumer_uuid=uid)["consumer_uuid"]
            for uid in (_uid(name, 1), _uid(name, 2))
        ]
    return holders


def _uid(name, i):
    return f"00000000-0000-4000-8000-0000000{int(name[1:]):02d}{i:03d}"


def meta(*uids):
    return {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": 0}


def test_preempt_keeps_the_nodes_where_the_victims_free_enough(api, busy):
    before = api.get(f"/allocations/{busy['n1'][0]}").json
    args = {
        "Pod": pod(resources={"nvidia.com/gpu": 2}),
        "NodeNameToMetaVictims": {
            "n1": meta(*busy["n1"]),
            "n2": meta(busy["n2"][0]),
            "unknown": meta(),
        },
    }
    response = call(api, "preempt", args)
    assert response.status_code == 200
    assert response.json == {"NodeNameToMetaVictims": {"n1": meta(*busy["n1"])}}
    # Nothing was written.
    assert api.get(f"/allocations/{busy['n1'][0]}").json == before
    filtered = call(
        api, "filter", {"Pod": pod(resources={"nvidia.com/gpu": 2}), "NodeNames": ["n1", "n2"]}
    ).json
    assert set(filtered["FailedNodes"]) == {"n1", "n2"}


def test_preempt_reads_keys_without_regard_to_case(api, busy):
    args = {
        "pod": pod(resources={"nvidia.com/gpu": 2}),
        "nodeNameToMetaVictims": {"n1": {"pods": [{"uid": u} for u in busy["n1"]]}},
    }
    assert call(api, "preempt", args).json == {"NodeNameToMetaVictims": {"n1": meta(*busy["n1"])}}


def test_preempt_reads_whole_victim_pods_too(api, busy):
    victims = {"Pods": [pod(uid=busy["n2"][0]), pod(uid=busy["n2"][1])], "NumPDBViolations": 1}
    args = {"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNameToVictims": {"n2": victims}}
    assert call(api, "preempt", args).json == {
        "NodeNameToMetaVictims": {
            "n2": {"Pods": [{"UID": busy["n2"][0]}, {"UID": busy["n2"][1]}], "NumPDBViolations": 1}
        }
    }


def test_preempt_refuses_what_does_not_read(api, busy):
    bad = {
        "Pod": pod(resources={"nvidia.com/gpu": 1}),
        "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "not-a-uuid"}]}},
    }
    assert "not a UUID" in call(api, "preempt", bad).json["Error"]
    bad = {"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNameToMetaVictims": {"n1": 3}}
    assert "object" in call(api, "preempt", bad).json["Error"]


# --- who may call ----------------------------------------------------------------------

REMOTE = {"REMOTE_ADDR": "10.1.2.3"}


def test_a_remote_client_without_a_token_is_refused_and_nothing_else_opens(api):
    body = {"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNames": []}
    refused = call(api, "filter", body, environ=REMOTE)
    assert refused.status_code == 403 and "Error" in refused.json
    # From loopback, no token, no microversion: admitted.
    assert call(api, "filter", body).status_code == 200
    # Any other route still wants its token from loopback too.
    assert api.client.get("/resource_providers").status_code == 401


@pytest.fixture
def token_api(config, engine, tmp_path):
    from placement.app import create_app
    from tests.conftest import Api

    tokens = tmp_path / "tokens"
    tokens.write_text("admin admin-secret\nreader reader-secret\n", encoding="utf-8")
    app = create_app(
        config.replace(
            auth_strategy="token",
            tokens_file=str(tokens),
            k8s_scheduler_clients=("192.0.2.0/24",),
            k8s_scheduler_prefix="/ext",
        ),
        engine=engine,
    )
    return Api(app.test_client())


def test_scheduler_clients_and_policy_under_token_auth(token_api):
    body = json.dumps({"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNames": ["x"]})

    def post(environ, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["X-Auth-Token"] = token
        return token_api.client.post(
            "/ext/filter", data=body, headers=headers, environ_base=environ
        )

    assert post({"REMOTE_ADDR": "192.0.2.7"}).status_code == 200
    assert post({"REMOTE_ADDR": "127.0.0.1"}).status_code == 401
    assert post(REMOTE, "admin-secret").status_code == 200
    assert post(REMOTE, "reader-secret").status_code == 403
    assert token_api.client.post("/k8s/scheduler/filter", data=body).status_code in (401, 404)


def test_no_scheduler_clients_means_a_token_from_everywhere(api, config, engine):
    from placement.app import create_app

    app = create_app(config.replace(k8s_scheduler_clients=()), engine=engine)
    body = json.dumps({"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNames": []})
    client = app.test_client()
    for environ in ({}, {"REMOTE_ADDR": ""}):
        assert (
            client.post(
                "/k8s/scheduler/filter",
                data=body,
                environ_base=environ,
                headers={"Content-Type": "application/json"},
            ).status_code
            == 401
        )
    with_token = client.post(
        "/k8s/scheduler/filter",
        data=body,
        headers={"Content-Type": "application/json", "X-Auth-Token": "admin"},
    )
    assert with_token.status_code == 200


def test_under_keystone_only_the_scheduler_addresses_pass_by_without_a_token(
    config, engine, tmp_path
):
    """keystonemiddleware lets the verbs by from [k8s] scheduler_clients only: any other
    client's request is checked by it (no token: its own 401), so identity headers a client
    forges never reach the policy."""
    from placement.app import create_app

    conf = tmp_path / "placement.conf"
    conf.write_text(
        "[api]\nauth_strategy = keystone\n[keystone_authtoken]\n"
        "www_authenticate_uri = http://127.0.0.1:9/identity\n"
        "auth_url = http://127.0.0.1:9/identity\n",
        encoding="utf-8",
    )
    app = create_app(config.replace(auth_strategy="keystone", source_file=str(conf)), engine=engine)
    body = json.dumps({"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNames": []})
    forged = {
        "Content-Type": "application/json",
        "X-Identity-Status": "Confirmed",
        "X-Roles": "admin",
        "X-Project-Id": "p",
        "X-User-Id": "u",
    }
    client = app.test_client()
    assert (
        client.post(
            "/k8s/scheduler/filter", data=body, headers=forged, environ_base=REMOTE
        ).status_code
        == 401
    )
    admitted = client.post(
        "/k8s/scheduler/filter", data=body, headers={"Content-Type": "application/json"}
    )
    assert admitted.status_code == 200 and admitted.json["Error"] == ""
