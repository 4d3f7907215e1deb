"""The topology importers: ``nvidia-smi topo -m`` text and plain device lists.

The sample files in tests/data/topologies are real-format matrices; each test
pins the positions (NUMA node, host bridge, switch), NVLinks and identities an
importer must give, or the 400 it must answer instead. No database.
"""

import random
import string
from itertools import combinations
from pathlib import Path

import pytest
import yaml

from placement import errors
from placement.devices.device_list import parse_device_list
from placement.devices.node_map import device_layout
from placement.devices.topology import Topology
from placement.devices.topology_matrix import MatrixDetails, parse_matrix

SAMPLES = Path(__file__).parent.parent / "data" / "topologies"
DETAILS = MatrixDetails(gpu_memory_kib=16384 * 1024)


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def positions(topology: Topology) -> list[tuple[str, str, int, int, int]]:
    """(name, identity, numa, bridge, switch) of each device, in order."""
    return [(d.name, d.identity, d.numa, d.bridge, d.switch) for d in topology.devices]


def refused(text: str, details: MatrixDetails = DETAILS) -> str:
    with pytest.raises(errors.BadRequest) as raised:
        parse_matrix(text, details)
    return raised.value.detail


def matrix(rows: list[str], affinity: str = "CPU Affinity") -> str:
    """A small matrix from rows of space-separated cells; the header comes from the row names."""
    names = [row.split()[0] for row in rows]
    return (
        "\t"
        + "\t".join([*names, affinity])
        + "\n"
        + "\n".join("\t".join(row.split()) for row in rows)
        + "\n"
    )


# --- The samples --------------------------------------------------------------------------------


def test_dgx1_switches_pair_two_gpus_with_a_nic_and_sockets_share_a_host_bridge():
    topology = parse_matrix(sample("dgx1_v100.txt"), DETAILS)
    # NICs are rdma minors in header order (mlx5_0, mlx5_2, mlx5_1, mlx5_3), known by name.
    assert positions(topology) == [
        ("gpu0", "GPU0", 0, 0, 0),
        ("gpu1", "GPU1", 0, 0, 0),
        ("gpu2", "GPU2", 0, 0, 1),
        ("gpu3", "GPU3", 0, 0, 1),
        ("gpu4", "GPU4", 1, 1, 2),
        ("gpu5", "GPU5", 1, 1, 2),
        ("gpu6", "GPU6", 1, 1, 3),
        ("gpu7", "GPU7", 1, 1, 3),
        ("rdma0", "mlx5_0", 0, 0, 0),
        ("rdma1", "mlx5_2", 1, 1, 2),
        ("rdma2", "mlx5_1", 0, 0, 1),
        ("rdma3", "mlx5_3", 1, 1, 3),
    ]


def test_dgx1_nvlinks_are_the_hybrid_cube_mesh():
    topology = parse_matrix(sample("dgx1_v100.txt"), DETAILS)
    assert dict(topology.nvlinks) == {
        (0, 1): 1,
        (0, 2): 1,
        (0, 3): 2,
        (1, 2): 2,
        (1, 3): 1,
        (2, 3): 2,  # GPU0-3 all joined
        (4, 5): 1,
        (4, 6): 1,
        (4, 7): 2,
        (5, 6): 2,
        (5, 7): 1,
        (6, 7): 2,  # GPU4-7 all joined
        (0, 4): 2,
        (1, 5): 2,
        (2, 6): 1,
        (3, 7): 1,  # GPUi to GPU(i+4)
    }
    # A V100 has six NVLinks, and the DGX-1 uses every one.
    for minor in range(8):
        assert sum(n for pair, n in topology.nvlinks.items() if minor in pair) == 6


