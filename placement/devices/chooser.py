"""The best devices of one node for a device request.

A node's choice, in order of what matters:

1. Joint allocation (Koordinator's device hints): the primary type's devices (the type asked
   for the most devices, ``request.Joint``) are chosen so that every other type's request can
   be made beside them:
   once per PCIe switch the primary devices touch, on that switch (scope
   ``SamePCIe``); else with all of them on one NUMA node, once on that NUMA
   node (``SameNUMA``); else once anywhere on the node (``Node``).
   ``requiredScope: SamePCIe`` allows the switch only.
2. Link strength (what ``nvidia-smi topo -m`` shows): among the sets of devices
   that fit, the one whose
   pairs are linked most tightly, as the sum over its pairs of each pair's
   strength: 100 per NVLink, plus 60 on one board (PSB), 50 on one PCIe switch,
   40 on switches of one upstream switch (PXB), 30 on one host bridge, 20 on one
   NUMA node, 10 across sockets (nvml's order: NV# > PSB > PIX > PXB > PHB >
   NODE > SYS).
   NVLinks outweigh any PCIe placement, and a set that keeps every pair on one socket beats one that
   gains a switch pair by splitting across sockets (as NVIDIA's own GPU
   allocator weighs links).
3. The scorer: ``pack`` prefers devices already in use (fractional GPUs fill
   up one device before starting another), ``spread`` the least used.
4. The lowest minors.

Unhealthy devices (a device's ``health`` in its topology) are never chosen: for every request,
joint or alone, whole or shared, they are as absent (``ApplyForAll`` takes every
healthy device selected); what is allocated on them still counts as in use.

The best set is found by trying every set when there are at most
``MAX_EXACT_SETS`` of them (8 GPUs choose 4 is 70, 16 choose 8 is 12,870);
beyond (pairs are always tried exhaustively), by a greedy growth from the
``GREEDY_STARTS`` best-linked devices and from the devices of the strongest
pairs, adding each time the device that adds most. Nodes alike in devices, links
and state are chosen once (``Chooser`` remembers).
"""

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from placement.devices.device_checks import Able, able_devices, enough, not_enough_words
from placement.devices.request import DeviceRequest, TypeRequest
from placement.devices.snapshot import DeviceNode, DeviceState
from placement.devices.takes import counts_in_scores, device_take
from placement.schemas.devices import PCIE_LEVEL, SAME_PCIE

SAME_NUMA = "SameNUMA"
WHOLE_NODE = "Node"
SCOPES = (SAME_PCIE, SAME_NUMA, WHOLE_NODE)
MAX_EXACT_SETS = 20_000
GREEDY_STARTS = 8

NVLINK_WEIGHT = 100  # per link
SAME_BOARD_WEIGHT = 60  # PSB: GPUs of one board, behind its on-board switch
SAME_SWITCH_WEIGHT = 50
SAME_SWITCH_GROUP_WEIGHT = 40  # PXB: switches under one upstream switch
SAME_BRIDGE_WEIGHT = 30
SAME_NUMA_WEIGHT = 20
CROSS_NUMA_WEIGHT = 10


@dataclass(frozen=True)
class Pick:
    """A choice on a node, by device index, so that alike nodes share it."""

    scope: str | None
    takes: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]  # device index -> base amounts
    switch_takes: tuple[tuple[int, str, int], ...]  # (switch, device type, tenancy)
    links: dict[str, dict[str, int]]  # per device type: how its devices' pairs are linked
    strength: int  # what ranks nodes: the link strength of the primary type and types alone


@dataclass(frozen=True)
class Unfit:
    reason: str


