"""SQL for the group-resource translator's writes: its nodes' trees, written whole.

A node is a provider tree whose root carries ``CUSTOM_GROUP_RESOURCES_NODE``
(its searches and views read the nodes from the process's copy of the providers,
``group_resources.replica_nodes``). ``lock_node`` serializes the writers of one
node.
"""

import uuid as uuid_lib
from dataclasses import dataclass

from sqlalchemy import Connection, exists, func, insert, select

from placement import errors
from placement.clock import utcnow
from placement.data import names
from placement.data.inventories import Inventory
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
from placement.nodes.naming import NODE_TRAIT

rp = resource_providers


def _managed_roots():
    """Ids of the roots carrying the node trait."""
    # SELECT root.id FROM resource_providers root
    #   JOIN resource_provider_traits rpt ON rpt.resource_provider_id = root.id
    #   JOIN traits t ON t.id = rpt.trait_id AND t.name = 'CUSTOM_GROUP_RESOURCES_NODE'
    #   WHERE root.parent_provider_id IS NULL
    return (
        select(root_provider.c.id)
        .join(
            resource_provider_traits,
            resource_provider_traits.c.resource_provider_id == root_provider.c.id,
        )
        .join(traits, traits.c.id == resource_provider_traits.c.trait_id)
        .where(traits.c.name == NODE_TRAIT, root_provider.c.parent_provider_id.is_(None))
    )


def node_names(conn: Connection) -> list[tuple[str, str]]:
    """(name, uuid) of every managed node, by name."""
    roots = _managed_roots().subquery()
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