def test_dgx_a100_nic_legend_names_the_nics_and_numa_affinity_places_them():
    topology = parse_matrix(sample("dgx_a100.txt"), DETAILS)
    gpus = [(f"gpu{i}", f"GPU{i}", i // 4, i // 2, i // 2) for i in range(8)]
    nics = [(f"rdma{i}", f"mlx5_{i}", i // 4, i // 2, i // 2) for i in range(8)]
    assert positions(topology) == gpus + nics
    assert dict(topology.nvlinks) == {pair: 12 for pair in combinations(range(8), 2)}


def test_pcie_4gpu_has_one_switch_per_socket_and_no_nvlink():
    topology = parse_matrix(sample("pcie_4gpu.txt"), DETAILS)
    assert positions(topology) == [
        ("gpu0", "GPU0", 0, 0, 0),
        ("gpu1", "GPU1", 0, 0, 0),
        ("gpu2", "GPU2", 1, 1, 1),
        ("gpu3", "GPU3", 1, 1, 1),
        ("rdma0", "mlx5_0", 0, 0, 0),
    ]
    assert topology.nvlinks == {}


def test_hetero_box_has_a_switch_and_bridge_per_gpu_and_its_one_nic_on_gpu0s():
    topology = parse_matrix(sample("hetero_1nic.txt"), DETAILS)
    assert positions(topology) == [
        *[(f"gpu{i}", f"GPU{i}", i // 4, i, i) for i in range(8)],
        ("rdma0", "mlx5_0", 0, 0, 0),
    ]
    assert topology.nvlinks == {}


def test_details_give_what_the_matrix_does_not_say():
    ids = tuple(f"GPU-{i:08d}-0000-0000-0000-000000000000" for i in range(8))
    details = MatrixDetails(
        gpu_memory_kib=81920 * 1024,
        gpu_ids=ids,
        gpu_labels={"model": "A100"},
        rdma_vfs=8,
        rdma_labels={"model": "ConnectX-6"},
        rdma_vf_labels={"type": "fullmode"},
        node_resources={"cpu": 256},
    )
    topology = parse_matrix(sample("dgx_a100.txt"), details)
    gpu3, nic3 = topology.device("gpu", 3), topology.device("rdma", 3)
    assert gpu3 is not None and nic3 is not None
    assert (gpu3.identity, gpu3.memory_kib, gpu3.labels, gpu3.vfs) == (
        ids[3],
        81920 * 1024,
        {"model": "A100"},
        0,
    )
    assert (nic3.memory_kib, nic3.vfs, nic3.labels, nic3.vf_labels) == (
        0,
        8,
        {"model": "ConnectX-6"},
        {"type": "fullmode"},
    )
    assert topology.node_resources == {"cpu": 256}


def test_device_list_and_matrix_give_the_same_hetero_topology():
    document = yaml.safe_load(sample("hetero_1nic.yaml"))
    ids = tuple(d["id"] for d in document["devices"] if d["type"] == "gpu")
    details = MatrixDetails(
        gpu_memory_kib=16384 * 1024, gpu_ids=ids, node_resources=document["resources"]
    )
    assert parse_device_list(document) == parse_matrix(sample("hetero_1nic.txt"), details)


def test_dgx_a100_device_list_places_devices_as_the_matrix_does():
    from_list = parse_device_list(yaml.safe_load(sample("dgx_a100.yaml")))
    from_matrix = parse_matrix(sample("dgx_a100.txt"), DETAILS)

    def places(topology: Topology) -> list[tuple]:
        return [(d.type, d.minor, d.numa, d.bridge, d.switch) for d in topology.devices]

    assert places(from_list) == places(from_matrix)
    assert from_list.nvlinks == from_matrix.nvlinks
    gpu0, nic7 = from_list.device("gpu", 0), from_list.device("rdma", 7)
    assert gpu0 is not None and nic7 is not None
    assert (gpu0.memory_kib, gpu0.labels) == (81920 * 1024, {"model": "A100"})
    assert (nic7.identity, nic7.vfs, nic7.vf_labels) == ("mlx5_7", 8, {"type": "fullmode"})
    assert from_list.node_resources == {"cpu": 256, "memory": "2Ti"}


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("malformed_missing_cell.txt", "the row of GPU2 has 6 cells, expected 7"),
        ("malformed_asymmetric.txt", "GPU0/GPU1 says PIX, GPU1/GPU0 says SYS"),
        ("malformed_unknown_cell.txt", "cell GPU5/GPU6 has the unknown value 'N0DE'"),
        ("malformed_numa_conflict.txt", "GPU0 on node 0 and GPU1 on node 1"),
    ],
)
def test_malformed_samples_are_refused_naming_the_problem(name, problem):
    detail = refused(sample(name))
    assert detail.startswith("Malformed topology matrix: ")
    assert problem in detail


# --- Leniency about whitespace, strictness about structure --------------------------------------


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(lambda text: text.expandtabs(8), id="spaces-for-tabs"),
        pytest.param(lambda text: text.replace("\n", "\r\n"), id="crlf"),
        pytest.param(lambda text: "\n\n" + text.lstrip("\t"), id="blank-lines-unindented-header"),
        pytest.param(
            lambda text: "\x1b[4m" + text.replace("CPU Affinity", "CPU Affinity\x1b[0m", 1),
            id="terminal-underline",
        ),
        pytest.param(lambda text: text.replace("SYS", "SOC"), id="old-SOC-spelling"),
        pytest.param(lambda text: text.split("\n\nLegend:")[0], id="no-legend"),
    ],
)
def test_whitespace_and_old_spellings_do_not_change_the_topology(variant):
    original = sample("dgx1_v100.txt")
    assert parse_matrix(variant(original), DETAILS) == parse_matrix(original, DETAILS)


def test_numa_affinity_wins_over_order_and_fills_rows_that_print_none():
    text = matrix(
        [
            "GPU0 X PIX SYS PIX 0-7 1",
            "GPU1 PIX X SYS PIX 0-7 N/A",
            "GPU2 SYS SYS X SYS 8-15 0",
            "NIC0 PIX PIX SYS X",
        ],
        affinity="CPU Affinity\tNUMA Affinity",
    )
    topology = parse_matrix(text, DETAILS)
    # GPU1 prints N/A and the NIC prints nothing: both are on GPU0's switch, so on node 1.
    assert [(d.name, d.numa) for d in topology.devices] == [
        ("gpu0", 1),
        ("gpu1", 1),
        ("gpu2", 0),
        ("rdma0", 1),
    ]


def test_groups_without_numa_affinity_get_nodes_no_other_group_has():
    text = matrix(
        ["GPU0 X SYS SYS 0-7 1", "GPU1 SYS X SYS 8-15 N/A", "GPU2 SYS SYS X 16-23 0"],
        affinity="CPU Affinity\tNUMA Affinity",
    )
    assert [d.numa for d in parse_matrix(text, DETAILS).devices] == [1, 2, 0]


def test_numa_affinity_that_is_not_one_node_is_left_to_the_cells():
    # Virtual machines print ranges such as 0-1.
    text = matrix(
        ["GPU0 X SYS 0-7 0-1", "GPU1 SYS X 0-7 0-1"], affinity="CPU Affinity\tNUMA Affinity"
    )
    assert [d.numa for d in parse_matrix(text, DETAILS).devices] == [0, 1]


@pytest.mark.parametrize("node", ["1024", "9" * 5000])
def test_numa_affinity_beyond_what_linux_numbers_is_refused(node):
    text = matrix([f"GPU0 X 0-7 {node}"], affinity="CPU Affinity\tNUMA Affinity")
    assert "the NUMA Affinity of GPU0 is '" in refused(text)


def test_nvlink_says_nothing_about_pcie_but_a_shared_nic_does():
    apart = matrix(["GPU0 X NV4 0-7", "GPU1 NV4 X 0-7"])
    assert [(d.switch, d.numa) for d in parse_matrix(apart, DETAILS).devices] == [(0, 0), (1, 1)]
    together = matrix(["GPU0 X NV4 PIX 0-7", "GPU1 NV4 X PIX 0-7", "mlx5_0 PIX PIX X"])
    topology = parse_matrix(together, DETAILS)
    assert {d.switch for d in topology.devices} == {0}
    assert topology.nvlinks == {(0, 1): 4}


def test_nic_rows_may_print_affinity_cells_too():
    text = matrix(["GPU0 X PIX 0-7", "NIC0 PIX X 0-7"])
    assert positions(parse_matrix(text, DETAILS))[1] == ("rdma0", "NIC0", 0, 0, 0)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no header (the text is empty)"),
        ("\n  \n\t\n", "no header (the text is empty)"),
        ("GPU0 X 0-7\n", "no header: the first line must name the devices"),
        ("\tGPU0\tGPU1\n", "no header"),
        ("\tCPU Affinity\n", "the header names no device"),
        ("\tGPU0\tGPU0\tCPU Affinity\n", "the header names GPU0 twice"),
        ("\tGPU1\tGPU0\tCPU Affinity\n", "GPU column GPU1 is out of order: GPU0 was expected"),
        ("\tGPU0\tNIC1\tCPU Affinity\n", "NIC column NIC1 is out of order"),
        ("\tGPU0\tm/x\tCPU Affinity\n", "a device 'm/x', which is not a device name"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\tX\tPIX\t0-7\n", "no row for GPU1"),
        (
            matrix(["GPU0 X PIX 0-7", "GPU1 PIX X 0-7"]) + "GPU0\tX\tPIX\t0-7\n",
            "the row of GPU0 is repeated",
        ),
        (matrix(["GPU0 X PIX 0-7", "GPU1 PIX X"]), "the row of GPU1 has 2 cells, expected 3"),
        (matrix(["GPU0 X PIX 0-7", "NIC0 PIX"]), "the row of NIC0 has 1 cells, expected 2 or 3"),
        (matrix(["GPU0 PIX PIX 0-7", "GPU1 PIX X 0-7"]), "cell GPU0/GPU0 is 'PIX', expected X"),
        (matrix(["GPU0 X X 0-7", "GPU1 X X 0-7"]), "cell GPU0/GPU1 has the unknown value 'X'"),
        (matrix(["GPU0 X NV19 0-7", "GPU1 NV19 X 0-7"]), "unknown value 'NV19'"),
        (matrix(["GPU0 X NV0 0-7", "GPU1 NV0 X 0-7"]), "unknown value 'NV0'"),
        (
            matrix(["GPU0 X NV2 0-7", "NIC0 NV2 X"]),
            "cell GPU0/NIC0 says NV2: NVLink joins GPUs only",
        ),
        (matrix(["NIC0 X PIX", "NIC1 PIX X"]), "the header lists no GPU"),
    ],
)
def test_malformed_structure_is_refused_naming_the_problem(text, problem):
    detail = refused(text)
    assert detail.startswith("Malformed topology matrix: ")
    assert problem in detail


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        # PIX chains one switch (GPU0-NIC0-GPU1): GPU0/GPU1 cannot then be SYS apart.
        (
            ["GPU0 X SYS PIX 0-7", "GPU1 SYS X PIX 0-7", "NIC0 PIX PIX X"],
            "cell GPU0/GPU1 says SYS, but other cells put them under one PCIe switch",
        ),
        (
            ["GPU0 X NODE PHB 0-7", "GPU1 NODE X PHB 0-7", "NIC0 PHB PHB X"],
            "cell GPU0/GPU1 says NODE, but other cells put them under one PCIe host bridge",
        ),
        (
            ["GPU0 X SYS NODE 0-7", "GPU1 SYS X NODE 0-7", "NIC0 NODE NODE X"],
            "cell GPU0/GPU1 says SYS, but other cells put them under one NUMA node",
        ),
    ],
)
def test_cells_that_contradict_each_other_are_refused(rows, problem):
    assert problem in refused(matrix(rows))


