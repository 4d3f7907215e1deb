"""kube-scheduler's bind verb: the devices claimed for the pod's uid, the pod annotated
with them and bound, through the official client, against a stand-in API server that
records the calls (``tests.k8s_api_server``)."""

import json

import pytest

from placement.app import create_app
from tests import k8s_api_server
from tests.api.device_helpers import import_node, switch_box
from tests.api.k8s_helpers import api_with_cluster, call, filter_names, pod
from tests.conftest import Api
from tests.k8s_api_server import FakeApiServer, running

ALLOCATED = "scheduling.koordinator.sh/device-allocated"


@pytest.fixture
def apiserver():
    with running(FakeApiServer()) as server:
        yield server


@pytest.fixture
def k8s_api(config, engine, tmp_path, apiserver):
    api = api_with_cluster(config, engine, tmp_path, apiserver.url)
    import_node(
        api,
        "gpu-1",
        switch_box(gpus_per_switch=(2, 2), nics_per_switch=(0, 0), switches_per_numa=1),
    )
    return api


def binding_args(pod_body, node="gpu-1"):
    return k8s_api_server.binding_args(pod_body, node)


def test_bind_claims_annotates_and_binds(k8s_api, apiserver):
    asking = pod(resources={"nvidia.com/gpu": 2})
    apiserver.add_pod(asking)
    assert filter_names(k8s_api, asking, ["gpu-1"])["NodeNames"] == ["gpu-1"]
    response = call(k8s_api, "bind", binding_args(asking))
    assert response.status_code == 200
    assert response.json == {"Error": ""}
    uid = asking["metadata"]["uid"]
    held = k8s_api.get(f"/allocations/{uid}").json
    assert held["project_id"] == "default" and held["user_id"] == "kube-scheduler"
    assert len(held["allocations"]) >= 2
    read, patch, bind = apiserver.requests
    assert (read.method, read.path) == ("GET", "/api/v1/namespaces/default/pods/gpu-pod")
    assert (patch.method, patch.content_type) == ("PATCH", "application/merge-patch+json")
    allocated = json.loads(patch.body["metadata"]["annotations"][ALLOCATED])
    # The two GPUs of one switch, whole.
    assert [d["minor"] for d in allocated["gpu"]] == [0, 1]
    assert allocated["gpu"][0]["resources"]["kubernetes.io/gpu-core"] == "100"
    assert bind.path == "/api/v1/namespaces/default/bindings"
    assert bind.body["metadata"]["name"] == "gpu-pod"
    assert bind.body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "gpu-1"}
    assert bind.body["metadata"]["uid"] == uid
    # Bound again (a retry): nothing more is claimed or called.
    assert call(k8s_api, "bind", binding_args(asking)).json == {"Error": ""}
    assert len(apiserver.requests) == 3
    assert k8s_api.get(f"/allocations/{uid}").json["allocations"] == held["allocations"]
    # The same pod to another node is refused.
    import_node(k8s_api, "gpu-2", switch_box(gpus_per_switch=(2,), nics_per_switch=(0,)))
    elsewhere = call(k8s_api, "bind", binding_args(asking, node="gpu-2")).json
    assert "already holds devices" in elsewhere["Error"]


@pytest.mark.parametrize(
    "refused, status",
    [
        (("PATCH", "pod"), 403),
        (("POST", "binding"), 409),
        (("GET", "pod"), 404),
    ],
)
def test_a_refusal_of_the_api_releases_the_claim(k8s_api, apiserver, refused, status):
    asking = pod(resources={"nvidia.com/gpu": 4})
    apiserver.add_pod(asking)
    apiserver.refuse[refused] = (status, "not today")
    response = call(k8s_api, "bind", binding_args(asking))
    assert response.status_code == 200
    assert response.json["Error"].startswith("The Kubernetes API refused")
    assert f"{status} not today" in response.json["Error"]
    assert k8s_api.get(f"/allocations/{asking['metadata']['uid']}").json["allocations"] == {}
    # Every GPU is still free: another pod takes them all.
    other = pod(name="other", resources={"nvidia.com/gpu": 4})
    apiserver.add_pod(other)
    apiserver.refuse.clear()
    assert call(k8s_api, "bind", binding_args(other)).json == {"Error": ""}


def test_a_pod_made_again_under_its_name_is_not_bound(k8s_api, apiserver):
    asking = pod(resources={"nvidia.com/gpu": 1})
    apiserver.add_pod(pod(resources={"nvidia.com/gpu": 1}))  # same name, another uid
    error = call(k8s_api, "bind", binding_args(asking)).json["Error"]
    assert "deleted and made again" in error
    assert [r.method for r in apiserver.requests] == ["GET"]


def test_a_pod_that_asks_for_no_device_is_bound_with_nothing_claimed(k8s_api, apiserver):
    plain = pod(resources={"cpu": "1"})
    apiserver.add_pod(plain)
    assert call(k8s_api, "bind", binding_args(plain)).json == {"Error": ""}
    assert [r.method for r in apiserver.requests] == ["GET", "POST"]
    assert k8s_api.get(f"/allocations/{plain['metadata']['uid']}").json["allocations"] == {}


def test_no_device_left_on_the_node_is_an_error(k8s_api, apiserver):
    asking = pod(resources={"nvidia.com/gpu": 5})
    apiserver.add_pod(asking)
    error = call(k8s_api, "bind", binding_args(asking)).json["Error"]
    assert "gpu: 5 device(s) needed, 4 can give the request" in error
    assert [r.method for r in apiserver.requests] == ["GET"]


def test_unreachable_api_and_malformed_bodies(config, engine, tmp_path):
    api = api_with_cluster(config, engine, tmp_path, "http://127.0.0.1:9")
    asking = pod(resources={"nvidia.com/gpu": 1})
    assert "could not be reached" in call(api, "bind", binding_args(asking)).json["Error"]
    for body in ({"PodName": "x"}, {**binding_args(asking), "PodUID": "nope"}, []):
        response = call(api, "bind", body)
        assert response.status_code == 200 and response.json["Error"]
    missing = Api(
        create_app(
            config.replace(k8s_kubeconfig=str(tmp_path / "none")), engine=engine
        ).test_client()
    )
    assert "cannot be configured" in call(missing, "bind", binding_args(asking)).json["Error"]
