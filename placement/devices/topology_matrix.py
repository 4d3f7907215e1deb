"""Reads the matrix ``nvidia-smi topo -m`` prints into a ``Topology``.

The matrix says how each pair of devices is connected, tightest first: NV#
(# NVLinks), PSB (two GPUs of one board, through its on-board switch: a board),
PIX (one PCIe switch), PXB (switches under one upstream switch: a switch
group), PHB (one PCIe host bridge), NODE (one NUMA node), SYS (across NUMA
nodes; SOC in old drivers). Positions are rebuilt from those relations by
union-find; what the matrix does not say (memory, UUIDs, labels,
VFs) comes in ``MatrixDetails``. Any text gives a ``Topology`` or a 400 that
names what is wrong with it.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from placement import errors
from placement.devices.topology import MAX_DEVICES, MAX_NVLINKS, Device, Topology

# Levels of closeness: two devices share every grouping from their level up (a board's
# devices share its on-board switch).
BOARD, SWITCH, SWITCH_GROUP, BRIDGE, NUMA, APART = range(6)
GROUPINGS = (BOARD, SWITCH, SWITCH_GROUP, BRIDGE, NUMA)
LEVEL_NAMES = {
    BOARD: "board",
    SWITCH: "PCIe switch",
    SWITCH_GROUP: "upstream PCIe switch",
    BRIDGE: "PCIe host bridge",
    NUMA: "NUMA node",
}
PCIE_RELATIONS = {
    "PSB": BOARD,
    "PIX": SWITCH,
    "PXB": SWITCH_GROUP,
    "PHB": BRIDGE,
    "NODE": NUMA,
    "SYS": APART,
}
OLD_SPELLINGS = {"SOC": "SYS"}  # drivers before 384 printed SOC for SYS
KNOWN_CELLS = "X, NV1..NV18, PSB, PIX, PXB, PHB, NODE or SYS"

# The columns after the devices, in the order nvidia-smi prints them.
AFFINITY_HEADER = re.compile(r"(?:^| )CPU Affinity(?P<numa> NUMA Affinity)?(?P<gpu> GPU NUMA ID)?$")
DEVICE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
GPU_NAME = re.compile(r"GPU(?P<minor>0|[1-9][0-9]{0,2})")
NIC_NAME = re.compile(r"NIC(?P<minor>0|[1-9][0-9]{0,2})")
NVLINK_CELL = re.compile(r"NV(?P<links>[1-9][0-9]?)")
NIC_LEGEND_ENTRY = re.compile(r"(?P<column>\S+)\s*:\s*(?P<name>\S+)")
NUMA_ID = re.compile(r"[0-9]+")
MAX_NUMA_NODE = 1023  # Linux has at most 1024 NUMA nodes (NODES_SHIFT 10)
# A terminal gets the header underlined; a pasted copy may keep the escapes.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class MatrixDetails:
    """What the matrix does not say about the devices it lists."""

    gpu_memory_kib: int
    gpu_ids: tuple[str, ...] = ()  # UUIDs by GPU minor; empty: a GPU is known by its name (GPU0)
    gpu_labels: Mapping[str, str] = field(default_factory=dict)
    rdma_vfs: int = 0
    rdma_labels: Mapping[str, str] = field(default_factory=dict)
    rdma_vf_labels: Mapping[str, str] = field(default_factory=dict)
    node_resources: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class _Column:
    name: str  # as the header prints it: GPU0, NIC0, mlx5_0
    type: str  # gpu or rdma
    minor: int


@dataclass(frozen=True)
class _Matrix:
    columns: tuple[_Column, ...]
    cells: tuple[tuple[str, ...], ...]  # cells[row][column], rows in column order
    numa_affinity: tuple[int | None, ...]  # by column; None: not printed or not a number
    nic_names: Mapping[str, str]  # NIC Legend: NIC0 -> mlx5_0


def parse_matrix(text: str, details: MatrixDetails) -> Topology:
    """The topology ``nvidia-smi topo -m`` printed as ``text``; 400 if it is malformed."""
    _check_details(details)
    matrix = _read_matrix(ANSI_ESCAPE.sub("", text).splitlines())
    gpus = sum(1 for column in matrix.columns if column.type == "gpu")
    if gpus == 0:
        raise _malformed("the header lists no GPU.")
    if details.gpu_ids and len(details.gpu_ids) != gpus:
        raise errors.BadRequest(
            f"{len(details.gpu_ids)} GPU ids were given for the {gpus} GPUs of the matrix."
        )
    closeness, nvlinks = _read_cells(matrix)
    places = _place(matrix, closeness)
    devices = tuple(
        _device(column, matrix, details, places[i]) for i, column in enumerate(matrix.columns)
    )
    return Topology(devices=devices, nvlinks=nvlinks, node_resources=dict(details.node_resources))


def _malformed(problem: str) -> errors.BadRequest:
    return errors.BadRequest(f"Malformed topology matrix: {problem}")


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut short: it may be anything the client sent."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _check_details(details: MatrixDetails) -> None:
    if isinstance(details.gpu_memory_kib, bool) or not isinstance(details.gpu_memory_kib, int):
        raise errors.BadRequest("gpu_memory_kib must be an integer number of KiB.")
    if details.gpu_memory_kib <= 0:
        raise errors.BadRequest(f"gpu_memory_kib must be positive, not {details.gpu_memory_kib}.")
    if details.rdma_vfs < 0:
        raise errors.BadRequest(f"rdma_vfs cannot be negative ({details.rdma_vfs}).")


# --- Reading the text ---------------------------------------------------------------------------


def _read_matrix(lines: list[str]) -> _Matrix:
    header_at = next((i for i, line in enumerate(lines) if line.strip()), None)
    if header_at is None:
        raise _malformed("no header (the text is empty).")
    columns, affinity_names = _read_header(lines[header_at])
    by_name = {column.name: i for i, column in enumerate(columns)}
    rows: dict[int, list[str]] = {}
    end = len(lines)
    for at in range(header_at + 1, len(lines)):
        tokens = lines[at].split()
        if not tokens:
            continue  # blank lines between rows are only whitespace
        if tokens[0] not in by_name:
            end = at  # the matrix ends where the legend (or anything else) begins
            break
        index = by_name[tokens[0]]
        if index in rows:
            raise _malformed(f"the row of {tokens[0]} is repeated.")
        rows[index] = _row_cells(columns[index], tokens[1:], len(columns), affinity_names)
    missing = [column.name for i, column in enumerate(columns) if i not in rows]
    if missing:
        raise _malformed(f"no row for {', '.join(missing)}.")
    numa_at = affinity_names.index("NUMA Affinity") if "NUMA Affinity" in affinity_names else None
    return _Matrix(
        columns=columns,
        cells=tuple(tuple(rows[i][: len(columns)]) for i in range(len(columns))),
        numa_affinity=tuple(
            _numa_id(columns[i], rows[i], len(columns), numa_at) for i in range(len(columns))
        ),
        nic_names=_read_nic_legend(lines[end:], columns),
    )


def _read_header(line: str) -> tuple[tuple[_Column, ...], tuple[str, ...]]:
    """The device columns and the affinity columns the header names."""
    joined = " ".join(line.split())
    affinity = AFFINITY_HEADER.search(joined)
    if affinity is None:
        raise _malformed(
            "no header: the first line must name the devices, then 'CPU Affinity' (and "
            f"optionally 'NUMA Affinity', 'GPU NUMA ID'); it is {_shown(line.strip())}."
        )
    names = joined[: affinity.start()].split()
    if not names:
        raise _malformed("the header names no device.")
    if len(names) > MAX_DEVICES:
        raise _malformed(
            f"the header names {len(names)} devices; a node has at most {MAX_DEVICES}."
        )
    affinity_names = ["CPU Affinity"]
    if affinity["numa"]:
        affinity_names.append("NUMA Affinity")
    if affinity["gpu"]:
        affinity_names.append("GPU NUMA ID")
    columns: list[_Column] = []
    for name in names:
        columns.append(_column(name, columns))
    return tuple(columns), tuple(affinity_names)


def _column(name: str, before: list[_Column]) -> _Column:
    if not DEVICE_NAME.fullmatch(name):
        raise _malformed(f"the header names a device {_shown(name)}, which is not a device name.")
    if any(column.name == name for column in before):
        raise _malformed(f"the header names {name} twice.")
    if name.startswith("GPU"):
        minor = sum(1 for column in before if column.type == "gpu")
        gpu = GPU_NAME.fullmatch(name)
        if gpu is None or int(gpu["minor"]) != minor:
            raise _malformed(f"GPU column {name} is out of order: GPU{minor} was expected.")
        return _Column(name, "gpu", minor)
    # Everything else is a NIC: NIC0.. in recent drivers, its own name (mlx5_0) before.
    minor = sum(1 for column in before if column.type == "rdma")
    nic = NIC_NAME.fullmatch(name)
    if nic is not None and int(nic["minor"]) != minor:
        raise _malformed(f"NIC column {name} is out of order: NIC{minor} was expected.")
    return _Column(name, "rdma", minor)


def _row_cells(
    column: _Column, cells: list[str], devices: int, affinity_names: tuple[str, ...]
) -> list[str]:
    # nvidia-smi prints the affinity cells on GPU rows only; accept them on NIC rows too.
    allowed = [devices + len(affinity_names)]
    if column.type == "rdma":
        allowed.insert(0, devices)
    if len(cells) not in allowed:
        expected = " or ".join(str(count) for count in allowed)
        raise _malformed(
            f"the row of {column.name} has {len(cells)} cells, expected {expected} "
            f"({devices} devices, then {', '.join(affinity_names)})."
        )
    return cells


def _numa_id(column: _Column, row: list[str], devices: int, numa_at: int | None) -> int | None:
    """The row's NUMA Affinity when it is one NUMA node (not N/A, not a range)."""
    if numa_at is None or len(row) <= devices + numa_at:
        return None
    value = row[devices + numa_at]
    if not NUMA_ID.fullmatch(value):
        return None
    if len(value) > len(str(MAX_NUMA_NODE)) or int(value) > MAX_NUMA_NODE:
        raise _malformed(
            f"the NUMA Affinity of {column.name} is {_shown(value)}, above {MAX_NUMA_NODE}."
        )
    return int(value)