def test_sys_between_devices_numa_affinity_puts_together_is_refused():
    text = matrix(["GPU0 X SYS 0-7 0", "GPU1 SYS X 0-7 0"], affinity="CPU Affinity\tNUMA Affinity")
    assert "cell GPU0/GPU1 says SYS, but NUMA Affinity puts both on NUMA node 0" in refused(text)


def test_nic_legend_must_name_nic_columns():
    text = matrix(["GPU0 X PIX 0-7", "NIC0 PIX X"]) + "\nNIC Legend:\n\n  NIC3: mlx5_3\n"
    assert "the NIC Legend names 'NIC3', which is not a NIC column" in refused(text)


@pytest.mark.parametrize(
    ("details", "problem"),
    [
        (MatrixDetails(gpu_memory_kib=0), "gpu_memory_kib must be positive, not 0"),
        (MatrixDetails(gpu_memory_kib=-5), "gpu_memory_kib must be positive"),
        (
            MatrixDetails(gpu_memory_kib=1024, gpu_ids=tuple(f"GPU-{i}" for i in range(9))),
            "9 GPU ids were given for the 8 GPUs of the matrix",
        ),
        (MatrixDetails(gpu_memory_kib=1024, gpu_ids=("GPU-a",)), "1 GPU ids were given for the 8"),
        (MatrixDetails(gpu_memory_kib=1024, rdma_vfs=-1), "rdma_vfs cannot be negative"),
    ],
)
def test_details_that_do_not_fit_are_refused(details, problem):
    assert problem in refused(sample("dgx1_v100.txt"), details)


