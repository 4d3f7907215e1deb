"""JSON answers of the device endpoints: per-device results as Koordinator's
DeviceAllocation (minor, identity, resources taken), plus placement's own
allocations, so a client can also write them itself; on request, each candidate
also as the value of Koordinator's ``device-allocated`` Pod annotation."""

import json

from placement.devices.checkpoints import HoldResult
from placement.devices.request import DeviceRequest
from placement.devices.search import DeviceAnswer, DeviceCandidate
from placement.devices.snapshot import DeviceNode, DeviceState
from placement.devices.topology import Topology, VirtualFunction, device_entry, memory_text
from placement.schemas.devices import ALLOCATED_ANNOTATION


def candidates_body(
    answer: DeviceAnswer, request: DeviceRequest, device_allocated: bool = False
) -> dict:
    return {
        "candidates": [candidate_body(c, request, device_allocated) for c in answer.candidates],
        "nodes_considered": answer.nodes_considered,
        "unplaced": [{"reason": reason, "nodes": count} for reason, count in answer.unfit],
        "nodes_out_of_sync": answer.out_of_sync,
    }


def candidate_body(
    candidate: DeviceCandidate, request: DeviceRequest, device_allocated: bool = False
) -> dict:
    node, pick = candidate.node, candidate.pick
    devices: dict[str, list[dict]] = {}
    for index, amounts in pick.takes:
        state = node.devices[index]
        prefix = request.types[state.device.type].prefix
        entry = {**_identity(state), "resources": device_resources(state, dict(amounts), prefix)}
        given_vfs = [vf for vf in state.device.vf_list if vf.base_name in dict(amounts)]
        if given_vfs:
            entry["virtualFunctions"] = _vf_names(given_vfs)
        devices.setdefault(state.device.type, []).append(entry)
    body: dict = {"node": node.name, "uuid": node.uuid, "score": round(candidate.score, 6)}
    if pick.scope is not None:
        body["scope"] = pick.scope
    body["devices"] = devices
    body["links"] = dict(pick.links)
    body["allocations"] = {
        uuid: {"resources": resources} for uuid, resources in candidate.allocations(request).items()
    }
    if device_allocated:
        body["annotations"] = {
            ALLOCATED_ANNOTATION: json.dumps(device_allocations(candidate, request))
        }
    return body


def device_allocations(candidate: DeviceCandidate, request: DeviceRequest) -> dict:
    """A candidate's devices as Koordinator's DeviceAllocations: device type -> the
    devices by minor, each ``minor`` and ``resources`` (Kubernetes quantities, as strings:
    a ResourceList) in the request's names, as ``devices`` gives them. A NIC's VFs are
    counted, not listed: its ``<prefix>rdma`` is its share, or with VFs only, how many."""
    allocations: dict[str, list[dict]] = {}
    for index, amounts in candidate.pick.takes:
        state = candidate.node.devices[index]
        device_type = state.device.type
        prefix = request.types[device_type].prefix
        given = device_resources(state, dict(amounts), prefix)
        resources = {
            name: str(amount) for name, amount in given.items() if name not in ("vfs", "exclusive")
        }
        if not resources and given.get("vfs"):
            resources[f"{prefix}{device_type}"] = str(given["vfs"])
        allocations.setdefault(device_type, []).append(
            {"minor": state.device.minor, "resources": resources}
        )
    for devices in allocations.values():
        devices.sort(key=lambda device: device["minor"])
    return allocations


def checkpoints_body(result: HoldResult) -> dict:
    """What the node's checkpoint holds: each pod's consumer and devices, by minor."""
    node = result.node
    pods = []
    for pod in result.holds:
        devices: dict[str, list[dict]] = {}
        for index in pod.devices:
            state = node.devices[index]
            entry = _identity(state)
            held_vfs = [vf for vf in state.device.vf_list if (index, vf.minor) in pod.vfs]
            if held_vfs:
                entry["virtualFunctions"] = _vf_names(held_vfs)
            devices.setdefault(state.device.type, []).append(entry)
        for listed in devices.values():
            listed.sort(key=lambda device: device["minor"])
        pods.append({"podUID": pod.pod_uid, "consumer_uuid": pod.consumer_uuid, "devices": devices})
    unknown = [
        {
            "podUID": u.checkpoint.pod_uid,
            "containerName": u.checkpoint.container,
            "deviceID": u.device_id,
        }
        for u in result.unknown
    ]
    return {
        "name": node.name,
        "uuid": node.uuid,
        "pods": pods,
        "released": result.released,
        "changed": result.changed,
        "unknownDevices": unknown,
    }


def _vf_names(vfs: list[VirtualFunction]) -> list[dict]:
    return [{"minor": vf.minor, "busID": vf.bus_id} for vf in vfs]


def _identity(state: DeviceState) -> dict:
    device = state.device
    return {
        "minor": device.minor,
        "id": device.identity,
        "numa": device.numa,
        "pcie": device.switch,
        "provider": state.uuid,
        "path": "/".join(state.path),
    }


def device_resources(state: DeviceState, amounts: dict[str, int], prefix: str) -> dict:
    """What a device gives, in the request's resource names (memory as a quantity)."""
    device_type = state.device.type
    resources: dict[str, object] = {}
    if device_type == "gpu":
        resources[f"{prefix}gpu-core"] = amounts.get("core", 0)
        resources[f"{prefix}gpu-memory-ratio"] = amounts.get("memory-ratio", 0)
        resources[f"{prefix}gpu-memory"] = memory_text(amounts.get("memory", 0))
    else:
        if amounts.get("share"):
            resources[f"{prefix}{device_type}"] = amounts["share"]
        if amounts.get("vf"):
            resources["vfs"] = amounts["vf"]
    if amounts.get("tenancy") == state.total.get("tenancy"):
        resources["exclusive"] = True
    return resources


def node_body(name: str, uuid: str, topology: Topology, node: DeviceNode | None) -> dict:
    """The device node as stored: topology, and each device's inventories with usage."""
    states = {(s.device.type, s.device.minor): s for s in node.devices} if node else {}
    devices = []
    for device in topology.devices:
        entry = {**device_entry(device), "health": device.healthy}
        state = states.get((device.type, device.minor))
        if state is not None:
            entry["provider"] = state.uuid
            entry["path"] = "/".join(state.path)
            entry["inventories"] = {
                base: {"total": state.total[base], "used": state.total[base] - state.free[base]}
                for base in state.total
            }
        devices.append(entry)
    return {
        "name": name,
        "uuid": uuid,
        "in_sync": node is not None,
        "resources": dict(topology.node_resources),
        "devices": devices,
        "nvlinks": [
            {"gpus": [a, b], "links": links} for (a, b), links in sorted(topology.nvlinks.items())
        ],
    }
