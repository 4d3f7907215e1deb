"""Koordinator's Device objects (over HTTP and from the CLI), and ``placement k8s
reconcile``: the pods' devices released when the pods are gone or finished, against the
stand-in API server."""

import copy
import json

import pytest

from placement.cli import main as cli
from tests.api.device_helpers import import_node, switch_box
from tests.api.k8s_helpers import api_with_cluster, call, pod
from tests.k8s_api_server import FakeApiServer, binding_args, kubeconfig, running

CHECKPOINTED = "fa8983dc-bb76-4eeb-8dcc-556fbd44d7ce"

# Koordinator's Device CRD example (node-1, two GPUs, one of them in kubelet's checkpoint).
DEVICE = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "Device",
    "metadata": {
        "name": "node-1",
        "annotations": {
            "node.koordinator.sh/gpu-checkpoints": json.dumps(
                [
                    {
                        "podUID": CHECKPOINTED,
                        "containerName": "cuda-container",
                        "resourceName": "nvidia.com/gpu",
                        "deviceIDs": ["GPU-7f6410b9-bdf7-f9a5-de09-aa5ec31a7124"],
                    }
                ]
            )
        },
    },
    "spec": {
        "devices": [
            {
                "health": True,
                "id": "GPU-98583a5c-c155-9cf6-f955-03c189d3dbfb",
                "minor": 0,
                "resources": {
                    "kubernetes.io/gpu-core": "100",
                    "kubernetes.io/gpu-memory": "15472384Ki",
                    "kubernetes.io/gpu-memory-ratio": "100",
                },
                "type": "gpu",
            },
            {
                "health": True,
                "id": "GPU-7f6410b9-bdf7-f9a5-de09-aa5ec31a7124",
                "minor": 1,
                "resources": {
                    "kubernetes.io/gpu-core": "100",
                    "kubernetes.io/gpu-memory": "15472384Ki",
                    "kubernetes.io/gpu-memory-ratio": "100",
                },
                "type": "gpu",
            },
        ]
    },
    "status": {},
}
ROUTE = "/group_resources/device_nodes/node-1/koordinator_device"


def test_a_device_object_is_imported_with_its_checkpoint(api):
    response = api.put(ROUTE, json=DEVICE)
    assert response.status_code == 200, response.json
    body = response.json
    assert body["changed"] is True
    assert [(d["minor"], d["id"], d["memory"]) for d in body["devices"]] == [
        (0, "GPU-98583a5c-c155-9cf6-f955-03c189d3dbfb", "15472384Ki"),
        (1, "GPU-7f6410b9-bdf7-f9a5-de09-aa5ec31a7124", "15472384Ki"),
    ]
    assert body["devices"][1]["inventories"]["tenancy"]["used"] == 1000  # held by the pod
    assert body["devices"][0]["inventories"]["tenancy"]["used"] == 0
    assert api.put(ROUTE, json=DEVICE).json["changed"] is False
    # A health left out is false, as Koordinator reads it: that GPU is not chosen.
    sick = copy.deepcopy(DEVICE)
    del sick["spec"]["devices"][0]["health"]
    assert api.put(ROUTE, json=sick).json["devices"][0]["health"] is False
    result = call(
        api, "filter", {"Pod": pod(resources={"nvidia.com/gpu": 1}), "NodeNames": ["node-1"]}
    ).json
    # The other GPU is the checkpointed pod's: evicting it would help.
    assert result["FailedNodes"] == {
        "node-1": "gpu: 1 device(s) needed, 0 can give the request (1 unhealthy)"
    }


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d["metadata"].update(name="node-2"), "node node-2's, not node-1's"),
        (lambda d: d.update(kind="Node"), "Expected a Device"),
        (lambda d: d["spec"].update(devices=[]), "a list of devices"),
        (
            lambda d: d["metadata"]["annotations"].update(
                {"node.koordinator.sh/gpu-checkpoints": "{"}
            ),
            "not JSON",
        ),
        (lambda d: d["spec"]["devices"][0].update(type="tpu"), "tpu"),
        (lambda d: d.pop("spec"), "spec"),
    ],
)
def test_device_objects_that_do_not_read_are_refused(api, change, words):
    document = copy.deepcopy(DEVICE)
    change(document)
    response = api.put(ROUTE, json=document)
    assert response.status_code == 400
    assert words in response.json["errors"][0]["detail"]