# --- Any text gives a Topology or a 400, never another exception ---------------------------------


@pytest.mark.parametrize("name", ["dgx1_v100.txt", "hetero_1nic.txt", "dgx_a100.txt"])
def test_a_matrix_cut_short_is_refused(name):
    text = sample(name)
    last_cell = text.rindex("X", 0, text.index("\n\nLegend:"))  # the last row's diagonal
    for cut in range(last_cell):
        with pytest.raises(errors.BadRequest):
            parse_matrix(text[:cut], DETAILS)


def test_random_garbage_is_refused():
    rng = random.Random(20240601)
    alphabet = string.printable + "\t" * 20
    for _ in range(200):
        lines = [
            "".join(rng.choices(alphabet, k=rng.randint(0, 80))) for _ in range(rng.randint(0, 12))
        ]
        with pytest.raises(errors.BadRequest):
            parse_matrix("\n".join(lines), DETAILS)


TOKENS = [
    "X",
    "PIX",
    "PXB",
    "PHB",
    "NODE",
    "SYS",
    "SOC",
    "NV1",
    "NV12",
    "NV18",
    "NV19",
    "N/A",
    "0",
    "1",
    "0-19,40-59",
    "GPU0",
    "GPU9",
    "NIC0",
    "mlx5_0",
    "",
    "\t",
    "Legend:",
    "NIC Legend:",
    "NIC0: mlx5_9",
    "CPU Affinity",
    "99999",
]


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(7)
    if kind == 0 and text:  # drop a character
        at = rng.randrange(len(text))
        return text[:at] + text[at + 1 :]
    if kind == 1:  # insert a character
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice("\t \nX0N/-,:") + text[at:]
    if kind == 2:  # replace a cell
        row = rng.randrange(len(lines))
        cells = lines[row].split("\t")
        cells[rng.randrange(len(cells))] = rng.choice(TOKENS)
        lines[row] = "\t".join(cells)
    elif kind == 3:  # repeat a line
        row = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[row])
    elif kind == 4:  # drop a line
        del lines[rng.randrange(len(lines))]
    elif kind == 5:  # swap two lines
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
    else:  # cut anywhere
        return text[: rng.randrange(len(text) + 1)]
    return "\n".join(lines)


