"""The samples of etc/ configure kube-scheduler to call verbs this service answers: each
verb they name, under the path of their urlPrefix, is answered from loopback."""

import json
import pathlib
from urllib.parse import urlparse

import pytest
import yaml

from tests.api.device_helpers import import_node, switch_box
from tests.api.k8s_helpers import SCHEDULER_HEADERS, pod

ETC = pathlib.Path(__file__).resolve().parents[2] / "etc"
VERB_KEYS = ("filterverb", "prioritizeverb", "preemptverb", "bindverb")


def _extenders(name: str) -> list[dict]:
    text = (ETC / name).read_text(encoding="utf-8")
    document = yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text)
    return document["extenders"]


@pytest.mark.parametrize("sample", ["kube-scheduler-config.yaml", "kube-scheduler-policy.json"])
def test_every_verb_of_the_samples_is_answered(api, sample):
    import_node(api, "gpu-1", switch_box(gpus_per_switch=(2,), nics_per_switch=(0,)))
    [extender] = _extenders(sample)
    # Go reads the configuration's keys without regard to case (PrioritizeVerb).
    settings = {key.lower(): value for key, value in extender.items()}
    assert settings["nodecachecapable"] is True and settings["ignorable"] is False
    prefix = urlparse(settings["urlprefix"]).path
    verbs = {key: settings[key] for key in VERB_KEYS if key in settings}
    assert {"prioritizeverb", "bindverb"} <= set(verbs)
    asking = pod(resources={"aliyun.com/gpu": 2})
    bodies = {
        "filterverb": {"Pod": asking, "NodeNames": ["gpu-1"]},
        "prioritizeverb": {"Pod": asking, "NodeNames": ["gpu-1"]},
        "preemptverb": {"Pod": asking, "NodeNameToMetaVictims": {}},
        # No Kubernetes API here: the bind is refused, in the protocol's words.
        "bindverb": {
            "PodName": "p",
            "PodNamespace": "d",
            "PodUID": asking["metadata"]["uid"],
            "Node": "gpu-1",
        },
    }
    for key, verb in verbs.items():
        response = api.client.post(
            f"{prefix}/{verb}", data=json.dumps(bodies[key]), headers=SCHEDULER_HEADERS
        )
        assert response.status_code == 200, (verb, response.get_data(as_text=True))
    sorted_ = api.client.post(
        f"{prefix}/{verbs['prioritizeverb']}",
        data=json.dumps(bodies["prioritizeverb"]),
        headers=SCHEDULER_HEADERS,
    )
    assert sorted_.json == [{"Host": "gpu-1", "Score": 10}]