@dataclass
class Chooser:
    """Chooses on each node for one request; reuse it across the nodes of one search."""

    request: DeviceRequest
    pack: bool = True
    _memo: dict[object, Pick | Unfit] = field(default_factory=dict)  # by signature

    def choose(self, node: DeviceNode, signature: object = None) -> Pick | Unfit:
        """The best choice on ``node``; ``signature`` is ``node.signature()`` or its number
        (``state_key``), if known: one or the other for every node of a search."""
        missing = self.node_resources_missing(node)
        if missing:
            return Unfit(missing)
        if signature is None:
            signature = node.signature()
        if signature not in self._memo:
            self._memo[signature] = self._choose(node)
        return self._memo[signature]

    def node_resources_missing(self, node: DeviceNode) -> str | None:
        """Why the node's own resources (cpu, memory, ...) cannot take the request's, if
        they cannot: the first class short."""
        for resource_class, missing in self.node_resources_short(node).items():
            amount = self.request.node_resources[resource_class]
            return f"{resource_class}: {amount} asked, {amount - missing} free on the node"
        return None

    def node_resources_short(self, node: DeviceNode) -> dict[str, int]:
        """Each class of the node's own resources that cannot take the request's amount,
        and how much it lacks."""
        short = {}
        for resource_class, amount in self.request.node_resources.items():
            _capacity, free = node.node_classes.get(resource_class, (0, 0))
            if free < amount:
                short[resource_class] = amount - max(free, 0)
        return short

    def finds(self, node: DeviceNode, able: Able | None = None) -> bool:
        """Whether ``choose`` finds a choice on the node, decided as it decides it but
        without choosing: the node's own resources, each type asked alone
        (``device_checks.enough``), the scope of the joint types (``_joint_scope``).
        ``able``: each type's ``able_devices`` on the node, when the caller has them."""
        if self.node_resources_short(node):
            return False
        able = (
            able
            if able is not None
            else {name: able_devices(node, wanted) for name, wanted in self.request.types.items()}
        )
        joint = self.request.joint
        for name, wanted in self.request.types.items():
            if (joint is None or name not in joint.types) and not enough(*able[name], wanted):
                return False
        return (
            joint is None
            or self._joint_scope(node, joint.types, joint.required_scope, able) is not None
        )

    def _choose(self, node: DeviceNode) -> Pick | Unfit:
        takes: list[tuple[int, tuple[tuple[str, int], ...]]] = []
        switch_takes: dict[tuple[int, str], int] = {}
        links: dict[str, dict[str, int]] = {}
        strengths: dict[str, int] = {}
        scope = None
        joint = self.request.joint
        alone = [t for t in self.request.types if joint is None or t not in joint.types]
        if joint is not None:
            joint_pick = self._joint(node, joint.types, joint.required_scope)
            if isinstance(joint_pick, Unfit):
                return joint_pick
            scope, chosen = joint_pick
            for device_type, devices in chosen.items():
                self._record(node, self.request.types[device_type], devices, takes, switch_takes)
                links[device_type] = link_counts(node, devices)
                strengths[device_type] = set_strength(node, devices)
        for device_type in alone:
            wanted = self.request.types[device_type]
            devices_or_unfit = self._alone(node, wanted)
            if isinstance(devices_or_unfit, Unfit):
                return devices_or_unfit
            self._record(node, wanted, devices_or_unfit, takes, switch_takes)
            links[device_type] = link_counts(node, devices_or_unfit)
            strengths[device_type] = set_strength(node, devices_or_unfit)
        # A joint request's other types follow the primary devices: how many of them
        # it takes says nothing of how well the primary devices are linked.
        ranked = [joint.types[0], *alone] if joint is not None else alone
        return Pick(
            scope=scope,
            takes=tuple(sorted(takes)),
            switch_takes=tuple(sorted((s, t, n) for (s, t), n in switch_takes.items())),
            links=links,
            strength=sum(strengths[device_type] for device_type in ranked),
        )

    def _record(self, node, wanted: TypeRequest, devices: list[int], takes, switch_takes):
        exclusive_switch = wanted.exclusive == PCIE_LEVEL
        for index in devices:
            state = node.devices[index]
            amounts = device_take(state, wanted.per_device, wanted.exclusive, wanted.vf_selector)
            assert amounts is not None  # chosen among those that fit
            takes.append((index, tuple(sorted(amounts.items()))))
            switch = node.switches[state.device.switch]
            key = (state.device.switch, wanted.type)
            switch_takes[key] = switch.total[wanted.type] if exclusive_switch else 1

    # -- one type on its own -------------------------------------------------

    def _alone(self, node: DeviceNode, wanted: TypeRequest) -> list[int] | Unfit:
        chosen_from, fitting = able_devices(node, wanted)
        if not enough(chosen_from, fitting, wanted):
            return Unfit(not_enough_words(node, wanted, chosen_from, fitting))
        if wanted.count is None:  # ApplyForAll
            return fitting
        chosen = best_set(node, fitting, wanted.count, self.pack)
        assert chosen is not None  # enough of them fit
        return chosen

    # -- joint allocation ----------------------------------------------------

    def _joint_scope(
        self,
        node: DeviceNode,
        types: Sequence[str],
        required: str | None,
        able: Able | None = None,
    ) -> tuple[str, list[list[int]], dict] | None:
        """The closest scope in which the primary type's devices can be chosen with every
        other type's beside them: the scope, the sets of primary devices to choose from
        there (each large enough) and where the other types fit (``_able_scopes``); None
        when no scope can. ``able``: as ``finds``'s."""
        primary = self.request.types[types[0]]
        others = [self.request.types[t] for t in types[1:]]
        fitting = {
            t: (able[t] if able is not None else able_devices(node, self.request.types[t]))[1]
            for t in types
        }
        primary_fitting = fitting[primary.type]
        scopes = (SAME_PCIE,) if required == SAME_PCIE else SCOPES
        for scope in scopes:
            able_groups = _able_scopes(node, others, scope, fitting)
            candidates = [i for i in primary_fitting if _scope_of(node, i, scope) in able_groups]
            if scope == SAME_NUMA:  # all on one NUMA node: the best of each
                options = [
                    [i for i in candidates if _scope_of(node, i, scope) == group]
                    for group in sorted(able_groups)
                ]
            else:
                options = [candidates]
            # (``best_set`` finds a set in each option exactly when it is large enough)
            options = [option for option in options if len(option) >= (primary.count or 0)]
            if options:
                return scope, options, able_groups
        return None

    def _joint(self, node: DeviceNode, types: Sequence[str], required: str | None):
        found = self._joint_scope(node, types, required)
        primary = self.request.types[types[0]]
        others = [self.request.types[t] for t in types[1:]]
        if found is None:
            where = "on one PCIe switch" if required == SAME_PCIE else "on the node"
            return Unfit(
                f"{'+'.join(types)}: no {primary.count} {primary.type} device(s) "
                f"with their {', '.join(o.type for o in others)} {where}"
            )
        scope, options, able = found
        found_sets = [best_set(node, option, primary.count or 0, self.pack) for option in options]
        sets = [chosen for chosen in found_sets if chosen is not None]  # (every one)
        chosen = max(sets, key=lambda devices: set_value(node, devices, self.pack))
        picked = {primary.type: chosen}
        for group in sorted({_scope_of(node, i, scope) for i in chosen}):
            anchors = [i for i in chosen if _scope_of(node, i, scope) == group]
            for other in others:
                in_group = able[group][other.type]
                more = best_set(node, in_group, other.count or 0, self.pack, anchors)
                assert more is not None  # the scope was able
                picked.setdefault(other.type, []).extend(more)
        return scope, {t: sorted(devices) for t, devices in picked.items()}


