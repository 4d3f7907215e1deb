"""Device allocation against a brute-force oracle, on random and on hand-built worlds.

Each random world (one seed) is 1 to 3 device nodes (sometimes a twin of another)
of 1 or 2 NUMA nodes, 1 to 4 PCIe switches on 1 or 2 host bridges per NUMA node,
0 to 3 GPUs and 0 to 2 NICs per switch (some with VFs, some labelled), GPU minors
shuffled across switches, and random NVLink pairs of 1 to 4 links, imported with
PUT /group_resources/device_nodes/{name}. Claims (and a plain placement
allocation that uses a GPU without its tenancy) then put usage on them, and some
nodes are imported again with random devices unhealthy (never offered; what they
hold stays and counts as in use). Random
requests (whole GPUs spelled four ways, GPU shares, gpu-core with memory or with
a memory ratio, rdma shares and VFs, RequestsAsCount, ApplyForAll, joint gpu+rdma
either way round with and without ``requiredScope``, exclusive policies,
selectors, node cpu/memory, both scorers, ``limit``) are answered by POST
/group_resources/device_candidates and checked against the brute force below,
written from the documented rules (the docstrings of ``placement.devices.request``,
``chooser`` and ``search``; api-ref/devices.md):

(a) exactly the nodes where a valid choice exists are answered;
(b) each answered choice is valid: every device gives the request within what is
    free (read through GET /group_resources/device_nodes/{name} and the
    translator's view of the same tree, and now and then through the generic
    API), exclusivity and selectors hold, a joint request's other types sit in
    each scope its primary devices touch (all on one NUMA node for SameNUMA), and
    no better scope was achievable; its allocations and ``links`` are exactly the
    documented ones;
(c) each choice is the best of every valid one: the primary (or only) devices of
    the greatest link strength (100 per NVLink, plus 50 on one switch, else 30 on
    one host bridge, else 20 on one NUMA node, else 10, summed over pairs), then
    the scorer's used fraction, then the lowest minors; the other joint types
    likewise per scope, their pairs with the primary devices there counted too;
(d) nodes come by scope, the link strength of the primary type and of the types
    asked alone, the scorer's node utilisation, then name; ``limit`` cuts that;
(e) a claim with the same body allocates exactly the first candidate (GET
    /allocations/{consumer}), and nothing is ever over-committed.

Random worlds seldom make some rules decide (a host bridge against a NUMA node,
the NIC beside the GPUs' bridge, SameNUMA on one NUMA node, the links of joint
types not ranking nodes, float sums of used fractions that tie exactly); the
hand-built worlds at the end make each of them decide, under the same checks.
Each of those rules, mutated in the oracle, fails at least one test here.

The oracle imports nothing of ``placement.devices``.
"""

import functools
import itertools
import json
import random
import uuid
from dataclasses import dataclass, field
from fractions import Fraction

import pytest

from tests.api.device_helpers import annotations, import_node

SEED = 20_240_611
WORLDS = 15
REQUESTS_PER_WORLD = 7
SCOPES = ("SamePCIe", "SameNUMA", "Node")
MIB = 2**20
SCORE_TOLERANCE = Fraction(1, 10**9)


# The model of a node, as read back through the API -------------------------


def device_class(device_type: str, base: str) -> str:
    """The class the node map documents for a base inventory of a device type."""
    name = f"CUSTOM_{device_type.upper()}_{base.upper().replace('-', '_')}"
    return f"{name}_KB" if base == "memory" else name  # GPU memory is kept in KiB


def switch_class(device_type: str) -> str:
    return f"CUSTOM_PCIE_{device_type.upper()}_TENANCY"


@dataclass(eq=False)
class Dev:
    type: str
    minor: int
    numa: int
    bridge: int
    switch: int
    labels: dict
    vf_labels: dict
    provider: str
    total: dict[str, int]
    used: dict[str, int]
    healthy: bool = True

    def free(self, base: str) -> int:
        return self.total.get(base, 0) - self.used.get(base, 0)

    @property
    def in_use(self) -> bool:
        return any(self.used.values())

    @property
    def used_fraction(self) -> Fraction:
        names = [n for n in self.total if n != "tenancy"]
        return sum(
            (Fraction(self.used[n], self.total[n]) for n in names if self.total[n]), Fraction(0)
        ) / max(len(names), 1)


@dataclass(eq=False)
class Switch:
    uuid: str
    total: dict[str, int] = field(default_factory=dict)  # device type -> tenancy
    used: dict[str, int] = field(default_factory=dict)


@dataclass(eq=False)
class Node:
    name: str
    uuid: str
    devices: list[Dev]
    nvlinks: dict[tuple[int, int], int]
    switches: dict[int, Switch]
    root: dict[str, tuple[int, int]]  # class -> (capacity, used)
    every_inventory: list[tuple[str, str, int, int]]  # (provider, class, capacity, used)

    def of_type(self, device_type: str) -> list[Dev]:
        return sorted((d for d in self.devices if d.type == device_type), key=lambda d: d.minor)

    def device(self, device_type: str, minor: int) -> Dev:
        return next(d for d in self.devices if d.type == device_type and d.minor == minor)


def capacity(inventory: dict) -> int:
    return int((inventory["total"] - inventory["reserved"]) * inventory["allocation_ratio"])


