"""Whether allocations fit their inventories: the check each allocation write ends with,
once the new rows are written and their providers locked (``allocations``)."""

from sqlalchemy import BigInteger, Connection, func, select

from placement import capacity, errors
from placement.data.sql import OneOfStatement
from placement.db.tables import allocations, inventories, resource_classes, resource_providers

# One round trip: each inventory of the providers with the usage of its class.
# SELECT inventories.*, (SELECT COALESCE(SUM(a.used), 0) FROM allocations a
#                         WHERE a.resource_provider_id = inventories.resource_provider_id
#                           AND a.resource_class_id = inventories.resource_class_id) AS usage
#   FROM inventories WHERE resource_provider_id IN (:provider_ids)
_INVENTORIES_WITH_USAGE = OneOfStatement(
    lambda one_of: select(
        inventories,
        select(func.coalesce(func.sum(allocations.c.used), 0))
        .where(
            allocations.c.resource_provider_id == inventories.c.resource_provider_id,
            allocations.c.resource_class_id == inventories.c.resource_class_id,
        )
        .scalar_subquery()
        .label("usage"),
    ).where(one_of(inventories.c.resource_provider_id, "provider_ids", BigInteger))
)


def check_allocations_fit(
    conn: Connection,
    new_rows: list[dict],
    other_pairs: frozenset[tuple[int, int]] = frozenset(),
    missing_inventory_code: str = errors.DEFAULT,
) -> None:
    """Conflict unless every new allocation respects its inventory and capacity.

    ``new_rows`` must each fit min_unit, max_unit and step_size; the (provider,
    class) pairs of ``new_rows`` and ``other_pairs`` must have inventory and
    usage within capacity. Reads inventories and usage in one query; the usage
    already includes ``new_rows``.
    """
    pairs = pairs_of(new_rows) | other_pairs
    if not pairs:
        return
    provider_ids = sorted({p for p, _ in pairs})
    statement = _INVENTORIES_WITH_USAGE.of(conn)
    rows = conn.execute(statement, {"provider_ids": provider_ids}).all()
    require_fit(conn, rows, new_rows, pairs, missing_inventory_code)


def pairs_of(rows: list[dict]) -> set[tuple[int, int]]:
    """The (provider id, class id) of each allocation row."""
    return {(row["resource_provider_id"], row["resource_class_id"]) for row in rows}


def require_fit(
    conn: Connection,
    inventory_rows,
    new_rows: list[dict],
    pairs: set[tuple[int, int]],
    missing_inventory_code: str = errors.DEFAULT,
) -> None:
    """``check_allocations_fit`` of ``inventory_rows`` read already (each inventory of the
    providers with the usage of its class, ``new_rows`` included)."""
    inventory = {(row.resource_provider_id, row.resource_class_id): row for row in inventory_rows}
    usage = {key: int(row.usage) for key, row in inventory.items()}
    for key in sorted(pairs):
        if key not in inventory:
            class_name, provider_uuid = _label(conn, key)
            raise errors.Conflict(
                f"Unable to allocate inventory: Inventory for '{class_name}' on resource "
                f"provider '{provider_uuid}' invalid. The provider has no inventory of "
                f"class {class_name}.",
                code=missing_inventory_code,
            )
    for row in new_rows:
        key = (row["resource_provider_id"], row["resource_class_id"])
        record = inventory[key]
        used = row["used"]
        if not capacity.units_allow(used, record.min_unit, record.max_unit, record.step_size):
            class_name, provider_uuid = _label(conn, key)
            raise errors.Conflict(
                f"Unable to allocate inventory: Unable to create allocation for "
                f"'{class_name}' on resource provider '{provider_uuid}'. The requested "
                f"amount would violate inventory constraints. The amount {used} must "
                f"be from min_unit {record.min_unit} to max_unit {record.max_unit} in "
                f"steps of step_size {record.step_size}."
            )
    for key in pairs:
        record = inventory[key]
        numbers = (record.total, record.reserved, record.allocation_ratio)
        if capacity.free(*numbers, usage.get(key, 0)) < 0:
            class_name, provider_uuid = _label(conn, key)
            # The text has always shown the unrounded product (4.5, not 4): kept as is.
            raise errors.Conflict(
                f"Unable to allocate inventory: Unable to create allocation for "
                f"'{class_name}' on resource provider '{provider_uuid}'. The requested "
                f"amount would exceed the capacity. Usage would be {usage[key]}, the "
                f"capacity is {capacity.unrounded(*numbers):g}."
            )


def _label(conn: Connection, pair: tuple[int, int]) -> tuple[str, str]:
    """(class name, provider uuid) of a (provider id, class id) pair, for error messages."""
    provider_id, class_id = pair
    provider_uuid = conn.execute(
        select(resource_providers.c.uuid).where(resource_providers.c.id == provider_id)
    ).scalar_one()
    class_name = conn.execute(
        select(resource_classes.c.name).where(resource_classes.c.id == class_id)
    ).scalar_one()
    return class_name, provider_uuid


def check_providers_consistent(conn: Connection, new_rows: list[dict], provider_ids) -> None:
    """Conflict unless the new allocations fit and no allocation on these
    providers is left without inventory or capacity.

    Used by the reshaper after it moved inventories and allocations together;
    allocations it did not write are held to capacity only, not to unit rules.
    """
    provider_ids = sorted(provider_ids)
    if not provider_ids and not new_rows:
        return
    allocated_pairs = frozenset(
        (provider_id, class_id)
        for provider_id, class_id in conn.execute(
            select(allocations.c.resource_provider_id, allocations.c.resource_class_id)
            .where(allocations.c.resource_provider_id.in_(provider_ids))
            .distinct()
        )
    )
    check_allocations_fit(
        conn, new_rows, allocated_pairs, missing_inventory_code=errors.INVENTORY_INUSE
    )