def _able_scopes(node, others: list[TypeRequest], scope: str, fitting: dict[str, list[int]]):
    """Scope -> type -> the devices there that fit (of ``fitting``, each type's); only
    scopes where every type fits."""
    by_group: dict[object, dict[str, list[int]]] = {}
    for other in others:
        for index in fitting[other.type]:
            group = _scope_of(node, index, scope)
            by_group.setdefault(group, {}).setdefault(other.type, []).append(index)
    return {
        group: by_type
        for group, by_type in by_group.items()
        if all(len(by_type.get(o.type, [])) >= (o.count or 0) for o in others)
    }


def _scope_of(node: DeviceNode, index: int, scope: str) -> int:
    device = node.devices[index].device
    if scope == SAME_PCIE:
        return device.switch
    if scope == SAME_NUMA:
        return device.numa
    return 0


# -- link strength -----------------------------------------------------------


def pair_strength(node: DeviceNode, a: int, b: int) -> int:
    first, second = node.devices[a].device, node.devices[b].device
    strength = NVLINK_WEIGHT * node.topology.links_between(first, second)
    if first.board >= 0 and first.board == second.board:
        return strength + SAME_BOARD_WEIGHT
    if first.switch == second.switch:
        return strength + SAME_SWITCH_WEIGHT
    if first.switch_group >= 0 and first.switch_group == second.switch_group:
        return strength + SAME_SWITCH_GROUP_WEIGHT
    if first.bridge == second.bridge:
        return strength + SAME_BRIDGE_WEIGHT
    if first.numa == second.numa:
        return strength + SAME_NUMA_WEIGHT
    return strength + CROSS_NUMA_WEIGHT