class Reader:
    """Reads a world's nodes through the API: the devices from the device node view, the
    switches and the root from the translator's view of the same tree (GET
    /group_resources/nodes/{name}). ``everything`` also reads every provider through the
    generic API, to check both views against placement itself."""

    def __init__(self, api, names: list[str]) -> None:
        self.api, self.names = api, names

    def nodes(self, everything: bool = False) -> dict[str, "Node"]:
        return {name: self.node(name, everything) for name in self.names}

    def generic(self, provider: str) -> dict[str, tuple[int, int]]:
        inventories = self.api.get(f"/resource_providers/{provider}/inventories").json
        usages = self.api.get(f"/resource_providers/{provider}/usages").json["usages"]
        return {c: (capacity(i), usages.get(c, 0)) for c, i in inventories["inventories"].items()}

    def node(self, name: str, everything: bool = False) -> "Node":
        view = self.api.get(f"/group_resources/device_nodes/{name}")
        assert view.status_code == 200, view.json
        body = view.json
        assert body["in_sync"] is True
        tree = self.api.get(f"/group_resources/nodes/{name}").json
        groups = {g["key"]: g for g in tree["groups"]}
        rooms_of = {  # provider -> class -> (capacity, used)
            g["uuid"]: {c: (capacity(i), i["used"]) for c, i in g["inventories"].items()}
            for g in [tree, *tree["groups"]]
        }
        if everything:
            for provider, rooms in rooms_of.items():
                assert self.generic(provider) == rooms, (name, provider)
        devices, switches = [], {}
        for entry in body["devices"]:
            device = Dev(
                type=entry["type"],
                minor=entry["minor"],
                numa=entry["numa"],
                bridge=entry["bridge"],
                switch=entry["pcie"],
                labels=entry.get("labels", {}),
                vf_labels=entry.get("vfLabels", {}),
                provider=entry["provider"],
                total={b: i["total"] for b, i in entry["inventories"].items()},
                used={b: i["used"] for b, i in entry["inventories"].items()},
                healthy=entry["health"],
            )
            assert groups[entry["path"]]["uuid"] == device.provider
            assert rooms_of[device.provider] == {  # the two views agree
                device_class(device.type, b): (device.total[b], device.used[b])
                for b in device.total
            }, (name, entry)
            devices.append(device)
            switch_uuid = groups["/".join(entry["path"].split("/")[:-2])]["uuid"]
            switches.setdefault(device.switch, Switch(switch_uuid))
            assert switches[device.switch].uuid == switch_uuid
        for switch in switches.values():
            for resource_class, (room, used) in rooms_of[switch.uuid].items():
                device_type = (
                    resource_class.removeprefix("CUSTOM_PCIE_").removesuffix("_TENANCY").lower()
                )
                assert switch_class(device_type) == resource_class
                switch.total[device_type], switch.used[device_type] = room, used
        inventories = [(p, c, n, u) for p, rooms in rooms_of.items() for c, (n, u) in rooms.items()]
        nvlinks = {tuple(link["gpus"]): link["links"] for link in body["nvlinks"]}
        return Node(
            name, body["uuid"], devices, nvlinks, switches, rooms_of[tree["uuid"]], inventories
        )


# A request, as the oracle understands it ------------------------------------


@dataclass(frozen=True)
class Want:
    """One device type's request: ``count`` devices (None: every selected one), each giving
    the rest."""

    type: str
    count: int | None
    whole: bool = False
    core: int = 0
    ratio: int = 0
    memory_kib: int = 0
    share: int = 0
    vfs: int = 0
    selector: dict | None = None
    vf_selector: dict | None = None
    exclusive: str | None = None
    as_count: bool = False  # RequestsAsCount: the amount is the number of devices


@dataclass
class Ask:
    resources: dict
    wants: dict[str, Want]
    joint_types: tuple[str, ...] = ()
    required: str | None = None
    node_resources: dict[str, int] = field(default_factory=dict)
    scorer: str = "pack"
    limit: int | None = None

    @property
    def primary_first(self) -> tuple[str, ...]:
        """The joint types, the primary first: the type asked for the most devices, on a
        tie the first of gpu, rdma, fpga (the list's own order changes nothing)."""
        return tuple(
            sorted(
                self.joint_types,
                key=lambda device_type: (
                    -(self.wants[device_type].count or 0),
                    ("gpu", "rdma", "fpga").index(device_type),
                ),
            )
        )

    def hint(self) -> dict | None:
        hint = {}
        for want in self.wants.values():
            entry = {}
            if want.selector is not None:
                entry["selector"] = want.selector
            if want.vf_selector is not None:
                entry["vfSelector"] = want.vf_selector
            if want.exclusive:
                entry["exclusivePolicy"] = want.exclusive
            if want.count is None:
                entry["allocateStrategy"] = "ApplyForAll"
            elif want.as_count:
                entry["allocateStrategy"] = "RequestsAsCount"
            if entry:
                hint[want.type] = entry
        return hint or None

    def joint(self) -> dict | None:
        if not self.joint_types:
            return None
        joint: dict = {"deviceTypes": list(self.joint_types)}
        if self.required:
            joint["requiredScope"] = self.required
        return joint

    def body(self) -> dict:
        body = {
            "resources": self.resources,
            "annotations": annotations(self.joint(), self.hint()),
            "scorer": self.scorer,
        }
        if self.limit is not None:
            body["limit"] = self.limit
        return body