def _read_nic_legend(lines: list[str], columns: tuple[_Column, ...]) -> dict[str, str]:
    """``NIC0: mlx5_0`` entries of the NIC Legend block; the rest of the legend is ignored."""
    start = next((i for i, line in enumerate(lines) if line.strip() == "NIC Legend:"), None)
    if start is None:
        return {}
    nics = {column.name for column in columns if column.type == "rdma"}
    names: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        entry = NIC_LEGEND_ENTRY.fullmatch(line.strip())
        if entry is None:
            break
        nic, name = entry["column"], entry["name"]
        if nic not in nics:
            raise _malformed(f"the NIC Legend names {_shown(nic)}, which is not a NIC column.")
        if nic in names:
            raise _malformed(f"the NIC Legend names {nic} twice.")
        if not DEVICE_NAME.fullmatch(name):
            raise _malformed(f"the NIC Legend gives {nic} the name {_shown(name)}.")
        names[nic] = name
    return names


# --- Reading the cells --------------------------------------------------------------------------


def _read_cells(matrix: _Matrix) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], int]]:
    """The PCIe closeness of each pair (i < j) it is printed for, and the NVLinks by GPU minors."""
    columns = matrix.columns
    values = [[OLD_SPELLINGS.get(cell, cell) for cell in row] for row in matrix.cells]
    for i, a in enumerate(columns):
        for j, b in enumerate(columns):
            _check_cell(a, b, values[i][j], diagonal=i == j)
    for i, a in enumerate(columns):
        for j, b in enumerate(columns[:i]):
            if values[i][j] != values[j][i]:
                raise _malformed(
                    f"cells disagree: {b.name}/{a.name} says {values[j][i]}, "
                    f"{a.name}/{b.name} says {values[i][j]}."
                )
    closeness: dict[tuple[int, int], int] = {}
    nvlinks: dict[tuple[int, int], int] = {}
    for i, a in enumerate(columns):
        for j in range(i + 1, len(columns)):
            links = _nvlinks(values[i][j])
            if links:
                # NV# hides the PCIe relation: the pair's grouping comes from other cells.
                nvlinks[(a.minor, columns[j].minor)] = links
            else:
                closeness[(i, j)] = PCIE_RELATIONS[values[i][j]]
    return closeness, nvlinks


