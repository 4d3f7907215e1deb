"""SQL for the group-resource translator: the nodes it manages, read whole.

A node is a provider tree whose root carries ``CUSTOM_GROUP_RESOURCES_NODE``.
``read_nodes`` reads every such tree (or the named ones) in two queries:
providers, and inventories with their usage.
"""

import uuid as uuid_lib
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import Connection, case, exists, func, insert, literal, select

from placement import errors
from placement.clock import utcnow
from placement.data import names
from placement.data.sql import insert_ignoring_conflicts
from placement.db.aliases import root_provider
from placement.db.tables import (
    allocations,
    inventories,
    resource_classes,
    resource_provider_traits,
    resource_providers,
    traits,
)
from placement.group_resources.naming import NODE_TRAIT

rp = resource_providers


class ProviderRow(NamedTuple):
    id: int
    uuid: str
    name: str
    parent_provider_id: int | None
    root_provider_id: int


class InventoryRow(NamedTuple):
    provider_id: int
    resource_class: str
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int


def _managed_roots(node_names: list[str] | None):
    """Ids of the roots carrying the node trait (optionally only the named ones)."""
    # SELECT root.id FROM resource_providers root
    #   JOIN resource_provider_traits rpt ON rpt.resource_provider_id = root.id
    #   JOIN traits t ON t.id = rpt.trait_id AND t.name = 'CUSTOM_GROUP_RESOURCES_NODE'
    #   WHERE root.parent_provider_id IS NULL [AND root.name IN (:names)]
    query = (
        select(root_provider.c.id)
        .join(
            resource_provider_traits,
            resource_provider_traits.c.resource_provider_id == root_provider.c.id,
        )
        .join(traits, traits.c.id == resource_provider_traits.c.trait_id)
        .where(traits.c.name == NODE_TRAIT, root_provider.c.parent_provider_id.is_(None))
    )
    if node_names is not None:
        query = query.where(root_provider.c.name.in_(node_names))
    return query


def read_nodes(
    conn: Connection, node_names: list[str] | None = None, root_ids: list[int] | None = None
) -> tuple[list[ProviderRow], list[InventoryRow]]:
    """Every provider of the managed trees, and every inventory with its usage.

    ``node_names`` or ``root_ids`` limit the read to those nodes.
    """
    managed = _managed_roots(node_names)
    if root_ids is not None:
        managed = managed.where(root_provider.c.id.in_(root_ids))
    roots = managed.subquery()
    providers = [
        ProviderRow(*row)
        for row in conn.execute(
            select(rp.c.id, rp.c.uuid, rp.c.name, rp.c.parent_provider_id, rp.c.root_provider_id)
            .join(roots, roots.c.id == rp.c.root_provider_id)
            .order_by(rp.c.id)
        )
    ]
    # SELECT inv.resource_provider_id, rc.name, inv.total, ..., COALESCE(usage.used, 0)
    #   FROM inventories inv JOIN resource_classes rc ON rc.id = inv.resource_class_id
    #   JOIN resource_providers rp ON rp.id = inv.resource_provider_id
    #   JOIN (<managed roots>) roots ON roots.id = rp.root_provider_id
    #   LEFT JOIN (SELECT resource_provider_id, resource_class_id, SUM(used) AS used
    #              FROM allocations GROUP BY 1, 2) usage
    #     ON usage.resource_provider_id = inv.resource_provider_id
    #    AND usage.resource_class_id = inv.resource_class_id
    usage = _usage(roots)
    inventory_rows = [
        InventoryRow(
            provider_id=row[0],
            resource_class=row[1],
            total=row[2],
            reserved=row[3],
            min_unit=row[4],
            max_unit=row[5],
            step_size=row[6],
            allocation_ratio=float(row[7]),
            used=int(row[8]),
        )
        for row in conn.execute(
            select(
                inventories.c.resource_provider_id,
                resource_classes.c.name,
                inventories.c.total,
                inventories.c.reserved,
                inventories.c.min_unit,
                inventories.c.max_unit,
                inventories.c.step_size,
                inventories.c.allocation_ratio,
                func.coalesce(usage.c.used, 0),
            )
            .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
            .join(rp, rp.c.id == inventories.c.resource_provider_id)
            .join(roots, roots.c.id == rp.c.root_provider_id)
            .outerjoin(usage, _usage_of_inventory(usage))
        )
    ]
    return providers, inventory_rows


