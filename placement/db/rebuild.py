"""Rebuilding a database's tables in place, under another schema.

Taking over upstream's database (``adopt``) and giving it back (``give_back``) do the
same four steps: move the old tables aside (renamed with a prefix), create the new
ones, fill them from the old with one ``INSERT ... SELECT`` each (the server copies;
nothing travels through this process), and drop the old ones.

On PostgreSQL and SQLite all four run in one transaction: a failure leaves the
database as it was. MySQL and MariaDB commit each DDL statement by itself, so a run
stopped halfway leaves old tables aside next to new ones: ``put_back`` returns them,
and the rebuild starts again from the start. The old tables are dropped last, once
the new schema is complete, so nothing is lost at any point.
"""

import contextlib
from collections.abc import Iterator

from sqlalchemy import ColumnElement, Connection, FromClause, Table, inspect, select, update

from placement.db.tables import metadata
from placement.db.upstream_schema import UPSTREAM_TABLES

# The prefixes of tables moved aside: upstream's while a database is taken over,
# ours while it is given back.
UPSTREAM_ASIDE = "upstream_"
OURS_ASIDE = "placement_"
# This service's tables that upstream has no place for.
OURS_ONLY = tuple(name for name in metadata.tables if name not in UPSTREAM_TABLES)


def present_tables(conn: Connection) -> set[str]:
    return set(inspect(conn).get_table_names())


def move_aside(conn: Connection, names, prefix: str) -> None:
    """Rename each table ``name`` to ``prefix + name`` (on PostgreSQL, its id sequence
    too, so the new table of that name can have its own)."""
    for name in names:
        conn.exec_driver_sql(f"ALTER TABLE {name} RENAME TO {prefix}{name}")
        _rename_sequence(conn, f"{prefix}{name}", f"{prefix}{name}_id_seq")


def put_back(conn: Connection, names, prefix: str) -> list[str]:
    """Undo a rebuild stopped halfway: each table moved aside replaces the new table of
    its name, if one was made. The tables put back."""
    present = present_tables(conn)
    returned = []
    for name in reversed(list(names)):
        if f"{prefix}{name}" not in present:
            continue
        if name in present:
            conn.exec_driver_sql(f"DROP TABLE {name}")
        conn.exec_driver_sql(f"ALTER TABLE {prefix}{name} RENAME TO {name}")
        _rename_sequence(conn, name, f"{name}_id_seq")
        returned.append(name)
    return returned


def drop_aside(conn: Connection, names, prefix: str) -> None:
    """Drop the tables moved aside, those that refer to others first."""
    present = present_tables(conn)
    for name in reversed(list(names)):
        if f"{prefix}{name}" in present:
            conn.exec_driver_sql(f"DROP TABLE {prefix}{name}")


def drop_tables(conn: Connection, names) -> None:
    present = present_tables(conn)
    for name in names:
        if name in present:
            conn.exec_driver_sql(f"DROP TABLE {name}")


def _rename_sequence(conn: Connection, table: str, new_name: str) -> None:
    if conn.dialect.name != "postgresql":
        return
    owned = conn.exec_driver_sql(
        "SELECT s.relname FROM pg_class s JOIN pg_depend d ON d.objid = s.oid"
        " JOIN pg_class t ON t.oid = d.refobjid"
        " WHERE s.relkind = 'S' AND d.deptype = 'a' AND t.relname = %(table)s",
        {"table": table},
    ).scalar()
    if owned is not None and owned != new_name:
        conn.exec_driver_sql(f"ALTER SEQUENCE {owned} RENAME TO {new_name}")


def advance_sequences(conn: Connection, tables: list[Table]) -> None:
    """PostgreSQL's id sequences do not move when rows are inserted with their ids: set
    each past the largest id, or the next insert would collide with a copied row."""
    if conn.dialect.name != "postgresql":
        return
    for table in tables:
        if "id" in table.c and table.c.id.autoincrement is not False:
            conn.exec_driver_sql(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'),"
                f" COALESCE((SELECT MAX(id) FROM {table.name}), 0) + 1, false)"
            )


@contextlib.contextmanager
def keeping_zero_ids(conn: Connection) -> Iterator[None]:
    """MySQL takes an id of 0 in an insert as 'make one up'; upstream gives the first
    standard resource class (VCPU) the id 0, and a copy must keep it."""
    if conn.dialect.name != "mysql":
        yield
        return
    mode = conn.exec_driver_sql("SELECT @@SESSION.sql_mode").scalar()
    conn.exec_driver_sql(
        "SET SESSION sql_mode = CONCAT_WS(',', @@SESSION.sql_mode, 'NO_AUTO_VALUE_ON_ZERO')"
    )
    try:
        yield
    finally:
        conn.exec_driver_sql("SET SESSION sql_mode = %s", (mode,))


def fill(
    conn: Connection,
    target: Table,
    source: Table,
    values: dict[str, ColumnElement] | None = None,
    source_from: FromClause | None = None,
) -> None:
    """``INSERT INTO target SELECT ... FROM source``: each column of ``target`` from the
    column of that name in ``source``, unless ``values`` gives it (from
    ``source_from``, when a value needs a join)."""
    given = values or {}
    rows = select(
        *[
            (given[column.name] if column.name in given else source.c[column.name]).label(
                column.name
            )
            for column in target.c
        ]
    )
    conn.execute(
        target.insert().from_select(
            [column.name for column in target.c],
            rows.select_from(source if source_from is None else source_from),
        )
    )


def link_providers(conn: Connection, providers: Table, source: Table) -> None:
    """Parents and roots of providers filled without them, from ``source``'s rows of the
    same ids: MySQL checks a foreign key on each row, and a parent may come after its
    child."""

    def same_row(column: str):
        return select(source.c[column]).where(source.c.id == providers.c.id).scalar_subquery()

    conn.execute(
        update(providers).values(
            root_provider_id=same_row("root_provider_id"),
            parent_provider_id=same_row("parent_provider_id"),
        )
    )