def test_the_cli_imports_a_device_object(run, tmp_path, capsys):
    path = tmp_path / "device.json"
    path.write_text(json.dumps(DEVICE), encoding="utf-8")
    assert cli.main(["k8s", "device", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "node-1", "changed": True}


@pytest.fixture
def apiserver():
    with running(FakeApiServer(page_size=2)) as server:
        yield server


@pytest.fixture
def run(config, monkeypatch, tmp_path, apiserver):
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig(apiserver.url), encoding="utf-8")
    monkeypatch.setenv("PLACEMENT_DATABASE_URL", config.database_url)
    monkeypatch.setenv("PLACEMENT_K8S_KUBECONFIG", str(path))
    monkeypatch.delenv("PLACEMENT_CONFIG_FILE", raising=False)


def test_reconcile_releases_what_gone_and_finished_pods_hold(
    config, engine, tmp_path, run, apiserver, capsys
):
    api = api_with_cluster(config, engine, tmp_path, apiserver.url)
    apiserver.devices = [DEVICE]
    assert cli.main(["k8s", "reconcile"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first == {"released": [], "nodes": ["node-1"], "refused": {}}
    # Three pods bound through the extender's claim path; one finishes, one goes away.
    pods = [pod(name=f"p{i}", resources={"nvidia.com/gpu": 1}) for i in range(3)]
    import_node(api, "spare", switch_box(gpus_per_switch=(2, 2), nics_per_switch=(0, 0)))
    for each in pods:
        apiserver.add_pod(each)
    for each in pods:
        assert call(api, "bind", binding_args(each, "spare")).json == {"Error": ""}
    apiserver.pods[("default", "p0")]["status"]["phase"] = "Succeeded"
    del apiserver.pods[("default", "p1")]
    apiserver.devices = []
    assert cli.main(["k8s", "reconcile", "--no-devices"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert sorted(done["released"]) == sorted(p["metadata"]["uid"] for p in pods[:2])
    for each, held in zip(pods, (False, False, True), strict=True):
        allocations = api.get(f"/allocations/{each['metadata']['uid']}").json["allocations"]
        assert bool(allocations) is held
    # The checkpoint's pod is not the extender's: reconcile leaves it alone.
    usage = api.get("/group_resources/device_nodes/node-1").json
    assert usage["devices"][1]["inventories"]["tenancy"]["used"] == 1000
    assert cli.main(["k8s", "release", pods[2]["metadata"]["uid"].upper()]) == 0
    assert json.loads(capsys.readouterr().out) == {"released": [pods[2]["metadata"]["uid"]]}


def test_reconcile_says_when_the_api_refuses(api, run, apiserver, capsys):
    apiserver.refuse[("GET", "pods")] = (403, "pods is forbidden")
    assert cli.main(["k8s", "reconcile", "--no-devices"]) == 1
    assert "refused listing pods: 403 pods is forbidden" in capsys.readouterr().err


def test_reconcile_with_an_interval_runs_until_stopped(api, run, apiserver, capsys, monkeypatch):
    from placement.cli import k8s as k8s_commands

    rounds = []

    def sleep(seconds):
        rounds.append(seconds)
        apiserver.devices = [DEVICE] if len(rounds) == 1 else []
        if len(rounds) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(k8s_commands.time, "sleep", sleep)
    with pytest.raises(KeyboardInterrupt):
        cli.main(["k8s", "reconcile", "--interval", "0.5"])
    assert rounds == [0.5, 0.5, 0.5]
    # The second round read the Device object the first did not see.
    assert api.get("/group_resources/device_nodes/node-1").status_code == 200
    assert [r.path for r in apiserver.calls("GET")].count("/api/v1/pods?limit=500") == 3
