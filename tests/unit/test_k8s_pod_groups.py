"""Which pod group a pod is in, and the gang its PodGroup asks: no database, no API."""

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

from placement import errors
from placement.config import Config
from placement.k8s.pod_groups import (
    COSCHEDULING,
    KEY_LENGTH,
    VOLCANO,
    GangShape,
    PodGroupRef,
    gang_shape,
    pod_group_of,
)

LEVELS = ("spine", "leaf", "nvlink_domain")
GROUP = PodGroupRef(COSCHEDULING, "ml", "train")


def _pod(labels=None, annotations=None, namespace="ml") -> V1Pod:
    return V1Pod(
        metadata=V1ObjectMeta(name="p", namespace=namespace, labels=labels, annotations=annotations)
    )


def _pod_group(min_member, **annotations) -> dict:
    return {
        "metadata": {
            "annotations": {f"gpu-topology.placement/{k}": v for k, v in annotations.items()}
        },
        "spec": {"minMember": min_member},
    }


def test_the_coscheduling_label_comes_before_volcanos_annotation():
    both = _pod(
        labels={"scheduling.x-k8s.io/pod-group": "a"},
        annotations={"scheduling.k8s.io/group-name": "b"},
    )
    assert pod_group_of(both) == PodGroupRef(COSCHEDULING, "ml", "a")
    volcano = _pod(annotations={"scheduling.k8s.io/group-name": "b"})
    assert pod_group_of(volcano) == PodGroupRef(VOLCANO, "ml", "b")
    assert pod_group_of(_pod(labels={"app": "x"})) is None
    assert pod_group_of(_pod(labels={"scheduling.x-k8s.io/pod-group": ""})) is None


def test_a_groups_key_is_unique_and_fits_its_column():
    assert GROUP.key == "podgroups.scheduling.x-k8s.io/ml/train"
    assert PodGroupRef(VOLCANO, "ml", "train").key != GROUP.key
    long = [PodGroupRef(COSCHEDULING, "n" * 63, name * 253) for name in "ab"]
    assert all(len(ref.key) == KEY_LENGTH for ref in long)
    assert long[0].key != long[1].key


def test_the_configuration_and_the_podgroups_annotations_shape_the_gang():
    config = Config(k8s_gang_required_level="leaf", k8s_gang_preferred_level="nvlink_domain")
    assert gang_shape(config, GROUP, _pod_group(4), LEVELS) == GangShape(
        4, "leaf", "nvlink_domain", False
    )
    # Without a configured level, the broadest; the annotations win over the options.
    assert gang_shape(Config(), GROUP, _pod_group(3), LEVELS) == GangShape(3, "spine", None, False)
    annotated = _pod_group(
        2,
        **{"gang-required-level": "spine", "gang-preferred-level": "", "gang-share-nodes": "True"},
    )
    assert gang_shape(config, GROUP, annotated, LEVELS) == GangShape(2, "spine", None, True)
    # A configured preferred level broader than the group's required one is not used.
    narrow = _pod_group(2, **{"gang-required-level": "nvlink_domain"})
    shape = gang_shape(config.replace(k8s_gang_preferred_level="leaf"), GROUP, narrow, LEVELS)
    assert shape == GangShape(2, "nvlink_domain", None, False)


@pytest.mark.parametrize("pod_group", [_pod_group(1), _pod_group(0), {"spec": {}}, {}])
def test_groups_of_fewer_than_two_are_placed_pod_by_pod(pod_group):
    assert gang_shape(Config(), GROUP, pod_group, LEVELS) is None


def test_no_levels_no_gang():
    assert gang_shape(Config(), GROUP, _pod_group(4), ()) is None


@pytest.mark.parametrize("value", ["4", 4.0, True, 1025, None])
def test_a_min_member_that_is_not_a_count_is_refused(value):
    with pytest.raises(errors.BadRequest, match="spec.minMember"):
        gang_shape(Config(), GROUP, {"spec": {"minMember": value}}, LEVELS)
