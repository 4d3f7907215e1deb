"""Reading kubelet's device checkpoint entries, without a database."""

import uuid

import pytest

from placement.devices.checkpoints import (
    CHECKPOINT_NAMESPACE,
    checkpoints_from_body,
    consumer_uuid,
    device_type_of,
)
from placement.schemas import validate
from placement.schemas.devices import ImportCheckpoints


@pytest.mark.parametrize(
    ("name", "device_type"),
    [
        ("nvidia.com/gpu", "gpu"),
        ("kubernetes.io/gpu", "gpu"),
        ("koordinator.sh/rdma", "rdma"),
        ("kubernetes.io/fpga", "fpga"),
        ("koordinator.sh/gpu-core", None),
        ("nvidia.com/rdma", None),
        ("rdma", None),
        ("example.com/gpu", None),
    ],
)
def test_the_resource_name_gives_the_device_type(name, device_type):
    assert device_type_of(name) == device_type


def test_a_pods_consumer_is_the_same_on_every_report_and_not_the_pods_uid():
    pod = "fa8983dc-bb76-4eeb-8dcc-556fbd44d7ce"
    assert consumer_uuid(pod) == consumer_uuid(pod) == str(uuid.uuid5(CHECKPOINT_NAMESPACE, pod))
    assert consumer_uuid(pod) != pod and consumer_uuid(pod) != consumer_uuid(pod + "x")


def test_the_annotations_text_reads_as_its_list():
    entry = {
        "podUID": "p",
        "containerName": "c",
        "resourceName": "nvidia.com/gpu",
        "deviceIDs": ["GPU-1"],
        "allocResp": "CgQ=",
    }
    as_list = validate(ImportCheckpoints(), {"checkpoints": [entry]})
    as_text = validate(
        ImportCheckpoints(),
        {
            "checkpoints": '[{"podUID": "p", '
            '"containerName": "c", "resourceName": "nvidia.com/gpu", '
            '"deviceIDs": ["GPU-1"], "allocResp": "CgQ="}]'
        },
    )
    assert as_list == as_text
    [read] = checkpoints_from_body(as_list["checkpoints"])
    assert (read.pod_uid, read.container, read.resource_name, read.device_ids) == (
        "p",
        "c",
        "nvidia.com/gpu",
        ("GPU-1",),
    )
    [bare] = checkpoints_from_body(
        validate(ImportCheckpoints(), {"checkpoints": [{"podUID": "q", "resourceName": "x"}]})[
            "checkpoints"
        ]
    )
    assert (bare.container, bare.device_ids) == ("", ())
