"""Allocations: reading them, and the one write path that never over-commits.

How a write stays correct with many workers writing at once
-------------------------------------------------------------
``write_allocations`` first locks every provider it touches (the providers of
the new allocations and of the consumers' current ones) by bumping their
generations (or, where upstream leaves the generation alone, their
revisions), one UPDATE each, in id order. On PostgreSQL that UPDATE holds the
provider rows until commit, so two writers touching the same provider run one
after the other, and the usage read afterwards (READ COMMITTED reads the
latest committed rows per statement) includes everything committed before.
On SQLite every write transaction starts with BEGIN IMMEDIATE, which
serialises writers for the whole database. Capacity is then checked against
the usage that includes the new allocations; any failure raises, and the
request's transaction rolls back everything, including consumers it created.

Consumer generations (1.28+) are compared with the stored value and bumped
with ``UPDATE ... WHERE generation = :seen``, so a concurrent change is a 409.
"""

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY

from placement import errors
from placement.clock import utcnow
from placement.data import allocation_fit, names, write_lookup
from placement.data import consumers as consumer_data
from placement.data.sql import OneOf, OneOfStatement, in_array
from placement.db.tables import (
    allocations,
    consumer_types,
    consumers,
    inventories,
    resource_classes,
    resource_providers,
)

# A consumer's allocations: provider uuid -> resource class -> amount.
AllocationMap = dict[str, dict[str, int]]

UNCHECKED = object()  # consumer generation not checked (before 1.28)


@dataclass(frozen=True)
class ConsumerWrite:
    """The complete new allocations of one consumer."""

    consumer_uuid: str
    project_id: str | None  # None before 1.8: keep the stored one
    user_id: str | None
    allocations: AllocationMap
    generation: object = UNCHECKED  # int, None (new consumer) or UNCHECKED
    consumer_type: str | None = None  # None leaves the stored type alone


def get_consumer_allocations(conn: Connection, consumer_id: int):
    """Rows (provider uuid, provider generation, class, used, timestamps) of a consumer."""
    return conn.execute(
        select(
            resource_providers.c.uuid,
            resource_providers.c.generation,
            resource_classes.c.name,
            allocations.c.used,
            allocations.c.created_at,
            allocations.c.updated_at,
        )
        .join(resource_providers, resource_providers.c.id == allocations.c.resource_provider_id)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.consumer_id == consumer_id)
        .order_by(resource_providers.c.uuid, resource_classes.c.name)
    ).all()


def get_provider_allocations(conn: Connection, provider_id: int):
    """Rows (consumer uuid, class, used, timestamps) of one provider."""
    return conn.execute(
        select(
            consumers.c.uuid,
            resource_classes.c.name,
            allocations.c.used,
            allocations.c.created_at,
            allocations.c.updated_at,
        )
        .join(consumers, consumers.c.id == allocations.c.consumer_id)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.resource_provider_id == provider_id)
        .order_by(consumers.c.uuid, resource_classes.c.name)
    ).all()


def consumers_of_type_in_tree(conn: Connection, root_id: int, consumer_type: str) -> list[str]:
    """Uuids of the consumers of ``consumer_type`` with allocations in the tree of the
    root provider ``root_id``, sorted."""
    # SELECT DISTINCT c.uuid FROM allocations a
    #   JOIN resource_providers rp ON rp.id = a.resource_provider_id
    #   JOIN consumers c ON c.id = a.consumer_id
    #   JOIN consumer_types ct ON ct.id = c.consumer_type_id
    #   WHERE rp.root_provider_id = :root_id AND ct.name = :consumer_type ORDER BY c.uuid
    return list(
        conn.scalars(
            select(consumers.c.uuid)
            .join(allocations, allocations.c.consumer_id == consumers.c.id)
            .join(resource_providers, resource_providers.c.id == allocations.c.resource_provider_id)
            .join(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
            .where(
                resource_providers.c.root_provider_id == root_id,
                consumer_types.c.name == consumer_type,
            )
            .distinct()
            .order_by(consumers.c.uuid)
        )
    )


def allocations_of_consumers(conn: Connection, consumer_ids) -> dict[int, AllocationMap]:
    """Consumer id -> its allocations (provider uuid -> class -> amount), in one query."""
    consumer_ids = sorted(consumer_ids)
    found: dict[int, AllocationMap] = {consumer_id: {} for consumer_id in consumer_ids}
    if not consumer_ids:
        return found
    rows = conn.execute(
        select(
            allocations.c.consumer_id,
            resource_providers.c.uuid,
            resource_classes.c.name,
            allocations.c.used,
        )
        .join(resource_providers, resource_providers.c.id == allocations.c.resource_provider_id)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.consumer_id.in_(consumer_ids))
    )
    for consumer_id, provider_uuid, class_name, used in rows:
        found[consumer_id].setdefault(provider_uuid, {})[class_name] = used
    return found


