"""A device node as it would be if some of its allocations were gone, for questions the
scheduler asks without anything being written: would the pod fit once these victims
are evicted (``preempt``), would it fit even on the node emptied (``filter``'s
unresolvable nodes).

The copy is the search's own ``DeviceNode`` with more free; the device search's
``Chooser`` then chooses on it as on any node.
"""

import dataclasses
from collections.abc import Mapping

from placement.data.allocations import AllocationMap
from placement.devices.snapshot import DeviceNode


def emptied(node: DeviceNode) -> DeviceNode:
    """``node`` with nothing allocated on it."""
    devices = [
        dataclasses.replace(state, free=dict(state.total), in_use=False) for state in node.devices
    ]
    switches = {
        index: dataclasses.replace(switch, free=dict(switch.total))
        for index, switch in node.switches.items()
    }
    node_classes = {
        name: (capacity, capacity) for name, (capacity, _free) in node.node_classes.items()
    }
    return _copy(node, devices, switches, node_classes)


def without(node: DeviceNode, allocations: Mapping[str, Mapping[str, int]]) -> DeviceNode:
    """``node`` with ``allocations`` (provider uuid -> class -> amount, summed over the
    consumers leaving) given back."""
    devices = []
    for state in node.devices:
        given = allocations.get(state.uuid)
        if not given:
            devices.append(state)
            continue
        free = {
            base: state.free[base] + given.get(resource_class, 0)
            for base, resource_class in state.classes.items()
        }
        in_use = any(free[base] < state.total[base] for base in free)
        devices.append(dataclasses.replace(state, free=free, in_use=in_use))
    switches = {}
    for index, switch in node.switches.items():
        given = allocations.get(switch.uuid) or {}
        switches[index] = dataclasses.replace(
            switch,
            free={
                device_type: switch.free[device_type] + given.get(resource_class, 0)
                for device_type, resource_class in switch.classes.items()
            },
        )
    given = allocations.get(node.uuid) or {}
    node_classes = {
        name: (capacity, free + given.get(name, 0))
        for name, (capacity, free) in node.node_classes.items()
    }
    return _copy(node, devices, switches, node_classes)


def summed(allocation_maps: list[AllocationMap]) -> dict[str, dict[str, int]]:
    """Several consumers' allocations added up: provider uuid -> class -> amount."""
    total: dict[str, dict[str, int]] = {}
    for allocations in allocation_maps:
        for provider, resources in allocations.items():
            into = total.setdefault(provider, {})
            for resource_class, amount in resources.items():
                into[resource_class] = into.get(resource_class, 0) + amount
    return total


def _copy(node: DeviceNode, devices, switches, node_classes) -> DeviceNode:
    # Not numbered by the nodes' keeper: its kind is its own state (``DeviceNode.kind``).
    return dataclasses.replace(
        node, devices=devices, switches=switches, node_classes=node_classes, state_key=-1
    )
