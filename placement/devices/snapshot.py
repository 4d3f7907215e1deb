"""What the device search sees of a node: each device with what is free of it.

Built from the node's stored topology and its providers as the searches' copy of
the providers holds them (``replica_nodes``). A node whose tree no
longer matches its topology (a device provider removed or moved through the
generic API) is left out, not guessed at.
"""

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from placement import capacity
from placement.devices.stored import StoredTopology
from placement.devices.topology import Device, Topology
from placement.group_resources.snapshot import ProviderRow
from placement.interning import Interned
from placement.nodes.naming import Naming, path_of

Path = tuple[str, ...]


@dataclass(eq=False, slots=True)
class DeviceState:
    device: Device
    uuid: str
    path: Path
    classes: dict[str, str]  # base name (core, memory, ...) -> resource class
    total: dict[str, int]  # base name -> capacity
    free: dict[str, int]  # base name -> capacity left
    in_use: bool  # something of it is allocated
    units: dict[str, tuple[int, int, int]]  # base name -> (min_unit, max_unit, step_size)

    def allows(self, base_name: str, amount: int) -> bool:
        """Whether one allocation of ``amount`` fits the inventory's room and units."""
        return _fits(self.units[base_name], self.free[base_name], amount)


@dataclass(eq=False, slots=True)
class SwitchState:
    uuid: str
    classes: dict[str, str]  # device type -> tenancy class
    total: dict[str, int]  # device type -> tenancy
    free: dict[str, int]
    units: dict[str, tuple[int, int, int]]

    def allows(self, device_type: str, amount: int) -> bool:
        return _fits(self.units[device_type], self.free[device_type], amount)


@dataclass(eq=False, slots=True)
class DeviceNode:
    name: str
    uuid: str
    topology: Topology
    shape: int  # equal for nodes alike but for device identities (``stored``)
    devices: list[DeviceState]
    switches: dict[int, SwitchState]
    node_classes: dict[str, tuple[int, int]]  # class of the root -> (capacity, free)
    # ``signature()`` and ``node_classes`` as a number, given by whoever keeps the node
    # (``replica_nodes``): equal numbers for equal pairs; -1 when not numbered.
    state_key: int = -1

    def kind(self) -> object:
        """Equal for nodes that choose and score alike: the number their keeper
        (``replica_nodes``) gave their state and resources, else the two themselves."""
        if self.state_key >= 0:
            return self.state_key
        return (self.signature(), tuple(sorted(self.node_classes.items())))

    @staticmethod
    def by_name(node: "DeviceNode") -> str:
        return node.name

    def signature(self) -> tuple:
        """Equal for nodes alike in devices, links and state (for the search's memo).

        Nodes of one shape list their devices, inventories and switches in one order:
        their amounts and units alone then tell them apart.
        """
        return (
            self.shape,
            tuple((*d.total.values(), *d.free.values(), *d.units.values()) for d in self.devices),
            tuple(
                (*sw.total.values(), *sw.free.values(), *sw.units.values())
                for sw in self.switches.values()
            ),
        )


@dataclass(frozen=True)
class DeviceNodes:
    """The device nodes a search ranks: in groups of one ``DeviceNode.kind`` (each group
    by name), how many, and the names of those left out because their trees no
    longer match their topologies. The groups may be their keeper's own, changed by
    the next search: use them while the copy of the providers is held."""

    kinds: Mapping[object, list[DeviceNode]]
    count: int
    out_of_sync: list[str]

    def by_name(self) -> list[DeviceNode]:
        return list(heapq.merge(*self.kinds.values(), key=DeviceNode.by_name))


def group_by_kind(nodes: list[DeviceNode]) -> dict[object, list[DeviceNode]]:
    """``nodes`` (by name) in groups of one kind, each by name."""
    kinds: dict[object, list[DeviceNode]] = {}
    for node in nodes:
        kinds.setdefault(node.kind(), []).append(node)
    return kinds


def _fits(units: tuple[int, int, int], free: int, amount: int) -> bool:
    return capacity.units_allow(amount, *units) and amount <= free


class DeviceRoom(NamedTuple):
    """One inventory as read, before it is sorted into devices, switches and the node."""

    capacity: int  # placement.capacity.capacity
    used: int
    free: int  # placement.capacity.free
    units: tuple[int, int, int]  # (min_unit, max_unit, step_size)


