"""A bounded fuzz of the extender's verbs: real messages with fields mutated, arbitrary
JSON or bytes, sent as kube-scheduler sends them. Never a 5xx; every error is the
protocol's ``{"Error": ...}``, a 200 but for prioritize. Derandomized."""

import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.device_helpers import import_node, switch_box
from tests.api.k8s_helpers import PREFIX, SCHEDULER_HEADERS, node, pod
from tests.api.test_fuzz_routes import json_values, mutated

EXAMPLES_PER_VERB = 150
UID = "6f1d3a5b-0b2c-4d66-9e1f-2a3b4c5d6e01"
ASKING = pod(
    resources={"nvidia.com/gpu": 2, "koordinator.sh/rdma": 1},
    init=[{"cpu": "1"}],
    annotations={
        "scheduling.koordinator.sh/device-joint-allocate": json.dumps(
            {"deviceTypes": ["gpu", "rdma"]}
        )
    },
    uid=UID,
)
ARGS = {"Pod": ASKING, "NodeNames": ["box", "nowhere"]}
NODES = {
    "Pod": ASKING,
    "Nodes": {
        "items": [
            node("box"),
            node(
                "gpu",
                {"gpu-topology.placement/NV1_0_1": "x", "gpu-topology.placement/memory": "8Gi"},
            ),
        ]
    },
}
REAL = {
    "filter": [ARGS, NODES],
    "prioritize": [ARGS, NODES],
    "preempt": [
        {"Pod": ASKING, "NodeNameToMetaVictims": {"box": {"Pods": [{"UID": UID}]}}},
        {"Pod": ASKING, "NodeNameToVictims": {"box": {"Pods": [ASKING]}}},
    ],
    # No Kubernetes API here: a bind that reads gets as far as its configuration.
    "bind": [{"PodName": "p", "PodNamespace": "d", "PodUID": UID, "Node": "box"}],
}


def bodies(verb: str) -> st.SearchStrategy:
    shaped = [st.sampled_from(REAL[verb]), *(mutated(body) for body in REAL[verb])]
    as_json = st.one_of(*shaped, *shaped, json_values).map(lambda v: json.dumps(v).encode())
    return st.one_of(as_json, as_json, st.binary(max_size=40), st.just(b"{"))


@pytest.mark.parametrize("verb", sorted(REAL))
def test_no_verb_answers_5xx(api, caplog, verb):
    import_node(api, "box", switch_box(gpus_per_switch=(2, 2), nics_per_switch=(1, 1)))

    @settings(
        max_examples=EXAMPLES_PER_VERB,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(body=bodies(verb))
    def fuzz(body):
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            response = api.client.post(f"{PREFIX}/{verb}", data=body, headers=SCHEDULER_HEADERS)
        described = f"{verb} {body!r} -> {response.status_code} {response.get_data()[:300]!r}"
        assert response.status_code in ((200, 400) if verb == "prioritize" else (200,)), described
        answer = response.json
        if isinstance(answer, dict) and answer.get("Error"):
            assert not caplog.records, described
        elif verb == "prioritize":
            assert isinstance(answer, list), described

    fuzz()
