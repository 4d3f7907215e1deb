"""A node's devices and how they are connected: what a topology import yields.

Every device sits under one PCIe switch, under one PCIe host bridge, under
one NUMA node. Switches and bridges are node-wide indices (switch 3 is the
node's fourth switch, whatever bridge it is on); a NUMA node keeps the number
the operating system gives it (``NUMA Affinity``), gaps and all. A device
wired straight to a host bridge, with no switch shared with anything, gets a
switch of its own: "same PCIe switch" then holds for no other device, as
nvidia-smi's PHB says.

GPUs may also be joined by NVLink: ``nvlinks`` maps a pair of GPU minors
(lower first) to the number of links between them (NV1..NV18).

Both importers (``topology_matrix`` for ``nvidia-smi topo -m``,
``device_list`` for a plain device list) produce a ``Topology``; the node map
(``node_map``) and the search (``snapshot``, ``chooser``) read only this.
It is stored with the node as a JSON document (``to_document``) in the device
list's own format, so what a node shows can be imported again as it is.
"""

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from placement import errors
from placement.interning import Interned
from placement.nodes.device_types import DEVICE_TYPES, MAX_DEVICES, MAX_LISTED_VFS, MAX_NVLINKS


@dataclass(frozen=True, slots=True)
class VirtualFunction:
    """One SR-IOV virtual function of a NIC, listed with its own identity and labels."""

    minor: int  # per NIC
    bus_id: str  # its PCI address (0000:1f:00.2)
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def base_name(self) -> str:
        """Its inventory on its NIC's provider (``vf-3``: ``CUSTOM_RDMA_VF_3``, 1)."""
        return f"vf-{self.minor}"


@dataclass(frozen=True, slots=True)
class Device:
    type: str  # one of DEVICE_TYPES
    minor: int  # per type, from 0 (GPU0 is the gpu of minor 0)
    identity: str  # a UUID (GPU-...), a NIC name (mlx5_0), or the matrix's name (GPU0)
    numa: int
    bridge: int  # PCIe host bridge, node-wide index
    switch: int  # PCIe switch, node-wide index
    memory_kib: int = 0  # gpu: its memory in KiB (every binary quantity of GPU memory is exact)
    vfs: int = 0  # rdma: SR-IOV virtual functions (0: none)
    labels: Mapping[str, str] = field(default_factory=dict)
    vf_labels: Mapping[str, str] = field(default_factory=dict)
    # The upstream switch several PCIe switches hang from, under one host bridge (what
    # nvidia-smi prints as PXB between their devices), node-wide; -1: none (its switch
    # hangs from the host bridge alone, PHB to the others).
    switch_group: int = -1
    # The board several GPUs share behind its own switch (what nvidia-smi prints as PSB
    # between them), node-wide; -1: none. Tighter than one PCIe switch, looser than NVLink.
    board: int = -1
    # The device's health, as its node reports it. An unhealthy device is never offered or claimed;
    # what is allocated on it stays (``chooser``, ``service``).
    healthy: bool = True
    # rdma: its VFs one by one, by minor, when listed (each with its own bus id and labels,
    # for VFs that differ); then ``vfs`` is how many and ``vf_labels`` is empty.
    vf_list: tuple[VirtualFunction, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.type}{self.minor}"


@dataclass(frozen=True, slots=True)
class Topology:
    devices: tuple[Device, ...]
    nvlinks: Mapping[tuple[int, int], int] = field(default_factory=dict)
    # node-level resources (``cpu: 96``, ``memory: 1Ti``), as translator keys
    node_resources: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_topology(self)

    def device(self, device_type: str, minor: int) -> Device | None:
        for device in self.devices:
            if device.type == device_type and device.minor == minor:
                return device
        return None

    def links_between(self, a: Device, b: Device) -> int:
        if a.type != "gpu" or b.type != "gpu":
            return 0
        low, high = sorted((a.minor, b.minor))
        return self.nvlinks.get((low, high), 0)

    def to_document(self) -> dict:
        return {
            "devices": [device_entry(d) for d in self.devices],
            "nvlinks": [
                {"gpus": [a, b], "links": links} for (a, b), links in sorted(self.nvlinks.items())
            ],
            "resources": dict(self.node_resources),
        }

    @classmethod
    def from_document(cls, document: Mapping, shared: Interned | None = None) -> "Topology":
        """The topology ``to_document`` wrote (trusted: it was checked when stored).
        Its tables (labels, NVLinks, node resources) equal in content to one
        ``shared`` gave before are that one (never changed in place)."""
        shared = shared if shared is not None else Interned()

        def table(items) -> Mapping:
            pairs = tuple(items)
            return shared.get(pairs, lambda: dict(pairs))

        devices = tuple(
            Device(
                type=sys.intern(d["type"]),
                minor=d["minor"],
                identity=d["id"],
                numa=d["numa"],
                bridge=d["bridge"],
                switch=d["pcie"],
                memory_kib=memory_kib_of_text(d["memory"]) if "memory" in d else 0,
                vfs=d.get("vfs", 0) + sum(len(g["vfs"]) for g in d.get("vfGroups", ())),
                labels=table(d.get("labels", {}).items()),
                vf_labels=table(d.get("vfLabels", {}).items()),
                switch_group=d.get("switchGroup", -1),
                board=d.get("board", -1),
                healthy=d.get("health", True),
                vf_list=vf_list_of_groups(d.get("vfGroups", ()), table),
            )
            for d in document["devices"]
        )
        nvlinks = table(
            ((link["gpus"][0], link["gpus"][1]), link["links"]) for link in document["nvlinks"]
        )
        return cls(
            devices=devices, nvlinks=nvlinks, node_resources=table(document["resources"].items())
        )