def _usage(roots):
    """Usage per provider and class, of the providers in the trees of ``roots`` only.

    Summing only those (not every allocation of the deployment) keeps the
    statement proportional to the nodes read, whatever else is allocated.
    """
    # SELECT a.resource_provider_id, a.resource_class_id, SUM(a.used) AS used
    #   FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
    #   JOIN (<roots>) roots ON roots.id = rp.root_provider_id GROUP BY 1, 2
    return (
        select(
            allocations.c.resource_provider_id,
            allocations.c.resource_class_id,
            func.sum(allocations.c.used).label("used"),
        )
        .join(rp, rp.c.id == allocations.c.resource_provider_id)
        .join(roots, roots.c.id == rp.c.root_provider_id)
        .group_by(allocations.c.resource_provider_id, allocations.c.resource_class_id)
        .subquery()
    )


def _usage_of_inventory(usage):
    """Join condition: the usage row of each inventory row."""
    return (usage.c.resource_provider_id == inventories.c.resource_provider_id) & (
        usage.c.resource_class_id == inventories.c.resource_class_id
    )


@dataclass(frozen=True)
class NodeSummary:
    root_id: int
    name: str
    inventory_count: int
    utilisation: float  # sum of used/capacity over the tree's inventories


def node_summaries(conn: Connection, node_names: list[str] | None = None) -> list[NodeSummary]:
    """Per managed node: how many inventories its tree has and how used they are."""
    # SELECT root.id, root.name, COUNT(inv.resource_provider_id),
    #        SUM(CASE WHEN capacity > 0 THEN COALESCE(usage.used, 0) / capacity ELSE 0 END)
    #   FROM (<managed roots>) roots JOIN resource_providers root ON root.id = roots.id
    #   JOIN resource_providers rp ON rp.root_provider_id = roots.id
    #   LEFT JOIN inventories inv ON inv.resource_provider_id = rp.id
    #   LEFT JOIN (<usage per provider and class>) usage ON ...
    #   GROUP BY root.id, root.name
    roots = _managed_roots(node_names).subquery()
    usage = _usage(roots)
    capacity = (inventories.c.total - inventories.c.reserved) * inventories.c.allocation_ratio
    used_share = case(
        (capacity > 0, func.coalesce(usage.c.used, 0) / capacity), else_=literal(0.0)
    )
    rows = conn.execute(
        select(root_provider.c.id, root_provider.c.name,
               func.count(inventories.c.resource_provider_id), func.sum(used_share))
        .select_from(roots)
        .join(root_provider, root_provider.c.id == roots.c.id)
        .join(rp, rp.c.root_provider_id == roots.c.id)
        .outerjoin(inventories, inventories.c.resource_provider_id == rp.c.id)
        .outerjoin(usage, _usage_of_inventory(usage))
        .group_by(root_provider.c.id, root_provider.c.name)
    )
    return [
        NodeSummary(root_id=id_, name=name, inventory_count=count,
                    utilisation=float(share or 0.0))
        for id_, name, count, share in rows
    ]


def capacity_ranges(
    conn: Connection, classes: set[str], node_names: list[str] | None = None
) -> dict[str, tuple[float, float]]:
    """Per class, the smallest and largest capacity above 0 of its inventories on the nodes."""
    if not classes:
        return {}
    roots = _managed_roots(node_names).subquery()
    capacity = (inventories.c.total - inventories.c.reserved) * inventories.c.allocation_ratio
    # Inventories without capacity can hold nothing, so they bound nothing.
    rows = conn.execute(
        select(resource_classes.c.name, func.min(capacity), func.max(capacity))
        .join(inventories, inventories.c.resource_class_id == resource_classes.c.id)
        .join(rp, rp.c.id == inventories.c.resource_provider_id)
        .join(roots, roots.c.id == rp.c.root_provider_id)
        .where(resource_classes.c.name.in_(sorted(classes)), capacity > 0)
        .group_by(resource_classes.c.name)
    )
    return {name: (float(low), float(high)) for name, low, high in rows}


def node_names(conn: Connection) -> list[tuple[str, str]]:
    """(name, uuid) of every managed node, by name."""
    roots = _managed_roots(None).subquery()
    return [
        (name, uuid)
        for name, uuid in conn.execute(
            select(rp.c.name, rp.c.uuid).join(roots, roots.c.id == rp.c.id).order_by(rp.c.name)
        )
    ]


