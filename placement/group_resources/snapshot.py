"""What the allocator sees of the nodes: their groups, with room, read at one moment.

Built from the rows ``placement.data.group_nodes.read_nodes`` returns. Every
group (a *location*) gets a signature: equal signatures mean equal groups
(same level, same rooms, same subgroups, recursively), so the allocator can
reuse what it found for one group on every other group like it: on a
thousand identical servers it searches one.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from placement.group_resources.levels import LevelConflict, Levels
from placement.group_resources.naming import path_of


@dataclass(frozen=True)
class Room:
    """One inventory of a group and how much of it is used."""

    capacity: float
    used: int
    min_unit: int
    max_unit: int
    step_size: int

    def fits(self, amount: int) -> bool:
        return (
            self.min_unit <= amount <= self.max_unit
            and amount % self.step_size == 0
            and self.used + amount <= self.capacity
        )


@dataclass(eq=False)
class Location:
    uuid: str
    path: tuple[str, ...]
    level: str | None
    rooms: dict[str, Room] = field(default_factory=dict)
    # level -> subgroups of that level, in signature order then index order
    children: dict[str, list["Location"]] = field(default_factory=dict)
    signature: int = -1

    def key(self, base_name: str) -> str:
        return "/".join((*self.path, base_name))


@dataclass(eq=False)
class Node:
    name: str
    root: Location
    levels: Levels
    # level -> every group of that level on the node, in signature order
    by_level: dict[str, list[Location]]
    utilisation: float  # sum of used/capacity over every inventory of the node
    inventory_count: int


@dataclass(frozen=True)
class ProviderRow:
    id: int
    uuid: str
    name: str
    parent_provider_id: int | None
    root_provider_id: int


@dataclass(frozen=True)
class InventoryRow:
    provider_id: int
    resource_class: str
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int


def build_nodes(
    providers: Iterable[ProviderRow], inventories: Iterable[InventoryRow]
) -> list[Node]:
    """The nodes of ``providers`` (whole trees), ordered by name."""
    rooms: dict[int, dict[str, Room]] = {}
    for row in inventories:
        rooms.setdefault(row.provider_id, {})[row.resource_class] = Room(
            capacity=(row.total - row.reserved) * row.allocation_ratio,
            used=row.used,
            min_unit=row.min_unit,
            max_unit=row.max_unit,
            step_size=row.step_size,
        )
    trees: dict[int, list[ProviderRow]] = {}
    for provider in providers:
        trees.setdefault(provider.root_provider_id, []).append(provider)
    signatures: dict[tuple, int] = {}
    nodes = []
    for root_id, rows in trees.items():
        node = _build_node(root_id, rows, rooms, signatures)
        if node is not None:
            nodes.append(node)
    nodes.sort(key=lambda n: n.name)
    return nodes


def _build_node(root_id, rows, rooms, signatures) -> Node | None:
    by_id = {row.id: row for row in rows}
    root_row = by_id.get(root_id)
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
            level=path[-2] if path else None,
            rooms=rooms.get(row.id, {}),
        )
    try:
        levels = Levels.from_paths(loc.path for loc in locations.values() if loc.path)
    except LevelConflict:
        return None  # not something the translator wrote; leave it out
    for row in rows:
        location = locations.get(row.id)
        parent = locations.get(row.parent_provider_id) if row.parent_provider_id else None
        if location is not None and parent is not None and location.level is not None:
            parent.children.setdefault(location.level, []).append(location)
    root = locations[root_id]
    _sign(root, signatures)
    by_level: dict[str, list[Location]] = {}
    for location in _walk(root):
        if location.level is not None:
            by_level.setdefault(location.level, []).append(location)
    for level_locations in by_level.values():
        level_locations.sort(key=_order)
    all_rooms = [room for loc in _walk(root) for room in loc.rooms.values()]
    return Node(
        name=root_row.name,
        root=root,
        levels=levels,
        by_level=by_level,
        utilisation=sum(r.used / r.capacity for r in all_rooms if r.capacity > 0),
        inventory_count=len(all_rooms),
    )


def _sign(location: Location, signatures: dict[tuple, int]) -> int:
    child_signatures = []
    for level, children in location.children.items():
        for child in children:
            child_signatures.append((level, _sign(child, signatures)))
        children.sort(key=_order)
    key = (
        location.level,
        tuple(sorted((c, r.capacity, r.used, r.min_unit, r.max_unit, r.step_size)
                     for c, r in location.rooms.items())),
        tuple(sorted(child_signatures)),
    )
    location.signature = signatures.setdefault(key, len(signatures))
    return location.signature


def _order(location: Location):
    index = location.path[-1] if location.path else ""
    return (location.signature, _natural(index))


def _natural(text: str) -> tuple:
    """dev2 before dev10."""
    digits = "".join(ch for ch in text if ch.isdigit())
    return (text.rstrip("0123456789"), int(digits) if digits else -1, text)


def _walk(location: Location):
    yield location
    for children in location.children.values():
        for child in children:
            yield from _walk(child)