def matches(selector: dict, labels: dict) -> bool:
    """Kubernetes label selector semantics."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = (
            expression["key"],
            expression["operator"],
            expression.get("values", []),
        )
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def selected(node: Node, want: Want) -> list[Dev]:
    return [
        d
        for d in node.of_type(want.type)
        if d.healthy  # an unhealthy device is never offered
        and (want.selector is None or matches(want.selector, d.labels))
        and (want.vf_selector is None or matches(want.vf_selector, d.vf_labels))
    ]


def take(device: Dev, want: Want) -> dict[str, int] | None:
    """What the device gives (base -> amount), or None when it cannot: a whole or exclusive
    device only while no one uses it, a share of a GPU by its memory or memory ratio."""
    if (want.whole or want.exclusive) and device.in_use:
        return None
    if want.whole:
        if device.type == "gpu" and device.total["memory"] < want.memory_kib:
            return None
        return dict(device.total)
    if device.type == "gpu":
        memory_total = device.total["memory"]
        if want.ratio:
            amounts = {"memory": memory_total * want.ratio // 100, "memory-ratio": want.ratio}
        else:
            amounts = {
                "memory": want.memory_kib,
                "memory-ratio": 100 * want.memory_kib // memory_total,
            }
        amounts["core"] = want.core
    else:
        amounts = {"share": want.share, "vf": want.vfs}
    amounts["tenancy"] = device.total["tenancy"] if want.exclusive else 1
    amounts = {base: n for base, n in amounts.items() if n}
    if any(device.free(base) < n for base, n in amounts.items()):
        return None
    return amounts


def fits(node: Node, device: Dev, want: Want) -> bool:
    if take(device, want) is None:
        return False
    switch = node.switches[device.switch]
    free = switch.total[device.type] - switch.used[device.type]
    if want.exclusive == "PCIeLevel":
        return free == switch.total[device.type] and not any(
            d.in_use for d in node.of_type(device.type) if d.switch == device.switch
        )
    return free >= 1


def group_of(device: Dev, scope: str) -> int:
    return {"SamePCIe": device.switch, "SameNUMA": device.numa, "Node": 0}[scope]


# Link strength and the best set ---------------------------------------------


# A pair's strength (chooser docstring): NVLinks first, then the closest PCIe relation.
NVLINK_WEIGHT = 100
RELATION_WEIGHTS = {"switch": 50, "bridge": 30, "numa": 20, "cross": 10}


def relation(a: Dev, b: Dev) -> str:
    if a.switch == b.switch:
        return "switch"
    if a.bridge == b.bridge:
        return "bridge"
    return "numa" if a.numa == b.numa else "cross"


def nvlinks(node: Node, a: Dev, b: Dev) -> int:
    if a.type == b.type == "gpu":
        return node.nvlinks.get(tuple(sorted((a.minor, b.minor))), 0)
    return 0


def pair(node: Node, a: Dev, b: Dev) -> int:
    return NVLINK_WEIGHT * nvlinks(node, a, b) + RELATION_WEIGHTS[relation(a, b)]


def strength(node: Node, devices, anchors=()) -> int:
    """A set's link strength: the sum over its pairs (and its pairs with ``anchors``)."""
    return sum(pair(node, a, b) for a, b in itertools.combinations(devices, 2)) + sum(
        pair(node, a, d) for a in anchors for d in devices
    )


def link_counts(node: Node, devices) -> dict[str, int]:
    """The answer's ``links`` of a type's devices."""
    names = {
        "switch": "samePCIe",
        "bridge": "sameHostBridge",
        "numa": "sameNUMA",
        "cross": "crossNUMA",
    }
    counts = dict.fromkeys(["nvlinks", *names.values()], 0)
    for a, b in itertools.combinations(devices, 2):
        counts["nvlinks"] += nvlinks(node, a, b)
        counts[names[relation(a, b)]] += 1
    return counts


def set_order(node: Node, devices, scorer: str, anchors=()) -> tuple:
    """Smallest is best: strongest links, then the scorer (pack: most used), then the lowest
    minors."""
    used = sum((d.used_fraction for d in devices), Fraction(0))
    return (
        -strength(node, devices, anchors),
        -used if scorer == "pack" else used,
        tuple(sorted(d.minor for d in devices)),
    )


def best(node: Node, candidates: list[Dev], count: int, scorer: str, anchors=()):
    """The best ``count``-set of ``candidates``, by trying every one."""
    if count > len(candidates):
        return None
    return list(
        min(
            itertools.combinations(candidates, count),
            key=lambda devices: set_order(node, devices, scorer, anchors),
        )
    )


@dataclass
class Choice:
    scope: str | None
    devices: dict[str, list[Dev]]  # type -> devices, by minor

    def minors(self) -> dict[str, list[int]]:
        return {t: sorted(d.minor for d in ds) for t, ds in self.devices.items()}


def able_groups(node: Node, others: list[Want], scope: str) -> set[int]:
    """Groups of the scope where every other joint type has enough fitting devices."""
    groups = {group_of(d, scope) for d in node.devices}
    return {
        g
        for g in groups
        if all(
            sum(1 for d in selected(node, o) if group_of(d, scope) == g and fits(node, d, o))
            >= o.count
            for o in others
        )
    }


def primary_sets(node: Node, ask: Ask, scope: str):
    """Every valid set of primary devices in the scope: on ``SamePCIe`` any set whose switches
    can each give the other types their request; on ``SameNUMA`` a set on one NUMA node that
    can; on ``Node`` any set, when the node can."""
    primary = ask.wants[ask.primary_first[0]]
    others = [ask.wants[t] for t in ask.primary_first[1:]]
    able = able_groups(node, others, scope)
    pool = [
        d for d in selected(node, primary) if fits(node, d, primary) and group_of(d, scope) in able
    ]
    for devices in itertools.combinations(pool, primary.count):
        if scope != "SameNUMA" or len({d.numa for d in devices}) == 1:
            yield devices


def achievable_scopes(node: Node, ask: Ask) -> list[str]:
    scopes = ("SamePCIe",) if ask.required == "SamePCIe" else SCOPES
    return [s for s in scopes if next(primary_sets(node, ask, s), None) is not None]


def node_fits(node: Node, ask: Ask) -> bool:
    return all(
        node.root.get(c, (0, 0))[0] - node.root.get(c, (0, 0))[1] >= n
        for c, n in ask.node_resources.items()
    )


