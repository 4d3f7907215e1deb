"""Devices kubelet already gave to pods (its device checkpoints), held in placement so
that they are never given twice.

Kubelet records the devices it allocated through device plugins in its checkpoint
file; a node agent reads it and reports, per pod and container,
the resource name and the ids of the devices given (``PodDevicesEntry``). A node's
report is its whole checkpoint: each pod becomes one consumer, whose uuid is derived
from the pod's uid (``consumer_uuid``), holding each of its devices **whole** (kubelet
gives whole devices: every inventory of the device, tenancy included, as
``nvidia.com/gpu`` takes) and one unit of its switch's tenancy per type, as a claim
does; a device id that is the bus id of a VF listed one by one holds that VF alone.
Consumers written here have the type ``CHECKPOINT_CONSUMER_TYPE``; one of them that a
report no longer lists is released (its pod ended and kubelet freed the devices), and
one whose allocations are already what the report says is not written again, so the
same report twice writes nothing.

``plan_holds`` turns the entries into allocations on one node (no database);
``hold`` writes them through placement's one write path, whose capacity check
refuses what a concurrent claim took first.
"""

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from placement import errors
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data
from placement.devices.snapshot import DeviceNode
from placement.devices.topology import VirtualFunction
from placement.nodes.device_types import DEVICE_TYPES

CHECKPOINT_CONSUMER_TYPE = "KUBELET_CHECKPOINT"
# uuid5 namespace of the pods' consumers: not the pod's uid itself, so that a claim made
# for the pod under its own uid never meets the pod's checkpoint consumer.
CHECKPOINT_NAMESPACE = uuid.UUID("9aa9ddc1-8a0a-4611-a873-08332f60972b")
WHOLE_GPUS = "nvidia.com/gpu"
PREFIXES = ("kubernetes.io/", "koordinator.sh/")


@dataclass(frozen=True)
class Checkpoint:
    """One entry: the devices kubelet gave one container of a pod."""

    pod_uid: str
    container: str
    resource_name: str
    device_ids: tuple[str, ...]

    def where(self) -> str:
        container = f", container {self.container}" if self.container else ""
        return f"pod {self.pod_uid}{container}"


@dataclass(frozen=True)
class PodHold:
    """What one pod holds on the node: its devices (indexes of ``DeviceNode.devices``)
    and the allocations of its consumer."""

    pod_uid: str
    consumer_uuid: str
    devices: tuple[int, ...]
    vfs: tuple[tuple[int, int], ...]  # (device, VF minor) of the NICs held by VFs
    allocations: dict[str, dict[str, int]]


@dataclass(frozen=True)
class UnknownDevice:
    """A device id a checkpoint names that the node's topology does not list."""

    checkpoint: Checkpoint
    device_id: str


@dataclass(frozen=True)
class HoldResult:
    node: DeviceNode  # as read before the holds were written
    holds: list[PodHold]
    released: list[str]  # consumer uuids whose pods left the checkpoint
    changed: bool
    unknown: list[UnknownDevice]  # ids the node does not list: nothing held for them


def checkpoints_from_body(entries: Sequence[Mapping]) -> list[Checkpoint]:
    """The entries as ``schemas.devices.CheckpointEntry`` loads them."""
    return [
        Checkpoint(
            pod_uid=entry["pod_uid"],
            container=entry.get("container_name", ""),
            resource_name=entry["resource_name"],
            device_ids=tuple(entry.get("device_ids", ())),
        )
        for entry in entries
    ]


def consumer_uuid(pod_uid: str) -> str:
    """The consumer of a pod's checkpointed devices: the same uuid on every report."""
    return str(uuid.uuid5(CHECKPOINT_NAMESPACE, pod_uid))


def device_type_of(resource_name: str) -> str | None:
    """The device type a device plugin's resource name gives, or None."""
    if resource_name == WHOLE_GPUS:
        return "gpu"
    for prefix in PREFIXES:
        rest = resource_name.removeprefix(prefix)
        if rest != resource_name and rest in DEVICE_TYPES:
            return rest
    return None