def write_allocations(
    conn: Connection, writes: list[ConsumerWrite], check_capacity: bool = True
) -> list[dict]:
    """Replace each consumer's allocations with the ones in ``writes``, atomically.

    Returns the allocation rows written.

    Raises BadRequest for unknown providers (``ProviderNotFound``) or classes,
    ConcurrentUpdate for consumer generation conflicts, Conflict when capacity or
    inventory constraints would be broken. ``check_capacity`` False lets the reshaper
    check once at the end, after it also changed inventories.
    """
    named = _look_up(conn, writes)
    provider_ids = _known_providers({u for w in writes for u in w.allocations}, named.providers)
    class_ids = names.known_resource_classes(
        {rc for w in writes for res in w.allocations.values() for rc in res}, named.classes
    )
    existing = named.consumers
    old_provider_ids = set().union(*named.held.values())
    # Upstream bumps the generations of the providers allocated from, and of those a
    # consumer is emptied from; a provider a consumer merely moves away from keeps
    # its generation (clients hold it), and its revision moves instead.
    emptied_from = [
        named.held.get(w.consumer_uuid, set())
        for w in writes
        if not w.allocations and w.consumer_uuid in existing
    ]
    bumped = set(provider_ids.values()).union(*emptied_from)
    lock_providers(conn, bumped | old_provider_ids, keep_generation_of=old_provider_ids - bumped)

    touched_consumer_ids = []  # consumers whose old allocations are replaced
    known_owners = _known_owners(named, writes)  # projects, users, types looked up
    consumer_ids: dict[str, int] = {}
    created: list[ConsumerWrite] = []  # new consumers, created together
    for write in writes:
        current = existing.get(write.consumer_uuid)
        if write.generation is not UNCHECKED:
            expected = write.generation
            assert expected is None or isinstance(expected, int)
            consumer_data.check_generation(write.consumer_uuid, current, expected)
        if current is None and not write.allocations:
            continue  # nothing to remove, nothing to create
        if current is None:
            created.append(write)
            continue
        consumer_ids[write.consumer_uuid] = consumer_data.save_consumer(
            conn,
            write.consumer_uuid,
            current,
            write.project_id,
            write.user_id,
            write.consumer_type,
            known_owners,
        )
        touched_consumer_ids.append(current.id)
    consumer_ids.update(
        consumer_data.create_consumers(
            conn,
            [(w.consumer_uuid, w.project_id, w.user_id, w.consumer_type) for w in created],
            known_owners,
        )
    )
    now = utcnow()
    new_rows = [
        {
            "consumer_id": consumer_ids[write.consumer_uuid],
            "resource_provider_id": provider_ids[provider_uuid],
            "resource_class_id": class_ids[class_name],
            "used": used,
            "created_at": now,
        }
        for write in writes
        if write.consumer_uuid in consumer_ids
        for provider_uuid, resources in write.allocations.items()
        for class_name, used in resources.items()
    ]
    if touched_consumer_ids:
        conn.execute(delete(allocations).where(allocations.c.consumer_id.in_(touched_consumer_ids)))
    if new_rows and check_capacity and conn.dialect.name == "postgresql":
        _insert_and_check_fit(conn, new_rows)
    else:
        if new_rows:
            _insert_allocations(conn, new_rows)
        if check_capacity:
            allocation_fit.check_allocations_fit(conn, new_rows)
    # (a consumer given new allocations holds them: only the others may be left empty)
    refilled = {row["consumer_id"] for row in new_rows}
    consumer_data.delete_if_empty(conn, [c for c in touched_consumer_ids if c not in refilled])
    return new_rows