def test_random_mutations_give_a_topology_or_a_bad_request():
    rng = random.Random(1729)
    originals = [sample(name) for name in ("dgx1_v100.txt", "dgx_a100.txt", "hetero_1nic.txt")]
    outcomes = {"parsed": 0, "refused": 0}
    for _ in range(200):
        text = rng.choice(originals)
        for _ in range(rng.randint(1, 3)):
            text = _mutate(text, rng)
        try:
            assert isinstance(parse_matrix(text, DETAILS), Topology)
            outcomes["parsed"] += 1
        except errors.BadRequest:
            outcomes["refused"] += 1
    # Both outcomes happen, so the mutations do reach the parser's checks.
    assert outcomes["parsed"] > 0 and outcomes["refused"] > 0


# --- Device lists -------------------------------------------------------------------------------


def gpu(minor: int = 0, **fields) -> dict:
    return {"type": "gpu", "minor": minor, "numa": 0, "pcie": 0, "memory": "16Gi", **fields}


def nic(minor: int = 0, **fields) -> dict:
    return {"type": "rdma", "minor": minor, "numa": 0, "pcie": 0, **fields}


def list_refused(document: object) -> str:
    with pytest.raises(errors.BadRequest) as raised:
        parse_device_list(document)
    return raised.value.detail