def build_device_nodes(
    topologies: Mapping[str, StoredTopology],
    providers: Iterable[ProviderRow],
    rooms: Mapping[int, Mapping[str, DeviceRoom]],
    naming: Naming,
    shared: Interned | None = None,
) -> tuple[list[DeviceNode], list[str]]:
    """The nodes of ``topologies`` (with their layouts) whose trees match them, by name;
    and the names of those whose trees do not. ``rooms``: each provider's inventories, by
    class. A topology whose root provider was deleted is neither: the node is gone.
    Devices' and switches' tables equal in content are one object (from ``shared``,
    when given: its keeper's, so that nodes built apart share them too)."""
    class_of = _ClassNames(naming)
    shared = shared if shared is not None else Interned()
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
        stored = topologies[root.name]
        node = _device_node(root, tree, stored, rooms, class_of, shared)
        if node is not None:
            nodes.append(node)
    in_sync = {node.name for node in nodes}
    out_of_sync = sorted(present - in_sync)
    return sorted(nodes, key=lambda node: node.name), out_of_sync


class _ClassNames:
    """``naming.resource_class``, remembered: a search asks it for the same few names
    on every node."""

    def __init__(self, naming: Naming) -> None:
        self.naming = naming
        self.known: dict[tuple[str, str], str] = {}

    def __call__(self, level: str, base_name: str) -> str:
        key = (level, base_name)
        if key not in self.known:
            self.known[key] = self.naming.resource_class(level, base_name)
        return self.known[key]


def _device_node(
    root, tree, stored: StoredTopology, rooms, class_of: _ClassNames, shared: Interned
) -> DeviceNode | None:
    topology, layout = stored.topology, stored.layout
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
        state = _device_state(
            device,
            layout.inventories[(device.type, device.minor)],
            path,
            by_path.get(path),
            rooms,
            class_of,
            shared,
        )
        if state is None:
            return None
        devices.append(state)
    switches = {}
    for index, path in layout.switches.items():
        provider = by_path.get(path)
        if provider is None:
            return None
        found = []
        for device_type in sorted({d.type for d in topology.devices if d.switch == index}):
            resource_class = class_of("pcie", f"{device_type}-tenancy")
            room = rooms.get(provider.id, {}).get(resource_class)
            if room is None:
                return None
            found.append((device_type, resource_class, room))
        classes, total, free, units = _tables(found, shared)
        switches[index] = SwitchState(provider.uuid, classes, total, free, units)
    node_classes = {
        resource_class: (room.capacity, room.free)
        for resource_class, room in rooms.get(root.id, {}).items()
    }
    return DeviceNode(
        name=root.name,
        uuid=root.uuid,
        topology=topology,
        shape=stored.shape,
        devices=devices,
        switches=switches,
        node_classes=node_classes,
    )


def _device_state(
    device: Device,
    base_names,
    path: Path,
    provider,
    rooms,
    class_of: _ClassNames,
    shared: Interned,
) -> DeviceState | None:
    if provider is None:
        return None
    provider_rooms = rooms.get(provider.id, {})
    found = []
    for base_name in base_names:
        resource_class = class_of(device.type, base_name)
        room = provider_rooms.get(resource_class)
        if room is None:
            return None
        found.append((base_name, resource_class, room))
    classes, total, free, units = _tables(found, shared)
    return DeviceState(
        device=device,
        uuid=provider.uuid,
        path=path,
        classes=classes,
        total=total,
        free=free,
        in_use=any(room.used > 0 for _, _, room in found),
        units=units,
    )


def _tables(found: list[tuple[str, str, DeviceRoom]], shared: Interned) -> tuple[dict, ...]:
    """name -> class, capacity, free amount and units of (name, class, room) triples:
    the same four tables for every device or switch whose triples are equal."""

    def make() -> tuple[dict, ...]:
        return (
            {name: resource_class for name, resource_class, _ in found},
            {name: room.capacity for name, _, room in found},
            {name: room.free for name, _, room in found},
            {name: room.units for name, _, room in found},
        )

    return shared.get(tuple(found), make)