# The columns of a new allocation row, but its creation time (one for a whole write).
_ROW_COLUMNS = ("consumer_id", "resource_provider_id", "resource_class_id", "used")
# INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used,
#                          created_at)
#   SELECT consumer_id, resource_provider_id, resource_class_id, used, :created_at
#     FROM unnest(:consumer_id, :resource_provider_id, :resource_class_id, :used)
#       AS written(consumer_id, resource_provider_id, resource_class_id, used)
_WRITTEN = (
    func.unnest(*(bindparam(column, type_=ARRAY(BigInteger)) for column in _ROW_COLUMNS))
    .table_valued(*_ROW_COLUMNS)
    .render_derived(name="written")
)
_INSERT_AS_ARRAYS = insert(allocations).from_select(
    [*_ROW_COLUMNS, "created_at"],
    select(
        *(_WRITTEN.c[column] for column in _ROW_COLUMNS),
        bindparam("created_at", type_=allocations.c.created_at.type),
    ),
)


def _insert_allocations(conn: Connection, rows: list[dict]) -> None:
    """Insert ``rows`` (which share their ``created_at``) in one statement, however many,
    so that its trigger moves each of their providers once (migration 0013). psycopg
    would send a list of rows as one statement per row: on PostgreSQL the rows go as one
    array per column instead, and the statement's text stays the same. PyMySQL sends a
    list of rows as one multi-row INSERT already, and SQLite's triggers run row by row
    anyway."""
    if conn.dialect.name != "postgresql":
        conn.execute(insert(allocations), rows)
        return
    arrays = {column: [row[column] for row in rows] for column in _ROW_COLUMNS}
    conn.execute(_INSERT_AS_ARRAYS, {**arrays, "created_at": rows[0]["created_at"]})


# INSERT the rows as _INSERT_AS_ARRAYS does, and read each inventory of their providers
# with its usage, in one statement (PostgreSQL). Its parts see one snapshot, taken as it
# starts (the providers locked already): the inserted rows are added from the INSERT's
# RETURNING to the usage the snapshot holds.
# WITH written AS (INSERT ... RETURNING resource_provider_id, resource_class_id, used)
# SELECT inventories.*,
#        (SELECT COALESCE(SUM(a.used), 0) FROM allocations a WHERE <its provider and class>)
#        + (SELECT COALESCE(SUM(w.used), 0) FROM written w WHERE <the same>) AS usage
#   FROM inventories WHERE resource_provider_id = ANY(:provider_ids)
_WRITTEN_ROWS = _INSERT_AS_ARRAYS.returning(
    allocations.c.resource_provider_id, allocations.c.resource_class_id, allocations.c.used
).cte("written")


def _usage_in(source):
    return (
        select(func.coalesce(func.sum(source.c.used), 0))
        .where(
            source.c.resource_provider_id == inventories.c.resource_provider_id,
            source.c.resource_class_id == inventories.c.resource_class_id,
        )
        .scalar_subquery()
    )


_INSERT_AND_READ_INVENTORIES = select(
    inventories, (_usage_in(allocations) + _usage_in(_WRITTEN_ROWS)).label("usage")
).where(in_array(inventories.c.resource_provider_id, "provider_ids", BigInteger))


