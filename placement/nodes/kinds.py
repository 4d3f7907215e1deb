"""The kinds of node the node features manage, told apart by one rule: their root's traits.

Every node's root carries ``NODE_TRAIT``. A device node's root carries
``DEVICE_NODE_TRAIT`` too: its tree is written from its topology and its devices are
allocated with their tenancy, so only the device feature (``placement.devices``)
writes, searches or deletes it; the translator (``placement.group_resources``) leaves
it out of its searches and refuses to rewrite or delete it. Both features ask this
module which nodes are theirs, of the process's copy of the providers (``node_roots``)
or of the traits read of one root (``kind_of``).
"""

import enum
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from placement.nodes.naming import DEVICE_NODE_TRAIT, NODE_TRAIT

if TYPE_CHECKING:
    from placement.replica.world import ProviderWorld


class NodeKind(enum.Enum):
    GROUP = "group"  # the translator's: written from its key map
    DEVICE = "device"  # the device feature's: written from its topology


def kind_of(root_traits: Collection[str]) -> NodeKind | None:
    """The kind of the node whose root carries ``root_traits`` (None: not a node)."""
    if DEVICE_NODE_TRAIT in root_traits:
        return NodeKind.DEVICE
    if NODE_TRAIT in root_traits:
        return NodeKind.GROUP
    return None


def node_roots(
    world: "ProviderWorld", kind: NodeKind | None = None, names: list[str] | None = None
) -> list[int]:
    """The root ids of the nodes of ``kind`` in ``world`` (None: of either kind), only
    those named ``names`` when given, by id: the roots ``kind_of`` gives that kind."""
    if kind is NodeKind.DEVICE:
        return world.roots_with_trait(DEVICE_NODE_TRAIT, names=names)
    if kind is NodeKind.GROUP:
        return world.roots_with_trait(NODE_TRAIT, DEVICE_NODE_TRAIT, names)
    device_roots = world.roots_with_trait(DEVICE_NODE_TRAIT, names=names)
    group_roots = world.roots_with_trait(NODE_TRAIT, DEVICE_NODE_TRAIT, names)
    return sorted(device_roots + group_roots)


def roots_among(world: "ProviderWorld", kind: NodeKind, root_ids: Iterable[int]) -> list[int]:
    """Those of ``root_ids`` that are roots of nodes of ``kind`` in ``world``, by id (as
    ``node_roots`` finds them, for a few changed trees)."""
    device_trait = world.trait_id_of_name.get(DEVICE_NODE_TRAIT)
    node_trait = world.trait_id_of_name.get(NODE_TRAIT)
    found = []
    for root_id in root_ids:
        provider = world.providers.get(root_id)
        if provider is None or provider.parent_id is not None:
            continue
        if kind is NodeKind.DEVICE:
            mine = device_trait in provider.traits
        else:
            mine = node_trait in provider.traits and device_trait not in provider.traits
        if mine:
            found.append(root_id)
    found.sort()
    return found