@pytest.mark.parametrize(
    ("memory", "kib"),
    [
        ("16Gi", 16384 * 1024),
        ("15472384Ki", 15472384),
        (2**30, 1024 * 1024),
        ("1.5Gi", 1536 * 1024),
        ("2GiB", 2048 * 1024),
        ("1025Ki", 1025),
        ("16G", 15625000),
    ],  # 16 * 10**9 bytes is a whole number of KiB too
)
def test_gpu_memory_is_a_quantity_kept_exactly_in_kib(memory, kib):
    """A GPU reporting 15472384Ki keeps exactly that, not 15109 MiB."""
    [device] = parse_device_list({"devices": [gpu(memory=memory)]}).devices
    assert device.memory_kib == kib


@pytest.mark.parametrize(
    ("memory", "problem"),
    [
        ("1Ki", "devices.0.memory: '1Ki' is less than 1 MiB"),
        (0, "devices.0.memory: 0 is less than 1 MiB"),
        ("16 apples", "devices.0.memory: '16 apples' is not an amount"),
        (True, "devices.0.memory: True is not an amount"),
        ("8Ei", "is more than"),
        (2**20 + 1, "devices.0.memory: 1048577 is not a whole number of KiB (1024.000977 KiB)"),
        ("1.0001Gi", "is not a whole number of KiB"),
    ],
)
def test_gpu_memory_that_is_not_a_usable_amount_is_refused(memory, problem):
    assert problem in list_refused({"devices": [gpu(memory=memory)]})


def test_ids_default_to_type_and_minor_and_lists_pass_through():
    topology = parse_device_list(
        {
            "devices": [gpu(labels={"model": "T4"}), nic(vfs=4, vfLabels={"type": "vf"})],
            "resources": {"cpu": 8, "memory": "64Gi"},
        }
    )
    gpu0, nic0 = topology.devices
    assert (gpu0.identity, gpu0.labels) == ("gpu0", {"model": "T4"})
    assert (nic0.identity, nic0.vfs, nic0.vf_labels) == ("rdma0", 4, {"type": "vf"})
    assert topology.node_resources == {"cpu": 8, "memory": "64Gi"}


def test_missing_bridges_follow_their_switch_or_get_fresh_ones():
    topology = parse_device_list(
        {
            "devices": [
                gpu(0, pcie=5),
                gpu(1, pcie=7, bridge=0),
                gpu(2, pcie=5),
                nic(0, pcie=7),
                gpu(3, pcie=9),
            ]
        }
    )
    # Switch 7 names bridge 0; switches 5 and 9 get the next bridges not named (1, 2).
    assert [(d.switch, d.bridge) for d in topology.devices] == [
        (5, 1),
        (7, 0),
        (5, 1),
        (7, 0),
        (9, 2),
    ]


