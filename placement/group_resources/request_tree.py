"""A requested key map -> request groups, and those groups fitted to a node's levels.

``parse_request`` reads the map once (amounts in class units, every key
kept). ``fit_to_levels`` then completes it for the levels of one node:

- A *hierarchical* request (one that names at least one group holding
  subgroups, e.g. ``Gpugrp0/RA/gpu/gpu0/cards``) may skip levels the node
  has above or between the ones it names. Each skipped level is filled in
  per request group, with the group's own index: ``Gpugrp0/RA`` and
  ``Gpugrp0/RB`` on a node that also has ``Gpugrp1`` become
  ``Gpugrp1/RA/Gpugrp0/RA`` and ``Gpugrp1/RB/Gpugrp0/RB``, so each lower group
  gets a higher group of its own, a different one per lower group: two
  groups the request keeps apart stay apart at every level above.
- A *flat* request (every group holds only base resources, e.g.
  ``gpu/0/cards``) expresses no affinity: each group lands on any group of
  that level anywhere on the node. Unless the request asks for its skipped
  levels to be filled in (``GroupOptions.flat_requests``): then it is fitted
  as a hierarchical one, each group getting a group of its own at every level
  above it.

Distinct request groups land on distinct groups of the node, unless the
request lets them share (``GroupOptions.sibling_groups``): then only
capacity keeps them apart, and how many groups of one level the allocator
may have to share out is bounded (``too_many_to_share``).
"""

from dataclasses import dataclass

from placement import errors
from placement.group_resources.keys import KeyGroup, parse_key_map
from placement.group_resources.levels import Levels
from placement.nodes.naming import Naming, normalized
from placement.nodes.quantities import amount_in_unit


@dataclass(frozen=True)
class Demand:
    resource_class: str
    amount: int
    key: str  # the requested key
    base_name: str


@dataclass(frozen=True, eq=False)
class RequestGroup:
    level: str | None  # normalized level name (naming.normalized); None for the top
    index: str | None
    path: tuple[str, ...]  # as requested; filled-in levels get their lower group's index
    demands: tuple[Demand, ...]
    children: tuple["RequestGroup", ...]
    # A level the request skipped, filled in: a group of its own at that level, holding
    # the requested group below it.
    filled_in: bool = False

    @property
    def written_level(self) -> str | None:
        """The level as the client wrote it."""
        return self.path[-2] if self.path else None

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def first_key(self) -> str:
        for group in self.walk():
            for demand in group.demands:
                return demand.key
        return "/".join(self.path)

    def shape(self) -> tuple:
        """Equal for groups that can stand in for each other (twins)."""
        return (
            self.level,
            tuple(sorted((d.resource_class, d.amount) for d in self.demands)),
            tuple(sorted(child.shape() for child in self.children)),
        )


@dataclass(frozen=True)
class GroupRequest:
    top: RequestGroup
    flat: bool
    written: tuple[str, ...] = ()  # the keys in the order the client wrote them

    def keys(self) -> list[str]:
        return [d.key for g in self.top.walk() for d in g.demands]


@dataclass(frozen=True)
class Unplaced:
    """Why a request cannot go on a node, naming a requested key."""

    key: str
    reason: str


def parse_request(resources: object, naming: Naming) -> GroupRequest:
    root = parse_key_map(resources, "requested resources")
    if not root.base and not root.subgroups:
        raise errors.BadRequest("The requested resources are empty.")
    top = _request_group(root, naming)
    _refuse_too_many_kinds(top)
    flat = all(not child.subgroups for child in root.subgroups.values())
    written = tuple(resources) if isinstance(resources, dict) else ()  # (a dict: parsed)
    return GroupRequest(top=top, flat=flat, written=written)


# The allocator places the subgroups of one level of one group together; its
# work grows with the product over their kinds of (how many + 1). Identical
# subgroups are one kind: 64 identical GPUs are 65 states, 20 GPUs of 20
# different sizes a million.
MAX_ASSIGNMENT_STATES = 20_000


