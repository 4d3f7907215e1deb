"""Inventories of a provider, and their usage.

Every change bumps the provider generation first: on PostgreSQL that UPDATE
also locks the provider row, so usage checked afterwards cannot be changed by
a concurrent allocation before this transaction commits. Removing a class that
has allocations is refused with 409 ``placement.inventory.inuse``. Shrinking
capacity below usage is accepted and logged, as upstream does (operators mark
a node in maintenance by reserving everything): the allocations stay, and the
provider offers no room for that class until usage falls below capacity.
"""

import datetime
import logging
from dataclasses import dataclass

from sqlalchemy import Connection, delete, func, insert, select, update

from placement import capacity, errors
from placement.clock import utcnow
from placement.data import names
from placement.data.providers import Provider, bump_generation
from placement.db.tables import allocations, inventories, resource_classes

LOG = logging.getLogger(__name__)
FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")


@dataclass(frozen=True)
class Inventory:
    resource_class: str
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None

    @property
    def capacity(self) -> int:
        return capacity.capacity(self.total, self.reserved, self.allocation_ratio)

    @property
    def unrounded_capacity(self) -> float:
        """For messages only, which have always printed it (``capacity.unrounded``)."""
        return capacity.unrounded(self.total, self.reserved, self.allocation_ratio)

    def fields(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}


def get_inventories(conn: Connection, provider: Provider) -> dict[str, Inventory]:
    rows = conn.execute(
        select(
            resource_classes.c.name.label("resource_class"),
            *(inventories.c[name] for name in FIELDS),
            inventories.c.created_at,
            inventories.c.updated_at,
        )
        .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
        .where(inventories.c.resource_provider_id == provider.id)
        .order_by(resource_classes.c.name)
    )
    return {row.resource_class: Inventory(**row._mapping) for row in rows}


def usage_by_class(conn: Connection, provider: Provider) -> dict[str, int]:
    rows = conn.execute(
        select(resource_classes.c.name, func.sum(allocations.c.used))
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.resource_provider_id == provider.id)
        .group_by(resource_classes.c.name)
    )
    return {name: int(used) for name, used in rows}


def replace_inventories(
    conn: Connection,
    provider: Provider,
    wanted: dict[str, Inventory],
    generation: int,
    refuse_below_usage: bool = False,
) -> int:
    """Make the provider's inventory exactly ``wanted``; returns the new generation.

    ``refuse_below_usage``: a capacity shrunk below usage is a 409 too (the
    group-resource translator's node sync), not a warning (the Placement API)."""
    new_generation = bump_generation(conn, provider, generation)
    current = get_inventories(conn, provider)
    # Every class resolved first: an unknown one is refused before one in use, as upstream.
    class_ids = names.resource_class_ids(conn, set(wanted) | set(current))
    _check_usage(conn, provider, current, wanted, class_ids, refuse_below_usage)
    write_inventories(conn, provider, current, wanted, class_ids)
    return new_generation


def write_inventories(
    conn: Connection,
    provider: Provider,
    current: dict[str, Inventory],
    wanted: dict[str, Inventory],
    class_ids: dict[str, int] | None = None,
) -> None:
    """Turn the rows ``current`` into ``wanted``; no generation or usage checks.
    ``class_ids``: the ids of their classes, when the caller has them already."""
    if class_ids is None:
        class_ids = names.resource_class_ids(conn, set(wanted) | set(current))
    now = utcnow()
    removed = [class_ids[class_name] for class_name in current if class_name not in wanted]
    if removed:
        conn.execute(
            delete(inventories).where(
                inventories.c.resource_provider_id == provider.id,
                inventories.c.resource_class_id.in_(removed),
            )
        )
    for class_name, inventory in wanted.items():
        if class_name in current:
            if current[class_name].fields() != inventory.fields():
                _update_row(conn, provider, class_ids[class_name], inventory, now)
        else:
            _insert_row(conn, provider, class_ids[class_name], inventory, now)