def test_nvlink_pairs_are_normalized_lower_minor_first():
    topology = parse_device_list(
        {"devices": [gpu(0), gpu(1)], "nvlinks": [{"gpus": [1, 0], "links": 12}]}
    )
    assert topology.nvlinks == {(0, 1): 12}


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([gpu()], "the document must be a mapping"),
        ({}, "devices: 'devices' is a required property"),
        ({"devices": []}, "devices: Length must be between 1 and 256."),
        ({"devices": [gpu(minor) for minor in range(257)]}, "devices: at most 256 entries"),
        (
            {"devices": [gpu(type="tpu")]},
            "devices.0.type: Unknown device type 'tpu': known types are gpu, rdma, fpga.",
        ),
        (
            {"devices": [gpu(colour="green")]},
            "devices.0.colour: Additional properties are not allowed ('colour' was unexpected)",
        ),
        (
            {"devices": [gpu()], "owner": "me"},
            "owner: Additional properties are not allowed ('owner' was unexpected)",
        ),
        ({"devices": [gpu(minor=-1)]}, "devices.0.minor: -1 is less than the minimum of 0"),
        ({"devices": [gpu(numa="0")]}, "devices.0.numa: '0' is not of type 'integer'"),
        (
            {"devices": [{"type": "gpu", "minor": 0, "numa": 0, "pcie": 0}]},
            "devices.0.memory: a GPU needs its memory.",
        ),
        ({"devices": [nic(memory="1Gi")]}, "devices.0.memory: only GPUs have memory."),
        ({"devices": [gpu(vfs=2)]}, "devices.0.vfs: only rdma devices have VFs."),
        (
            {"devices": [gpu(vfLabels={"a": "b"})]},
            "devices.0.vfLabels: only rdma devices have VFs.",
        ),
        (
            {"devices": [gpu(labels={"model": 1})]},
            "devices.0.labels.model: 1 is not of type 'string'",
        ),
        (
            {"devices": [gpu(), gpu(1)], "nvlinks": [{"gpus": [0, 1], "links": 19}]},
            "nvlinks.0.links: 19 is greater than the maximum of 18",
        ),
        (
            {"devices": [gpu(), gpu(1)], "nvlinks": [{"gpus": [0, 1, 1], "links": 2}]},
            "nvlinks.0.gpus: Length must be 2.",
        ),
        (
            {"devices": [gpu(), gpu(1)], "nvlinks": [{"gpus": [0, 1], "links": 2, "kind": "x"}]},
            "nvlinks.0.kind: Additional properties are not allowed ('kind' was unexpected)",
        ),
        (
            {"devices": [gpu()], "nvlinks": [{"gpus": [0, 0], "links": 2}]},
            "nvlinks.0: a GPU has no NVLink to itself",
        ),
        (
            {
                "devices": [gpu(), gpu(1)],
                "nvlinks": [{"gpus": [0, 1], "links": 2}, {"gpus": [1, 0], "links": 4}],
            },
            "nvlinks.1: gpus 0 and 1 are listed twice",
        ),
    ],
)
def test_malformed_device_lists_are_refused_naming_the_field(document, problem):
    assert problem in list_refused(document)


@pytest.mark.parametrize(
    ("devices", "nvlinks", "problem"),
    [
        ([gpu(0), gpu(0, pcie=1)], [], "Device gpu0 is listed twice."),
        ([gpu(0, id="a"), gpu(1, id="a")], [], "Device id 'a' is listed twice."),
        ([gpu(0), gpu(1, numa=1)], [], "PCIe switch 0 is placed under two host bridges or NUMA"),
        ([gpu(0)], [{"gpus": [0, 3], "links": 2}], "NVLink pair (0, 3): there is no gpu3."),
    ],
)
def test_cross_device_problems_come_from_the_topology_check(devices, nvlinks, problem):
    assert problem in list_refused({"devices": devices, "nvlinks": nvlinks})


# --- PCIe link types in nvidia-smi topo -m's order -----------------------------------------------


def test_pxb_is_a_switch_group_between_pix_and_phb():
    """GPU0/GPU1 share a switch (PIX); GPU2 hangs from the same upstream switch (PXB);
    GPU3 only from the same host bridge (PHB)."""
    topology = parse_matrix(
        matrix(
            [
                "GPU0 X PIX PXB PHB 0-7",
                "GPU1 PIX X PXB PHB 0-7",
                "GPU2 PXB PXB X PHB 0-7",
                "GPU3 PHB PHB PHB X 0-7",
            ]
        ),
        DETAILS,
    )
    gpu0, gpu1, gpu2, gpu3 = topology.devices
    assert gpu0.switch == gpu1.switch != gpu2.switch
    assert gpu0.switch_group == gpu2.switch_group >= 0
    assert gpu3.switch_group == -1 and gpu3.bridge == gpu0.bridge
    # Stored and read back as it was (the device list's switchGroup).
    assert Topology.from_document(topology.to_document()) == topology
    assert parse_device_list(topology.to_document()) == topology


def test_psb_reads_as_one_switch():
    """PSB (two GPUs of one board, through its on-board switch) is no longer refused."""
    topology = parse_matrix(matrix(["GPU0 X PSB 0-7", "GPU1 PSB X 0-7"]), DETAILS)
    assert topology.devices[0].switch == topology.devices[1].switch


