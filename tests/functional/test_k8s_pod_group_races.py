"""Two pod groups after one network domain, their pods bound at once through gunicorn's
workers, on each database: each group ends with its own gang, every pod holds the
member on its node, and no GPU is given twice, nor held by a placeholder at the end."""

import json

import pytest
import requests

from tests.functional.gunicorn import race, running_gunicorn
from tests.functional.test_k8s_concurrent_binds import FOUR_GPUS, HEADERS, SCHEDULER
from tests.k8s_api_server import FakeApiServer, binding_args, kubeconfig_file, running

# Two leaves of two nodes: each group of two fits one leaf, and both want l0 first.
NETWORK = {
    "levels": ["spine", "leaf"],
    "nodes": {
        "n0": {"spine": "s0", "leaf": "l0"},
        "n1": {"spine": "s0", "leaf": "l0"},
        "n2": {"spine": "s0", "leaf": "l1"},
        "n3": {"spine": "s0", "leaf": "l1"},
    },
}
ROUNDS = 8


def _pod(group: str, index: int, group_number: int) -> dict:
    return {
        "metadata": {
            "name": f"{group}-{index}",
            "namespace": "ml",
            "uid": f"00000000-0000-4000-8000-{group_number:06d}{index:06d}",
            "labels": {"scheduling.x-k8s.io/pod-group": group},
        },
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        "status": {"phase": "Pending"},
    }


def _pod_group(name: str) -> dict:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"minMember": 2},
    }


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def served(request, empty_database_url, tmp_path):
    """gunicorn's workers on a new database, the pod groups' required level a leaf."""
    with running(FakeApiServer()) as apiserver:
        env = {
            "PLACEMENT_K8S_KUBECONFIG": kubeconfig_file(tmp_path, apiserver.url),
            "PLACEMENT_K8S_GANG_REQUIRED_LEVEL": "leaf",
        }
        database = empty_database_url(request.param)
        with running_gunicorn(database, tmp_path, workers=4, extra_env=env) as base:
            yield base, apiserver


def _verb(base: str, verb: str, body: dict) -> requests.Response:
    return requests.post(
        f"{base}/k8s/scheduler/{verb}", data=json.dumps(body), headers=SCHEDULER, timeout=60
    )


@pytest.mark.slow
def test_two_groups_binding_at_once_each_get_a_gang_and_nothing_is_given_twice(served):
    base, apiserver = served
    gpus = []
    for node in NETWORK["nodes"]:
        created = requests.put(
            f"{base}/group_resources/device_nodes/{node}",
            json=FOUR_GPUS,
            headers=HEADERS,
            timeout=60,
        )
        assert created.status_code == 201, created.text
        gpus += [device["provider"] for device in created.json()["devices"]]
    placed = requests.put(
        f"{base}/group_resources/network", json=NETWORK, headers=HEADERS, timeout=60
    )
    assert placed.status_code == 200, placed.text
    pods = []
    for number, group in enumerate(("a", "b")):
        apiserver.add_pod_group(_pod_group(group))
        pods += [_pod(group, index, number) for index in range(2)]
    for pod in pods:
        apiserver.add_pod(pod)

    # As the scheduler does: filter each pod waiting, then bind it to a node that
    # passed; all binds of a round at once; a refused bind is scheduled again.
    waiting = list(pods)
    for _ in range(ROUNDS):
        chosen = []
        for pod in waiting:
            answer = _verb(base, "filter", {"Pod": pod, "NodeNames": list(NETWORK["nodes"])})
            assert answer.status_code == 200 and answer.json()["Error"] == "", answer.text
            names = answer.json()["NodeNames"]
            if names:
                chosen.append((pod, names[0]))
        responses = race(
            [lambda p=p, n=n: _verb(base, "bind", binding_args(p, n)) for p, n in chosen]
        )
        bound = {
            p["metadata"]["uid"]
            for (p, _), r in zip(chosen, responses, strict=True)
            if r.json()["Error"] == ""
        }
        waiting = [pod for pod in waiting if pod["metadata"]["uid"] not in bound]
        if not waiting:
            break
    assert waiting == []

    # Every GPU is held by one pod, whole (so by no placeholder); each group in one leaf.
    held_by: dict[str, str] = {}
    for pod in pods:
        uid = pod["metadata"]["uid"]
        answer = requests.get(f"{base}/allocations/{uid}", headers=HEADERS, timeout=60)
        for provider, allocation in answer.json()["allocations"].items():
            if provider in gpus:
                assert allocation["resources"]["CUSTOM_GPU_TENANCY"] == 1000
                assert provider not in held_by, (provider, uid, held_by[provider])
                held_by[provider] = uid
    assert sorted(held_by) == sorted(gpus)
    nodes = {}
    for bind in apiserver.calls("POST"):
        nodes[bind.body["metadata"]["name"]] = bind.body["target"]["name"]
    assert len(nodes) == 4 and len(set(nodes.values())) == 4
    leaf = {node: place["leaf"] for node, place in NETWORK["nodes"].items()}
    assert leaf[nodes["a-0"]] == leaf[nodes["a-1"]]
    assert leaf[nodes["b-0"]] == leaf[nodes["b-1"]]
    assert leaf[nodes["a-0"]] != leaf[nodes["b-0"]]