def device_entry(device: Device) -> dict:
    """A device as the device list writes it (``device_list``)."""
    entry: dict = {
        "type": device.type,
        "minor": device.minor,
        "id": device.identity,
        "numa": device.numa,
        "bridge": device.bridge,
        "pcie": device.switch,
    }
    if device.memory_kib:
        entry["memory"] = memory_text(device.memory_kib)
    if device.vfs:
        entry["vfs"] = device.vfs
    if device.labels:
        entry["labels"] = dict(device.labels)
    if device.vf_labels:
        entry["vfLabels"] = dict(device.vf_labels)
    if device.switch_group >= 0:
        entry["switchGroup"] = device.switch_group
    if device.board >= 0:
        entry["board"] = device.board
    if not device.healthy:  # (healthy is the default: documents stored before say nothing)
        entry["health"] = False
    if device.vf_list:
        del entry["vfs"]
        entry["vfGroups"] = vf_groups(device.vf_list)
    return entry


def vf_groups(vf_list: tuple[VirtualFunction, ...]) -> list[dict]:
    """VFs as the device list writes them: groups of equal labels, in order of their first
    VF, each VF as ``{"minor", "busID"}``."""
    groups: dict[tuple, dict] = {}
    for vf in vf_list:
        key = tuple(sorted(vf.labels.items()))
        group = groups.setdefault(key, {"labels": dict(vf.labels), "vfs": []})
        group["vfs"].append({"minor": vf.minor, "busID": vf.bus_id})
    return [group if group["labels"] else {"vfs": group["vfs"]} for group in groups.values()]


def vf_list_of_groups(groups, table=dict) -> tuple[VirtualFunction, ...]:
    """The VFs of ``vfGroups`` (as ``vf_groups`` writes them), by minor."""
    return tuple(
        sorted(
            (
                VirtualFunction(vf["minor"], vf["busID"], table(group.get("labels", {}).items()))
                for group in groups
                for vf in group["vfs"]
            ),
            key=lambda vf: vf.minor,
        )
    )


def memory_text(kib: int) -> str:
    """GPU memory as documents and answers write it: whole MiB as ``"<MiB>Mi"`` (as
    before memory was kept in KiB), any other amount as ``"<KiB>Ki"``."""
    return f"{kib // 1024}Mi" if kib % 1024 == 0 else f"{kib}Ki"


def memory_kib_of_text(text: str) -> int:
    """The KiB of a ``memory_text``."""
    if text.endswith("Ki"):
        return int(text[:-2])
    return int(text.removesuffix("Mi")) * 1024


def _check_vf_list(device: Device, bus_ids: set[str]) -> None:
    """400 unless the listed VFs have distinct minors and bus ids (node-wide)."""
    if not device.vf_list:
        return
    if device.vf_labels or device.vfs != len(device.vf_list):
        raise errors.BadRequest(
            f"Device {device.name}: give its VFs as vfGroups, or as vfs with vfLabels, not both."
        )
    if len(device.vf_list) > MAX_LISTED_VFS:
        raise errors.BadRequest(
            f"Device {device.name}: at most {MAX_LISTED_VFS} VFs listed one by one."
        )
    minors = set()
    for vf in device.vf_list:
        if vf.minor < 0:
            raise errors.BadRequest(f"Device {device.name}: a VF minor cannot be negative.")
        if vf.minor in minors:
            raise errors.BadRequest(f"Device {device.name}: VF {vf.minor} is listed twice.")
        if not vf.bus_id or vf.bus_id in bus_ids:
            raise errors.BadRequest(
                f"Device {device.name}: VF {vf.minor}'s busID {vf.bus_id!r} is empty or used twice."
            )
        minors.add(vf.minor)
        bus_ids.add(vf.bus_id)


