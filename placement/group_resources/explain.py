"""Why a translator request finds what it finds: each check's count, in the order the search
applies it (POST /group_resources/candidates/explain).

``explain`` retraces what ``search.Ranking`` does with every node of one search, with the
search's own predicates:

* per requested key (one resource of one request group), how many nodes pass each check
  in turn: for a group's key, a group of its level on the node; that group has the key's
  class (the allocator's ``Location.rooms``); its min_unit, max_unit and step_size allow
  the amount; the amount is free (``snapshot.ROOM_CHECKS``, what ``Room.fits`` checks);
* per node, the steps of ``Ranking.consider``: the request's levels are the node's
  (``Ranking.fitted_to``); every key has a group with room; every request group has one
  group with room for all its keys; and a placement of the whole request together
  (``Allocator.fits``: whether ``Allocator.place`` places it, decided as it decides): the
  last count is the number of nodes the candidates search answers (its
  ``feasible_nodes``);
* the first check that leaves nothing, and the nearest misses: nodes whose levels fit,
  where one key alone finds no group, through one check alone on one group ("gpu/0/cards:
  CUSTOM_GPU_CARDS 1 short on gpu/dev3").

Nodes alike (equal signatures of their root: the same levels, rooms and groups) are
explained once, as the allocator places them once, and counted by their number.
"""

from dataclasses import dataclass, field

from placement.explaining import (
    MAX_MISSES,
    Step,
    Tally,
    empties_at,
    shortfall_order,
    steps_body,
)
from placement.group_resources.replica_nodes import ReplicaNodes
from placement.group_resources.request_tree import Demand, RequestGroup, Unplaced
from placement.group_resources.search import Ranking
from placement.group_resources.snapshot import ROOM_CHECKS, Location, Node

NODE_STEPS = [
    "nodes",
    "the node has the request's levels (those it skips filled in)",
    "every requested key has a group with room",
    "every request group has one group with room for all its keys",
    "a placement of every group together (distinct groups, subgroups in their group)",
]
# A group's room passed every check: its class, then ``ROOM_CHECKS``.
ROOM_PASSED = 1 + len(ROOM_CHECKS)


@dataclass(frozen=True)
class KeySteps:
    key: str
    resource_class: str
    amount: int
    steps: list[Step]


@dataclass(frozen=True)
class Miss:
    node: Node
    key: str
    group: str  # the node group's key (its path), "" for the node itself
    check: str
    short: dict[str, int] | None  # the amount missing, when the check is the free amount


@dataclass
class Explanation:
    keys: list[KeySteps] = field(default_factory=list)
    nodes: list[Step] = field(default_factory=list)
    misses: list[Miss] = field(default_factory=list)

    @property
    def empties_at(self) -> str | None:
        return empties_at(((k.key, k.steps) for k in self.keys), self.nodes)


class _Key:
    """One requested key: its checks on a node, remembered per group signature."""

    def __init__(self, group: RequestGroup, demand: Demand) -> None:
        self.group = group
        self.demand = demand
        cls, amount = demand.resource_class, demand.amount
        level = [f"a {group.written_level!r} group"] if group.level is not None else []
        self.names = [
            *level,
            f"has {cls}",
            *(f"{cls}: {check.name.format(amount=amount)}" for check in ROOM_CHECKS),
        ]
        self._passed: dict[int, int] = {}  # group signature -> checks of its room passed

    def locations(self, node: Node) -> list[Location]:
        """Where the key's group may land: any group of its level, or the node itself."""
        if self.group.level is None:
            return [node.root]
        return node.by_level.get(self.group.level, [])

    def room_passed(self, location: Location) -> int:
        """How many of the checks of the room (its class, then ``ROOM_CHECKS``) the group
        passes in turn."""
        passed = self._passed.get(location.signature)
        if passed is None:
            passed = 0
            room = location.rooms.get(self.demand.resource_class)
            if room is not None:
                passed = 1
                for check in ROOM_CHECKS:
                    if not check.test(room, self.demand.amount):
                        break
                    passed += 1
            self._passed[location.signature] = passed
        return passed

    def passed(self, node: Node) -> int:
        """How many of ``names`` the node passes in turn (all: some group has room)."""
        locations = self.locations(node)
        if not locations:
            return 0
        best = 0
        for location in locations:
            passed = self.room_passed(location)
            if passed > best:
                best = passed
                if best == ROOM_PASSED:  # none passes more
                    break
        return (0 if self.group.level is None else 1) + best

    def nearest_miss(self, node: Node) -> tuple[str, str, dict[str, int] | None] | None:
        """Of the node's groups that have the key's class and fail one of ``ROOM_CHECKS``
        alone, the one missing the least: (its key, the check, the amount missing)."""
        demand = self.demand
        found = []
        for location in self.locations(node):
            room = location.rooms.get(demand.resource_class)
            if room is None:
                continue
            failed = [check for check in ROOM_CHECKS if not check.test(room, demand.amount)]
            if len(failed) == 1:
                missing = failed[0].short(room, demand.amount)
                short = None if missing is None else {demand.resource_class: missing}
                name = f"{demand.resource_class}: {failed[0].name.format(amount=demand.amount)}"
                found.append(("/".join(location.path), name, short))
        return min(found, key=lambda miss: shortfall_order(miss[2], miss[0]), default=None)