def test_psb_is_a_board_tighter_than_pix():
    """A PSB pair (GPU2/GPU3) is a board behind its on-board switch, the PIX pair
    (GPU0/GPU1) a switch of its own: both pairs on one switch, only GPU2/GPU3 on a
    board. The board is stored and read back (the device list's board)."""
    topology = parse_matrix(
        matrix(
            [
                "GPU0 X PIX PHB PHB 0-7",
                "GPU1 PIX X PHB PHB 0-7",
                "GPU2 PHB PHB X PSB 0-7",
                "GPU3 PHB PHB PSB X 0-7",
            ]
        ),
        DETAILS,
    )
    gpu0, gpu1, gpu2, gpu3 = topology.devices
    assert gpu0.switch == gpu1.switch != gpu2.switch == gpu3.switch
    assert gpu0.board == gpu1.board == -1
    assert gpu2.board == gpu3.board >= 0
    assert topology.to_document()["devices"][2]["board"] == gpu2.board
    assert Topology.from_document(topology.to_document()) == topology
    assert parse_device_list(topology.to_document()) == topology


def test_a_pix_cell_between_devices_of_one_board_is_refused():
    problem = refused(
        matrix(
            [
                "GPU0 X PSB PIX 0-7",
                "GPU1 PSB X PSB 0-7",
                "GPU2 PIX PSB X 0-7",
            ]
        )
    )
    assert "GPU0/GPU2 says PIX, but other cells put them under one board" in problem


def test_a_board_on_two_switches_is_refused():
    problem = list_refused({"devices": [gpu(0, pcie=0, board=0), gpu(1, pcie=1, board=0)]})
    assert "Board 0 is placed under two PCIe switches" in problem


def test_a_cell_that_contradicts_the_switch_groups_is_refused():
    problem = refused(
        matrix(
            [
                "GPU0 X PXB PHB 0-7",
                "GPU1 PXB X PXB 0-7",
                "GPU2 PHB PXB X 0-7",
            ]
        )
    )
    assert "upstream PCIe switch" in problem


def test_a_switch_in_two_groups_is_refused():
    problem = list_refused(
        {"devices": [gpu(0, pcie=0, switchGroup=0), gpu(1, pcie=0, switchGroup=1)]}
    )
    assert "PCIe switch 0 is placed in two switch groups" in problem


def test_vfs_listed_one_by_one_are_kept_by_minor_and_stored_as_groups():
    """VFs with labels of their own: read from groups in any order, kept by
    minor, written back as groups of equal labels; each VF an inventory of its NIC."""
    nic = {
        "type": "rdma",
        "minor": 0,
        "numa": 0,
        "pcie": 0,
        "vfGroups": [
            {"labels": {"type": "b"}, "vfs": [{"minor": 2, "busID": "0000:1f:00.4"}]},
            {
                "labels": {"type": "a"},
                "vfs": [
                    {"minor": 1, "busID": "0000:1f:00.3"},
                    {"minor": 0, "busID": "0000:1f:00.2"},
                ],
            },
        ],
    }
    topology = parse_device_list({"devices": [nic]})
    [device] = topology.devices
    assert [(vf.minor, vf.bus_id, dict(vf.labels)) for vf in device.vf_list] == [
        (0, "0000:1f:00.2", {"type": "a"}),
        (1, "0000:1f:00.3", {"type": "a"}),
        (2, "0000:1f:00.4", {"type": "b"}),
    ]
    assert device.vfs == 3
    document = topology.to_document()
    assert document["devices"][0]["vfGroups"] == [
        {
            "labels": {"type": "a"},
            "vfs": [{"minor": 0, "busID": "0000:1f:00.2"}, {"minor": 1, "busID": "0000:1f:00.3"}],
        },
        {"labels": {"type": "b"}, "vfs": [{"minor": 2, "busID": "0000:1f:00.4"}]},
    ]
    assert Topology.from_document(document) == topology
    assert parse_device_list(document) == topology
    resources = device_layout(topology).resources
    assert {
        key.rsplit("/", 1)[1]: value for key, value in resources.items() if "/rdma/" in key
    } == {"share": 100, "vf": 3, "vf-0": 1, "vf-1": 1, "vf-2": 1, "tenancy": 1003}
