"""A pod's effective device requests, as Kubernetes computes a pod's requests: the
containers' sum against each init container, sidecars beside both, the overhead added."""

from fractions import Fraction

import pytest
from kubernetes.client import V1Pod

from placement import errors
from placement.k8s.pod_requests import effective_requests, pod_device_request
from placement.nodes.naming import Naming


def _pod(containers=(), init=(), overhead=None) -> V1Pod:
    def container(name, asked, restart=None, limits_only=False):
        asked = {key: str(value) for key, value in asked.items()}
        resources = {"limits": asked} if limits_only else {"requests": asked}
        entry = {"name": name, "resources": resources}
        if restart:
            entry["restartPolicy"] = restart
        return entry

    spec = {
        "containers": [container(f"c{i}", *c) for i, c in enumerate(containers)],
        "initContainers": [container(f"i{i}", *c) for i, c in enumerate(init)],
    }
    if overhead:
        spec["overhead"] = {key: str(value) for key, value in overhead.items()}
    return V1Pod.from_dict({"metadata": {"name": "p"}, "spec": spec})


GPU = "nvidia.com/gpu"


@pytest.mark.parametrize(
    "pod, expected",
    [
        (_pod([({GPU: 1},), ({GPU: 2},)]), {GPU: 3}),
        (_pod([({GPU: 1},)], init=[({GPU: 2},), ({GPU: 4},)]), {GPU: 4}),
        (_pod([({GPU: 3},)], init=[({GPU: 2},)]), {GPU: 3}),
        # A sidecar (restartable init container) runs beside the later init containers and
        # beside the containers.
        (_pod([({GPU: 1},)], init=[({GPU: 1}, "Always"), ({GPU: 2},)]), {GPU: 3}),
        (_pod([({GPU: 2},)], init=[({GPU: 1}, "Always")]), {GPU: 3}),
        # Limits stand for requests; aliyun.com/gpu is nvidia.com/gpu; cpu is not a device.
        (_pod([({GPU: 1, "cpu": "500m"}, None, True), ({"aliyun.com/gpu": 2},)]), {GPU: 3}),
        (
            _pod(
                [({"kubernetes.io/gpu-memory": "1Gi"},)],
                overhead={"kubernetes.io/gpu-memory": "1Mi"},
            ),
            {"kubernetes.io/gpu-memory": Fraction(2**30 + 2**20)},
        ),
        (_pod([({"cpu": 2},)]), {}),
    ],
)
def test_effective_requests(pod, expected):
    assert effective_requests(pod) == expected


def test_a_pod_without_devices_asks_nothing_and_fractions_are_refused():
    assert pod_device_request(_pod([({"cpu": 1},)]), Naming()) is None
    request = pod_device_request(_pod([({GPU: 2},)]), Naming())
    assert request is not None and request.types["gpu"].count == 2
    with pytest.raises(errors.BadRequest, match="not a whole amount"):
        pod_device_request(_pod([({GPU: "500m"},)]), Naming())
    with pytest.raises(errors.BadRequest, match="needs a spec"):
        effective_requests(V1Pod.from_dict({"metadata": {"name": "p"}}))
