"""What the device search sees of a node: each device with what is free of it.

Built from the node's stored topology and its providers as read in one
moment (``placement.data.group_nodes.read_nodes``). A node whose tree no
longer matches its topology (a device provider removed or moved through the
generic API) is left out, not guessed at.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from placement.data.group_nodes import InventoryRow, ProviderRow
from placement.devices.node_map import Layout, device_inventories
from placement.devices.topology import Device, Topology
from placement.group_resources.naming import Naming, path_of

Path = tuple[str, ...]


@dataclass(eq=False)
class DeviceState:
    device: Device
    uuid: str
    path: Path
    classes: dict[str, str]  # base name (core, memory, ...) -> resource class
    total: dict[str, int]  # base name -> capacity
    free: dict[str, int]  # base name -> capacity left
    in_use: bool  # something of it is allocated

    def key(self) -> tuple:
        """Equal for devices that are alike in place and state (for the search's memo)."""
        d = self.device
        return (d.type, d.minor, d.numa, d.bridge, d.switch, d.memory_mb, d.vfs,
                tuple(sorted(self.total.items())), tuple(sorted(self.free.items())),
                tuple(sorted(d.labels.items())),
                tuple(sorted(d.vf_labels.items())))


@dataclass(eq=False)
class SwitchState:
    uuid: str
    classes: dict[str, str] = field(default_factory=dict)  # device type -> tenancy class
    total: dict[str, int] = field(default_factory=dict)  # device type -> tenancy
    free: dict[str, int] = field(default_factory=dict)


@dataclass(eq=False)
class DeviceNode:
    name: str
    uuid: str
    topology: Topology
    devices: list[DeviceState]
    switches: dict[int, SwitchState]
    node_classes: dict[str, tuple[int, int]]  # class of the root -> (capacity, free)

    def signature(self) -> tuple:
        return (
            tuple(device.key() for device in self.devices),
            tuple(sorted(self.topology.nvlinks.items())),
            tuple(sorted((s, tuple(sorted(sw.free.items()))) for s, sw in self.switches.items())),
        )


def build_device_nodes(
    topologies: Mapping[str, tuple[Topology, Layout]],
    providers: Iterable[ProviderRow],
    inventories: Iterable[InventoryRow],
    naming: Naming,
) -> tuple[list[DeviceNode], list[str]]:
    """The nodes of ``topologies`` (with their layouts) whose trees match them, by name;
    and the names of those whose trees do not. A topology whose root provider was deleted
    is neither: the node is gone."""
    rooms: dict[int, dict[str, tuple[int, int]]] = {}
    for row in inventories:
        capacity = int((row.total - row.reserved) * row.allocation_ratio)
        rooms.setdefault(row.provider_id, {})[row.resource_class] = (capacity, row.used)
    by_root: dict[int, list[ProviderRow]] = {}
    for provider in providers:
        by_root.setdefault(provider.root_provider_id, []).append(provider)
    nodes = []
    present = set()
    for tree in by_root.values():
        root = next((p for p in tree if p.id == p.root_provider_id), None)
        if root is None or root.name not in topologies:
            continue
        present.add(root.name)
        topology, layout = topologies[root.name]
        node = _device_node(root, tree, topology, layout, rooms, naming)
        if node is not None:
            nodes.append(node)
    in_sync = {node.name for node in nodes}
    out_of_sync = sorted(present - in_sync)
    return sorted(nodes, key=lambda node: node.name), out_of_sync


def _device_node(
    root, tree, topology: Topology, layout: Layout, rooms, naming: Naming
) -> DeviceNode | None:
    by_path: dict[Path, ProviderRow] = {}
    parent_of: dict[int, int | None] = {}
    for provider in tree:
        path = path_of(root.name, provider.name)
        if path is not None:
            by_path[path] = provider
        parent_of[provider.id] = provider.parent_provider_id
    for path, provider in by_path.items():
        if path and by_path.get(path[:-2], None) is not None:
            if parent_of[provider.id] != by_path[path[:-2]].id:
                return None  # moved out of place: the next sync puts it back
    devices = []
    for device in topology.devices:
        path = layout.devices[(device.type, device.minor)]
        state = _device_state(device, path, by_path.get(path), rooms, naming)
        if state is None:
            return None
        devices.append(state)
    switches = {}
    for index, path in layout.switches.items():
        provider = by_path.get(path)
        if provider is None:
            return None
        switch = SwitchState(uuid=provider.uuid)
        for device_type in {d.type for d in topology.devices if d.switch == index}:
            resource_class = naming.resource_class("pcie", f"{device_type}-tenancy")
            room = rooms.get(provider.id, {}).get(resource_class)
            if room is None:
                return None
            switch.classes[device_type] = resource_class
            switch.total[device_type] = room[0]
            switch.free[device_type] = room[0] - room[1]
        switches[index] = switch
    node_classes = {
        resource_class: (capacity, capacity - used)
        for resource_class, (capacity, used) in rooms.get(root.id, {}).items()
    }
    return DeviceNode(
        name=root.name,
        uuid=root.uuid,
        topology=topology,
        devices=devices,
        switches=switches,
        node_classes=node_classes,
    )


def _device_state(device: Device, path: Path, provider, rooms, naming) -> DeviceState | None:
    if provider is None:
        return None
    provider_rooms = rooms.get(provider.id, {})
    classes, total, free = {}, {}, {}
    in_use = False
    for base_name in device_inventories(device):
        resource_class = naming.resource_class(device.type, base_name)
        room = provider_rooms.get(resource_class)
        if room is None:
            return None
        classes[base_name] = resource_class
        total[base_name] = room[0]
        free[base_name] = room[0] - room[1]
        in_use |= room[1] > 0
    return DeviceState(
        device=device, uuid=provider.uuid, path=path, classes=classes, total=total, free=free,
        in_use=in_use,
    )
