"""Pods, nodes and calls of kube-scheduler's extender, as the scheduler sends them."""

import json
import uuid

from placement.app import create_app
from tests.conftest import Api
from tests.k8s_api_server import kubeconfig

PREFIX = "/k8s/scheduler"
# kube-scheduler sends JSON, no token, no microversion.
SCHEDULER_HEADERS = {"Content-Type": "application/json"}


def pod(
    name="gpu-pod",
    resources=None,
    init=(),
    annotations=None,
    uid=None,
    namespace="default",
    limits_only=False,
    node_name=None,
) -> dict:
    """A v1.Pod as the scheduler serializes it: one container asking ``resources``
    (quantities as strings), and an init container per mapping of ``init``."""

    def container(container_name, asked):
        asked = {key: str(value) for key, value in (asked or {}).items()}
        if limits_only:
            return {"name": container_name, "image": "cuda:12", "resources": {"limits": asked}}
        return {
            "name": container_name,
            "image": "cuda:12",
            "resources": {"limits": asked, "requests": asked},
        }

    spec: dict = {
        "containers": [container("main", resources)],
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
    }
    if init:
        spec["initContainers"] = [container(f"init-{i}", asked) for i, asked in enumerate(init)]
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or str(uuid.uuid4()),
            "annotations": annotations or {},
            "creationTimestamp": "2026-11-27T09:00:00Z",
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def node(name, annotations=None, allocatable=None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": annotations or {},
            "labels": {"kubernetes.io/hostname": name},
        },
        "status": {
            "allocatable": allocatable or {"cpu": "64", "memory": "512Gi"},
            "capacity": allocatable or {"cpu": "64", "memory": "512Gi"},
        },
    }


def call(api, verb, body, environ=None, headers=None, raw=None):
    """POST a verb as kube-scheduler does (from loopback unless ``environ`` says)."""
    return api.client.post(
        PREFIX + "/" + verb,
        data=raw if raw is not None else json.dumps(body),
        headers={**SCHEDULER_HEADERS, **(headers or {})},
        environ_base=environ or {},
    )


def filter_names(api, pod_body, names, **kwargs) -> dict:
    response = call(api, "filter", {"Pod": pod_body, "NodeNames": names}, **kwargs)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json


def api_with_cluster(config, engine, tmp_path, url) -> Api:
    """An application whose Kubernetes API is the server at ``url`` (a kubeconfig file)."""
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig(url), encoding="utf-8")
    return Api(create_app(config.replace(k8s_kubeconfig=str(path)), engine=engine).test_client())
