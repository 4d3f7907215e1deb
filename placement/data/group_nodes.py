"""SQL for the group-resource translator: the nodes it manages, read whole.

A node is a provider tree whose root carries ``CUSTOM_GROUP_RESOURCES_NODE``.
``read_nodes`` reads every such tree (or the named ones) in two queries:
providers, and inventories with their usage. ``lock_node`` serializes the
writers of one node.
"""

import uuid as uuid_lib
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import Connection, exists, func, insert, select

from placement import errors
from placement.clock import utcnow
from placement.data import names
from placement.data.inventories import Inventory
from placement.data.sql import id_conditions, insert_ignoring_conflicts
from placement.db.aliases import root_provider
from placement.db.tables import (
    allocations,
    device_topologies,
    inventories,
    resource_classes,
    resource_provider_traits,
    resource_providers,
    traits,
)
from placement.nodes.naming import NODE_TRAIT

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


def _managed_roots(node_names: list[str] | None, without_device_nodes: bool = False):
    """Ids of the roots carrying the node trait (optionally only the named ones, optionally
    not the device nodes, whose trees the device routes own)."""
    # SELECT root.id FROM resource_providers root
    #   JOIN resource_provider_traits rpt ON rpt.resource_provider_id = root.id
    #   JOIN traits t ON t.id = rpt.trait_id AND t.name = 'CUSTOM_GROUP_RESOURCES_NODE'
    #   WHERE root.parent_provider_id IS NULL [AND root.name IN (:names)]
    #   [AND NOT EXISTS (SELECT 1 FROM device_topologies dt WHERE dt.node_name = root.name)]
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
    if without_device_nodes:
        query = query.where(~exists().where(device_topologies.c.node_name == root_provider.c.name))
    return query


def read_nodes(
    conn: Connection,
    node_names: list[str] | None = None,
    root_ids: list[int] | None = None,
    without_device_nodes: bool = False,
) -> tuple[list[ProviderRow], list[InventoryRow]]:
    """Every provider of the managed trees, and every inventory with its usage.

    ``node_names`` or ``root_ids`` limit the read to those nodes;
    ``without_device_nodes`` leaves out the device nodes (for the translator's search:
    a device node's devices are allocated through the device routes, with their tenancy).
    """
    roots = _roots(node_names, root_ids, without_device_nodes)
    providers = [
        ProviderRow(*row)
        for row in conn.execute(
            select(rp.c.id, rp.c.uuid, rp.c.name, rp.c.parent_provider_id, rp.c.root_provider_id)
            .join(roots, roots.c.id == rp.c.root_provider_id)
            .order_by(rp.c.id)
        )
    ]
    # SELECT inv.resource_provider_id, inv.resource_class_id, rc.name, inv.total, ...
    #   FROM inventories inv JOIN resource_classes rc ON rc.id = inv.resource_class_id
    #   JOIN resource_providers rp ON rp.id = inv.resource_provider_id
    #   JOIN (<managed roots>) roots ON roots.id = rp.root_provider_id
    rows = conn.execute(
        select(
            inventories.c.resource_provider_id,
            inventories.c.resource_class_id,
            resource_classes.c.name,
            inventories.c.total,
            inventories.c.reserved,
            inventories.c.min_unit,
            inventories.c.max_unit,
            inventories.c.step_size,
            inventories.c.allocation_ratio,
        )
        .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
        .join(rp, rp.c.id == inventories.c.resource_provider_id)
        .join(roots, roots.c.id == rp.c.root_provider_id)
    ).all()
    usage = _usage(conn, sorted({provider.root_provider_id for provider in providers}))
    inventory_rows = [
        InventoryRow(
            provider_id=provider_id,
            resource_class=class_name,
            total=total,
            reserved=reserved,
            min_unit=min_unit,
            max_unit=max_unit,
            step_size=step_size,
            allocation_ratio=float(ratio),
            used=usage.get((provider_id, class_id), 0),
        )
        for (
            provider_id,
            class_id,
            class_name,
            total,
            reserved,
            min_unit,
            max_unit,
            step_size,
            ratio,
        ) in rows
    ]
    return providers, inventory_rows