def _check_cell(a: _Column, b: _Column, value: str, diagonal: bool) -> None:
    if diagonal:
        if value != "X":
            raise _malformed(f"cell {a.name}/{b.name} is {_shown(value)}, expected X.")
    elif _nvlinks(value):
        if a.type != "gpu" or b.type != "gpu":
            raise _malformed(f"cell {a.name}/{b.name} says {value}: NVLink joins GPUs only.")
    elif value not in PCIE_RELATIONS:
        raise _malformed(
            f"cell {a.name}/{b.name} has the unknown value {_shown(value)} (known: {KNOWN_CELLS})."
        )


def _nvlinks(value: str) -> int:
    match = NVLINK_CELL.fullmatch(value)
    if match is None or int(match["links"]) > MAX_NVLINKS:
        return 0
    return int(match["links"])


# --- Positions ----------------------------------------------------------------------------------


class _Groups:
    """Union-find over device indices; groups numbered by their first device."""

    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: int, b: int) -> None:
        self.parent[self.find(b)] = self.find(a)

    def numbers(self) -> list[int]:
        first: dict[int, int] = {}
        return [first.setdefault(self.find(i), len(first)) for i in range(len(self.parent))]


@dataclass(frozen=True)
class _Place:
    numa: int
    bridge: int
    switch: int
    switch_group: int  # -1: a switch alone under its host bridge
    board: int  # -1: a device on no board with another


