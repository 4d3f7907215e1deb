"""The device chooser and request reader without a database: link strength, the greedy
search beyond the exact limit, and the stored document's round trip."""

import dataclasses
import itertools
import json

from placement.devices import chooser
from placement.devices.device_list import parse_device_list
from placement.devices.node_map import TENANCY, device_inventories
from placement.devices.request import parse_device_request
from placement.devices.snapshot import DeviceNode, DeviceState, SwitchState
from placement.devices.stored import StoredTopologies
from placement.devices.topology import Device, Topology
from placement.nodes.naming import Naming

GIB = 2**20  # KiB


def _node(topology: Topology) -> DeviceNode:
    states = []
    for device in topology.devices:
        totals = (
            {"core": 100, "memory": device.memory_kib, "memory-ratio": 100, "tenancy": TENANCY}
            if device.type == "gpu"
            else {"share": 100, "tenancy": TENANCY}
        )
        assert set(totals) == set(device_inventories(device))
        states.append(
            DeviceState(
                device=device,
                uuid=f"u-{device.name}",
                path=(),
                classes={n: n for n in totals},
                total=dict(totals),
                free=dict(totals),
                in_use=False,
                units={n: (1, total, 1) for n, total in totals.items()},
            )
        )
    switches = {
        d.switch: SwitchState(
            uuid=f"s{d.switch}",
            classes={"gpu": "t", "rdma": "t"},
            total={"gpu": TENANCY, "rdma": TENANCY},
            free={"gpu": TENANCY, "rdma": TENANCY},
            units={"gpu": (1, TENANCY, 1), "rdma": (1, TENANCY, 1)},
        )
        for d in topology.devices
    }
    return DeviceNode(
        name="n",
        uuid="root",
        topology=topology,
        shape=0,
        devices=states,
        switches=switches,
        node_classes={},
    )


def _cliques(groups: int, size: int) -> Topology:
    """``groups`` NVLink cliques of ``size`` GPUs, the cliques interleaved by minor."""
    devices = tuple(
        Device(type="gpu", minor=m, identity=f"G{m}", numa=0, bridge=0, switch=m, memory_kib=GIB)
        for m in range(groups * size)
    )
    nvlinks = {}
    for group in range(groups):
        members = [m for m in range(groups * size) if m % groups == group]
        for a, b in itertools.combinations(members, 2):
            nvlinks[(a, b)] = 2
    return Topology(devices=devices, nvlinks=nvlinks)


def test_the_exact_search_picks_a_whole_clique():
    node = _node(_cliques(2, 4))
    chosen = chooser.best_set(node, list(range(8)), 4, pack=True)
    assert chosen == [0, 2, 4, 6]


def test_beyond_the_exact_limit_the_greedy_search_still_finds_a_clique():
    node = _node(_cliques(3, 8))  # 24 choose 8 = 735,471 sets: greedy
    chosen = chooser.best_set(node, list(range(24)), 8, pack=True)
    assert chosen == [m for m in range(24) if m % 3 == 0]


def test_one_socket_beats_a_switch_pair_gained_by_crossing_sockets():
    """Per socket a switch of two GPUs and a lone GPU: three GPUs of one socket beat
    the same switch pair with a GPU of the other socket."""
    devices = []
    for numa in range(2):
        switches = [(numa * 3, 1), (numa * 3 + 1, 2)] if numa == 0 else [(3, 2), (4, 1)]
        for switch, gpus in switches:
            for _ in range(gpus):
                minor = len(devices)
                devices.append(
                    Device(
                        type="gpu",
                        minor=minor,
                        identity=f"G{minor}",
                        numa=numa,
                        bridge=numa,
                        switch=switch,
                        memory_kib=GIB,
                    )
                )
    node = _node(Topology(devices=tuple(devices)))
    chosen = chooser.best_set(node, list(range(6)), 3, pack=True)
    assert {node.devices[i].device.numa for i in chosen} == {0}
    assert chooser.link_counts(node, chosen) == {
        "nvlinks": 0,
        "samePCIe": 1,
        "sameHostBridge": 2,
        "sameNUMA": 0,
        "crossNUMA": 0,
    }


def test_nvlinks_outweigh_any_pci_placement():
    devices = tuple(
        Device(
            type="gpu",
            minor=m,
            identity=f"G{m}",
            numa=m // 2,
            bridge=m // 2,
            switch=m // 2,
            memory_kib=GIB,
        )
        for m in range(4)
    )
    node = _node(Topology(devices=devices, nvlinks={(0, 2): 1}))
    assert chooser.best_set(node, [0, 1, 2, 3], 2, pack=True) == [0, 2]


def test_the_stored_document_reads_back_as_the_same_topology():
    topology = parse_device_list(
        {
            "devices": [
                {
                    "type": "gpu",
                    "minor": 0,
                    "numa": 3,
                    "pcie": 0,
                    "memory": "15472384Ki",
                    "labels": {"model": "T4"},
                },
                {
                    "type": "rdma",
                    "minor": 0,
                    "numa": 3,
                    "pcie": 0,
                    "vfs": 4,
                    "vfLabels": {"mode": "full"},
                },
            ],
            "resources": {"cpu": 8},
        }
    )
    assert topology.devices[0].memory_kib == 15472384  # exact: not a whole MiB
    assert topology.to_document()["devices"][0]["memory"] == "15472384Ki"
    assert Topology.from_document(topology.to_document()) == topology
    assert parse_device_list(topology.to_document()) == topology