def plan_holds(
    node: DeviceNode, checkpoints: Sequence[Checkpoint]
) -> tuple[list[PodHold], list[UnknownDevice]]:
    """Each pod's devices and allocations, pods in order of first appearance, and the ids
    the node does not list (nothing to hold: no search can offer a device the topology
    lacks, and kubelet's file may name one the reporter no longer reports, or one of
    another machine, copied with the file); 400 for an unknown resource name, a device of
    another type, or a device given twice. A device id is a device's ``id``, or the bus id
    of one of a NIC's VFs listed one by one (what an SR-IOV device plugin gives): that VF
    alone is held."""
    by_id: dict[str, tuple[int, VirtualFunction | None]] = {}
    for index, state in enumerate(node.devices):
        by_id[state.device.identity] = (index, None)
        for listed in state.device.vf_list:
            by_id.setdefault(listed.bus_id, (index, listed))
    holders: dict[int, dict[int | None, Checkpoint]] = {}  # device -> VF minor (None: whole)
    pods: dict[str, dict[int, list[VirtualFunction] | None]] = {}
    unknown: list[UnknownDevice] = []
    for checkpoint in checkpoints:
        device_type = device_type_of(checkpoint.resource_name)
        if device_type is None:
            raise errors.BadRequest(
                f"Checkpoint of {checkpoint.where()}: resourceName "
                f"{checkpoint.resource_name!r} is not a device resource (known: "
                f"{WHOLE_GPUS}, or {' or '.join(PREFIXES)} followed by "
                f"{', '.join(DEVICE_TYPES)})."
            )
        held = pods.setdefault(checkpoint.pod_uid, {})
        for device_id in checkpoint.device_ids:
            if device_id not in by_id:
                unknown.append(UnknownDevice(checkpoint, device_id))
                continue
            index, vf = by_id[device_id]
            device = node.devices[index].device
            if device.type != device_type:
                raise errors.BadRequest(
                    f"Checkpoint of {checkpoint.where()}: device {device_id!r} is of type "
                    f"{device.type}, not {device_type} ({checkpoint.resource_name})."
                )
            taken = holders.setdefault(index, {})
            clash = (
                next(iter(taken.values()), None)
                if vf is None
                else taken.get(None) or taken.get(vf.minor)
            )
            if clash is not None:
                raise errors.BadRequest(
                    f"Device {device_id!r} of node {node.name} is given twice: to "
                    f"{clash.where()} and to {checkpoint.where()}."
                )
            taken[vf.minor if vf is not None else None] = checkpoint
            if vf is None:
                held[index] = None
            else:
                vfs = held.setdefault(index, [])
                assert vfs is not None  # (the whole device would have clashed)
                vfs.append(vf)
    holds = [
        PodHold(
            pod_uid,
            consumer_uuid(pod_uid),
            tuple(sorted(held)),
            tuple(sorted((index, vf.minor) for index, vfs in held.items() for vf in vfs or ())),
            _held_allocations(node, held),
        )
        for pod_uid, held in pods.items()
        if held
    ]
    return holds, unknown


def _held_allocations(
    node: DeviceNode, held: Mapping[int, list[VirtualFunction] | None]
) -> dict[str, dict[str, int]]:
    """All of each device held whole; of a NIC held by VFs, those VFs (each one's own
    inventory and one of the count) and one unit of its tenancy, as a claim of VFs takes;
    and one unit of each switch's tenancy per type."""
    allocations: dict[str, dict[str, int]] = {}
    for index, vfs in held.items():
        state = node.devices[index]
        if vfs is None:
            amounts = {name: amount for name, amount in state.total.items() if amount}
        else:
            amounts = {"vf": len(vfs), "tenancy": 1, **{vf.base_name: 1 for vf in vfs}}
        allocations[state.uuid] = {state.classes[name]: n for name, n in amounts.items()}
        switch = node.switches[state.device.switch]
        allocations.setdefault(switch.uuid, {})[switch.classes[state.device.type]] = 1
    return allocations


def hold(
    conn: Connection,
    node: DeviceNode,
    root_id: int,
    checkpoints: Sequence[Checkpoint],
    project_id: str,
    user_id: str,
) -> HoldResult:
    """Make the node's checkpoint consumers exactly what ``checkpoints`` say, in one
    write (the caller holds the node's lock: ``group_nodes.lock_node``).

    409 ``consumer_exists`` when a pod's consumer holds allocations not written from
    this node's checkpoints; placement's capacity check refuses (409) a device another
    consumer holds part of."""
    holds, unknown = plan_holds(node, checkpoints)
    wanted = {h.consumer_uuid: h for h in holds}
    held_here = allocation_data.consumers_of_type_in_tree(conn, root_id, CHECKPOINT_CONSUMER_TYPE)
    existing = consumer_data.get_consumers(conn, set(wanted) | set(held_here))
    current = allocation_data.allocations_of_consumers(conn, [c.id for c in existing.values()])
    node_providers = _provider_uuids(node)
    writes = []
    for pod in holds:
        consumer = existing.get(pod.consumer_uuid)
        if consumer is not None:
            held = current[consumer.id]
            ours = consumer.consumer_type == CHECKPOINT_CONSUMER_TYPE
            if not ours or not set(held) <= node_providers:
                raise errors.Conflict(
                    f"Consumer {pod.consumer_uuid} of pod {pod.pod_uid} already has "
                    f"allocations not written from node {node.name}'s checkpoints.",
                    code=errors.GROUP_CONSUMER_EXISTS,
                )
            if (held, consumer.project_id, consumer.user_id) == (
                pod.allocations,
                project_id,
                user_id,
            ):
                continue  # already held as the checkpoint says
        writes.append(
            allocation_data.ConsumerWrite(
                consumer_uuid=pod.consumer_uuid,
                project_id=project_id,
                user_id=user_id,
                allocations=pod.allocations,
                generation=consumer.generation if consumer is not None else None,
                consumer_type=CHECKPOINT_CONSUMER_TYPE,
            )
        )
    released = [uuid for uuid in held_here if uuid not in wanted]
    for released_uuid in released:
        writes.append(
            allocation_data.ConsumerWrite(
                consumer_uuid=released_uuid,
                project_id=None,
                user_id=None,
                allocations={},
                generation=existing[released_uuid].generation,
            )
        )
    if writes:
        allocation_data.write_allocations(conn, writes)
    return HoldResult(
        node=node, holds=holds, released=released, changed=bool(writes), unknown=unknown
    )


def _provider_uuids(node: DeviceNode) -> set[str]:
    return (
        {node.uuid}
        | {state.uuid for state in node.devices}
        | {switch.uuid for switch in node.switches.values()}
    )