def _roots(
    node_names: list[str] | None,
    root_ids: list[int] | None = None,
    without_device_nodes: bool = False,
):
    managed = _managed_roots(node_names, without_device_nodes)
    if root_ids is not None:
        managed = managed.where(root_provider.c.id.in_(root_ids))
    return managed.subquery()


def _usage(conn: Connection, root_ids: list[int]) -> dict[tuple[int, int], int]:
    """(provider id, class id) -> amount allocated, in the trees of these roots only.

    The root ids are parameters, not a subquery: the cost follows the trees
    asked about, not the size of the allocations table, whatever the
    planner's estimates.
    """
    # SELECT a.resource_provider_id, a.resource_class_id, SUM(a.used)
    #   FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
    #   WHERE rp.root_provider_id = ANY(:root_ids) GROUP BY 1, 2
    usage: dict[tuple[int, int], int] = {}
    for condition in id_conditions(conn, rp.c.root_provider_id, root_ids):
        for provider_id, class_id, used in conn.execute(
            select(
                allocations.c.resource_provider_id,
                allocations.c.resource_class_id,
                func.sum(allocations.c.used),
            )
            .join(rp, rp.c.id == allocations.c.resource_provider_id)
            .where(condition)
            .group_by(allocations.c.resource_provider_id, allocations.c.resource_class_id)
        ):
            usage[(provider_id, class_id)] = int(used)
    return usage


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
    """A group provider to create, with its trait and inventories."""

    name: str
    parent_name: str
    trait: str
    inventories: dict[str, Inventory]


def create_groups(conn: Connection, root_id: int, groups: list[NewGroup]) -> None:
    """Create group providers under the tree of ``root_id``, parents before children.

    New providers are invisible to others until commit, so their traits and
    inventories are written directly, at generation 0: a few statements per
    tree level instead of a dozen per provider. 409 ``placement.duplicate_name``
    when a name is taken, ``placement.concurrent_update`` when a concurrent request
    takes one between the check and the insert (the node's own writers are held off by
    ``lock_node``; this is another writer, e.g. ``POST /resource_providers``).
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
            raise errors.ConcurrentUpdate(
                "A concurrent request created providers with the same names; retry."
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
            "created_at": now,
            **inventory.fields(),
        }
        for group in groups
        for resource_class, inventory in group.inventories.items()
    ]
    if inventory_rows:
        conn.execute(insert(inventories), inventory_rows)


# pg_advisory_xact_lock's first key: what is locked ("GRPN", group-resource node names).
NODE_LOCK_SPACE = 0x4752504E


def lock_node(conn: Connection, node_name: str) -> None:
    """Hold off every other sync, device import or delete of the node named ``node_name``
    until this transaction ends; taking it again in the same transaction is free. (Claims
    and the generic provider API do not take it: they are guarded by generations.)

    A sync reads the node's tree, then writes what differs: two syncs of one node
    interleaved would each write from a stale read (creating the same providers,
    deleting or updating ones the other just removed). Taken before the first read,
    the lock makes the second sync read (READ COMMITTED: per statement) the tree as the
    first committed it. A row lock would not do: the node may not exist yet. On
    PostgreSQL this is a transaction-scoped advisory lock on the name's hash (a hash
    collision only serializes two nodes needlessly); on SQLite every write transaction
    is ``BEGIN IMMEDIATE``, and on MySQL every write transaction first locks the change
    log's state row (``placement.db.mysql``), which already serializes writers. (Not
    MySQL's GET_LOCK: it is held by the session, not the transaction, and on Galera by
    one node only. On Galera two syncs through two nodes both update that state row:
    certification lets one commit and fails the other, which is retried.)
    """
    # SELECT pg_advisory_xact_lock(:space, hashtext(:node_name))
    if conn.dialect.name != "postgresql":
        return
    conn.execute(select(func.pg_advisory_xact_lock(NODE_LOCK_SPACE, func.hashtext(node_name))))


def ensure_custom_names(conn: Connection, classes: set[str], trait_names: set[str]) -> None:
    """Create the custom classes and traits that do not exist yet."""
    for table, wanted in ((resource_classes, classes), (traits, trait_names)):
        custom = {name for name in wanted if name.startswith(names.CUSTOM_PREFIX)}
        missing = custom - set(names.ids_by_name(conn, table, custom))
        for name in sorted(missing):
            names.create_name(conn, table, name)