def test_a_request_over_100_is_whole_devices_and_node_resources_round_up():
    request = parse_device_request(
        {"kubernetes.io/gpu": 300, "cpu": "1500m", "memory": "100M"}, {}, Naming()
    )
    gpu = request.types["gpu"]
    assert (gpu.count, gpu.per_device.whole) == (3, True)
    assert request.node_resources == {"VCPU": 2, "MEMORY_MB": 96}


def test_pairs_are_searched_exhaustively_on_wide_nodes():
    """208 GPUs: the NV18 pair wins over a clique of NV2 GPUs, though 208 choose 2 is past
    the exact limit."""
    devices = tuple(
        Device(type="gpu", minor=m, identity=f"G{m}", numa=0, bridge=0, switch=m, memory_kib=GIB)
        for m in range(208)
    )
    nvlinks = {(a, b): 2 for a, b in itertools.combinations(range(16), 2)}
    nvlinks[(200, 201)] = 18
    node = _node(Topology(devices=devices, nvlinks=nvlinks))
    assert chooser.best_set(node, list(range(208)), 2, pack=True) == [200, 201]


def test_stored_documents_of_one_model_share_their_layout_and_tables():
    """Two nodes of one model (only the GPUs' identities differ) are read as one layout
    and the same label and NVLink tables; each keeps its own devices."""
    stored = StoredTopologies()
    base = _cliques(2, 2)
    labelled = Topology(
        devices=tuple(dataclasses.replace(d, labels={"model": "a100"}) for d in base.devices),
        nvlinks=base.nvlinks,
    )
    other = Topology(
        devices=tuple(
            dataclasses.replace(d, identity=f"GPU-other-{d.minor}") for d in labelled.devices
        ),
        nvlinks=labelled.nvlinks,
    )
    first = stored.read(json.dumps(labelled.to_document()))
    second = stored.read(json.dumps(other.to_document()))
    assert first.topology == labelled and second.topology == other
    assert first.shape == second.shape
    assert first.layout is second.layout
    assert first.topology.nvlinks is second.topology.nvlinks
    assert first.topology.devices[0].labels is second.topology.devices[1].labels
    assert [d.identity for d in second.topology.devices] == [f"GPU-other-{m}" for m in range(4)]
    # Another model (here: other node resources) gets its own layout.
    bigger = Topology(devices=other.devices, nvlinks=other.nvlinks, node_resources={"cpu": 96})
    assert stored.read(json.dumps(bigger.to_document())).layout is not first.layout


def test_switches_under_one_upstream_switch_beat_switches_apart_under_the_host_bridge():
    """Links rank in nvidia-smi topo -m's order: PIX > PXB > PHB. GPU1 and GPU2 hang from one
    upstream switch (PXB), GPU0 only from the host bridge (PHB to both): the pair of
    GPU1 and GPU2 wins, although the lowest minors would be GPU0 and GPU1."""
    devices = (
        Device(type="gpu", minor=0, identity="G0", numa=0, bridge=0, switch=0, memory_kib=GIB),
        Device(
            type="gpu",
            minor=1,
            identity="G1",
            numa=0,
            bridge=0,
            switch=1,
            memory_kib=GIB,
            switch_group=0,
        ),
        Device(
            type="gpu",
            minor=2,
            identity="G2",
            numa=0,
            bridge=0,
            switch=2,
            memory_kib=GIB,
            switch_group=0,
        ),
    )
    node = _node(Topology(devices=devices))
    assert chooser.pair_strength(node, 1, 2) > chooser.pair_strength(node, 0, 1)
    assert chooser.pair_strength(node, 0, 1) == chooser.pair_strength(node, 0, 2)
    assert chooser.best_set(node, [0, 1, 2], 2, pack=True) == [1, 2]


def test_gpus_of_one_board_beat_gpus_of_one_switch_and_lose_to_nvlink():
    """nvml's order: NV# > PSB > PIX. GPU0/GPU1 share a switch (PIX), GPU2/GPU3 a board
    behind its own switch (PSB): the board pair wins, although the lowest minors would
    be GPU0 and GPU1; an NVLink pair (GPU4/GPU5, apart on PCIe) beats both."""
    place = {"type": "gpu", "numa": 0, "bridge": 0, "memory_kib": GIB}
    devices = (
        Device(minor=0, identity="G0", switch=0, **place),
        Device(minor=1, identity="G1", switch=0, **place),
        Device(minor=2, identity="G2", switch=1, board=0, **place),
        Device(minor=3, identity="G3", switch=1, board=0, **place),
    )
    node = _node(Topology(devices=devices))
    assert chooser.pair_strength(node, 2, 3) > chooser.pair_strength(node, 0, 1)
    assert chooser.best_set(node, [0, 1, 2, 3], 2, pack=True) == [2, 3]
    linked = _node(
        Topology(
            devices=(
                *devices,
                Device(minor=4, identity="G4", switch=2, **place),
                Device(minor=5, identity="G5", switch=3, **place),
            ),
            nvlinks={(4, 5): 1},
        )
    )
    assert chooser.pair_strength(linked, 4, 5) > chooser.pair_strength(linked, 2, 3)
    assert chooser.best_set(linked, list(range(6)), 2, pack=True) == [4, 5]