def oracle_choice(node: Node, ask: Ask) -> Choice | None:
    """The best choice of the node, or None when there is no valid one."""
    if not node_fits(node, ask):
        return None
    chosen: dict[str, list[Dev]] = {}
    scope = None
    if ask.joint_types:
        scopes = achievable_scopes(node, ask)
        if not scopes:
            return None
        scope = scopes[0]
        primary = ask.wants[ask.primary_first[0]]
        chosen[primary.type] = list(
            min(
                primary_sets(node, ask, scope),
                key=lambda devices: set_order(node, devices, ask.scorer),
            )
        )
        for group in sorted({group_of(d, scope) for d in chosen[primary.type]}):
            anchors = [d for d in chosen[primary.type] if group_of(d, scope) == group]
            for other_type in ask.primary_first[1:]:
                other = ask.wants[other_type]
                there = [
                    d
                    for d in selected(node, other)
                    if group_of(d, scope) == group and fits(node, d, other)
                ]
                chosen.setdefault(other_type, []).extend(
                    best(node, there, other.count, ask.scorer, anchors)
                )
    for want in ask.wants.values():
        if want.type in ask.joint_types:
            continue
        pool = selected(node, want)
        if want.count is None:  # ApplyForAll
            if not pool or not all(fits(node, d, want) for d in pool):
                return None
            chosen[want.type] = pool
            continue
        devices = best(node, [d for d in pool if fits(node, d, want)], want.count, ask.scorer)
        if devices is None:
            return None
        chosen[want.type] = devices
    return Choice(scope, {t: sorted(ds, key=lambda d: d.minor) for t, ds in chosen.items()})


def expected_allocations(node: Node, ask: Ask, devices: dict[str, list[Dev]]) -> dict:
    allocations: dict[str, dict[str, int]] = {}
    for device_type, chosen in devices.items():
        want = ask.wants[device_type]
        for device in chosen:
            amounts = take(device, want)
            allocations[device.provider] = {
                device_class(device_type, b): n for b, n in amounts.items()
            }
            switch = node.switches[device.switch]
            tenancy = switch.total[device_type] if want.exclusive == "PCIeLevel" else 1
            allocations.setdefault(switch.uuid, {})[switch_class(device_type)] = tenancy
    if ask.node_resources:
        allocations[node.uuid] = dict(ask.node_resources)
    return allocations


def utilisation(node: Node, ask: Ask, choice: Choice) -> Fraction:
    """Mean of (used + placed) / capacity over the node's healthy device inventories (tenancy
    aside) and its own classes."""
    placed = {d.provider: take(d, ask.wants[t]) for t, ds in choice.devices.items() for d in ds}
    shares = []
    for device in node.devices:
        for base, total in device.total.items():
            if device.healthy and base != "tenancy" and total > 0:
                extra = placed.get(device.provider, {}).get(base, 0)
                shares.append(Fraction(device.used[base] + extra, total))
    for resource_class, (capacity, used) in node.root.items():
        if capacity > 0:
            shares.append(Fraction(used + ask.node_resources.get(resource_class, 0), capacity))
    return sum(shares, Fraction(0)) / len(shares) if shares else Fraction(0)


def node_score(node: Node, ask: Ask, choice: Choice) -> Fraction:
    used = utilisation(node, ask, choice)
    return used if ask.scorer == "pack" else 1 - used


def rank_key(node: Node, ask: Ask, choice: Choice) -> tuple:
    """The documented node order: scope, then the link strength of the primary type's devices
    and of each type asked alone (a joint request's other types follow the primary devices,
    so they do not count), then the score, then the name."""
    scope_rank = SCOPES.index(choice.scope) if choice.scope else 0
    ranked = [t for t in choice.devices if t not in ask.primary_first[1:]]
    links = sum(strength(node, choice.devices[t]) for t in ranked)
    return (scope_rank, -links), node_score(node, ask, choice), node.name


def compare_ranks(first: tuple, second: tuple) -> int:
    (head_a, score_a, name_a), (head_b, score_b, name_b) = first, second
    if head_a != head_b:
        return -1 if head_a < head_b else 1
    if abs(score_a - score_b) > SCORE_TOLERANCE:
        return -1 if score_a > score_b else 1
    return (name_a > name_b) - (name_a < name_b)


# (b): an answered choice is valid --------------------------------------------


def answered_devices(node: Node, candidate: dict) -> dict[str, list[Dev]]:
    return {
        device_type: [node.device(device_type, d["minor"]) for d in entries]
        for device_type, entries in candidate["devices"].items()
    }


def check_valid(node: Node, ask: Ask, candidate: dict, where: str) -> None:
    devices = answered_devices(node, candidate)
    assert set(devices) == set(ask.wants), where
    assert node_fits(node, ask), where
    for device_type, chosen in devices.items():
        want = ask.wants[device_type]
        minors = [d.minor for d in chosen]
        assert len(set(minors)) == len(minors), where
        pool = selected(node, want)
        for device in chosen:
            assert device in pool, f"{where}: {device_type}{device.minor} is not selected"
            assert fits(node, device, want), f"{where}: {device_type}{device.minor} cannot give"
        if want.count is None:
            assert sorted(minors) == sorted(d.minor for d in pool), where
        elif device_type not in ask.primary_first[1:]:
            assert len(chosen) == want.count, where
    if ask.joint_types:
        scope = candidate.get("scope")
        assert scope == achievable_scopes(node, ask)[0], f"{where}: scope {scope} not the best"
        primary = devices[ask.primary_first[0]]
        groups = {group_of(d, scope) for d in primary}
        if scope == "SameNUMA":
            assert len(groups) == 1, f"{where}: SameNUMA over NUMA nodes {groups}"
        for other_type in ask.primary_first[1:]:
            for group in groups:
                there = [d for d in devices[other_type] if group_of(d, scope) == group]
                assert len(there) == ask.wants[other_type].count, (
                    f"{where}: {other_type} in {scope} {group}"
                )
            assert all(group_of(d, scope) in groups for d in devices[other_type]), where
    else:
        assert "scope" not in candidate, where
    got = {u: a["resources"] for u, a in candidate["allocations"].items()}
    assert got == expected_allocations(node, ask, devices), f"{where}: allocations"
    assert candidate["links"] == {t: link_counts(node, ds) for t, ds in devices.items()}, (
        f"{where}: links"
    )


