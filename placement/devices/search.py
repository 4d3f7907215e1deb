"""Ranking the device nodes for one request.

Nodes are ordered by what their best choice achieves: the joint scope first
(one PCIe switch, then one NUMA node, then the node), then the link strength
of the devices chosen (the primary type's, and each type's asked alone), then
the scorer (``pack``: mean utilisation of the node's devices and resources
after the placement, highest first; ``spread``: lowest first), then the
node's name.
"""

import heapq
import itertools
from collections import Counter
from dataclasses import dataclass, field

from placement.devices.chooser import SCOPES, Chooser, Pick, Unfit
from placement.devices.request import DeviceRequest
from placement.devices.snapshot import DeviceNode, DeviceNodes
from placement.devices.takes import counts_in_scores
from placement.nodes.search_budget import SearchBudget


@dataclass(frozen=True)
class DeviceCandidate:
    node: DeviceNode
    pick: Pick
    score: float

    def allocations(self, request: DeviceRequest) -> dict[str, dict[str, int]]:
        """Provider uuid -> class -> amount, as placement's allocations."""
        allocations: dict[str, dict[str, int]] = {}
        for index, amounts in self.pick.takes:
            state = self.node.devices[index]
            allocations[state.uuid] = {state.classes[name]: n for name, n in amounts}
        for switch_index, device_type, amount in self.pick.switch_takes:
            switch = self.node.switches[switch_index]
            allocations.setdefault(switch.uuid, {})[switch.classes[device_type]] = amount
        if request.node_resources:
            allocations[self.node.uuid] = dict(request.node_resources)
        return allocations


@dataclass(frozen=True)
class DeviceAnswer:
    candidates: list[DeviceCandidate]
    nodes_considered: int
    unfit: list[tuple[str, int]]  # reason -> how many nodes, most common first
    out_of_sync: list[str]  # device nodes left out: their trees no longer match
    # Each reason with the nodes it holds for, grouped by kind (nodes alike).
    unfit_nodes: list[tuple[str, list[DeviceNode]]] = field(default_factory=list)


def rank(
    nodes: DeviceNodes,
    request: DeviceRequest,
    scorer: str,
    limit: int | None,
    budget: SearchBudget | None = None,
) -> DeviceAnswer:
    """``nodes`` ranked for ``request``, the first ``limit`` as candidates.

    Nodes of one kind (equal ``DeviceNode.kind``: devices, links, state and node
    resources) choose, score and rank alike but for their names: each kind is chosen
    on once, and only the nodes the answer shows become candidates, in the order a
    sort of every node by (``kind_rank_key``, name) gives. Past the deadline of a
    ``budget`` no other kind is chosen on (the first always is), and ``budget`` is
    told how many nodes were looked at.
    """
    pack = scorer == "pack"
    chooser = Chooser(request, pack=pack)
    reasons: Counter[str] = Counter()
    unfit_nodes: list[tuple[str, list[DeviceNode]]] = []
    ranked: list[tuple[tuple, list[DeviceNode], Pick, float]] = []
    timed = budget is not None and budget.timed
    looked = 0
    for key, alike in nodes.kinds.items():
        if timed:  # the flag first: a search without a budget makes no call here
            assert budget is not None
            if looked and budget.passed():
                budget.stop(looked, nodes.count)
                break
            looked += len(alike)
        pick = chooser.choose(alike[0], key)
        if isinstance(pick, Unfit):
            reasons[pick.reason] += len(alike)
            unfit_nodes.append((pick.reason, alike))
            continue
        utilisation = node_utilisation(alike[0], pick, request)
        score = utilisation if pack else 1 - utilisation
        ranked.append((kind_rank_key(pick, score), alike, pick, score))
    ranked.sort(key=lambda entry: entry[0])
    candidates: list[DeviceCandidate] = []
    for _key, tied in itertools.groupby(ranked, key=lambda entry: entry[0]):
        tied_kinds = list(tied)
        by_name = heapq.merge(
            *(_by_name(alike, index) for index, (_, alike, _p, _s) in enumerate(tied_kinds))
        )
        for _name, index, node in by_name:
            if limit is not None and len(candidates) >= limit:
                break
            _, _alike, pick, score = tied_kinds[index]
            candidates.append(DeviceCandidate(node, pick, score))
        if limit is not None and len(candidates) >= limit:
            break
    return DeviceAnswer(
        candidates=candidates,
        nodes_considered=nodes.count,
        unfit=reasons.most_common(),
        out_of_sync=nodes.out_of_sync,
        unfit_nodes=unfit_nodes,
    )


def _by_name(alike: list[DeviceNode], index: int):
    """(name, ``index``, node) of each node of one kind, by name (as ``alike`` is)."""
    return ((node.name, index, node) for node in alike)


def kind_rank_key(pick: Pick, score: float) -> tuple:
    """How a node ranks by its best choice, before its name: scope, strength, score."""
    scope_rank = SCOPES.index(pick.scope) if pick.scope else 0
    return (scope_rank, -pick.strength, -round(score, 9))


def node_utilisation(node: DeviceNode, pick: Pick, request: DeviceRequest) -> float:
    """Mean of (used + placed) / capacity over the node's healthy device inventories
    (tenancy aside: an unhealthy device gives nothing) and its own resources."""
    placed = {index: dict(amounts) for index, amounts in pick.takes}
    shares = []
    for index, state in enumerate(node.devices):
        if not state.device.healthy:
            continue
        taken = placed.get(index, {})
        for name, total in state.total.items():
            if not counts_in_scores(name) or total <= 0:
                continue
            used = total - state.free[name] + taken.get(name, 0)
            shares.append(used / total)
    for resource_class, (capacity, free) in node.node_classes.items():
        if capacity > 0:
            used = capacity - free + request.node_resources.get(resource_class, 0)
            shares.append(used / capacity)
    return sum(shares) / len(shares) if shares else 0.0