def is_managed(conn: Connection, provider_id: int) -> bool:
    return bool(
        conn.scalar(
            select(
                exists()
                .where(resource_provider_traits.c.resource_provider_id == provider_id)
                .where(resource_provider_traits.c.trait_id == traits.c.id)
                .where(traits.c.name == NODE_TRAIT)
            )
        )
    )


def tree_provider_ids_by_name(conn: Connection, root_id: int) -> dict[str, int]:
    return dict(
        conn.execute(select(rp.c.name, rp.c.id).where(rp.c.root_provider_id == root_id)).all()
    )


def providers_with_allocations(conn: Connection, provider_ids: list[int]) -> set[int]:
    if not provider_ids:
        return set()
    return set(
        conn.scalars(
            select(allocations.c.resource_provider_id)
            .where(allocations.c.resource_provider_id.in_(provider_ids))
            .distinct()
        )
    )


@dataclass(frozen=True)
class NewGroup:
    """A group provider to create, with its trait and inventories (class -> total)."""

    name: str
    parent_name: str
    trait: str
    inventories: dict[str, int]


def create_groups(conn: Connection, root_id: int, groups: list[NewGroup]) -> None:
    """Create group providers under the tree of ``root_id``, parents before children.

    New providers are invisible to others until commit, so their traits and
    inventories are written directly, at generation 0: a few statements per
    tree level instead of a dozen per provider. 409 ``placement.duplicate_name``
    when a name is taken (also by a concurrent request).
    """
    if not groups:
        return
    wanted_names = [group.name for group in groups]
    taken = sorted(conn.scalars(select(rp.c.name).where(rp.c.name.in_(wanted_names))))
    if taken:
        raise errors.Conflict(
            f"Conflicting resource provider name(s) already exist: {', '.join(taken)}.",
            code=errors.DUPLICATE_NAME,
        )
    ids = dict(
        conn.execute(select(rp.c.name, rp.c.id).where(rp.c.root_provider_id == root_id)).all()
    )
    now = utcnow()
    pending = list(groups)
    while pending:
        ready = [group for group in pending if group.parent_name in ids]
        if not ready:
            raise ValueError(f"groups without a parent in the tree: {pending[0].name}")
        rows = [
            {
                "uuid": str(uuid_lib.uuid4()),
                "name": group.name,
                "generation": 0,
                "parent_provider_id": ids[group.parent_name],
                "root_provider_id": root_id,
                "created_at": now,
            }
            for group in ready
        ]
        inserted = insert_ignoring_conflicts(conn, rp, rows, returning=rp.c.name)
        if len(inserted) != len(rows):
            raise errors.Conflict(
                "A concurrent request created providers with the same names.",
                code=errors.DUPLICATE_NAME,
            )
        ids.update(
            conn.execute(
                select(rp.c.name, rp.c.id).where(rp.c.name.in_([g.name for g in ready]))
            ).all()
        )
        pending = [group for group in pending if group.name not in ids]
    trait_ids = names.trait_ids(conn, {group.trait for group in groups})
    conn.execute(
        insert(resource_provider_traits),
        [
            {"resource_provider_id": ids[g.name], "trait_id": trait_ids[g.trait], "created_at": now}
            for g in groups
        ],
    )
    class_ids = names.resource_class_ids(conn, {c for g in groups for c in g.inventories})
    inventory_rows = [
        {
            "resource_provider_id": ids[group.name],
            "resource_class_id": class_ids[resource_class],
            "total": total,
            "reserved": 0,
            "min_unit": 1,
            "max_unit": total,
            "step_size": 1,
            "allocation_ratio": 1.0,
            "created_at": now,
        }
        for group in groups
        for resource_class, total in group.inventories.items()
    ]
    if inventory_rows:
        conn.execute(insert(inventories), inventory_rows)


def ensure_custom_names(conn: Connection, classes: set[str], trait_names: set[str]) -> None:
    """Create the custom classes and traits that do not exist yet."""
    for table, wanted in ((resource_classes, classes), (traits, trait_names)):
        custom = {name for name in wanted if name.startswith(names.CUSTOM_PREFIX)}
        missing = custom - set(names.ids_by_name(conn, table, custom))
        for name in sorted(missing):
            names.create_name(conn, table, name)