# Random worlds ---------------------------------------------------------------


GPU_MODELS = ("a100", "h100")
FABRICS = ("ib", "roce")
VF_MODES = ("sriov", "vdpa")


def random_node_document(rng: random.Random) -> dict:
    numa_nodes = rng.randint(1, 2)
    bridges_of = {}
    bridge = 0
    for numa in range(numa_nodes):
        bridges_of[numa] = list(range(bridge, bridge + rng.randint(1, 2)))
        bridge += len(bridges_of[numa])
    places = []  # (switch, numa, bridge, gpus, nics)
    for switch in range(rng.choice([1, 2, 3, 4, 4, 4])):
        numa = switch % numa_nodes if switch < numa_nodes else rng.randrange(numa_nodes)
        kind = rng.choice(["gpus", "nics", "both", "both"])  # 0-3 GPUs, 0-2 NICs
        gpus = rng.randint(1, 3) if kind != "nics" else rng.choice([0, 0, 1])
        nics = rng.randint(1, 2) if kind != "gpus" else 0
        places.append((switch, numa, rng.choice(bridges_of[numa]), gpus, nics))
    if not any(gpus + nics for *_, gpus, nics in places):
        switch, numa, bridge, _, nics = places[0]
        places[0] = (switch, numa, bridge, 1, nics)
    gpu_count = sum(p[3] for p in places)
    gpu_minors = rng.sample(range(gpu_count), gpu_count)
    devices = []
    nic_minor = 0
    for switch, numa, bridge, gpus, nics in places:
        for _ in range(gpus):
            minor = gpu_minors.pop()
            gpu = {
                "type": "gpu",
                "minor": minor,
                "numa": numa,
                "bridge": bridge,
                "pcie": switch,
                "memory": rng.choice(["8Gi", "16Gi", "24Gi", "15472384Ki"]),
                "id": f"GPU-{minor:04d}",
            }
            if rng.random() < 0.6:
                gpu["labels"] = {"model": rng.choice(GPU_MODELS)}
            devices.append(gpu)
        for _ in range(nics):
            nic = {
                "type": "rdma",
                "minor": nic_minor,
                "numa": numa,
                "bridge": bridge,
                "pcie": switch,
                "id": f"mlx5_{nic_minor}",
            }
            nic_minor += 1
            if rng.random() < 0.7:
                nic["vfs"] = rng.randint(2, 6)
                if rng.random() < 0.6:
                    nic["vfLabels"] = {"mode": rng.choice(VF_MODES)}
            if rng.random() < 0.6:
                nic["labels"] = {"fabric": rng.choice(FABRICS)}
            devices.append(nic)
    document: dict = {"devices": devices}
    pairs = list(itertools.combinations(range(gpu_count), 2))
    links = rng.sample(pairs, min(len(pairs), rng.randint(0, 4)))
    if links:
        document["nvlinks"] = [{"gpus": list(p), "links": rng.randint(1, 4)} for p in links]
    if rng.random() < 0.8:
        document["resources"] = {"cpu": rng.choice([8, 16]), "memory": "32Gi"}
    return document


def gpu_selector(rng: random.Random) -> dict:
    model = rng.choice(GPU_MODELS)
    return rng.choice(
        [
            {"matchLabels": {"model": model}},
            {"matchExpressions": [{"key": "model", "operator": "In", "values": [model]}]},
            {"matchExpressions": [{"key": "model", "operator": "NotIn", "values": [model]}]},
            {"matchExpressions": [{"key": "model", "operator": "Exists"}]},
            {"matchExpressions": [{"key": "model", "operator": "DoesNotExist"}]},
        ]
    )


def rdma_selector(rng: random.Random) -> dict:
    fabric = rng.choice(FABRICS)
    return rng.choice(
        [
            {"matchLabels": {"fabric": fabric}},
            {"matchExpressions": [{"key": "fabric", "operator": "NotIn", "values": [fabric]}]},
            {"matchExpressions": [{"key": "fabric", "operator": "Exists"}]},
        ]
    )


def vf_selector(rng: random.Random) -> dict:
    return rng.choice(
        [
            {},
            {},
            {"matchLabels": {"mode": rng.choice(VF_MODES)}},
            {"matchExpressions": [{"key": "mode", "operator": "Exists"}]},
        ]
    )


