"""A topology -> the translator's node map: the provider tree of a device node.

The tree follows the translator's conventions (``group/index`` keys, one
provider per group, one class per level), with these levels::

    numa/<n>/bridge/<b>/pcie/<s>/gpu/<minor>       (and rdma/<minor>, fpga/<minor>)

``nvlink/<d>`` is a further level where NVLink joins GPUs into sets: the
connected components of the NVLink graph. It sits directly above the lowest
level whose groups each hold GPUs of one set only, and below one group that
holds the whole set (``numa/0/nvlink/0/bridge/0/...`` when each set stays
inside a NUMA node; ``nvlink/0/numa/0/...`` on a DGX, where one set spans
both). Subtrees without NVLinked GPUs get an ``nvlink`` group of their own,
so that no two of them look linked. When the sets cut across the PCIe tree
nothing fits, and the level is left out; the links still rank candidates.

Inventories per device (``CUSTOM_<LEVEL>_<NAME>``, as the translator names them):

- gpu: ``core`` 100, ``memory`` its KiB (``CUSTOM_GPU_MEMORY_KB``: every binary
  quantity of memory is a whole number of KiB, so the amount kept is the device's
  own; ``device_naming``), ``memory-ratio`` 100;
- rdma: ``share`` 100, and ``vf`` the SR-IOV virtual functions when it has any; a
  NIC whose VFs are listed one by one also has ``vf-<minor>`` 1 per VF
  (``CUSTOM_RDMA_VF_3``), so that an allocation says which VF it holds;
- fpga: ``share`` 100;
- every device: ``tenancy`` (``CUSTOM_GPU_TENANCY``, ...), and every PCIe switch
  ``<type>-tenancy`` per type under it (``CUSTOM_PCIE_RDMA_TENANCY``).

Tenancy is how exclusivity holds against every later consumer: each claim
takes one unit of tenancy of every device it uses and of every switch it
touches per type; an exclusive claim (``exclusivePolicy``) takes all of it,
and needs all of it free. Placement's own capacity check then enforces it.
There is tenancy for ``TENANCY`` sharers plus one per VF, so that VFs never
run out of tenancy before they run out themselves.
"""

import dataclasses
from dataclasses import dataclass

from placement.devices.topology import Device, Topology, memory_text
from placement.nodes.naming import Naming, normalized

TENANCY = 1000  # consumers that may share one device (or one switch, per type), VFs aside
WHOLE = 100  # core, memory-ratio and share of one device
NUMA_TRAIT = "HW_NUMA_ROOT"
LABEL_TRAIT_PREFIX = "CUSTOM_LABEL_"
# Units of a device node's own, whatever [group_resources] byte_units says: GPU memory
# in KiB (CUSTOM_GPU_MEMORY_KB).
LEVEL_UNITS = {("GPU", "MEMORY"): "KB"}

Path = tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """Where each part of the topology sits in the node's tree."""

    resources: dict[str, object]  # the translator's node map
    devices: dict[tuple[str, int], Path]  # (type, minor) -> group path
    switches: dict[int, Path]
    numa_nodes: dict[int, Path]
    nvlink_level: str | None  # the level nvlink sits directly under, or None
    traits: dict[Path, set[str]]  # traits beyond the translator's level traits
    inventories: dict[tuple[str, int], tuple[str, ...]]  # (type, minor) -> its base names


def device_layout(topology: Topology) -> Layout:
    grouping = nvlink_grouping(topology)
    resources: dict[str, object] = dict(topology.node_resources)
    devices: dict[tuple[str, int], Path] = {}
    switches: dict[int, Path] = {}
    numa_nodes: dict[int, Path] = {}
    traits: dict[Path, set[str]] = {}
    inventories: dict[tuple[str, int], tuple[str, ...]] = {}
    switch_tenancy: dict[str, int] = {}
    for device in topology.devices:
        numa_path, switch_path = _paths(device, grouping)
        numa_nodes[device.numa] = numa_path
        switches[device.switch] = switch_path
        path = (*switch_path, device.type, str(device.minor))
        devices[(device.type, device.minor)] = path
        amounts = device_inventories(device)
        inventories[(device.type, device.minor)] = tuple(amounts)
        for name, amount in amounts.items():
            resources["/".join((*path, name))] = amount
        switch_key = "/".join((*switch_path, f"{device.type}-tenancy"))
        switch_tenancy[switch_key] = switch_tenancy.get(switch_key, TENANCY) + device.vfs
        resources[switch_key] = switch_tenancy[switch_key]
        traits[path] = label_traits(device)
    for path in numa_nodes.values():
        traits[path] = {NUMA_TRAIT}
    return Layout(
        resources=resources,
        devices=devices,
        switches=switches,
        numa_nodes=numa_nodes,
        nvlink_level=grouping.level if grouping else None,
        traits=traits,
        inventories=inventories,
    )


