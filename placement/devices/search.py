"""Ranking the device nodes for one request.

Nodes are ordered by what their best choice achieves: the joint scope first
(one PCIe switch, then one NUMA node, then the node), then the link strength
of the devices chosen (the primary type's, and each type's asked alone), then
the scorer (``pack``: mean utilisation of the node's devices and resources
after the placement, highest first; ``spread``: lowest first), then the
node's name.
"""

from collections import Counter
from dataclasses import dataclass

from placement.devices.chooser import SCOPES, Chooser, Pick, Unfit
from placement.devices.request import DeviceRequest
from placement.devices.snapshot import DeviceNode


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


def rank(
    nodes: list[DeviceNode],
    request: DeviceRequest,
    scorer: str,
    limit: int | None,
    out_of_sync: list[str],
) -> DeviceAnswer:
    pack = scorer == "pack"
    chooser = Chooser(request, pack=pack)
    candidates = []
    reasons: Counter[str] = Counter()
    utilisations: dict[tuple, float] = {}  # nodes alike in state and pick score alike
    for node in nodes:
        signature = node.state_key if node.state_key >= 0 else node.signature()
        pick = chooser.choose(node, signature)
        if isinstance(pick, Unfit):
            reasons[pick.reason] += 1
            continue
        alike = (signature, tuple(node.node_classes.items()))
        if alike not in utilisations:
            utilisations[alike] = node_utilisation(node, pick, request)
        utilisation = utilisations[alike]
        candidates.append(DeviceCandidate(node, pick, utilisation if pack else 1 - utilisation))
    candidates.sort(key=_rank_key)
    if limit is not None:
        candidates = candidates[:limit]
    return DeviceAnswer(
        candidates=candidates,
        nodes_considered=len(nodes),
        unfit=reasons.most_common(),
        out_of_sync=out_of_sync,
    )


def _rank_key(candidate: DeviceCandidate) -> tuple:
    pick = candidate.pick
    scope_rank = SCOPES.index(pick.scope) if pick.scope else 0
    return (scope_rank, -pick.strength, -round(candidate.score, 9),
            candidate.node.name)


def node_utilisation(node: DeviceNode, pick: Pick, request: DeviceRequest) -> float:
    """Mean of (used + placed) / capacity over the node's device inventories (tenancy
    aside) and its own resources."""
    placed = {index: dict(amounts) for index, amounts in pick.takes}
    shares = []
    for index, state in enumerate(node.devices):
        taken = placed.get(index, {})
        for name, total in state.total.items():
            if name == "tenancy" or total <= 0:
                continue
            used = total - state.free[name] + taken.get(name, 0)
            shares.append(used / total)
    for resource_class, (capacity, free) in node.node_classes.items():
        if capacity > 0:
            used = capacity - free + request.node_resources.get(resource_class, 0)
            shares.append(used / capacity)
    return sum(shares) / len(shares) if shares else 0.0
