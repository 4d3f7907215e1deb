"""Why a device request finds what it finds: each check's count, in the order the search
applies it (POST /group_resources/device_candidates/explain).

``explain`` retraces ``search.rank`` over the device nodes of one search, with the
chooser's own predicates:

* per device type asked, how many nodes have enough devices passing each check in turn
  (``device_checks.type_checks``: of the type, healthy, selected by the hint, can give
  what is asked of each, on a PCIe switch that allows it): ``count`` devices, or with
  ApplyForAll one selected at least and then every selected one;
* per node: its own resources (``Chooser.node_resources_short``, when the request asks
  for some), every type's devices, then whether the chooser finds a choice of every type
  together (``Chooser.finds``: joint allocation in one scope, decided as ``choose``
  decides it, without choosing the best): the last count is the number of nodes the
  candidates search answers;
* the first check that leaves nothing, and the nearest misses: nodes where one check
  alone fails, one type short of devices at one check ("gpu: 1 device short") or the
  node's own resources alone ("VCPU: 2 short").

Nodes of one kind (``DeviceNodes.kinds``) are explained once, as the search chooses on
them once, and counted by their number.
"""

from dataclasses import dataclass, field

from placement.devices.chooser import Chooser
from placement.devices.device_checks import Able, DeviceCheck, type_checks
from placement.devices.request import DeviceRequest, TypeRequest
from placement.devices.snapshot import DeviceNode, DeviceNodes
from placement.explaining import (
    MAX_MISSES,
    Step,
    Tally,
    empties_at,
    shortfall_order,
    steps_body,
)

NODE_RESOURCES = "the node's own resources (cpu, memory, ...) free"
EVERY_TYPE = "every device type has the devices asked"
JOINT_CHOICE = (
    "a choice of every type together (device-joint-allocate: the other types "
    "beside the primary type's devices, in one scope)"
)
CHOICE = "a choice of every type"


@dataclass(frozen=True)
class TypeSteps:
    type: str
    devices: int | None  # how many asked; None: every selected one (ApplyForAll)
    steps: list[Step]


@dataclass(frozen=True)
class Miss:
    node: DeviceNode
    check: str
    short: dict[str, int]  # device type -> devices missing, or class -> amount missing


@dataclass
class Explanation:
    types: list[TypeSteps] = field(default_factory=list)
    nodes: list[Step] = field(default_factory=list)
    misses: list[Miss] = field(default_factory=list)
    out_of_sync: list[str] = field(default_factory=list)

    @property
    def empties_at(self) -> str | None:
        return empties_at(((t.type, t.steps) for t in self.types), self.nodes)


def explain(nodes: DeviceNodes, request: DeviceRequest) -> Explanation:
    """The explanation of ``request`` on ``nodes`` (those of one search)."""
    chooser = Chooser(request)
    wanted = _in_search_order(request)
    checks = [type_checks(each) for each in wanted]
    tallies = [Tally(["nodes", *(check.name for check in own)]) for own in checks]
    node_steps = [
        "device nodes",
        *([NODE_RESOURCES] if request.node_resources else []),
        EVERY_TYPE,
        JOINT_CHOICE if request.joint is not None else CHOICE,
    ]
    node_tally = Tally(node_steps)
    misses: list[Miss] = []
    for alike in nodes.kinds.values():
        node, weight = alike[0], len(alike)
        reached = [_type_passed(node, each, own) for each, own in zip(wanted, checks, strict=True)]
        for tally, (passed, _short, _able) in zip(tallies, reached, strict=True):
            tally.add(1 + passed, weight)
        resources_short = chooser.node_resources_short(node)
        failing = [
            (each, own, passed, short)
            for each, own, (passed, short, _able) in zip(wanted, checks, reached, strict=True)
            if passed < len(own)
        ]
        able = {each.type: found for each, (_p, _s, found) in zip(wanted, reached, strict=True)}
        node_tally.add(
            _node_steps_passed(node, chooser, bool(resources_short), bool(failing), able), weight
        )
        miss = _miss(resources_short, failing)
        if miss is not None:
            misses += [Miss(each, *miss) for each in alike[:MAX_MISSES]]
    misses.sort(key=lambda miss: shortfall_order(miss.short, miss.node.name))
    return Explanation(
        types=[
            TypeSteps(each.type, each.count, tally.steps())
            for each, tally in zip(wanted, tallies, strict=True)
        ],
        nodes=node_tally.steps(),
        misses=misses[:MAX_MISSES],
        out_of_sync=nodes.out_of_sync,
    )


def _in_search_order(request: DeviceRequest) -> list[TypeRequest]:
    """The types asked, in the chooser's order: the joint ones (the primary first), then
    those asked alone."""
    joint = request.joint.types if request.joint is not None else ()
    alone = [name for name in request.types if name not in joint]
    return [request.types[name] for name in (*joint, *alone)]


def _type_passed(
    node: DeviceNode, wanted: TypeRequest, checks: list[DeviceCheck]
) -> tuple[int, int, tuple[list[int], list[int]]]:
    """How many of ``checks`` the node passes in turn (enough of its devices pass them),
    by how many devices it falls short at the first it fails (0: none), and the devices
    selected and those of them that pass every check (``device_checks.able_devices``)."""
    devices = list(range(len(node.devices)))
    chosen_from: list[int] = []
    needed = wanted.count or 1
    passed, short = len(checks), 0
    for index, check in enumerate(checks):
        devices = [i for i in devices if check.test(node, i)]
        if len(devices) < needed and short == 0:
            passed, short = index, needed - len(devices)
        if check.selects and not checks[index + 1].selects:
            chosen_from = devices
            if wanted.count is None:
                needed = len(devices)  # ApplyForAll: every device selected, from here on
    return passed, short, (chosen_from, devices)


def _node_steps_passed(
    node: DeviceNode, chooser: Chooser, resources_short: bool, type_failing: bool, able: Able
) -> int:
    """How many of the node steps the node passes in turn."""
    passed = 1  # a device node
    if chooser.request.node_resources:
        if resources_short:
            return passed
        passed += 1
    if type_failing:
        return passed
    if not chooser.finds(node, able):
        return passed + 1
    return passed + 2


def _miss(resources_short: dict[str, int], failing: list) -> tuple[str, dict[str, int]] | None:
    """What a node fails, when it fails one check alone (the check, and what it lacks)."""
    if resources_short and not failing:
        return NODE_RESOURCES, resources_short
    if not resources_short and len(failing) == 1:
        wanted, checks, passed, short = failing[0]
        return f"{wanted.type}: {checks[passed].name}", {wanted.type: short}
    return None


def body(explanation: Explanation) -> dict:
    """The JSON of an explanation (POST /group_resources/device_candidates/explain)."""
    return {
        "types": [
            {
                "type": steps.type,
                "devices": "all" if steps.devices is None else steps.devices,
                "filters": steps_body(steps.steps),
            }
            for steps in explanation.types
        ],
        "nodes": steps_body(explanation.nodes),
        "empties_at": explanation.empties_at,
        "nearest_misses": [
            {
                "node": miss.node.name,
                "uuid": miss.node.uuid,
                "fails": miss.check,
                "short": miss.short,
            }
            for miss in explanation.misses
        ],
        "nodes_out_of_sync": explanation.out_of_sync,
    }
