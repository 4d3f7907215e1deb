"""The group allocator: the best placement of a request on each node, exactly.

A request group fits a group of the node when the
base resources fit there and its subgroups can be given *distinct* subgroups
of the same level, each fitting recursively. Because distinct subgroups of a
node never share resources, the best placement of a group only depends on
the best placements of its subgroups, so

    best(request group R, node group X) =
        gain of R's base resources on X
        + the best one-to-one assignment of R's subgroups to X's subgroups,
          each pair weighted by best(child, subgroup)

is exact (no candidate is skipped that could score higher). The assignment
is a dynamic programme over X's subgroups in order whose state is how many
of each kind of requested subgroup are still to place (identical requested
subgroups are one kind, so 8 identical GPUs are 9 states, not 2^8).

``best`` is remembered by (shape of R, signature of X): on nodes with the
same free groups it is computed once. A flat request places its groups on
any group of their level anywhere on the node (``Node.by_level``).

With shared groups (``GroupOptions.sibling_groups``) several request groups
may land on one node group, when each fits there alone and it holds all their
base resources together (one allocation per provider and class: the summed
amount must fit too). The
unit is then a *pool*, the request groups placed together on one node group:

    best(pool P, node group X) =
        gain of the summed base resources of P on X
        + the best assignment of the subgroups of all of P to X's subgroups,
          several to one when it holds them, each slot weighted by
          best(the subgroups it takes, slot)

remembered by (the shapes in P, signature of X). It is exact too: distinct
node groups share nothing, and everything that lands under X is in P.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from placement.group_resources.assignment import assign_distinct, assign_shared
from placement.group_resources.exact import ExactSums, Gain
from placement.group_resources.request_tree import RequestGroup
from placement.group_resources.scoring import Scorer
from placement.group_resources.snapshot import Location, Node

NO_FIT = None


@dataclass(frozen=True)
class Kind:
    """Identical requested subgroups of one level: any of them can take any slot."""

    level: str
    members: tuple["Want", ...]


@dataclass(eq=False)
class Want:
    """A request group prepared for the search."""

    group: RequestGroup
    shape: tuple  # ``RequestGroup.shape``: what orders kinds, the same on every worker
    shape_id: int  # the shape's number in this search (numbered as met): for the memo
    kinds: list[Kind] = field(default_factory=list)
    terms: int = 0  # requested amounts in the group and below it: the terms of its gain


@dataclass(frozen=True)
class Fit:
    gain: Gain
    # for each kind (by position), the positions of the chosen subgroups
    chosen: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class PoolFit:
    gain: Gain
    # for each level of the pool's subgroups (``_pooled_children``), the moves of
    # assignment.assign_shared: (slot position, how many of each kind)
    moves: tuple[tuple[tuple[int, tuple[int, ...]], ...], ...]


@dataclass
class Placement:
    """The best placement of a request on one node."""

    node: Node
    score: float
    score_key: int  # the score as nodes are compared: exactly, at nine decimals
    mappings: dict[str, str]  # requested key -> the node's key
    allocations: dict[str, dict[str, int]]  # provider uuid -> class -> amount


class Allocator:
    """Finds the best placement per node for one request; reuse it across nodes."""

    def __init__(self, scorer: Scorer, terms: int, shared: bool = False) -> None:
        """``terms``: how many amounts the request asks for (``ExactSums``); ``shared``:
        request groups may share node groups."""
        self.scorer = scorer
        self.sums = ExactSums(terms)
        self.shared = shared
        self._shapes: dict[tuple, int] = {}
        self._wants: dict[int, Want] = {}  # id(RequestGroup) -> Want
        self._memo: dict[tuple, Fit | None] = {}
        self._pools: dict[tuple, PoolFit | None] = {}
        # members of a pool -> (their shapes sorted, their subgroups by level and kind)
        self._pooled: dict[tuple[Want, ...], tuple[tuple[int, ...], list]] = {}

    def place(self, node: Node, top: RequestGroup, flat: bool) -> Placement | None:
        want = self._want(top)
        flat_node = node if flat else None
        fit = self._fit(want, node, flat_node)
        if fit is NO_FIT:
            return None
        mappings: dict[str, str] = {}
        allocations: dict[str, dict[str, int]] = {}
        if isinstance(fit, PoolFit):
            self._materialize_pool((want,), node.root, fit, flat_node, mappings, allocations)
        else:
            self._materialize(want, node.root, fit, flat_node, mappings, allocations)
        score, score_key = self.scorer.node_score(node, fit.gain, want.terms)
        return Placement(node, score, score_key, mappings, allocations)

    def fits(self, node: Node, top: RequestGroup, flat: bool) -> bool:
        """Whether ``place`` places ``top`` on the node, without building the placement."""
        return self._fit(self._want(top), node, node if flat else None) is not NO_FIT

    def _fit(self, want: Want, node: Node, flat_node: Node | None) -> Fit | PoolFit | None:
        """The best fit of the request ``want`` on the node (NO_FIT: none)."""
        if self.shared:
            return self._best_pool((want,), node.root, flat_node)
        return self._best(want, node.root, flat_node)

    def fits_alone(self, group: RequestGroup, location: Location) -> bool:
        """Whether ``group`` (and its subgroups) fit on ``location`` ignoring its siblings."""
        if self.shared:
            return self._best_pool((self._want(group),), location, None) is not NO_FIT
        return self._best(self._want(group), location, None) is not NO_FIT

    def _want(self, group: RequestGroup) -> Want:
        known = self._wants.get(id(group))
        if known is not None:
            return known
        shape = group.shape()
        want = Want(
            group=group, shape=shape, shape_id=self._shapes.setdefault(shape, len(self._shapes))
        )
        by_kind: dict[tuple, list[Want]] = {}
        for child in group.children:
            child_want = self._want(child)
            by_kind.setdefault((child.level, child_want.shape), []).append(child_want)
        # Kinds in the order of their shapes, not of their numbers: the numbers depend on
        # the nodes this search met first, and the order breaks ties (``assignment``).
        want.kinds = [
            Kind(level=level, members=tuple(members))
            for (level, _shape), members in sorted(by_kind.items(), key=lambda kv: kv[0][1])
        ]
        want.terms = len(group.demands) + sum(
            member.terms for kind in want.kinds for member in kind.members
        )
        self._wants[id(group)] = want
        return want

    def _best(self, want: Want, location: Location, flat_node: Node | None) -> Fit | None:
        key = (want.shape_id, location.signature, flat_node is not None)
        if key in self._memo:
            return self._memo[key]
        fit = self._compute(want, location, flat_node)
        self._memo[key] = fit
        return fit

    def _compute(self, want: Want, location: Location, flat_node: Node | None) -> Fit | None:
        gains: list[Gain] = []
        for demand in want.group.demands:
            room = location.rooms.get(demand.resource_class)
            if room is None or not room.fits(demand.amount):
                return NO_FIT
            gains.append(self.scorer.gain(self.sums, demand.amount, room))
        chosen: list[tuple[int, ...]] = [()] * len(want.kinds)
        levels = {kind.level for kind in want.kinds}
        for level in sorted(levels):
            kinds = [i for i, kind in enumerate(want.kinds) if kind.level == level]
            slots = (flat_node.by_level if flat_node else location.children).get(level, [])
            representatives = [want.kinds[i].members[0] for i in kinds]
            assigned = assign_distinct(
                [len(want.kinds[i].members) for i in kinds],
                len(slots),
                self._pair_gains(representatives, slots),
                self.sums,
            )
            if assigned is None:
                return NO_FIT
            level_gain, positions = assigned
            gains.append(level_gain)
            for k, i in enumerate(kinds):
                chosen[i] = positions[k]
        return Fit(gain=self.sums.total(gains), chosen=tuple(chosen))

    def _pair_gains(
        self, wants: list[Want], slots: list[Location]
    ) -> Callable[[int, int], Gain | None]:
        """gain(k, s): the best gain of ``wants[k]`` on ``slots[s]`` (None: no fit)."""

        def gain(k: int, s: int) -> Gain | None:
            fit = self._best(wants[k], slots[s], None)
            return None if fit is NO_FIT else fit.gain

        return gain

    def _materialize(self, want, location, fit, flat_node, mappings, allocations) -> None:
        for demand in want.group.demands:  # as _place_demands, without a call: it is hot
            taken = allocations.setdefault(location.uuid, {})
            taken[demand.resource_class] = taken.get(demand.resource_class, 0) + demand.amount
            mappings[demand.key] = location.key(demand.base_name)
        for kind, positions in zip(want.kinds, fit.chosen, strict=True):
            slots = (flat_node.by_level if flat_node else location.children)[kind.level]
            for member, position in zip(kind.members, positions, strict=True):
                slot = slots[position]
                member_fit = self._best(member, slot, None)
                assert member_fit is not NO_FIT
                self._materialize(member, slot, member_fit, None, mappings, allocations)

    # Shared groups: pools of request groups on one node group -----------------------

    def _best_pool(
        self, members: tuple[Want, ...], location: Location, flat_node: Node | None
    ) -> PoolFit | None:
        key = (self._pool(members)[0], location.signature, flat_node is not None)
        if key not in self._pools:
            self._pools[key] = self._compute_pool(members, location, flat_node)
        return self._pools[key]

    def _pool(self, members: tuple[Want, ...]) -> tuple[tuple[int, ...], list]:
        """The members' shapes, sorted (what pools are remembered by), and their subgroups
        (``_pooled_children``); computed once per pool of this request."""
        known = self._pooled.get(members)
        if known is None:
            known = self._pooled[members] = (
                tuple(sorted(m.shape_id for m in members)),
                _pooled_children(members),
            )
        return known

    def _compute_pool(
        self, members: tuple[Want, ...], location: Location, flat_node: Node | None
    ) -> PoolFit | None:
        amounts: dict[str, int] = {}
        for member in members:
            for demand in member.group.demands:
                room = location.rooms.get(demand.resource_class)
                if room is None or not room.fits(demand.amount):
                    return NO_FIT  # each fits alone, as without sharing (and as placement's)
                amounts[demand.resource_class] = (
                    amounts.get(demand.resource_class, 0) + demand.amount
                )
        gains: list[Gain] = []
        for resource_class, amount in amounts.items():
            room = location.rooms.get(resource_class)
            if room is None or not room.fits(amount):
                return NO_FIT
            gains.append(self.scorer.gain(self.sums, amount, room))
        moves = []
        for level, kinds in self._pool(members)[1]:
            slots = (flat_node.by_level if flat_node else location.children).get(level, [])
            assigned = assign_shared(
                [len(kind) for kind in kinds],
                len(slots),
                self._pool_gains(kinds, slots),
                self.sums,
            )
            if assigned is None:
                return NO_FIT
            gains.append(assigned.gain)
            moves.append(assigned.moves)
        return PoolFit(gain=self.sums.total(gains), moves=tuple(moves))

    def _pool_gains(
        self, kinds: list[list[Want]], slots: list[Location]
    ) -> Callable[[tuple[int, ...], int], Gain | None]:
        """gain(v, s): the best gain of ``v[k]`` of each kind together on ``slots[s]``."""

        pools: dict[tuple[int, ...], tuple[Want, ...]] = {}

        def gain(taking: tuple[int, ...], s: int) -> Gain | None:
            members = pools.get(taking)
            if members is None:
                members = pools[taking] = tuple(
                    m for kind, n in zip(kinds, taking, strict=True) for m in kind[:n]
                )
            fit = self._best_pool(members, slots[s], None)
            return None if fit is NO_FIT else fit.gain

        return gain

    def _materialize_pool(self, members, location, fit, flat_node, mappings, allocations):
        for member in members:
            _place_demands(member, location, mappings, allocations)
        for (level, kinds), moves in zip(self._pool(members)[1], fit.moves, strict=True):
            slots = (flat_node.by_level if flat_node else location.children)[level]
            waiting = [list(kind) for kind in kinds]
            for position, taking in moves:
                chosen = []
                for queue, n in zip(waiting, taking, strict=True):
                    chosen += queue[:n]
                    del queue[:n]
                slot = slots[position]
                pool_fit = self._best_pool(tuple(chosen), slot, None)
                assert pool_fit is not NO_FIT
                self._materialize_pool(tuple(chosen), slot, pool_fit, None, mappings, allocations)


def _place_demands(want: Want, location: Location, mappings, allocations) -> None:
    """The base resources of ``want`` on ``location``: in the mappings and allocations."""
    for demand in want.group.demands:
        taken = allocations.setdefault(location.uuid, {})
        taken[demand.resource_class] = taken.get(demand.resource_class, 0) + demand.amount
        mappings[demand.key] = location.key(demand.base_name)


def _pooled_children(members: tuple[Want, ...]) -> list[tuple[str, list[list[Want]]]]:
    """The subgroups of all ``members``, by level (in name order), each level's by kind
    (identical subgroups, in shape order): the same for pools of the same shapes (and the
    order in which ``PoolFit.moves`` lists them)."""
    by_level: dict[str, dict[tuple, list[Want]]] = {}
    for member in members:
        for kind in member.kinds:
            for child in kind.members:
                by_level.setdefault(kind.level, {}).setdefault(child.shape, []).append(child)
    return [
        (level, [kinds[shape] for shape in sorted(kinds)])
        for level, kinds in sorted(by_level.items())
    ]