def check_topology(topology: Topology) -> None:
    """400 naming the problem unless the devices form one consistent tree."""
    if not topology.devices:
        raise errors.BadRequest("The topology lists no device.")
    if len(topology.devices) > MAX_DEVICES:
        raise errors.BadRequest(f"A node has at most {MAX_DEVICES} devices.")
    seen: set[tuple[str, int]] = set()
    bus_ids: set[str] = set()
    switch_place: dict[int, tuple[int, int, int]] = {}
    group_bridge: dict[int, int] = {}
    board_switch: dict[int, int] = {}
    bridge_numa: dict[int, int] = {}
    identities: set[str] = set()
    for device in topology.devices:
        if device.type not in DEVICE_TYPES:
            raise errors.BadRequest(
                f"Unknown device type {device.type!r}: known types are {', '.join(DEVICE_TYPES)}."
            )
        if (device.type, device.minor) in seen:
            raise errors.BadRequest(f"Device {device.name} is listed twice.")
        seen.add((device.type, device.minor))
        if not device.identity:
            raise errors.BadRequest(f"Device {device.name} has an empty id.")
        if device.identity in identities:
            raise errors.BadRequest(f"Device id {device.identity!r} is listed twice.")
        identities.add(device.identity)
        for what, value in (
            ("minor", device.minor),
            ("numa", device.numa),
            ("bridge", device.bridge),
            ("pcie", device.switch),
            ("vfs", device.vfs),
            ("memory", device.memory_kib),
        ):
            if value < 0:
                raise errors.BadRequest(f"Device {device.name}: {what} cannot be negative.")
        if device.switch_group < -1:
            raise errors.BadRequest(f"Device {device.name}: switchGroup cannot be negative.")
        if device.board < -1:
            raise errors.BadRequest(f"Device {device.name}: board cannot be negative.")
        if device.type == "gpu" and device.memory_kib <= 0:
            raise errors.BadRequest(f"Device {device.name}: a GPU needs its memory.")
        if device.type != "gpu" and device.memory_kib:
            raise errors.BadRequest(f"Device {device.name}: only GPUs have memory here.")
        if device.type != "rdma" and (device.vfs or device.vf_labels or device.vf_list):
            raise errors.BadRequest(f"Device {device.name}: only rdma devices have VFs.")
        _check_vf_list(device, bus_ids)
        place = switch_place.setdefault(
            device.switch, (device.bridge, device.numa, device.switch_group)
        )
        if place[:2] != (device.bridge, device.numa):
            raise errors.BadRequest(
                f"PCIe switch {device.switch} is placed under two host bridges or NUMA nodes "
                f"(device {device.name})."
            )
        if place[2] != device.switch_group:
            raise errors.BadRequest(
                f"PCIe switch {device.switch} is placed in two switch groups "
                f"(device {device.name})."
            )
        if (
            device.switch_group >= 0
            and group_bridge.setdefault(device.switch_group, device.bridge) != device.bridge
        ):
            raise errors.BadRequest(
                f"Switch group {device.switch_group} is placed under two host bridges "
                f"(device {device.name})."
            )
        if (
            device.board >= 0
            and board_switch.setdefault(device.board, device.switch) != device.switch
        ):
            raise errors.BadRequest(
                f"Board {device.board} is placed under two PCIe switches (device {device.name})."
            )
        if bridge_numa.setdefault(device.bridge, device.numa) != device.numa:
            raise errors.BadRequest(
                f"PCIe host bridge {device.bridge} is placed under two NUMA nodes "
                f"(device {device.name})."
            )
    for name in topology.node_resources:
        if not isinstance(name, str) or "/" in name:
            raise errors.BadRequest(
                f"Node resource {name!r}: the node's own resources are plain names "
                "(cpu, memory); devices go in the device list."
            )
    for (a, b), links in topology.nvlinks.items():
        if a >= b:
            raise errors.BadRequest(f"NVLink pair ({a}, {b}): list the lower minor first.")
        for minor in (a, b):
            if ("gpu", minor) not in seen:
                raise errors.BadRequest(f"NVLink pair ({a}, {b}): there is no gpu{minor}.")
        if not 1 <= links <= MAX_NVLINKS:
            raise errors.BadRequest(
                f"NVLink pair ({a}, {b}): {links} links; a pair has 1 to {MAX_NVLINKS}."
            )
