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
"""

from collections.abc import Callable
from dataclasses import dataclass, field

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
    shape_id: int
    kinds: list[Kind] = field(default_factory=list)


@dataclass(frozen=True)
class Fit:
    gain: float
    # for each kind (by position), the positions of the chosen subgroups
    chosen: tuple[tuple[int, ...], ...]


@dataclass
class Placement:
    """The best placement of a request on one node."""

    node: Node
    score: float
    mappings: dict[str, str]  # requested key -> the node's key
    allocations: dict[str, dict[str, int]]  # provider uuid -> class -> amount


class Allocator:
    """Finds the best placement per node for one request; reuse it across nodes."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self._shapes: dict[tuple, int] = {}
        self._wants: dict[int, Want] = {}  # id(RequestGroup) -> Want
        self._memo: dict[tuple, Fit | None] = {}

    def place(self, node: Node, top: RequestGroup, flat: bool) -> Placement | None:
        want = self._want(top)
        fit = self._best(want, node.root, node if flat else None)
        if fit is NO_FIT:
            return None
        mappings: dict[str, str] = {}
        allocations: dict[str, dict[str, int]] = {}
        self._materialize(want, node.root, fit, node if flat else None, mappings, allocations)
        return Placement(
            node=node,
            score=self.scorer.node_score(node, fit.gain),
            mappings=mappings,
            allocations=allocations,
        )

    def fits_alone(self, group: RequestGroup, location: Location) -> bool:
        """Whether ``group`` (and its subgroups) fit on ``location`` ignoring its siblings."""
        return self._best(self._want(group), location, None) is not NO_FIT

    def _want(self, group: RequestGroup) -> Want:
        known = self._wants.get(id(group))
        if known is not None:
            return known
        shape = group.shape()
        want = Want(group=group, shape_id=self._shapes.setdefault(shape, len(self._shapes)))
        by_kind: dict[tuple, list[Want]] = {}
        for child in group.children:
            child_want = self._want(child)
            by_kind.setdefault((child.level, child_want.shape_id), []).append(child_want)
        want.kinds = [
            Kind(level=level, members=tuple(members))
            for (level, _shape), members in sorted(by_kind.items(), key=lambda kv: kv[0][1])
        ]
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
        gain = 0.0
        for demand in want.group.demands:
            room = location.rooms.get(demand.resource_class)
            if room is None or not room.fits(demand.amount):
                return NO_FIT
            gain += self.scorer.gain(demand.amount, room)
        chosen: list[tuple[int, ...]] = [()] * len(want.kinds)
        levels = {kind.level for kind in want.kinds}
        for level in sorted(levels):
            kinds = [i for i, kind in enumerate(want.kinds) if kind.level == level]
            slots = (flat_node.by_level if flat_node else location.children).get(level, [])
            representatives = [want.kinds[i].members[0] for i in kinds]
            assigned = _assign(
                [len(want.kinds[i].members) for i in kinds],
                len(slots),
                self._pair_gains(representatives, slots),
            )
            if assigned is None:
                return NO_FIT
            level_gain, positions = assigned
            gain += level_gain
            for k, i in enumerate(kinds):
                chosen[i] = positions[k]
        return Fit(gain=gain, chosen=tuple(chosen))

    def _pair_gains(
        self, wants: list[Want], slots: list[Location]
    ) -> Callable[[int, int], float | None]:
        """gain(k, s): the best gain of ``wants[k]`` on ``slots[s]`` (None: no fit)."""

        def gain(k: int, s: int) -> float | None:
            fit = self._best(wants[k], slots[s], None)
            return None if fit is NO_FIT else fit.gain

        return gain

    def _materialize(self, want, location, fit, flat_node, mappings, allocations) -> None:
        for demand in want.group.demands:
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


def _assign(
    counts: list[int], slot_count: int, pair_gain: Callable[[int, int], float | None]
) -> tuple[float, list[tuple[int, ...]]] | None:
    """Give every requested subgroup its own slot, maximising the summed gain.

    ``counts[k]`` subgroups of kind k; ``pair_gain(k, slot)`` is the gain of
    one of them on ``slot`` (None: does not fit). Returns the gain and, per
    kind, the slots chosen (in slot order); None if they cannot all be placed.
    """
    needed = sum(counts)
    start = tuple(counts)
    frontier: dict[tuple[int, ...], float] = {start: 0.0}
    steps: list[dict[tuple[int, ...], tuple[tuple[int, ...], int]]] = []
    for slot in range(slot_count):
        left_after = slot_count - slot - 1
        gains = [pair_gain(k, slot) if counts[k] else None for k in range(len(counts))]
        reached: dict[tuple[int, ...], float] = {}
        back: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}
        for state, value in frontier.items():
            for k, gain in enumerate(gains):
                if gain is None or state[k] == 0:
                    continue
                taken = state[:k] + (state[k] - 1,) + state[k + 1 :]
                if taken not in reached or value + gain > reached[taken]:
                    reached[taken] = value + gain
                    back[taken] = (state, k)
            if sum(state) <= left_after and (state not in reached or value > reached[state]):
                reached[state] = value
                back[state] = (state, -1)
        steps.append(back)
        frontier = reached
        if not frontier:
            return None
    done = tuple(0 for _ in counts)
    if done not in frontier:
        return None if needed else (0.0, [() for _ in counts])
    chosen: list[list[int]] = [[] for _ in counts]
    state = done
    for slot in range(slot_count - 1, -1, -1):
        state, kind = steps[slot][state]
        if kind >= 0:
            chosen[kind].append(slot)
    return frontier[done], [tuple(sorted(slots)) for slots in chosen]