def device_inventories(device: Device) -> dict[str, object]:
    """Base name -> amount, as the node map writes them."""
    if device.type == "gpu":
        return {
            "core": WHOLE,
            "memory": memory_text(device.memory_kib),
            "memory-ratio": WHOLE,
            "tenancy": TENANCY,
        }
    inventories: dict[str, object] = {"share": WHOLE}
    if device.vfs:
        inventories["vf"] = device.vfs
    for vf in device.vf_list:  # listed one by one: each has an inventory of its own too
        inventories[vf.base_name] = 1
    inventories["tenancy"] = TENANCY + device.vfs
    return inventories


def device_naming(naming: Naming) -> Naming:
    """``naming`` as a device node's tree uses it: with the device nodes' own units."""
    if all(naming.level_units.get(key) == unit for key, unit in LEVEL_UNITS.items()):
        return naming
    return dataclasses.replace(naming, level_units={**naming.level_units, **LEVEL_UNITS})


def label_traits(device: Device) -> set[str]:
    """``CUSTOM_LABEL_<KEY>_<VALUE>`` per label, so plain placement queries can select too."""
    return {
        f"{LABEL_TRAIT_PREFIX}{normalized(key)}_{normalized(value)}"[:255]
        for key, value in device.labels.items()
    }


@dataclass(frozen=True)
class NvlinkGrouping:
    level: str  # "node", "numa" or "bridge": nvlink groups sit directly under it
    domains: dict[int, int]  # index of a child of that level -> its nvlink group


_CHILD = {"bridge": "switch", "numa": "bridge", "node": "numa"}


def nvlink_grouping(topology: Topology) -> NvlinkGrouping | None:
    set_of = _nvlink_sets(topology)
    if not set_of:
        return None
    gpus = [d for d in topology.devices if d.type == "gpu" and d.minor in set_of]
    for level in ("bridge", "numa", "node"):
        child_set: dict[int, int] = {}
        set_parent: dict[int, int] = {}
        fits = True
        for gpu in gpus:
            gpu_set = set_of[gpu.minor]
            child = _position(gpu, _CHILD[level])
            parent = _position(gpu, level)
            if child_set.setdefault(child, gpu_set) != gpu_set:
                fits = False
            if set_parent.setdefault(gpu_set, parent) != parent:
                fits = False
        if fits:
            return NvlinkGrouping(level=level, domains=_number_domains(topology, level, child_set))
    return None


def _nvlink_sets(topology: Topology) -> dict[int, int]:
    """gpu minor -> its NVLink set (connected component), numbered from 0 by lowest minor."""
    parent: dict[int, int] = {}

    def find(minor: int) -> int:
        while parent.setdefault(minor, minor) != minor:
            minor = parent[minor]
        return minor

    for a, b in topology.nvlinks:
        root_a, root_b = find(a), find(b)
        if root_a != root_b:
            parent[max(root_a, root_b)] = min(root_a, root_b)
    roots = sorted({find(minor) for minor in parent})
    number = {root: index for index, root in enumerate(roots)}
    return {minor: number[find(minor)] for minor in parent}


def _number_domains(topology: Topology, level: str, child_set: dict[int, int]) -> dict[int, int]:
    """Every child of ``level`` -> an nvlink group: its set's, or one of its own."""
    domains = dict(child_set)
    next_domain = max(child_set.values()) + 1
    for device in sorted(topology.devices, key=lambda d: _position(d, _CHILD[level])):
        child = _position(device, _CHILD[level])
        if child not in domains:
            domains[child] = next_domain
            next_domain += 1
    return domains


def _position(device: Device, level: str) -> int:
    return {"node": 0, "numa": device.numa, "bridge": device.bridge, "switch": device.switch}[level]


def _paths(device: Device, grouping: NvlinkGrouping | None) -> tuple[Path, Path]:
    """The paths of the device's NUMA node and of its switch."""
    segments: list[tuple[str, int]] = [
        ("numa", device.numa),
        ("bridge", device.bridge),
        ("pcie", device.switch),
    ]
    if grouping is not None:
        at = {"node": 0, "numa": 1, "bridge": 2}[grouping.level]
        child = _position(device, _CHILD[grouping.level])
        segments.insert(at, ("nvlink", grouping.domains[child]))
    path: list[str] = []
    numa_path: Path = ()
    for name, index in segments:
        path += [name, str(index)]
        if name == "numa":
            numa_path = tuple(path)
    return numa_path, tuple(path)
