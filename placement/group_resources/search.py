"""The search for the best nodes of one request: every node, or best bound first.

``Ranking`` places a request on nodes as they are built (through the
``Allocator``) and keeps why the others could not take it, naming the key.
``bounded_ranking`` builds nodes in order of their score bound and stops when
no node left can enter the answer; its answer is the one a full search gives.
The nodes come from the searches' copy of the providers (``replica_nodes``).

With a time budget (``SearchBudget``) that runs out, ``bounded_ranking`` stops after
the node it is on, the best bounds looked at first, and answers the best placements
found so far, each of them whole.
"""

from collections import Counter
from dataclasses import dataclass

from placement.group_resources.allocator import Allocator, Placement
from placement.group_resources.replica_nodes import ReplicaNodes
from placement.group_resources.request_tree import (
    GroupRequest,
    RequestGroup,
    Unplaced,
    fit_to_levels,
    too_many_to_share,
)
from placement.group_resources.scoring import Scorer, bound_key
from placement.group_resources.snapshot import Location, Node
from placement.nodes.group_options import DEFAULT_OPTIONS, GroupOptions
from placement.nodes.search_budget import SearchBudget


@dataclass(frozen=True)
class BlockingKey:
    """A requested key that kept the request off ``nodes`` nodes, and why (on the first)."""

    key: str
    reason: str
    nodes: int


@dataclass(frozen=True)
class CandidateAnswer:
    placements: list[Placement]  # best first
    feasible_nodes: int | None  # None when a limit stopped the search early
    blocking: list[BlockingKey]  # when nothing fits: the keys that blocked, most first


FIRST_BATCH = 32  # nodes built at once by the bounded search; doubles each time


def bounded_ranking(
    source: ReplicaNodes,
    ranking: "Ranking",
    limit: int | None,
    budget: SearchBudget | None = None,
) -> CandidateAnswer:
    """The ``limit`` best nodes (None: every node's placement), building nodes in
    batches in order of their bound.

    A node's bound is the best score it could reach (``Scorer.bound``): its
    current use plus the request placed on the smallest (pack) or largest
    (spread) inventories of each class anywhere. A node whose bound is below
    the ``limit``-th best score found (or equal, and after it by name) cannot
    enter the answer, nor can any node after it, so the search stops there.

    Past the deadline of a ``budget`` it stops before the next node (the first is
    always placed) and tells ``budget`` how many it looked at.
    """
    bounded = [
        (ranking.scorer.bound(s.utilisation, s.inventory_count, ranking.request, s.capacities), s)
        for s in source.summaries()
    ]
    bounded.sort(key=lambda pair: (-bound_key(pair[0]), pair[1].name))
    timed = budget is not None and budget.timed
    position, batch = 0, FIRST_BATCH
    while position < len(bounded):
        bound, summary = bounded[position]
        if limit is not None and not ranking.could_enter(bound, summary.name, limit):
            return ranking.answer(limit, complete=False)
        chunk = bounded[position : position + batch]
        root_ids = [s.root_id for _bound, s in chunk]
        if timed:
            assert budget is not None
            looked = _consider_in_time(source, ranking, root_ids, position, budget)
            if looked < position + len(chunk):
                bound, summary = bounded[looked]
                if limit is None or ranking.could_enter(bound, summary.name, limit):
                    budget.stop(looked, len(bounded))  # else the answer was complete
                return ranking.answer(limit, complete=False)
        else:
            ranking.consider_all(source, root_ids)
        position, batch = position + batch, batch * 2
    return ranking.answer(limit, complete=True)


def _consider_in_time(
    source: ReplicaNodes,
    ranking: "Ranking",
    root_ids: list[int],
    looked: int,
    budget: SearchBudget,
) -> int:
    """Place the request on the nodes of ``root_ids`` in their order (best bound first),
    ``looked`` at before them, until the deadline passes: how many are looked at then."""
    if looked and budget.passed():
        return looked
    for node in source.nodes_of_roots(root_ids):
        if looked and budget.passed():
            return looked
        if node is not None:  # None: its tree is not as a node's map writes it
            ranking.consider(node)
        looked += 1
    return looked


