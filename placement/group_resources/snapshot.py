"""What the allocator sees of the nodes: their groups, with room, read at one moment.

Built from the searches' copy of the providers (``replica_nodes``). Every
group (a *location*) gets a signature: equal signatures mean equal groups
(same level, same rooms, same subgroups, recursively), so the allocator can
reuse what it found for one group on every other group like it: on a
thousand identical servers it searches one.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from placement import capacity
from placement.group_resources.levels import LevelConflict, Levels
from placement.nodes.naming import normalized, path_of


class ProviderRow(NamedTuple):
    """A provider of a node's tree: what building the node reads of it."""

    id: int
    uuid: str
    name: str
    parent_provider_id: int | None
    root_provider_id: int


class Room(NamedTuple):
    """One inventory of a group and how much of it is used."""

    # (total - reserved) * allocation_ratio unrounded: what the scorer divides by, as
    # api-ref/group_resources.md documents. What fits is decided by ``free``.
    unrounded_capacity: float
    used: int
    free: int  # placement.capacity.free
    min_unit: int
    max_unit: int
    step_size: int

    def fits(self, amount: int) -> bool:
        """``ROOM_CHECKS`` together (written out: the allocator asks it on its hot path)."""
        return (
            capacity.units_allow(amount, self.min_unit, self.max_unit, self.step_size)
            and amount <= self.free
        )


class RoomCheck(NamedTuple):
    """One of what ``Room.fits`` checks, named for an explanation (``explain``)."""

    name: str  # with {amount}
    test: Callable[[Room, int], bool]  # (room, amount) -> passes
    # (room, amount) -> how much is missing, when the check is the free amount; else None
    short: Callable[[Room, int], int | None]


# ``Room.fits``, one check at a time and in its order: an amount fits exactly when it
# passes them all.
ROOM_CHECKS = (
    RoomCheck(
        "min_unit, max_unit and step_size allow {amount}",
        lambda room, amount: capacity.units_allow(
            amount, room.min_unit, room.max_unit, room.step_size
        ),
        lambda room, amount: None,
    ),
    RoomCheck(
        "{amount} free (capacity less usage)",
        lambda room, amount: amount <= room.free,
        lambda room, amount: amount - room.free,
    ),
)


# A group's signature key -> (its number, its content): what ``build_nodes`` numbers groups
# by; shared by the nodes of a search so that equal numbers mean equal groups.
Signatures = dict[tuple, tuple[int, tuple]]


@dataclass(eq=False, slots=True)
class Location:
    uuid: str
    path: tuple[str, ...]  # as the node's map wrote it
    level: str | None  # normalized (naming.normalized)
    rooms: dict[str, Room] = field(default_factory=dict)
    # level -> subgroups of that level, in ``_order``
    children: dict[str, list["Location"]] = field(default_factory=dict)
    signature: int = -1
    # (level, rooms, the subgroups' contents): one object for groups of one signature.
    content: tuple = ()
    index_order: tuple = ()  # the natural order of its index (``_natural``)

    def key(self, base_name: str) -> str:
        return "/".join((*self.path, base_name))


@dataclass(eq=False)
class Node:
    name: str
    root: Location
    levels: Levels
    # level -> every group of that level on the node, in ``_order``
    by_level: dict[str, list[Location]]
    utilisation: float  # sum of used/capacity over every inventory of the node
    inventory_count: int
    rooms: tuple[Room, ...] = ()  # every inventory of the node's tree (its exact score)


def build_nodes(
    providers: Iterable[ProviderRow],
    rooms: dict[int, dict[str, Room]],
    signatures: Signatures | None = None,
) -> list[Node]:
    """The nodes of ``providers`` (whole trees) with the rooms of each provider (as the
    searches' copy holds them: ``replica_nodes``), ordered by name.

    ``signatures`` numbers the distinct groups; nodes built in several calls
    for one search must share it, so that equal numbers mean equal groups.
    """
    trees: dict[int, list[ProviderRow]] = {}
    for provider in providers:
        trees.setdefault(provider.root_provider_id, []).append(provider)
    if signatures is None:
        signatures = {}
    nodes = []
    for root_id, rows in trees.items():
        node = _build_node(root_id, rows, rooms, signatures)
        if node is not None:
            nodes.append(node)
    nodes.sort(key=lambda n: n.name)
    return nodes


def _build_node(root_id, rows, rooms, signatures) -> Node | None:
    root_row = next((row for row in rows if row.id == root_id), None)
    if root_row is None:
        return None
    locations: dict[int, Location] = {}
    for row in rows:
        path = path_of(root_row.name, row.name)
        if path is None:
            continue  # a provider someone else added to the tree
        locations[row.id] = Location(
            uuid=row.uuid,
            path=path,
            level=normalized(path[-2]) if path else None,
            rooms=rooms.get(row.id, {}),
        )
    for row in rows:
        location = locations.get(row.id)
        if location is None or location.level is None:
            continue
        parent = locations.get(row.parent_provider_id)
        if parent is None or parent.path != location.path[:-2]:
            return None  # moved away from where its name puts it: not as the map says
        parent.children.setdefault(location.level, []).append(location)
    try:
        levels = Levels.from_paths(loc.path for loc in locations.values() if loc.path)
    except LevelConflict:
        return None  # irregular levels: not something the translator wrote
    # Children before parents, so each signature is built from finished ones.
    ordered = sorted(locations.values(), key=lambda loc: len(loc.path), reverse=True)
    for location in ordered:
        _sign(location, signatures)
    root = locations[root_id]
    by_level: dict[str, list[Location]] = {}
    all_rooms: list[Room] = []
    for row in rows:  # every inventory of the tree counts in the score, ours or not
        all_rooms += rooms.get(row.id, {}).values()
    for location in ordered:
        if location.level is not None:
            by_level.setdefault(location.level, []).append(location)
    for level_locations in by_level.values():
        level_locations.sort(key=_order)
    return Node(
        name=root_row.name,
        root=root,
        levels=levels,
        by_level=by_level,
        utilisation=sum(
            r.used / r.unrounded_capacity for r in all_rooms if r.unrounded_capacity > 0
        ),
        inventory_count=len(all_rooms),
        rooms=tuple(all_rooms),
    )


def _sign(location: Location, signatures: Signatures) -> None:
    """Give ``location`` its signature; its children must have theirs already."""
    child_signatures = []
    for level, children in location.children.items():
        children.sort(key=_order)
        child_signatures += [(level, child.signature) for child in children]
    rooms = tuple(sorted((c, *r) for c, r in location.rooms.items()))
    key = (location.level, rooms, tuple(sorted(child_signatures)))
    known = signatures.get(key)
    if known is None:
        # Built once per distinct group, so groups alike share one content object:
        # comparing them stops at its identity instead of walking their subgroups.
        child_contents = sorted(
            child.content for children in location.children.values() for child in children
        )
        known = signatures[key] = (
            len(signatures),
            (location.level or "", rooms, tuple(child_contents)),
        )
    location.signature, location.content = known
    location.index_order = _natural(location.path[-1] if location.path else "")


def _order(location: Location) -> tuple:
    """How lists of groups are sorted: by content, then by index. The content, not the
    signature, comes first: signatures are numbered in the order a process met the
    groups, the content is the same on every worker, and this order breaks ties between
    placements (``assignment``). Groups of one signature still stand together."""
    return (location.content, location.index_order)


def _natural(text: str) -> tuple:
    """dev2 before dev10."""
    digits = "".join(ch for ch in text if ch.isdigit())
    return (text.rstrip("0123456789"), int(digits) if digits else -1, text)
