"""Consumers, and the projects, users and consumer types they refer to.

A consumer exists while it holds allocations: it is created by its first
allocation write and removed with its last allocation. Its ``generation``
guards read-modify-write cycles on its allocations (from microversion 1.28).
"""

import datetime
from dataclasses import dataclass

from sqlalchemy import Connection, String, Table, delete, exists, select, update

from placement import errors
from placement.clock import utcnow
from placement.data.sql import (
    OneOfStatement,
    insert_ignoring_conflicts,
    inserting_ignoring_conflicts,
)
from placement.db.tables import allocations, consumer_types, consumers, projects, users

# Project and user recorded for consumers written before microversion 1.8,
# when clients did not send them.
INCOMPLETE_CONSUMER_ID = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True)
class Consumer:
    id: int
    uuid: str
    project_id: str
    user_id: str
    generation: int
    consumer_type: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


def select_consumers(*leading_columns):
    """SELECT of the consumers' columns (``Consumer``'s fields), after ``leading_columns``."""
    return (
        select(
            *leading_columns,
            consumers.c.id,
            consumers.c.uuid,
            projects.c.external_id.label("project_id"),
            users.c.external_id.label("user_id"),
            consumers.c.generation,
            consumer_types.c.name.label("consumer_type"),
            consumers.c.created_at,
            consumers.c.updated_at,
        )
        .join(projects, projects.c.id == consumers.c.project_id)
        .join(users, users.c.id == consumers.c.user_id)
        .outerjoin(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
    )


# SELECT consumers.id, uuid, projects.external_id, users.external_id, generation,
#        consumer_types.name, created_at, updated_at
#   FROM consumers JOIN projects ... JOIN users ... LEFT JOIN consumer_types ...
#   WHERE consumers.uuid IN (:uuids)
_CONSUMERS_BY_UUID = OneOfStatement(
    lambda one_of: select_consumers().where(one_of(consumers.c.uuid, "uuids", String))
)


def get_consumers(conn: Connection, uuids) -> dict[str, Consumer]:
    uuids = list(uuids)
    if not uuids:
        return {}
    rows = conn.execute(_CONSUMERS_BY_UUID.of(conn), {"uuids": uuids})
    return {row.uuid: Consumer(**row._mapping) for row in rows}


def get_consumer(conn: Connection, uuid: str) -> Consumer | None:
    return get_consumers(conn, [uuid]).get(uuid)


def consumers_of_type(conn: Connection, consumer_type: str) -> list[Consumer]:
    """Every consumer of ``consumer_type``, by uuid."""
    rows = conn.execute(
        select_consumers().where(consumer_types.c.name == consumer_type).order_by(consumers.c.uuid)
    )
    return [Consumer(**row._mapping) for row in rows]


def _external_id(conn: Connection, table: Table, column: str, value: str) -> int:
    """Id of the row of ``table`` whose ``column`` is ``value``, inserted if missing."""
    query = select(table.c.id).where(table.c[column] == value)
    found = conn.scalar(query)
    if found is not None:
        return found
    # Another request may insert the same row meanwhile: ignore that conflict.
    insert_ignoring_conflicts(conn, table, [{column: value, "created_at": utcnow()}])
    return conn.execute(query).scalar_one()


# The owners' ids a write of many consumers has looked up: (project, user, type) -> ids.
Known = dict[tuple[str, str, str | None], dict[str, int]]

# Each column of a consumer that names a row of another table, by that table's name column.
_OWNERS = {
    "project_id": (projects, "external_id"),
    "user_id": (users, "external_id"),
    "consumer_type_id": (consumer_types, "name"),
}


def _owner_ids(
    conn: Connection, project: str, user: str, consumer_type: str | None
) -> dict[str, int]:
    """The ids of the consumer's project, user and type (when given), found in one round
    trip when all exist (as they do but for a project's, user's or type's first
    consumer); each missing one inserted."""
    named = {"project_id": project, "user_id": user}
    if consumer_type is not None:
        named["consumer_type_id"] = consumer_type
    lookups = [
        select(_OWNERS[key][0].c.id)
        .where(_OWNERS[key][0].c[_OWNERS[key][1]] == value)
        .scalar_subquery()
        for key, value in named.items()
    ]
    found = dict(zip(named, conn.execute(select(*lookups)).one(), strict=True))
    return {
        key: found[key] if found[key] is not None else _external_id(conn, *_OWNERS[key], named[key])
        for key in named
    }


def _owner_values(
    conn: Connection,
    existing: Consumer | None,
    project: str | None,
    user: str | None,
    consumer_type: str | None,
    known: Known,
) -> dict[str, int]:
    """``_owner_ids`` of the consumer (its stored project and user, or the placeholder,
    when none is given), looked up once per write of many consumers (``known``)."""
    if project is None:  # before 1.8: keep what is stored, else the placeholder
        project = existing.project_id if existing else INCOMPLETE_CONSUMER_ID
    if user is None:
        user = existing.user_id if existing else INCOMPLETE_CONSUMER_ID
    key = (project, user, consumer_type)
    if key not in known:
        known[key] = _owner_ids(conn, project, user, consumer_type)
    return dict(known[key])


def create_consumers(
    conn: Connection,
    new: list[tuple[str, str | None, str | None, str | None]],
    known: Known,
) -> dict[str, int]:
    """Create consumers (uuid, project, user, type) that did not exist, at generation 1,
    in one statement (``save_consumer`` does one); their ids by uuid. A concurrent
    writer that created one of them first makes this a 409 concurrent_update."""
    if not new:
        return {}
    now = utcnow()
    rows = [
        {
            "uuid": uuid,
            "generation": 1,
            "created_at": now,
            "consumer_type_id": None,
            **_owner_values(conn, None, project, user, consumer_type, known),
        }
        for uuid, project, user, consumer_type in new
    ]
    returned = (consumers.c.uuid, consumers.c.id)
    ids = dict(inserting_ignoring_conflicts(conn, consumers, rows, returned))
    for uuid, *_ in new:
        if uuid not in ids:
            raise errors.ConcurrentUpdate(
                f"consumer {uuid} was created by another request; retry with its current "
                "generation."
            )
    return ids


def check_generation(consumer_uuid: str, existing: Consumer | None, expected: int | None):
    """409 unless ``expected`` is the consumer's generation (None: a new consumer)."""
    actual = existing.generation if existing else None
    if actual != expected:
        shown = "null" if actual is None else actual
        raise errors.ConcurrentUpdate(
            f"consumer generation conflict - expected {shown} but got {expected} "
            f"(consumer {consumer_uuid})."
        )


def save_consumer(
    conn: Connection,
    consumer_uuid: str,
    existing: Consumer | None,
    project: str | None,
    user: str | None,
    consumer_type: str | None,
    known: Known | None = None,
) -> int:
    """Create the consumer (at generation 1: created by its first write), or update
    it and bump its generation; returns its id. ``known``: the ids of projects, users
    and types found so far by the caller's write (a write of many consumers of one
    project looks it up once).

    A concurrent writer that created or changed the same consumer first makes
    this a 409 concurrent_update.
    """
    values = _owner_values(
        conn, existing, project, user, consumer_type, {} if known is None else known
    )
    if existing is None:
        inserted = insert_ignoring_conflicts(
            conn,
            consumers,
            [{"uuid": consumer_uuid, "generation": 1, "created_at": utcnow(), **values}],
            returning=consumers.c.id,
        )
        if not inserted:
            raise errors.ConcurrentUpdate(
                f"consumer {consumer_uuid} was created by another request; retry with its "
                "current generation."
            )
        return inserted[0]
    result = conn.execute(
        update(consumers)
        .where(consumers.c.id == existing.id, consumers.c.generation == existing.generation)
        .values(generation=consumers.c.generation + 1, updated_at=utcnow(), **values)
    )
    if result.rowcount != 1:
        raise errors.ConcurrentUpdate(
            f"consumer {consumer_uuid} was changed by another request; retry with its "
            "current generation."
        )
    return existing.id


def delete_if_empty(conn: Connection, consumer_ids) -> None:
    """Remove the consumers among ``consumer_ids`` that hold no allocation."""
    consumer_ids = list(consumer_ids)
    if consumer_ids:
        conn.execute(
            delete(consumers).where(
                consumers.c.id.in_(consumer_ids),
                ~exists().where(allocations.c.consumer_id == consumers.c.id),
            )
        )