def _insert_and_check_fit(conn: Connection, rows: list[dict]) -> None:
    """``_insert_allocations`` then ``allocation_fit.check_allocations_fit``, in one round
    trip (PostgreSQL)."""
    pairs = allocation_fit.pairs_of(rows)
    values = {
        **{column: [row[column] for row in rows] for column in _ROW_COLUMNS},
        "created_at": rows[0]["created_at"],
        "provider_ids": sorted({provider_id for provider_id, _ in pairs}),
    }
    inventory_rows = conn.execute(_INSERT_AND_READ_INVENTORIES, values).all()
    allocation_fit.require_fit(conn, inventory_rows, rows, pairs)


def delete_consumer_allocations(conn: Connection, consumer: consumer_data.Consumer) -> None:
    """Delete the consumer's allocations; ConcurrentUpdate when they moved to others between
    the read and the locks. As upstream, the providers' generations stay (clients hold
    them across this call); their revisions move, for the searches' copies."""
    locked = _providers_of_consumers(conn, [consumer.id])
    lock_providers(conn, locked, keep_generation_of=locked)
    deleted_from = _delete_allocations_of(conn, consumer.id)
    if not deleted_from <= locked:
        raise errors.ConcurrentUpdate(
            f"The allocations of consumer {consumer.uuid} changed concurrently; retry."
        )
    consumer_data.delete_if_empty(conn, [consumer.id])


def _delete_allocations_of(conn: Connection, consumer_id: int) -> set[int]:
    """Delete a consumer's allocations; the ids of the providers they were on. (MySQL 8
    has no DELETE ... RETURNING: the rows are read, locked, first.)"""
    mine = allocations.c.consumer_id == consumer_id
    if conn.dialect.delete_returning:
        statement = delete(allocations).where(mine).returning(allocations.c.resource_provider_id)
        return set(conn.scalars(statement))
    held = set(
        conn.scalars(select(allocations.c.resource_provider_id).where(mine).with_for_update())
    )
    conn.execute(delete(allocations).where(mine))
    return held


def _look_up(conn: Connection, writes: list[ConsumerWrite]) -> write_lookup.WriteNames:
    """What ``writes`` name, in one round trip: the owners those that name them do."""
    owners: dict[str, set[str]] = {column: set() for column in write_lookup.OWNER_COLUMNS}
    for write in writes:
        for column, name in _owners_named(write).items():
            owners[column].add(name)
    return write_lookup.look_up(
        conn,
        provider_uuids={u for w in writes for u in w.allocations},
        class_names={rc for w in writes for res in w.allocations.values() for rc in res},
        consumer_uuids=[w.consumer_uuid for w in writes],
        owners=owners,
    )


def _owners_named(write: ConsumerWrite) -> dict[str, str]:
    """The owners' names a write gives (none before 1.8, where the stored ones stay)."""
    if write.project_id is None or write.user_id is None:
        return {}
    named = {"project_id": write.project_id, "user_id": write.user_id}
    if write.consumer_type is not None:
        named["consumer_type_id"] = write.consumer_type
    return named


def _known_owners(named: write_lookup.WriteNames, writes: list[ConsumerWrite]):
    """The owners' ids of each write whose owners all exist, as ``consumers.Known``; the
    others (a project's, user's or type's first consumer) are looked up and inserted as
    their consumers are written."""
    known: consumer_data.Known = {}
    for write in writes:
        owners = _owners_named(write)
        ids = {
            column: named.owners[column][name]
            for column, name in owners.items()
            if name in named.owners[column]
        }
        if owners and len(ids) == len(owners):
            known[owners["project_id"], owners["user_id"], write.consumer_type] = ids
    return known


def _known_providers(uuids, found: dict[str, int]) -> dict[str, int]:
    """``found`` (uuid -> id), or ProviderNotFound naming the first of ``uuids`` missing."""
    missing = sorted(u for u in uuids if u not in found)
    if missing:
        raise ProviderNotFound(
            f"Allocation for resource provider '{missing[0]}' that does not exist."
        )
    return {u: found[u] for u in uuids}


class ProviderNotFound(errors.BadRequest):
    """An allocation names a provider that does not exist (upstream's 400): a client's
    mistake, or for a claim that chose it, a provider deleted since."""


