"""What one node offers a gang: the device route's choice for each member it can take,
for every vector of counts of the members' kinds it can hold (``request.Counts``).

Without sharing a node takes one member, of any kind: its best choice for that kind's
request (``Chooser``), scored as ``devices.search`` scores it. When members may share
nodes, they are placed on a node one after another, kinds in request order: the
second member's choice is the device route's on the node as the first left it (its
devices' free amounts, its switches' tenancy and its own resources taken), and so on
until a kind's request no longer fits or the gang's members of that kind are placed;
then the next kind on the node as those left it. Nodes alike (``DeviceNode.kind``)
make the same choices: each kind of node is chosen on once. Past the deadline of a
time budget no further kind of node is chosen on (the first always is): the nodes
not looked at offer nothing.
"""

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from placement.devices.chooser import SCOPES, Chooser, Pick, Unfit
from placement.devices.request import DeviceRequest
from placement.devices.search import DeviceCandidate, node_utilisation
from placement.devices.snapshot import DeviceNode, DeviceNodes
from placement.gangs.request import Counts
from placement.nodes.search_budget import SearchBudget

SCORE_UNITS = 10**9  # a member's score (0 to 1) in whole units, summed exactly


@dataclass(frozen=True)
class MemberChoice:
    pick: Pick
    score: float  # the scorer's: pack the node's utilisation after it, spread 1 minus it
    scope_rank: int  # 0 SamePCIe (or no joint request), 1 SameNUMA, 2 Node
    strength: int
    score_units: int
    kind: int = 0  # the member kind's index in the gang request

    def on(self, node: DeviceNode) -> DeviceCandidate:
        return DeviceCandidate(node, self.pick, self.score)


@dataclass(frozen=True)
class NodeSlots:
    node: DeviceNode
    # counts code -> the members placed for it, in order (code 0: none)
    offers: dict[int, tuple[MemberChoice, ...]]
    unfit: str | None  # why no (further) member fits, the first reason met, when one did not


def node_slots(
    nodes: DeviceNodes,
    requests: Sequence[DeviceRequest],
    scorer: str,
    counts: Counts,
    share_nodes: bool,
    budget: SearchBudget | None = None,
) -> list[NodeSlots]:
    """Every node's slots (of the nodes looked at within ``budget``), by name."""
    pack = scorer == "pack"
    choosers = [Chooser(request, pack=pack) for request in requests]
    most = counts.total if share_nodes else 1
    timed = budget is not None and budget.timed
    found: list[NodeSlots] = []
    for key, alike in nodes.kinds.items():
        if timed and found and budget is not None and budget.passed():
            budget.stop(len(found), nodes.count)
            break
        offers, unfit = _offers(choosers, requests, alike[0], key, pack, counts, most)
        found += [NodeSlots(node, offers, unfit) for node in alike]
    found.sort(key=lambda slots: slots.node.name)
    return found


def _offers(
    choosers: list[Chooser],
    requests: Sequence[DeviceRequest],
    node: DeviceNode,
    key: object,
    pack: bool,
    counts: Counts,
    most: int,
) -> tuple[dict[int, tuple[MemberChoice, ...]], str | None]:
    """Every counts code the node can hold (at most ``most`` members), with its members."""
    offers: dict[int, tuple[MemberChoice, ...]] = {0: ()}
    unfit: str | None = None
    # (code, the node as its members left it, its signature: None once changed, members)
    reached: list[tuple[int, DeviceNode, object, tuple[MemberChoice, ...]]] = [(0, node, key, ())]
    last = len(choosers) - 1
    for kind, chooser in enumerate(choosers):
        request = requests[kind]
        grown = []
        for code, state, signature, placed in reached:
            for count in range(1, counts.wanted[kind] + 1):
                if len(placed) >= most:
                    break
                pick = chooser.choose(state, signature)
                if isinstance(pick, Unfit):
                    if unfit is None:
                        unfit = f"kind {kind}: {pick.reason}" if last else pick.reason
                    break
                placed = (*placed, _choice(state, pick, request, pack, kind))
                code += counts.unit(kind)
                offers[code] = placed
                if len(placed) < most and (kind < last or count < counts.wanted[kind]):
                    state, signature = after(state, pick, request), None
                    grown.append((code, state, signature, placed))
        reached += grown
    return offers, unfit


def _choice(
    state: DeviceNode, pick: Pick, request: DeviceRequest, pack: bool, kind: int
) -> MemberChoice:
    utilisation = node_utilisation(state, pick, request)
    score = utilisation if pack else 1 - utilisation
    return MemberChoice(
        pick=pick,
        score=score,
        scope_rank=SCOPES.index(pick.scope) if pick.scope else 0,
        strength=pick.strength,
        score_units=round(score * SCORE_UNITS),
        kind=kind,
    )


def after(node: DeviceNode, pick: Pick, request: DeviceRequest) -> DeviceNode:
    """The node as ``pick`` leaves it (a copy: the node itself is the search's)."""
    devices = list(node.devices)
    for index, amounts in pick.takes:
        state = devices[index]
        free = dict(state.free)
        for name, amount in amounts:
            free[name] -= amount
        devices[index] = dataclasses.replace(state, free=free, in_use=True)
    switches = dict(node.switches)
    for index, device_type, amount in pick.switch_takes:
        switch = switches[index]
        free = dict(switch.free)
        free[device_type] -= amount
        switches[index] = dataclasses.replace(switch, free=free)
    node_classes = {
        resource_class: (capacity, free - request.node_resources.get(resource_class, 0))
        for resource_class, (capacity, free) in node.node_classes.items()
    }
    return dataclasses.replace(
        node, devices=devices, switches=switches, node_classes=node_classes, state_key=-1
    )
