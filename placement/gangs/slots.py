"""What one node offers a gang: the device route's choice for each member it can take.

Without sharing a node takes one member: its best choice for the request
(``Chooser``), scored as ``devices.search`` scores it. When members may share nodes,
the second member's choice is the device route's on the node as the first left it
(its devices' free amounts, its switches' tenancy and its own resources taken), and
so on until the request no longer fits or M members are placed. Nodes alike
(``DeviceNode.kind``) make the same choices: each kind is chosen on once.
"""

import dataclasses
from dataclasses import dataclass

from placement.devices.chooser import SCOPES, Chooser, Pick, Unfit
from placement.devices.request import DeviceRequest
from placement.devices.search import DeviceCandidate, node_utilisation
from placement.devices.snapshot import DeviceNode, DeviceNodes

SCORE_UNITS = 10**9  # a member's score (0 to 1) in whole units, summed exactly


@dataclass(frozen=True)
class MemberChoice:
    pick: Pick
    score: float  # the scorer's: pack the node's utilisation after it, spread 1 minus it
    scope_rank: int  # 0 SamePCIe (or no joint request), 1 SameNUMA, 2 Node
    strength: int
    score_units: int

    def on(self, node: DeviceNode) -> DeviceCandidate:
        return DeviceCandidate(node, self.pick, self.score)


@dataclass(frozen=True)
class NodeSlots:
    node: DeviceNode
    choices: tuple[MemberChoice, ...]  # the 1st, 2nd, ... member's (empty: none fits)
    unfit: str | None  # why no (further) member fits, when fewer than wanted do


def node_slots(
    nodes: DeviceNodes, request: DeviceRequest, scorer: str, members: int, share_nodes: bool
) -> list[NodeSlots]:
    """Every node's slots, by name."""
    pack = scorer == "pack"
    chooser = Chooser(request, pack=pack)
    wanted = members if share_nodes else 1
    found = []
    for key, alike in nodes.kinds.items():
        choices, unfit = _choices(chooser, alike[0], key, request, pack, wanted)
        found += [NodeSlots(node, choices, unfit) for node in alike]
    found.sort(key=lambda slots: slots.node.name)
    return found


def _choices(
    chooser: Chooser, node: DeviceNode, key: object, request: DeviceRequest, pack: bool, wanted: int
) -> tuple[tuple[MemberChoice, ...], str | None]:
    choices: list[MemberChoice] = []
    state, signature = node, key
    while len(choices) < wanted:
        pick = chooser.choose(state, signature)
        if isinstance(pick, Unfit):
            return tuple(choices), pick.reason
        utilisation = node_utilisation(state, pick, request)
        score = utilisation if pack else 1 - utilisation
        choices.append(
            MemberChoice(
                pick=pick,
                score=score,
                scope_rank=SCOPES.index(pick.scope) if pick.scope else 0,
                strength=pick.strength,
                score_units=round(score * SCORE_UNITS),
            )
        )
        if len(choices) < wanted:
            state, signature = after(state, pick, request), None
    return tuple(choices), None


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