# SELECT DISTINCT resource_provider_id FROM allocations WHERE consumer_id IN (:consumer_ids)
_PROVIDERS_OF_CONSUMERS = OneOfStatement(
    lambda one_of: (
        select(allocations.c.resource_provider_id)
        .where(one_of(allocations.c.consumer_id, "consumer_ids", BigInteger))
        .distinct()
    )
)


def _providers_of_consumers(conn: Connection, consumer_ids) -> set[int]:
    if not consumer_ids:
        return set()
    statement = _PROVIDERS_OF_CONSUMERS.of(conn)
    return set(conn.scalars(statement, {"consumer_ids": list(consumer_ids)}))


def providers_of_consumer_uuids(conn: Connection, consumer_uuids) -> set[int]:
    ids = conn.scalars(select(consumers.c.id).where(consumers.c.uuid.in_(list(consumer_uuids))))
    return _providers_of_consumers(conn, list(ids))


# Said by the bump itself to the triggers of this transaction (PostgreSQL, migration
# 0013): its writer moves the providers of its rows before writing them, so a statement
# need not move a provider logged already in this transaction again. Transaction-local:
# gone at commit, or with the savepoint it was said in.
_MOVED_FIRST = func.set_config("placement.providers_moved_first", "on", True)


# SELECT id FROM resource_providers WHERE id IN (:ids) ORDER BY id FOR UPDATE
_LOCK_IN_ID_ORDER = (
    select(resource_providers.c.id)
    .where(in_array(resource_providers.c.id, "ids", BigInteger))
    .order_by(resource_providers.c.id)
    .with_for_update()
)


# UPDATE resource_providers SET <column> = <column> + 1, updated_at = :now WHERE id IN (:ids)
#   [PostgreSQL: RETURNING set_config('placement.providers_moved_first', 'on', true)]
def _bumping(column: str) -> Callable[[OneOf], Any]:
    def build(one_of: OneOf):
        return (
            update(resource_providers)
            .where(one_of(resource_providers.c.id, "ids", BigInteger))
            .values({column: resource_providers.c[column] + 1, "updated_at": bindparam("now")})
        )

    return build


_BUMP = {column: OneOfStatement(_bumping(column)) for column in ("generation", "revision")}
_BUMP_SAYING_SO = {column: bump.arrayed.returning(_MOVED_FIRST) for column, bump in _BUMP.items()}


def lock_providers(
    conn: Connection, provider_ids, keep_generation_of: Collection[int] = frozenset()
) -> None:
    """Bump the generation of each provider (the revision of those in
    ``keep_generation_of``, migration 0004), locking its row until commit.

    Rows are locked in id order, so that two writers with overlapping providers cannot
    deadlock: on PostgreSQL by one SELECT ... ORDER BY id FOR UPDATE first (its rows are
    locked as the sort returns them); SQLite's and MySQL's write transactions are
    serialized already (``group_nodes.lock_node``). Then one UPDATE per column bumped,
    whatever the number of providers (a gang's claim locks hundreds). Each bump is
    logged (migration 0003), so the rows written next need not move these providers
    again (migration 0013: on MySQL every write transaction of this service says so).
    """
    ids = sorted(provider_ids)
    if not ids:
        return
    postgresql = conn.dialect.name == "postgresql"
    if len(ids) > 1 and postgresql:
        conn.execute(_LOCK_IN_ID_ORDER, {"ids": ids})
    now = utcnow()
    kept = [provider_id for provider_id in ids if provider_id in keep_generation_of]
    bumped = [provider_id for provider_id in ids if provider_id not in keep_generation_of]
    locked = 0
    for column, group in (("generation", bumped), ("revision", kept)):
        if group:
            values = {"ids": group, "now": now}
            if postgresql:
                locked += len(conn.execute(_BUMP_SAYING_SO[column], values).all())
            else:
                locked += conn.execute(_BUMP[column].listed, values).rowcount
    if locked != len(ids):
        # Deleted by a transaction that committed while this one waited.
        raise errors.ConcurrentUpdate(
            "A resource provider of these allocations was deleted concurrently; retry."
        )