class Ranking:
    """The nodes placed so far for one request, and why the others were not."""

    def __init__(
        self, request: GroupRequest, scorer: Scorer, options: GroupOptions = DEFAULT_OPTIONS
    ) -> None:
        self.request = request
        self.scorer = scorer  # ranking nodes as options.node_ranking says (scoring.scorer_for)
        self.options = options
        # A flat request's groups land anywhere on the node, unless its levels are filled in.
        self.anywhere = request.flat and not options.fills_flat_requests
        self.allocator = Allocator(scorer, len(request.keys()), shared=options.shares_groups)
        self.placements: list[Placement] = []
        self._fitted: dict[tuple, RequestGroup | Unplaced] = {}
        self._blocked: Counter[str] = Counter()
        self._reasons: dict[str, tuple[str, str]] = {}  # key -> (node, reason)

    def consider_all(self, source: ReplicaNodes, root_ids: list[int] | None = None) -> None:
        """Place the request on the nodes of these roots (None: every node of ``source``)."""
        # The nodes' groups share one numbering (``replica_nodes.NodesKept``): the
        # allocator remembers fits by these numbers.
        for node in source.nodes(root_ids):
            self.consider(node)

    def fitted_to(self, node: Node) -> RequestGroup | Unplaced:
        """The request fitted to the node's levels, or why it cannot be (its levels, or
        too many groups to share out); once per shape of levels."""
        shape = node.levels.shape()
        if shape not in self._fitted:
            fitted = fit_to_levels(self.request, node.levels, self.anywhere)
            if self.options.shares_groups and not isinstance(fitted, Unplaced):
                fitted = too_many_to_share(fitted) or fitted
            self._fitted[shape] = fitted
        return self._fitted[shape]

    def consider(self, node: Node) -> None:
        fitted = self.fitted_to(node)
        if isinstance(fitted, Unplaced):
            self._block(node, fitted)
            return
        placement = self.allocator.place(node, fitted, self.anywhere)
        if placement is None:
            self._block(node, _explain(self.allocator, node, fitted, self.anywhere))
            return
        self.placements.append(placement)

    def _block(self, node: Node, unplaced: Unplaced) -> None:
        """Count the node against the key; the reason shown is the first node's by name."""
        self._blocked[unplaced.key] += 1
        known = self._reasons.get(unplaced.key)
        if known is None or node.name < known[0]:
            self._reasons[unplaced.key] = (node.name, unplaced.reason)

    def could_enter(self, bound: float, name: str, limit: int) -> bool:
        """Whether a node with this bound and name could still be among the ``limit`` best."""
        if len(self.placements) < limit:
            return True
        last = sorted(self.placements, key=_rank_key)[limit - 1]
        return (-bound_key(bound), name) < _rank_key(last)

    def answer(self, limit: int | None, complete: bool) -> CandidateAnswer:
        ranked = sorted(self.placements, key=_rank_key)
        blocking = [
            BlockingKey(key=key, reason=": ".join(self._reasons[key]), nodes=count)
            for key, count in sorted(self._blocked.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        return CandidateAnswer(
            placements=ranked if limit is None else ranked[:limit],
            feasible_nodes=len(ranked) if complete else None,
            blocking=blocking if not ranked else [],
        )


def _rank_key(placement: Placement) -> tuple:
    return (-placement.score_key, placement.node.name)


def _explain(allocator: Allocator, node: Node, top: RequestGroup, flat: bool) -> Unplaced:
    """The first requested key that keeps ``top`` off ``node``."""
    return _explain_group(allocator, node, top, node.root, flat)


def _explain_group(allocator, node, group: RequestGroup, location: Location, flat: bool):
    for demand in group.demands:
        room = location.rooms.get(demand.resource_class)
        where = "the node" if not location.path else "/".join(location.path)
        if room is None:
            return Unplaced(demand.key, f"{where} has no {demand.resource_class}")
        if not room.fits(demand.amount):
            return Unplaced(
                demand.key,
                f"{where} has {room.free:g} {demand.resource_class} free, "
                f"{demand.amount} requested",
            )
    for child in group.children:
        assert child.level is not None
        slots = (node.by_level if flat else location.children).get(child.level, [])
        fitting = [slot for slot in slots if allocator.fits_alone(child, slot)]
        if not fitting:
            if len(slots) == 1:
                return _explain_group(allocator, node, child, slots[0], False)
            label = "/".join(child.path)
            return Unplaced(
                child.first_key(), f"no {child.written_level!r} group has room for {label}"
            )
    label = ", ".join("/".join(child.path) for child in group.children)
    groups = "groups" if allocator.shared else "distinct groups"
    return Unplaced(
        group.children[0].first_key() if group.children else group.first_key(),
        f"not enough {groups} with room for all of {label} together",
    )
