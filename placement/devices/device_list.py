"""Reads a plain device list (a JSON or YAML document, already parsed) into a ``Topology``.

The document gives each device's position itself (see
``placement.schemas.device_topology``); this module fills in the defaults
(ids, host bridges), reads GPU memory as a quantity and normalizes NVLink
pairs. ``Topology`` then checks that the positions form one tree.
"""

from collections.abc import Mapping

from marshmallow import ValidationError

from placement import errors
from placement.db.tables import MAX_INT
from placement.devices.topology import MAX_DEVICES, Device, Topology, vf_list_of_groups
from placement.nodes.quantities import parse_quantity
from placement.schemas import describe_errors_by_path
from placement.schemas.device_topology import MAX_NVLINK_PAIRS, DeviceTopology

KIB = 2**10
MIB = 2**20


def parse_device_list(document: object) -> Topology:
    """The topology ``document`` describes; 400 naming the field that is wrong."""
    if not isinstance(document, Mapping):
        raise errors.BadRequest("Invalid device list: the document must be a mapping.")
    _check_sizes(document)
    try:
        loaded = DeviceTopology().load(document)
    except ValidationError as exc:
        described = describe_errors_by_path(exc.messages)
        raise errors.BadRequest(f"Invalid device list: {described}") from exc
    entries = loaded["devices"]
    bridges = _bridges_of_switches(entries)
    devices = tuple(
        Device(
            type=entry["type"],
            minor=entry["minor"],
            identity=entry.get("id", f"{entry['type']}{entry['minor']}"),
            numa=entry["numa"],
            bridge=entry.get("bridge", bridges[entry["pcie"]]),
            switch=entry["pcie"],
            memory_kib=gpu_memory_kib(entry["memory"], f"devices.{i}.memory")
            if "memory" in entry
            else 0,
            vfs=entry.get("vfs", 0) + sum(len(g["vfs"]) for g in entry.get("vf_groups", ())),
            labels=entry.get("labels", {}),
            vf_labels=entry.get("vf_labels", {}),
            switch_group=entry.get("switch_group", -1),
            board=entry.get("board", -1),
            healthy=entry.get("health", True),
            vf_list=vf_list_of_groups(
                [
                    {
                        "labels": g.get("labels", {}),
                        "vfs": [{"minor": vf["minor"], "busID": vf["bus_id"]} for vf in g["vfs"]],
                    }
                    for g in entry.get("vf_groups", ())
                ]
            ),
        )
        for i, entry in enumerate(entries)
    )
    return Topology(
        devices=devices,
        nvlinks=_nvlinks(loaded.get("nvlinks", [])),
        node_resources=loaded.get("resources", {}),
    )


def _check_sizes(document: Mapping) -> None:
    # Refused before the schema reads every entry of an oversized list.
    for key, most in (("devices", MAX_DEVICES), ("nvlinks", MAX_NVLINK_PAIRS)):
        value = document.get(key)
        if isinstance(value, list) and len(value) > most:
            raise errors.BadRequest(f"Invalid device list: {key}: at most {most} entries.")


def _bridges_of_switches(entries: list[dict]) -> dict[int, int]:
    """The host bridge of each switch: the one a device on it names, else a fresh one.

    Fresh bridges are numbered in order of appearance, skipping the ones named.
    """
    bridges: dict[int, int] = {}
    for entry in entries:
        if "bridge" in entry:
            bridges.setdefault(entry["pcie"], entry["bridge"])
    used = set(bridges.values())
    fresh = 0
    for entry in entries:
        if entry["pcie"] in bridges:
            continue
        while fresh in used:
            fresh += 1
        bridges[entry["pcie"]] = fresh
        used.add(fresh)
    return bridges


def gpu_memory_kib(value: object, where: str) -> int:
    """A GPU's memory, a quantity, as the whole KiB it is: exact for every binary
    quantity (``15472384Ki``, ``80Gi``) and for bytes in whole KiB; 400 for an amount
    that is not a whole KiB, under 1 MiB, or over what placement stores."""
    amount = parse_quantity(value, where)
    if amount < MIB:
        raise errors.BadRequest(f"{where}: {value!r} is less than 1 MiB.")
    kib = amount / KIB
    if kib.denominator != 1:
        raise errors.BadRequest(
            f"{where}: {value!r} is not a whole number of KiB ({float(kib):.10g} KiB); GPU "
            "memory is kept in KiB."
        )
    if kib > MAX_INT:
        raise errors.BadRequest(f"{where}: {value!r} is more than {MAX_INT} KiB.")
    return int(kib)


def _nvlinks(entries: list[dict]) -> dict[tuple[int, int], int]:
    nvlinks: dict[tuple[int, int], int] = {}
    for i, entry in enumerate(entries):
        low, high = sorted(entry["gpus"])
        if low == high:
            raise errors.BadRequest(
                f"Invalid device list: nvlinks.{i}: a GPU has no NVLink to itself."
            )
        if (low, high) in nvlinks:
            raise errors.BadRequest(
                f"Invalid device list: nvlinks.{i}: gpus {low} and {high} are listed twice."
            )
        nvlinks[(low, high)] = entry["links"]
    return nvlinks
