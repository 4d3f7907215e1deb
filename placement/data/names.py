"""Resource classes and traits: named vocabularies with a standard part.

Standard names come from ``os-resource-classes`` and ``os-traits`` and are
synced into the tables at start-up; custom names carry the ``CUSTOM_`` prefix.
"""

import os_resource_classes
import os_traits
from sqlalchemy import Connection, Table, delete, exists, select, update

from placement import errors
from placement.clock import utcnow
from placement.data.sql import insert_ignoring_conflicts
from placement.db.tables import (
    allocations,
    inventories,
    resource_classes,
    resource_provider_traits,
    traits,
)

CUSTOM_PREFIX = "CUSTOM_"


def standard_resource_classes() -> list[str]:
    return list(os_resource_classes.STANDARDS)


def standard_traits() -> list[str]:
    return list(os_traits.get_traits())


def is_standard_resource_class(name: str) -> bool:
    return name in os_resource_classes.STANDARDS


_STANDARD_TRAITS = frozenset(os_traits.get_traits())


def is_standard_trait(name: str) -> bool:
    return name in _STANDARD_TRAITS


def sync_standard_names(conn: Connection) -> None:
    """Insert standard classes and traits the database does not have yet.

    Safe to run from several workers at once: duplicates are skipped.
    """
    now = utcnow()
    for table, names in (
        (resource_classes, standard_resource_classes()),
        (traits, standard_traits()),
    ):
        present = set(conn.scalars(select(table.c.name)))
        missing = [{"name": n, "created_at": now} for n in names if n not in present]
        insert_ignoring_conflicts(conn, table, missing)


def list_names(conn: Connection, table: Table, names=None, prefix=None, associated=None):
    """Rows (name, created_at, updated_at) of ``table``, filtered, ordered by name."""
    query = select(table.c.name, table.c.created_at, table.c.updated_at)
    if names is not None:
        query = query.where(table.c.name.in_(list(names)))
    if prefix is not None:
        query = query.where(table.c.name.startswith(prefix, autoescape=True))
    if associated is not None:
        in_use = exists().where(resource_provider_traits.c.trait_id == table.c.id)
        query = query.where(in_use if associated else ~in_use)
    return conn.execute(query.order_by(table.c.name)).all()


def get_name(conn: Connection, table: Table, name: str):
    return conn.execute(
        select(table.c.id, table.c.name, table.c.created_at, table.c.updated_at).where(
            table.c.name == name
        )
    ).first()


def create_name(conn: Connection, table: Table, name: str) -> bool:
    """Insert ``name``; False when it exists already."""
    inserted = insert_ignoring_conflicts(
        conn, table, [{"name": name, "created_at": utcnow()}], returning=table.c.id
    )
    return bool(inserted)


def ids_by_name(conn: Connection, table: Table, names) -> dict[str, int]:
    names = list(set(names))
    if not names:
        return {}
    rows = conn.execute(select(table.c.name, table.c.id).where(table.c.name.in_(names)))
    return {name: id_ for name, id_ in rows}


class UnknownResourceClass(errors.BadRequest):
    """Classes named that do not exist. Each endpoint words this its own way in
    upstream; ``no_such`` is the sentence they share."""

    def __init__(self, unknown: list[str]) -> None:
        super().__init__(f"Unknown resource class(es): {', '.join(unknown)}.")
        self.unknown = unknown
        self.no_such = f"No such resource class {', '.join(unknown)}."


def resource_class_ids(conn: Connection, names) -> dict[str, int]:
    """Ids of the named classes; UnknownResourceClass (400) naming any that does not
    exist."""
    names = set(names)
    return known_resource_classes(names, ids_by_name(conn, resource_classes, names))


def known_resource_classes(names, found: dict[str, int]) -> dict[str, int]:
    """The ids of ``names`` among ``found`` (name -> id); UnknownResourceClass naming those
    not found."""
    unknown = sorted(set(names) - set(found))
    if unknown:
        raise UnknownResourceClass(unknown)
    return {name: found[name] for name in names}


class UnknownTrait(errors.BadRequest):
    """Traits named that do not exist; ``unknown`` names them."""

    def __init__(self, unknown: list[str]) -> None:
        super().__init__(f"No such trait(s): {', '.join(unknown)}.")
        self.unknown = unknown


def trait_ids(conn: Connection, names) -> dict[str, int]:
    """Ids of the named traits; UnknownTrait (400) naming any that does not exist."""
    names = set(names)
    found = ids_by_name(conn, traits, names)
    unknown = sorted(names - set(found))
    if unknown:
        raise UnknownTrait(unknown)
    return found


def rename_resource_class(conn: Connection, old: str, new: str) -> None:
    row = get_name(conn, resource_classes, old)
    if row is None:
        raise errors.NotFound(f"No such resource class {old}.")
    if new == old:
        return
    if get_name(conn, resource_classes, new) is not None:
        raise errors.Conflict(f"Resource class already exists: {new}", code=errors.DUPLICATE_NAME)
    conn.execute(
        update(resource_classes)
        .where(resource_classes.c.id == row.id)
        .values(name=new, updated_at=utcnow())
    )


def delete_resource_class(conn: Connection, name: str) -> None:
    row = get_name(conn, resource_classes, name)
    if row is None:
        raise errors.NotFound(f"No such resource class {name}.")
    in_use = conn.scalar(
        select(
            exists().where(inventories.c.resource_class_id == row.id)
            | exists().where(allocations.c.resource_class_id == row.id)
        )
    )
    if in_use:
        # Upstream's words, "in inventory" also when only allocations use it.
        raise errors.Conflict(
            f"Error in delete resource class: Cannot delete resource class {name}. "
            "Class is in use in inventory."
        )
    conn.execute(delete(resource_classes).where(resource_classes.c.id == row.id))


def delete_trait(conn: Connection, name: str) -> None:
    row = get_name(conn, traits, name)
    if row is None:
        raise errors.NotFound(f"No such trait(s): {name}.")
    in_use = conn.scalar(select(exists().where(resource_provider_traits.c.trait_id == row.id)))
    if in_use:
        raise errors.Conflict(f"The trait {name} is in use by a resource provider.")
    conn.execute(delete(traits).where(traits.c.id == row.id))
