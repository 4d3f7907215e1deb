"""The node kinds: one rule, the traits of a node's root (``placement.nodes.kinds``)."""

from placement.nodes.kinds import NodeKind, kind_of
from placement.nodes.naming import DEVICE_NODE_TRAIT, NODE_TRAIT


def test_a_root_with_the_device_node_trait_is_a_device_node():
    assert kind_of([NODE_TRAIT, DEVICE_NODE_TRAIT, "HW_NUMA_ROOT"]) is NodeKind.DEVICE


def test_a_root_with_the_node_trait_alone_is_the_translators():
    assert kind_of([NODE_TRAIT, "CUSTOM_OTHER"]) is NodeKind.GROUP


def test_a_root_without_the_node_trait_is_no_node():
    assert kind_of(["CUSTOM_GROUP_LEVEL_GPU"]) is None
    assert kind_of([]) is None
