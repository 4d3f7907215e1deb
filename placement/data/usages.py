"""Usage totals: per provider, and per project/user (optionally per consumer type)."""

from collections import defaultdict

from sqlalchemy import Connection, func, select

from placement.db.tables import (
    allocations,
    consumer_types,
    consumers,
    projects,
    resource_classes,
    users,
)

UNKNOWN_TYPE = "unknown"  # the label of consumers that have no consumer type
ALL_TYPES = "all"


def project_usages(
    conn: Connection, project: str, user: str | None = None, consumer_type: str | None = None
) -> dict[str, int]:
    """Total usage per resource class of a project (and user)."""
    totals: dict[str, int] = defaultdict(int)
    for _type, class_name, used in _usage_rows(conn, project, user, consumer_type):
        totals[class_name] += used
    return dict(totals)


def project_usages_by_type(
    conn: Connection, project: str, user: str | None = None, consumer_type: str | None = None
) -> dict[str, dict[str, int]]:
    """Usage per consumer type: {type: {"consumer_count": n, class: used, ...}}.

    ``consumer_type`` filters: a type name, ``unknown`` (no type) or ``all``
    (everything in one group named ``all``); None groups every type apart.
    """
    grouped: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for type_name, class_name, used in _usage_rows(conn, project, user, consumer_type):
        grouped[_label(type_name, consumer_type)][class_name] += used
    counts: dict[str, int] = defaultdict(int)
    for type_name, count in _consumer_counts(conn, project, user, consumer_type):
        counts[_label(type_name, consumer_type)] += count
    return {
        label: {"consumer_count": counts[label], **classes} for label, classes in grouped.items()
    }


def _label(type_name: str | None, consumer_type: str | None) -> str:
    if consumer_type == ALL_TYPES:
        return ALL_TYPES
    return type_name or UNKNOWN_TYPE


def _filtered(query, project, user, consumer_type):
    query = query.join(projects, projects.c.id == consumers.c.project_id).where(
        projects.c.external_id == project
    )
    if user is not None:
        query = query.join(users, users.c.id == consumers.c.user_id).where(
            users.c.external_id == user
        )
    if consumer_type == UNKNOWN_TYPE:
        query = query.where(consumers.c.consumer_type_id.is_(None))
    elif consumer_type not in (None, ALL_TYPES):
        query = query.where(consumer_types.c.name == consumer_type)
    return query


def _usage_rows(conn, project, user, consumer_type):
    # SELECT ct.name, rc.name, SUM(a.used) FROM allocations a JOIN consumers c ...
    #   LEFT JOIN consumer_types ct ... WHERE project [AND user] [AND type]
    #   GROUP BY ct.name, rc.name
    # (Grouping by the nullable column, not an expression, keeps PostgreSQL happy.)
    query = (
        select(consumer_types.c.name, resource_classes.c.name, func.sum(allocations.c.used))
        .select_from(allocations)
        .join(consumers, consumers.c.id == allocations.c.consumer_id)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .outerjoin(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
        .group_by(consumer_types.c.name, resource_classes.c.name)
    )
    query = _filtered(query, project, user, consumer_type)
    return [(t, c, int(used)) for t, c, used in conn.execute(query)]


def _consumer_counts(conn, project, user, consumer_type):
    query = (
        select(consumer_types.c.name, func.count(func.distinct(consumers.c.id)))
        .select_from(consumers)
        .join(allocations, allocations.c.consumer_id == consumers.c.id)
        .outerjoin(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
        .group_by(consumer_types.c.name)
    )
    query = _filtered(query, project, user, consumer_type)
    return [(t, int(n)) for t, n in conn.execute(query)]
