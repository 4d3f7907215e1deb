"""Koordinator's ``Device`` object (``scheduling.koordinator.sh/v1alpha1``, one per node,
named after it, as its device reporter publishes it) -> a device list import and the
node's kubelet checkpoint.

Each entry of ``spec.devices`` is a device: ``type`` (gpu, rdma, fpga), ``minor``,
``id``, ``health`` (Koordinator's Go field is ``health,omitempty``: a missing
``health`` is false, as Koordinator reads it) and ``resources`` (a GPU's memory is its
``<prefix>gpu-memory``). Where an entry has Koordinator's ``topology``
(``nodeID``: the NUMA node; ``pcieID``: the PCIe root the device hangs from), the
device is placed there, devices of one ``pcieID`` on one PCIe switch; without it, on
NUMA node 0, each device on a switch of its own (nothing is said to be closer than
it is). The annotation ``node.koordinator.sh/gpu-checkpoints`` lists the devices
kubelet gave pods (the device routes' checkpoint entries).
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass

from placement import errors
from placement.devices.request import PREFIXES, expect_object

API_VERSION = "scheduling.koordinator.sh/v1alpha1"
CHECKPOINTS_ANNOTATION = "node.koordinator.sh/gpu-checkpoints"


@dataclass(frozen=True)
class DeviceObject:
    node: str
    device_list: dict  # the body of PUT /group_resources/device_nodes/{name}
    checkpoints: list[dict] | None  # the annotation's entries, when it has one


def read_device_object(document: object) -> DeviceObject:
    if not isinstance(document, Mapping):
        raise errors.BadRequest("A Device object must be a JSON object.")
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if kind not in (None, "Device") or api_version not in (None, API_VERSION):
        raise errors.BadRequest(f"Expected a Device of {API_VERSION}, not {kind} {api_version}.")
    metadata = expect_object(document.get("metadata"), "metadata")
    node = metadata.get("name")
    if not isinstance(node, str) or not node:
        raise errors.BadRequest("metadata.name: the Device's node is missing.")
    spec = expect_object(document.get("spec"), "spec")
    entries = spec.get("devices")
    if not isinstance(entries, list) or not entries:
        raise errors.BadRequest("spec.devices: a Device object needs a list of devices.")
    switches: dict[object, int] = {}
    devices = [
        _device(expect_object(entry, f"spec.devices.{i}"), i, switches)
        for i, entry in enumerate(entries)
    ]
    annotations = expect_object(metadata.get("annotations") or {}, "metadata.annotations")
    return DeviceObject(node, {"devices": devices}, _checkpoints(annotations))


def _device(entry: Mapping, index: int, switches: dict[object, int]) -> dict:
    where = f"spec.devices.{index}"
    device: dict = {key: entry[key] for key in ("type", "minor", "id") if key in entry}
    device["health"] = entry.get("health", False)
    topology = expect_object(entry.get("topology") or {}, f"{where}.topology")
    device["numa"] = topology.get("nodeID", 0)
    root = topology.get("pcieID")
    key = root if root is not None else ("alone", index)
    device["pcie"] = switches.setdefault(key, len(switches))  # type: ignore[arg-type]
    resources = expect_object(entry.get("resources") or {}, f"{where}.resources")
    for prefix in PREFIXES:
        if f"{prefix}gpu-memory" in resources:
            device["memory"] = resources[f"{prefix}gpu-memory"]
    return device


def _checkpoints(annotations: Mapping) -> list[dict] | None:
    text = annotations.get(CHECKPOINTS_ANNOTATION)
    if text is None:
        return None
    try:
        entries = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise errors.BadRequest(f"Annotation {CHECKPOINTS_ANNOTATION} is not JSON: {exc}") from exc
    if not isinstance(entries, list):
        raise errors.BadRequest(f"Annotation {CHECKPOINTS_ANNOTATION} must be a JSON list.")
    return entries