def _refuse_too_many_kinds(top: RequestGroup) -> None:
    for group in top.walk():
        counts: dict[tuple, int] = {}
        for child in group.children:
            counts[child.shape()] = counts.get(child.shape(), 0) + 1
        by_level: dict[str | None, int] = {}
        for shape, count in counts.items():
            by_level[shape[0]] = by_level.get(shape[0], 1) * (count + 1)
        for level, states in by_level.items():
            if states > MAX_ASSIGNMENT_STATES:
                raise errors.BadRequest(
                    f"The requested resources hold too many different {level!r} groups side by "
                    f"side under {'/'.join(group.path) or 'the node'}: make more of them alike "
                    f"(same resources and amounts) or split the request."
                )


def _request_group(group: KeyGroup, naming: Naming) -> RequestGroup:
    demands: list[Demand] = []
    for base_name, (key, value) in group.base.items():
        resource_class = naming.resource_class(group.name, base_name)
        amount = amount_in_unit(value, naming.unit(base_name, group.name), key, resource_class)
        if amount == 0:
            raise errors.BadRequest(f"{key}: a requested amount must be positive.")
        for other in demands:
            if other.resource_class == resource_class:
                raise errors.BadRequest(
                    f"Keys {other.key!r} and {key!r} both become resource class {resource_class}."
                )
        demands.append(Demand(resource_class, amount, key, base_name))
    return RequestGroup(
        level=normalized(group.name) if group.name is not None else None,
        index=group.index,
        path=group.path,
        demands=tuple(demands),
        children=tuple(_request_group(child, naming) for child in group.subgroups.values()),
    )


def fit_to_levels(
    request: GroupRequest, levels: Levels, flat_anywhere: bool = True
) -> RequestGroup | Unplaced:
    """The request's groups as they must land on a node with ``levels``; a flat
    request's go anywhere unless ``flat_anywhere`` is False."""
    if request.flat and flat_anywhere:
        for child in request.top.children:
            if child.level not in levels.parents:
                return Unplaced(
                    child.first_key(), f"the node has no {child.written_level!r} groups"
                )
        return request.top
    return _fit(request.top, levels)


# With shared groups the allocator hands out the request groups of one level that
# land on one group of the node, any number of each kind to each of its subgroups:
# the product over their kinds of (count + 1) * (count + 2) / 2 moves per subgroup.
MAX_SHARED_MOVES = 20_000


def too_many_to_share(top: RequestGroup) -> Unplaced | None:
    """Why the fitted request cannot be searched with shared groups, if it cannot: the
    groups of one level, all of which could meet in one group of the node, are too
    many different ones for ``MAX_SHARED_MOVES``."""
    by_level: dict[str | None, dict[tuple, int]] = {}
    for group in top.walk():
        if group is not top:
            kinds = by_level.setdefault(group.level, {})
            kinds[group.shape()] = kinds.get(group.shape(), 0) + 1
    for level, kinds in by_level.items():
        moves = 1
        for count in kinds.values():
            moves *= (count + 1) * (count + 2) // 2
        if moves > MAX_SHARED_MOVES:
            first = next(g for g in top.walk() if g is not top and g.level == level)
            return Unplaced(
                first.first_key(),
                f"too many different {first.written_level!r} groups to share out: make more "
                "of them alike (same resources and amounts) or split the request",
            )
    return None


def _fit(group: RequestGroup, levels: Levels) -> RequestGroup | Unplaced:
    children = []
    for child in group.children:
        assert child.level is not None
        between = levels.levels_between(group.level, child.level)
        if between is None:
            where = "the node" if group.level is None else f"its {group.written_level!r} group"
            return Unplaced(
                child.first_key(),
                f"the node has no {child.written_level!r} groups under {where}",
            )
        fitted = _fit(child, levels)
        if isinstance(fitted, Unplaced):
            return fitted
        index = child.index or ""
        for depth in reversed(range(len(between))):
            filled_path = tuple(
                s for level in between[: depth + 1] for s in (levels.written(level), index)
            )
            fitted = RequestGroup(
                level=between[depth],
                index=child.index,
                path=(*group.path, *filled_path),
                demands=(),
                children=(fitted,),
                filled_in=True,
            )
        children.append(fitted)
    return RequestGroup(
        level=group.level,
        index=group.index,
        path=group.path,
        demands=group.demands,
        children=tuple(children),
        filled_in=group.filled_in,
    )
