"""What an allocation write names, found in one round trip before it locks anything.

A write names providers by uuid, resource classes by name, consumers by uuid, and the
projects, users and consumer types its consumers belong to. A query each would be a round
trip each: they are one statement, a UNION ALL whose rows say which kind of name they answer.
Nothing read here is trusted past the locks but the ids: the consumers' generations are
checked again by the statements that change them (``consumers.save_consumer``), and
the providers the consumers held are locked before their allocations are replaced.
"""

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from sqlalchemy import Connection, String, cast, literal_column, null, select, union_all

from placement.data.consumers import Consumer, select_consumers
from placement.data.sql import OneOf, OneOfStatement
from placement.db.tables import (
    allocations,
    consumer_types,
    consumers,
    projects,
    resource_classes,
    resource_providers,
    users,
)


@dataclass
class WriteNames:
    """The ids of what a write names (those that exist), and the consumers it names."""

    providers: dict[str, int] = field(default_factory=dict)
    classes: dict[str, int] = field(default_factory=dict)
    consumers: dict[str, Consumer] = field(default_factory=dict)
    # consumer uuid -> ids of the providers it holds allocations on
    held: dict[str, set[int]] = field(default_factory=dict)
    # owner column ("project_id", "user_id", "consumer_type_id") -> name -> id
    owners: dict[str, dict[str, int]] = field(default_factory=dict)


def _kind(name: str):
    return literal_column(f"'{name}'").label("kind")


# The rows of the UNION ALL have the columns of a consumer (``consumers.select_consumers``)
# after the kind of name each answers; the rows that are not consumers' have an id and a
# name (in the consumer's ``uuid``), their other columns empty (and typed: PostgreSQL
# finds no type for a column that is NULL in two branches).
_NO_CONSUMER = [
    cast(null(), column.type).label(label)
    for label, column in (
        ("project_id", projects.c.external_id),
        ("user_id", users.c.external_id),
        ("generation", consumers.c.generation),
        ("consumer_type", consumer_types.c.name),
        ("created_at", consumers.c.created_at),
        ("updated_at", consumers.c.updated_at),
    )
]


def _named(kind: str, id_column, name_column, one_of: OneOf, parameter: str):
    """The rows (kind, id, name) of the ``name_column`` values listed in ``parameter``."""
    return select(_kind(kind), id_column, name_column.label("uuid"), *_NO_CONSUMER).where(
        one_of(name_column, parameter, String)
    )


# SELECT 'consumer', c.id, c.uuid, p.external_id, u.external_id, c.generation, ct.name,
#        c.created_at, c.updated_at
#   FROM consumers c JOIN projects p ON ... JOIN users u ON ...
#   LEFT JOIN consumer_types ct ON ... WHERE c.uuid IN (:consumers)
# UNION ALL SELECT DISTINCT 'held', a.resource_provider_id, c.uuid, NULL, ...
#   FROM allocations a JOIN consumers c ON c.id = a.consumer_id WHERE c.uuid IN (:consumers)
# UNION ALL SELECT 'provider', id, uuid, NULL, ... FROM resource_providers
#   WHERE uuid IN (:providers)
# UNION ALL the same of resource_classes (name IN :classes), projects and users
#   (external_id IN :projects, :users) and consumer_types (name IN :consumer_types)
def _build(one_of: OneOf):
    named_consumers = one_of(consumers.c.uuid, "consumers", String)
    held = (
        select(_kind("held"), allocations.c.resource_provider_id, consumers.c.uuid, *_NO_CONSUMER)
        .join(consumers, consumers.c.id == allocations.c.consumer_id)
        .where(named_consumers)
        .distinct()
    )
    return union_all(
        select_consumers(_kind("consumer")).where(named_consumers),
        held,
        _named("provider", resource_providers.c.id, resource_providers.c.uuid, one_of, "providers"),
        _named("class", resource_classes.c.id, resource_classes.c.name, one_of, "classes"),
        *(
            _named(column, table.c.id, table.c[name_column], one_of, parameter)
            for column, (table, name_column, parameter) in _OWNERS.items()
        ),
    )


# Each owner column of a consumer: the table it names a row of, that table's name
# column, and the statement's parameter listing the names.
_OWNERS = {
    "project_id": (projects, "external_id", "projects"),
    "user_id": (users, "external_id", "users"),
    "consumer_type_id": (consumer_types, "name", "consumer_types"),
}
OWNER_COLUMNS = tuple(_OWNERS)

_LOOK_UP = OneOfStatement(_build)


def look_up(
    conn: Connection,
    provider_uuids: Collection[str],
    class_names: Collection[str],
    consumer_uuids: Collection[str],
    owners: Mapping[str, Collection[str]],
) -> WriteNames:
    """The ids of the named providers, classes and owners (``owners``: owner column ->
    names) that exist, and the named consumers that exist with the providers they hold."""
    parameters = {
        "providers": sorted(provider_uuids),
        "classes": sorted(class_names),
        "consumers": sorted(consumer_uuids),
        **{
            parameter: sorted(owners.get(column, ())) for column, (*_, parameter) in _OWNERS.items()
        },
    }
    found = WriteNames(owners={column: {} for column in OWNER_COLUMNS})
    ids_by_kind = {"provider": found.providers, "class": found.classes, **found.owners}
    for row in conn.execute(_LOOK_UP.of(conn), parameters):
        kind, consumer = row[0], row._mapping
        if kind == "consumer":
            found.consumers[row.uuid] = Consumer(**{k: consumer[k] for k in _FIELDS})
        elif kind == "held":
            found.held.setdefault(row.uuid, set()).add(row.id)
        else:
            ids_by_kind[kind][row.uuid] = row.id
    return found


_FIELDS = [f.name for f in dataclasses.fields(Consumer)]
