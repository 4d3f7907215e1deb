"""kube-scheduler's binds at once, through gunicorn's workers, on either database: no device
is ever given twice, a refused bind leaves nothing behind, and a pod bound twice at once
is bound once."""

import json

import pytest
import requests

from tests.functional.gunicorn import race, running_gunicorn
from tests.k8s_api_server import FakeApiServer, binding_args, kubeconfig, running

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
SCHEDULER = {"Content-Type": "application/json"}
FOUR_GPUS = {
    "devices": [
        {"type": "gpu", "minor": m, "numa": 0, "pcie": m // 2, "memory": "16Gi", "id": f"GPU-{m}"}
        for m in range(4)
    ]
}
PODS = 8  # each asks one GPU: twice what the node has


def _pod(i: int) -> dict:
    return {
        "metadata": {
            "name": f"p{i}",
            "namespace": "ml",
            "uid": f"00000000-0000-4000-8000-{i:012d}",
        },
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Pending"},
    }


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def served(request, empty_database_url, tmp_path):
    with running(FakeApiServer()) as apiserver:
        path = tmp_path / "kubeconfig"
        path.write_text(kubeconfig(apiserver.url), encoding="utf-8")
        url = empty_database_url(request.param)
        with running_gunicorn(
            url, tmp_path, workers=4, extra_env={"PLACEMENT_K8S_KUBECONFIG": str(path)}
        ) as base:
            yield base, apiserver


def _bind(base: str, pod: dict):
    body = json.dumps(binding_args(pod, "n"))
    return requests.post(f"{base}/k8s/scheduler/bind", data=body, headers=SCHEDULER, timeout=60)


@pytest.mark.slow
def test_binds_at_once_never_share_a_device(served):
    base, apiserver = served
    created = requests.put(
        f"{base}/group_resources/device_nodes/n", json=FOUR_GPUS, headers=HEADERS, timeout=60
    )
    assert created.status_code == 201, created.text
    gpus = [device["provider"] for device in created.json()["devices"]]
    pods = [_pod(i) for i in range(PODS)]
    for pod in pods:
        apiserver.add_pod(pod)
    # One pod is sent twice at once, as a retry racing its first try.
    responses = race([lambda pod=pod: _bind(base, pod) for pod in [*pods, pods[0]]])
    assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
    errors = [r.json()["Error"] for r in responses]
    # Either try of the pod sent twice may be the one that binds it.
    bound = {
        pod["metadata"]["uid"]
        for pod, error in zip([*pods, pods[0]], errors, strict=True)
        if not error
    }
    assert len(bound) == 4, errors
    # Each GPU is held by exactly one pod, whole, and the pods holding them are those bound.
    holders = []
    for gpu in gpus:
        held = requests.get(
            f"{base}/resource_providers/{gpu}/allocations", headers=HEADERS, timeout=60
        ).json()["allocations"]
        assert len(held) == 1, held
        [(holder, allocation)] = held.items()
        assert allocation["resources"]["CUSTOM_GPU_TENANCY"] == 1000
        holders.append(holder)
    assert set(holders) == bound
    # The API bound exactly those, once each; the others hold nothing.
    bindings = [r.body["metadata"]["uid"] for r in apiserver.calls("POST")]
    assert sorted(bindings) == sorted(bound)
    for pod in pods:
        uid = pod["metadata"]["uid"]
        if uid not in bound:
            held = requests.get(f"{base}/allocations/{uid}", headers=HEADERS, timeout=60)
            assert held.json()["allocations"] == {}