def set_strength(node: DeviceNode, devices: Sequence[int]) -> int:
    return sum(pair_strength(node, a, b) for a, b in itertools.combinations(devices, 2))


def set_value(node: DeviceNode, devices: Sequence[int], pack: bool) -> tuple:
    """How good a set is: link strength, then the scorer, then the lowest minors."""
    used = sum(_used_fraction(node.devices[d]) for d in devices)
    minors = tuple(-node.devices[d].device.minor for d in sorted(devices))
    return (set_strength(node, devices), round(used if pack else -used, 9), minors)


def link_counts(node: DeviceNode, devices: Sequence[int]) -> dict[str, int]:
    """How the pairs of a set are linked, for answers."""
    counts = {"nvlinks": 0, "samePCIe": 0, "sameHostBridge": 0, "sameNUMA": 0, "crossNUMA": 0}
    for a, b in itertools.combinations(devices, 2):
        first, second = node.devices[a].device, node.devices[b].device
        counts["nvlinks"] += node.topology.links_between(first, second)
        if first.switch == second.switch:
            counts["samePCIe"] += 1
        elif first.bridge == second.bridge:
            counts["sameHostBridge"] += 1
        elif first.numa == second.numa:
            counts["sameNUMA"] += 1
        else:
            counts["crossNUMA"] += 1
    return counts


def best_set(
    node: DeviceNode,
    candidates: list[int],
    count: int,
    pack: bool,
    anchors: Sequence[int] = (),
) -> list[int] | None:
    """The ``count`` candidates linked most tightly (to each other and to ``anchors``),
    then best by the scorer, then of the lowest minors."""
    if count > len(candidates):
        return None
    if count == 0:
        return []
    ordered = sorted(candidates, key=lambda i: node.devices[i].device.minor)
    size = len(ordered)
    pairs = [[pair_strength(node, a, b) if a != b else 0 for b in ordered] for a in ordered]
    to_anchors = [sum(pair_strength(node, a, d) for a in anchors) for d in ordered]
    used = [_used_fraction(node.devices[d]) for d in ordered]
    direction = 1 if pack else -1

    def value(members: Sequence[int]) -> tuple:  # positions in ordered
        strength = sum(to_anchors[m] for m in members) + sum(
            pairs[a][b] for a, b in itertools.combinations(members, 2)
        )
        return (
            strength,
            round(direction * sum(used[m] for m in members), 9),
            tuple(-m for m in members),
        )

    if count <= 2 or math.comb(size, count) <= MAX_EXACT_SETS:
        best = max(itertools.combinations(range(size), count), key=value)
    else:
        best = _greedy(size, count, pairs, to_anchors, value)
    return [ordered[m] for m in best]


def _greedy(size: int, count: int, pairs, to_anchors, value) -> tuple[int, ...]:
    """Grown from the best-linked devices, adding whichever device adds most."""
    reach = [sum(row) + to_anchors[m] for m, row in enumerate(pairs)]
    best_reached = sorted(range(size), key=lambda m: (-reach[m], m))[:GREEDY_STARTS]
    strongest_pairs = sorted(
        itertools.combinations(range(size), 2), key=lambda p: (-pairs[p[0]][p[1]], p)
    )[:GREEDY_STARTS]
    starts = sorted(set(best_reached) | {m for pair in strongest_pairs for m in pair})
    best: tuple | None = None
    best_members: tuple[int, ...] = ()
    for start in starts:
        members = [start]
        gain = [pairs[start][m] + to_anchors[m] for m in range(size)]
        free = set(range(size)) - {start}
        while len(members) < count:
            chosen = max(free, key=lambda m: (gain[m], -m))
            members.append(chosen)
            free.discard(chosen)
            for m in free:
                gain[m] += pairs[chosen][m]
        current = value(sorted(members))
        if best is None or current > best:
            best, best_members = current, tuple(sorted(members))
    return best_members


def _used_fraction(state: DeviceState) -> float:
    capacity_names = [n for n in state.total if counts_in_scores(n)]
    return sum(
        (state.total[n] - state.free[n]) / state.total[n] for n in capacity_names if state.total[n]
    ) / max(len(capacity_names), 1)