def _place(matrix: _Matrix, closeness: dict[tuple[int, int], int]) -> list[_Place]:
    """Where each device is, by column."""
    names = [column.name for column in matrix.columns]
    groups = {level: _Groups(len(names)) for level in GROUPINGS}
    for (i, j), level in closeness.items():
        for grouping, joined in groups.items():
            if level <= grouping:
                joined.join(i, j)
    # Each cell must say exactly how close the groupings put its pair: PIX chains can only
    # form a switch, PSB chains a board, and no other cell may join what SYS (or NODE, PXB,
    # PHB, PIX) keeps apart.
    for (i, j), level in closeness.items():
        for grouping in GROUPINGS:
            if grouping < level and groups[grouping].find(i) == groups[grouping].find(j):
                raise _malformed(
                    f"cell {names[i]}/{names[j]} says {matrix.cells[i][j]}, but other cells put "
                    f"them under one {LEVEL_NAMES[grouping]}."
                )
    numas = _numa_nodes(matrix, groups[NUMA])
    for (i, j), level in closeness.items():
        if level == APART and numas[i] == numas[j]:
            raise _malformed(
                f"cell {names[i]}/{names[j]} says {matrix.cells[i][j]}, but NUMA Affinity puts "
                f"both on NUMA node {numas[i]}."
            )
    switches = groups[SWITCH].numbers()
    switch_groups = _groups_of_several(switches, groups[SWITCH_GROUP].numbers())
    boards = _groups_of_several(list(range(len(names))), groups[BOARD].numbers())
    bridges = groups[BRIDGE].numbers()
    return [
        _Place(numas[i], bridges[i], switches[i], switch_groups[i], boards[i])
        for i in range(len(names))
    ]


def _groups_of_several(members: list[int], grouped: list[int]) -> list[int]:
    """Each device's group, numbered in order; -1 for a group of one member (a switch group
    of one switch, a board of one device)."""
    members_of: dict[int, set[int]] = {}
    for member, group in zip(members, grouped, strict=True):
        members_of.setdefault(group, set()).add(member)
    numbers: dict[int, int] = {}
    return [
        numbers.setdefault(group, len(numbers)) if len(members_of[group]) > 1 else -1
        for group in grouped
    ]


def _numa_nodes(matrix: _Matrix, groups: _Groups) -> list[int]:
    """NUMA Affinity where printed, else a fresh node per group of the cells."""
    names = [column.name for column in matrix.columns]
    given: dict[int, tuple[int, int]] = {}  # group root -> (NUMA node, the device saying so)
    for i, node in enumerate(matrix.numa_affinity):
        if node is None:
            continue
        root = groups.find(i)
        node_before, said_by = given.setdefault(root, (node, i))
        if node_before != node:
            raise _malformed(
                f"NUMA Affinity puts {names[said_by]} on node {node_before} and {names[i]} on "
                f"node {node}, but the cells put them on one NUMA node."
            )
    used = {node for node, _ in given.values()}
    fresh: dict[int, int] = {}
    numbers: list[int] = []
    for i in range(len(names)):
        root = groups.find(i)
        if root in given:
            numbers.append(given[root][0])
            continue
        if root not in fresh:
            node = 0
            while node in used:
                node += 1
            used.add(node)
            fresh[root] = node
        numbers.append(fresh[root])
    return numbers


def _device(column: _Column, matrix: _Matrix, details: MatrixDetails, place: _Place) -> Device:
    if column.type == "gpu":
        identity = details.gpu_ids[column.minor] if details.gpu_ids else column.name
        return Device(
            type="gpu",
            minor=column.minor,
            identity=identity,
            numa=place.numa,
            bridge=place.bridge,
            switch=place.switch,
            switch_group=place.switch_group,
            board=place.board,
            memory_kib=details.gpu_memory_kib,
            labels=dict(details.gpu_labels),
        )
    return Device(
        type="rdma",
        minor=column.minor,
        identity=matrix.nic_names.get(column.name, column.name),
        numa=place.numa,
        bridge=place.bridge,
        switch=place.switch,
        switch_group=place.switch_group,
        board=place.board,
        vfs=details.rdma_vfs,
        labels=dict(details.rdma_labels),
        vf_labels=dict(details.rdma_vf_labels),
    )