def explain(source: ReplicaNodes, ranking: Ranking, key_order: list[str]) -> Explanation:
    """The explanation of ``ranking``'s request (``ranking`` as the candidates search makes
    it) on the nodes of ``source``; keys in ``key_order`` (as the client wrote them)."""
    keys = [_Key(group, demand) for group in ranking.request.top.walk() for demand in group.demands]
    position = {key: index for index, key in enumerate(key_order)}
    keys.sort(key=lambda key: position.get(key.demand.key, len(position)))
    groups = [
        own
        for group in ranking.request.top.walk()
        if (own := [key for key in keys if key.group is group])
    ]
    tallies = [Tally(["nodes", *key.names]) for key in keys]
    node_tally = Tally(NODE_STEPS)
    misses: list[Miss] = []
    for alike in _alike(source.nodes()):
        node, weight = alike[0], len(alike)
        passed = [key.passed(node) for key in keys]
        for tally, count in zip(tallies, passed, strict=True):
            tally.add(1 + count, weight)
        fitted = ranking.fitted_to(node)
        node_tally.add(_node_steps_passed(node, ranking, fitted, keys, passed, groups), weight)
        failing = [key for key, count in zip(keys, passed, strict=True) if count < len(key.names)]
        if len(failing) == 1 and not isinstance(fitted, Unplaced):
            miss = failing[0].nearest_miss(node)
            if miss is not None:
                misses += [Miss(each, failing[0].demand.key, *miss) for each in alike[:MAX_MISSES]]
    misses.sort(key=lambda miss: shortfall_order(miss.short, miss.node.name))
    return Explanation(
        keys=[
            KeySteps(key.demand.key, key.demand.resource_class, key.demand.amount, tally.steps())
            for key, tally in zip(keys, tallies, strict=True)
        ],
        nodes=node_tally.steps(),
        misses=misses[:MAX_MISSES],
    )


def _node_steps_passed(
    node: Node,
    ranking: Ranking,
    fitted: RequestGroup | Unplaced,
    keys: list[_Key],
    passed: list[int],
    groups: list[list[_Key]],
) -> int:
    """How many of ``NODE_STEPS`` the node passes in turn (``groups``: the keys of each
    request group)."""
    if isinstance(fitted, Unplaced):
        return 1
    if any(count < len(key.names) for key, count in zip(keys, passed, strict=True)):
        return 2
    for own in groups:
        if not any(
            all(key.room_passed(location) == ROOM_PASSED for key in own)
            for location in own[0].locations(node)
        ):
            return 3
    if not ranking.allocator.fits(node, fitted, ranking.anywhere):
        return 4
    return 5


def _alike(nodes: list[Node]) -> list[list[Node]]:
    """The nodes in groups of one root signature (nodes alike), by name."""
    groups: dict[int, list[Node]] = {}
    for node in nodes:
        groups.setdefault(node.root.signature, []).append(node)
    return list(groups.values())


def body(explanation: Explanation) -> dict:
    """The JSON of an explanation (POST /group_resources/candidates/explain)."""
    return {
        "keys": [
            {
                "key": key.key,
                "resource_class": key.resource_class,
                "amount": key.amount,
                "filters": steps_body(key.steps),
            }
            for key in explanation.keys
        ],
        "nodes": steps_body(explanation.nodes),
        "empties_at": explanation.empties_at,
        "nearest_misses": [
            {
                "node": miss.node.name,
                "node_uuid": miss.node.root.uuid,
                "key": miss.key,
                "group": miss.group,
                "fails": miss.check,
                "short": miss.short,
            }
            for miss in explanation.misses
        ],
    }