def add_inventory(conn: Connection, provider: Provider, inventory: Inventory) -> int:
    """Add a class the provider lacks. Like upstream, no generation is asked for: the
    provider's is bumped from the one read in this transaction."""
    class_id = _class_id(conn, inventory.resource_class)
    new_generation = bump_generation(conn, provider, provider.generation)
    if inventory.resource_class in get_inventories(conn, provider):
        # Upstream's code for this (its duplicate-row error) is concurrent_update.
        raise errors.Conflict(
            f"Update conflict: Inventory for {inventory.resource_class} on resource "
            f"provider {provider.uuid} already exists.",
            code=errors.CONCURRENT_UPDATE,
        )
    _insert_row(conn, provider, class_id, inventory, utcnow())
    return new_generation


def _class_id(conn: Connection, class_name: str) -> int:
    return names.resource_class_ids(conn, [class_name])[class_name]


def update_inventory(
    conn: Connection, provider: Provider, inventory: Inventory, generation: int
) -> int:
    class_id = _class_id(conn, inventory.resource_class)
    new_generation = bump_generation(conn, provider, generation)
    current = get_inventories(conn, provider)
    if inventory.resource_class not in current:
        raise errors.BadRequest(
            f"No inventory record with resource class for resource provider "
            f"{provider.uuid}: No inventory of class {inventory.resource_class} found."
        )
    _check_usage(
        conn,
        provider,
        {inventory.resource_class: current[inventory.resource_class]},
        {inventory.resource_class: inventory},
        {inventory.resource_class: class_id},
    )
    _update_row(conn, provider, class_id, inventory, utcnow())
    return new_generation


def delete_inventory(
    conn: Connection, provider: Provider, class_name: str, generation: int | None = None
) -> int:
    current = get_inventories(conn, provider)
    if class_name not in current:
        if names.get_name(conn, resource_classes, class_name) is None:
            reason = f"No such resource class {class_name}."
        else:
            reason = f"resource provider {provider.uuid} has no inventory of class {class_name}."
        raise errors.NotFound(f"No inventory of class {class_name} found for delete: {reason}")
    remaining = {name: inv for name, inv in current.items() if name != class_name}
    return replace_inventories(
        conn, provider, remaining, provider.generation if generation is None else generation
    )


def _check_usage(
    conn: Connection,
    provider: Provider,
    current: dict[str, Inventory],
    wanted: dict[str, Inventory],
    class_ids: dict[str, int],
    refuse_below_usage: bool = False,
) -> None:
    """Refuse removing a class in use; log a class whose usage exceeds its new capacity
    (or refuse it too). ``class_ids``: the ids of the classes of both."""
    usage = usage_by_class(conn, provider)
    removed_in_use = [c for c in current if c not in wanted and usage.get(c, 0) > 0]
    if removed_in_use:
        removed_in_use.sort(key=class_ids.__getitem__)  # upstream's order: the class ids
        raise errors.Conflict(
            f"Inventory for '{', '.join(removed_in_use)}' on resource provider "
            f"'{provider.uuid}' in use.",
            code=errors.INVENTORY_INUSE,
        )
    over_capacity = sorted(
        c for c, inv in wanted.items() if c in current and usage.get(c, 0) > inv.capacity
    )
    if over_capacity and refuse_below_usage:
        details = ", ".join(
            f"{c} (used {usage[c]}, new capacity {wanted[c].unrounded_capacity:g})"
            for c in over_capacity
        )
        raise errors.Conflict(
            f"Inventory change on resource provider '{provider.uuid}' would leave "
            f"existing allocations without capacity: {details}.",
            code=errors.INVENTORY_INUSE,
        )
    for class_name in over_capacity:
        LOG.warning(
            "Resource provider %s: %s usage %d now exceeds its capacity %g; "
            "no more can be allocated until usage falls below it.",
            provider.uuid,
            class_name,
            usage[class_name],
            wanted[class_name].unrounded_capacity,
        )


def _insert_row(conn, provider, class_id, inventory, now) -> None:
    conn.execute(
        insert(inventories).values(
            resource_provider_id=provider.id,
            resource_class_id=class_id,
            created_at=now,
            **inventory.fields(),
        )
    )


def _update_row(conn, provider, class_id, inventory, now) -> None:
    conn.execute(
        update(inventories)
        .where(
            inventories.c.resource_provider_id == provider.id,
            inventories.c.resource_class_id == class_id,
        )
        .values(updated_at=now, **inventory.fields())
    )