def random_gpu(rng: random.Random, resources: dict, whole_at_most: int = 4) -> Want:
    """A GPU part of a request, spelled one of the ways a pod may write it: whole GPUs
    (``nvidia.com/gpu``, ``gpu`` in hundreds, core with memory or memory ratio) or a share."""
    prefix = rng.choice(["kubernetes.io/", "koordinator.sh/"])
    kind = rng.choice(["whole", "whole", "share", "core-ratio", "core-memory"])
    if kind == "whole":
        count = rng.choice([1, 1, 2, 2, 3, 4][: whole_at_most + 2])
        spelling = rng.choice(["nvidia", "nvidia", "gpu", "core-ratio", "core-memory"])
        if spelling == "nvidia":
            resources["nvidia.com/gpu"] = count
        elif spelling == "gpu":
            resources[f"{prefix}gpu"] = 100 * count
        elif spelling == "core-memory" and count > 1:
            per_device = rng.choice([8, 16, 20])
            resources[f"{prefix}gpu-core"] = 100 * count
            resources[f"{prefix}gpu-memory"] = f"{per_device * count}Gi"
            return Want("gpu", count, whole=True, memory_kib=per_device * 1024 * 1024)
        elif count > 1:
            resources[f"{prefix}gpu-core"] = 100 * count
            resources[f"{prefix}gpu-memory-ratio"] = 100 * count
        else:
            resources["nvidia.com/gpu"] = 1
        return Want("gpu", count, whole=True)
    core = rng.choice([5, 10, 25, 50, 75, 100])
    if kind == "share":
        resources[f"{prefix}gpu"] = core
        if core == 100:  # all of one GPU: a whole GPU, as nvidia.com/gpu: 1
            return Want("gpu", 1, whole=True)
        return Want("gpu", 1, core=core, ratio=core)
    resources[f"{prefix}gpu-core"] = core
    if kind == "core-ratio":
        ratio = rng.choice([10, 30, 50, 60, 100])
        resources[f"{prefix}gpu-memory-ratio"] = ratio
        if core == ratio == 100:
            return Want("gpu", 1, whole=True)
        return Want("gpu", 1, core=core, ratio=ratio)
    memory = rng.choice(["512Mi", "2Gi", "5Gi", "10Gi", "20Gi", 1_500_000_000])
    resources[f"{prefix}gpu-memory"] = memory
    memory_bytes = (
        memory
        if isinstance(memory, int)
        else int(memory[:-2]) * (MIB if memory.endswith("Mi") else 1024 * MIB)
    )
    return Want("gpu", 1, core=core, memory_kib=-(-memory_bytes // 1024))  # rounded up


def random_rdma(rng: random.Random, resources: dict, joint: bool) -> Want:
    prefix = rng.choice(["kubernetes.io/", "koordinator.sh/"])
    name = f"{prefix}rdma"
    kind = rng.choice(["share", "share", "whole", "vfs", "count", "count-vfs"])
    if joint and kind.startswith("count"):
        kind = "vfs"
    if kind == "share":
        resources[name] = rng.choice([1, 10, 50, 99])
        return Want("rdma", 1, share=resources[name])
    if kind == "whole":
        count = rng.choice([1, 1, 2])
        resources[name] = 100 * count
        return Want("rdma", count, whole=True)
    if kind == "vfs":
        resources[name] = rng.randint(1, 3)
        return Want("rdma", 1, vfs=resources[name], vf_selector=vf_selector(rng))
    count = rng.randint(1, 3)
    resources[name] = count
    if kind == "count":
        return Want("rdma", count, whole=True, as_count=True)
    return Want("rdma", count, vfs=1, vf_selector=vf_selector(rng), as_count=True)


def with_extras(rng: random.Random, want: Want) -> Want:
    """Sometimes a selector or an exclusive policy."""
    changes: dict = {}
    if rng.random() < 0.25:
        changes["selector"] = gpu_selector(rng) if want.type == "gpu" else rdma_selector(rng)
    if rng.random() < 0.2:
        changes["exclusive"] = rng.choice(["DeviceLevel", "PCIeLevel"])
    return Want(**{**want.__dict__, **changes})


def random_ask(rng: random.Random) -> Ask:
    resources: dict = {}
    wants: dict[str, Want] = {}
    joint_types: tuple[str, ...] = ()
    required = None
    kind = rng.choice(["gpu", "gpu", "rdma", "both", "joint", "joint", "joint", "joint", "all"])
    if kind in ("gpu", "both"):
        wants["gpu"] = with_extras(rng, random_gpu(rng, resources))
    if kind in ("rdma", "both"):
        wants["rdma"] = with_extras(rng, random_rdma(rng, resources, joint=False))
    if kind == "joint":
        wants["gpu"] = with_extras(rng, random_gpu(rng, resources, whole_at_most=3))
        wants["rdma"] = with_extras(rng, random_rdma(rng, resources, joint=True))
        joint_types = ("gpu", "rdma") if rng.random() < 0.75 else ("rdma", "gpu")
        required = "SamePCIe" if rng.random() < 0.35 else None
    if kind == "all":
        if rng.random() < 0.5:
            resources["koordinator.sh/rdma"] = rng.choice([100, 30])
            want = Want(
                "rdma",
                None,
                whole=resources["koordinator.sh/rdma"] == 100,
                share=0 if resources["koordinator.sh/rdma"] == 100 else 30,
            )
        else:
            resources["nvidia.com/gpu"] = 1
            want = Want("gpu", None, whole=True)
        wants[want.type] = with_extras(rng, want)
    node_resources = {}
    if rng.random() < 0.3:
        resources["cpu"] = rng.choice([1, 2, 6])
        node_resources["VCPU"] = resources["cpu"]
    if rng.random() < 0.15:
        resources["memory"] = "8Gi"
        node_resources["MEMORY_MB"] = 8192
    return Ask(
        resources=resources,
        wants=wants,
        joint_types=joint_types,
        required=required,
        node_resources=node_resources,
        scorer=rng.choice(["pack", "spread"]),
        limit=rng.choice([None, None, None, 1, 2]),
    )


# Checking one request ----------------------------------------------------------


def claim_body(ask: Ask) -> dict:
    body = {key: value for key, value in ask.body().items() if key != "limit"}
    return {**body, "consumer_uuid": str(uuid.uuid4()), "project_id": "p", "user_id": "u"}


def check_no_overcommit(nodes: dict[str, Node], where: str) -> None:
    for node in nodes.values():
        for provider, resource_class, capacity, used in node.every_inventory:
            assert used <= capacity, f"{where}: {provider} {resource_class} {used}/{capacity}"


def check_request(api, reader: Reader, ask: Ask, where: str, keep: bool) -> None:
    nodes = reader.nodes()
    check_no_overcommit(nodes, where)
    unlimited = {key: value for key, value in ask.body().items() if key != "limit"}
    response = api.post("/group_resources/device_candidates", json=unlimited)
    assert response.status_code == 200, (where, response.json)
    answer = response.json
    where = f"{where}: {json.dumps(ask.body(), sort_keys=True)}"
    assert answer["nodes_considered"] == len(nodes), where
    choices = {name: oracle_choice(node, ask) for name, node in nodes.items()}
    feasible = sorted(name for name, choice in choices.items() if choice is not None)
    answered = [c["node"] for c in answer["candidates"]]
    # (a) exactly the nodes with a valid choice.
    assert sorted(answered) == feasible, f"{where}: answered {answered}, feasible {feasible}"
    for candidate in answer["candidates"]:
        node, choice = nodes[candidate["node"]], choices[candidate["node"]]
        at = f"{where} on {node.name}"
        # (b) valid.
        check_valid(node, ask, candidate, at)
        # (c) the best.
        got = {t: sorted(d["minor"] for d in ds) for t, ds in candidate["devices"].items()}
        assert (candidate.get("scope"), got) == (choice.scope, choice.minors()), (
            f"{at}: answered {candidate.get('scope')} {got}, best {choice.scope} {choice.minors()}"
        )
        assert abs(Fraction(candidate["score"]) - node_score(node, ask, choice)) < Fraction(
            1, 10**6
        ), at
    # (d) the ranking; ``limit`` cuts it.
    ranked = sorted(
        (rank_key(nodes[n], ask, choices[n]) for n in feasible),
        key=functools.cmp_to_key(compare_ranks),
    )
    assert answered == [key[2] for key in ranked], f"{where}: answered {answered}, ranked {ranked}"
    if ask.limit is not None:
        limited = api.post("/group_resources/device_candidates", json=ask.body()).json
        assert limited["candidates"] == answer["candidates"][: ask.limit], where
    # (e) a claim allocates the first candidate exactly.
    body = claim_body(ask)
    claimed = api.post("/group_resources/device_claims", json=body)
    if not answered:
        assert claimed.status_code == 409, (where, claimed.json)
        assert claimed.json["errors"][0]["code"] == "placement.group_resources.unplaceable"
        return
    assert claimed.status_code == 200, (where, claimed.json)
    first = answer["candidates"][0]
    assert claimed.json["node"] == first["node"], where
    assert claimed.json["allocations"] == first["allocations"], where
    stored = api.get(f"/allocations/{body['consumer_uuid']}").json["allocations"]
    assert {u: a["resources"] for u, a in stored.items()} == {
        u: a["resources"] for u, a in first["allocations"].items()
    }, where
    if not keep:
        assert api.delete(f"/allocations/{body['consumer_uuid']}").status_code == 204


def set_up_world(api, rng: random.Random) -> list[str]:
    names = []
    documents = []
    for index in range(rng.randint(1, 3)):
        if documents and rng.random() < 0.3:
            document = json.loads(json.dumps(rng.choice(documents)))  # a twin
        else:
            document = random_node_document(rng)
        documents.append(document)
        name = f"node-{index}"
        import_node(api, name, document)
        names.append(name)
    for _ in range(rng.randint(0, 3)):  # usage from earlier claims
        ask = random_ask(rng)
        response = api.post("/group_resources/device_claims", json=claim_body(ask))
        assert response.status_code in (200, 409), response.json
    if rng.random() < 0.4:  # a GPU used through plain placement, without its tenancy
        node = Reader(api, names).node(rng.choice(names))
        gpus = node.of_type("gpu")
        if gpus:
            gpu = rng.choice(gpus)
            body = {
                "allocations": {
                    gpu.provider: {
                        "resources": {"CUSTOM_GPU_CORE": 20, "CUSTOM_GPU_MEMORY_KB": 1024 * 1024}
                    }
                },
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            }
            response = api.put(f"/allocations/{uuid.uuid4()}", json=body)
            assert response.status_code in (204, 409), response.json
    for name, document in zip(names, documents, strict=True):  # devices found unhealthy since
        if rng.random() < 0.4:
            for device in document["devices"]:
                device["health"] = rng.random() >= 0.25
            import_node(api, name, document)
    return names


@pytest.mark.parametrize("world", range(WORLDS))
def test_device_candidates_agree_with_the_brute_force(api, world):
    rng = random.Random(SEED * 1000 + world)
    reader = Reader(api, set_up_world(api, rng))
    check_no_overcommit(reader.nodes(everything=world % 3 == 0), f"world {world}")
    for index in range(REQUESTS_PER_WORLD):
        ask = random_ask(rng)
        check_request(api, reader, ask, f"world {world} request {index}", rng.random() < 0.5)
    check_no_overcommit(reader.nodes(), f"world {world}")


# Hand-built worlds ---------------------------------------------------------------
# Random worlds rarely reach some rules; these worlds are built so that each rule below
# decides the answer, which the same brute force then checks.


def place(device_type: str, minor: int, numa: int, bridge: int, switch: int, **more) -> dict:
    device = {
        "type": device_type,
        "minor": minor,
        "numa": numa,
        "bridge": bridge,
        "pcie": switch,
        **more,
    }
    if device_type == "gpu":
        device.setdefault("memory", "16Gi")
    return device


def whole_gpus(count: int) -> tuple[dict, Want]:
    return {"nvidia.com/gpu": count}, Want("gpu", count, whole=True)


def rdma_share(amount: int) -> tuple[dict, Want]:
    return {"koordinator.sh/rdma": amount}, Want("rdma", 1, share=amount)


def joint_ask(primary, other, types=("gpu", "rdma"), required=None, scorer="pack") -> Ask:
    (first, first_want), (second, second_want) = primary, other
    wants = {first_want.type: first_want, second_want.type: second_want}
    return Ask({**first, **second}, wants, joint_types=types, required=required, scorer=scorer)


def alone_ask(part, scorer="pack") -> Ask:
    resources, want = part
    return Ask(resources, {want.type: want}, scorer=scorer)


# Two NUMA nodes. NUMA 0: two GPUs on switch 0 and a NIC on switch 1 (host bridge 0),
# a GPU and a NIC on switch 2 (host bridge 1), the NIC of the lower minor. NUMA 1: two GPUs
# on switch 3, a NIC on switch 4 (another bridge). No switch has two GPUs and a NIC, so
# joint requests fall back to SameNUMA (where the NIC beside the GPUs' bridge is chosen
# over the one of lower minor) or Node (3 GPUs fit on one NUMA node; 4 do not, although
# both NUMA nodes have a NIC).
SPLIT = {
    "devices": [
        place("gpu", 0, 0, 0, 0),
        place("gpu", 1, 0, 0, 0),
        place("rdma", 1, 0, 0, 1),
        place("gpu", 2, 0, 1, 2),
        place("rdma", 0, 0, 1, 2),
        place("gpu", 3, 1, 2, 3),
        place("gpu", 4, 1, 2, 3),
        place("rdma", 2, 1, 3, 4),
    ]
}
# One NUMA node: GPUs 1 and 2 on two switches of host bridge 0, GPU 0 on bridge 1, GPU 3 on
# the other NUMA node: two GPUs are 1 and 2 (same bridge beats same NUMA node).
BRIDGES = {
    "devices": [
        place("gpu", 1, 0, 0, 0),
        place("gpu", 2, 0, 0, 1),
        place("gpu", 0, 0, 1, 2),
        place("gpu", 3, 1, 2, 3),
    ]
}
# Two nodes alike but for NVLinks between the GPUs of each switch: with the NIC primary,
# the GPUs follow it and their links do not rank the nodes, so the node of the lower name
# comes first.
ALIKE = {
    "devices": [
        place("rdma", 0, 0, 0, 0),
        place("gpu", 0, 0, 0, 0),
        place("gpu", 1, 0, 0, 0),
        place("rdma", 1, 0, 1, 1),
        place("gpu", 2, 0, 1, 1),
        place("gpu", 3, 0, 1, 1),
    ]
}
LINKED = {**ALIKE, "nvlinks": [{"gpus": [0, 1], "links": 4}, {"gpus": [2, 3], "links": 4}]}
# Four NICs of 4 VFs on one switch, used 1/8, 1/20, 7/20 and 1/20 (a VF of NIC 0, 10 % of
# NIC 1, 20 % and two VFs of NIC 2, 10 % of NIC 3): sets {0, 1, 2} and {0, 2, 3} are used
# alike, and the lowest minors win, whatever the order of a float sum
# (0.125 + 0.05 + 0.35 != 0.125 + 0.35 + 0.05).
TIES = {"devices": [place("rdma", m, 0, 0, 0, vfs=4, labels={"n": str(m)}) for m in range(4)]}


def on_nic(minor: int, amount: int, vfs: bool = False) -> dict:
    hint = {"selector": {"matchLabels": {"n": str(minor)}}, **({"vfSelector": {}} if vfs else {})}
    return {
        "resources": {"koordinator.sh/rdma": amount},
        "annotations": annotations(None, {"rdma": hint}),
    }


VFS_AS_COUNT = Ask(
    {"koordinator.sh/rdma": 3}, {"rdma": Want("rdma", 3, vfs=1, vf_selector={}, as_count=True)}
)

SCENARIOS = {  # documents, claims made first, requests
    "split": (
        {"split": SPLIT},
        [],
        [
            joint_ask(whole_gpus(2), rdma_share(10)),
            joint_ask(whole_gpus(2), rdma_share(10), scorer="spread"),
            joint_ask(whole_gpus(3), rdma_share(10)),
            joint_ask(whole_gpus(4), rdma_share(10)),
            joint_ask(whole_gpus(1), rdma_share(10), required="SamePCIe"),
            joint_ask(whole_gpus(2), rdma_share(10), required="SamePCIe"),
            joint_ask(rdma_share(10), whole_gpus(2), types=("rdma", "gpu")),
        ],
    ),
    "bridges": (
        {"bridges": BRIDGES},
        [],
        [
            alone_ask(whole_gpus(2)),
            alone_ask(whole_gpus(3)),
            alone_ask(whole_gpus(2), "spread"),
        ],
    ),
    "alike": (
        {"alike-1": ALIKE, "alike-2-linked": LINKED},
        [],
        [
            joint_ask(rdma_share(10), whole_gpus(2), types=("rdma", "gpu")),
            joint_ask(whole_gpus(2), rdma_share(10)),
            alone_ask(whole_gpus(2)),
        ],
    ),
    "ties": (
        {"ties": TIES},
        [
            on_nic(0, 1, vfs=True),
            on_nic(1, 10),
            on_nic(2, 20),
            on_nic(2, 2, vfs=True),
            on_nic(3, 10),
        ],
        [VFS_AS_COUNT, Ask(VFS_AS_COUNT.resources, VFS_AS_COUNT.wants, scorer="spread")],
    ),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_hand_built_worlds_agree_with_the_brute_force(api, scenario):
    documents, claims, asks = SCENARIOS[scenario]
    for name, document in documents.items():
        import_node(api, name, document)
    for body in claims:
        body = {**body, "consumer_uuid": str(uuid.uuid4()), "project_id": "p", "user_id": "u"}
        response = api.post("/group_resources/device_claims", json=body)
        assert response.status_code == 200, response.json
    reader = Reader(api, sorted(documents))
    for index, ask in enumerate(asks):
        check_request(api, reader, ask, f"{scenario} request {index}", keep=False)
