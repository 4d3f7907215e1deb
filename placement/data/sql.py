"""Small SQL helpers shared by the data layer, portable across SQLite, PostgreSQL and
MySQL/MariaDB."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import BigInteger, Connection, Table, any_, bindparam, insert, literal
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from placement.db.mysql import error_number as mysql_error_number

MYSQL_DUPLICATE_KEY = 1062


def insert_ignoring_conflicts(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], returning=None
):
    """INSERT rows, silently skipping those that hit a unique constraint.

    With ``returning`` (a column), returns the values of the inserted rows.
    """
    if returning is not None:
        return [row[0] for row in inserting_ignoring_conflicts(conn, table, rows, (returning,))]
    if not rows:
        return []
    if conn.dialect.name == "mysql":
        # No ON CONFLICT DO NOTHING (``INSERT IGNORE`` would also turn a missing foreign
        # key into a warning): ON DUPLICATE KEY UPDATE of nothing (the key set to itself).
        key = table.primary_key.columns[0]
        statement = mysql.insert(table).values(list(rows))
        conn.execute(statement.on_duplicate_key_update({key.name: key}))
        return []
    dialect = sqlite if conn.dialect.name == "sqlite" else postgresql
    conn.execute(dialect.insert(table).values(list(rows)).on_conflict_do_nothing())
    return []


def inserting_ignoring_conflicts(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], columns: tuple
) -> list[tuple]:
    """``insert_ignoring_conflicts``, returning the ``columns`` of each row inserted."""
    if not rows:
        return []
    if conn.dialect.name == "mysql":
        return _mysql_inserting_one_by_one(conn, table, rows, columns)
    # One row, or many as SQLAlchemy's "insertmanyvalues" sends them (one multi-row
    # INSERT ... RETURNING per batch): either way a statement compiled once.
    statement = _insert_returning(conn.dialect.name, table, columns)
    return [tuple(row) for row in conn.execute(statement, list(rows))]


# (dialect, table, columns returned) -> its INSERT ... ON CONFLICT DO NOTHING RETURNING
_INSERTS_RETURNING: dict[tuple[str, str, tuple[str, ...]], Any] = {}


def _insert_returning(dialect_name: str, table: Table, columns: tuple):
    """INSERT INTO <table> ... ON CONFLICT DO NOTHING RETURNING <columns>, built once."""
    key = (dialect_name, table.name, tuple(column.name for column in columns))
    if key not in _INSERTS_RETURNING:
        dialect = sqlite if dialect_name == "sqlite" else postgresql
        statement = dialect.insert(table).on_conflict_do_nothing().returning(*columns)
        _INSERTS_RETURNING[key] = statement
    return _INSERTS_RETURNING[key]


def _mysql_inserting_one_by_one(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], columns: tuple
) -> list[tuple]:
    """MySQL 8 has no RETURNING: one insert per row in a savepoint, a duplicate key
    rolled back alone; the columns returned are the row's own, or its new key."""
    inserted = []
    for row in rows:
        try:
            with conn.begin_nested():
                result = conn.execute(insert(table).values(row))
        except IntegrityError as exc:
            if mysql_error_number(exc.orig) != MYSQL_DUPLICATE_KEY:
                raise
            continue
        primary_key = result.inserted_primary_key
        assert primary_key is not None  # a plain INSERT of one row
        inserted.append(tuple(row[c.name] if c.name in row else primary_key[0] for c in columns))
    return inserted


# SQLite allows 32766 bound parameters per statement; stay well below.
SQLITE_IN_CHUNK = 5000


def id_conditions(conn: Connection, column, ids: Iterable[int]) -> list:
    """Conditions "``column`` is one of ``ids``", one statement's worth each.

    PostgreSQL gets one condition with the ids as a single array parameter
    (``column = ANY(:ids)``), so that the statement text stays the same
    whatever the number of ids; SQLite gets IN lists of at most
    SQLITE_IN_CHUNK ids. No ids, no conditions.
    """
    ordered = sorted(set(ids))
    if not ordered:
        return []
    if conn.dialect.name == "postgresql":
        return [column == any_(literal(ordered, postgresql.ARRAY(BigInteger)))]
    return [
        column.in_(ordered[start : start + SQLITE_IN_CHUNK])
        for start in range(0, len(ordered), SQLITE_IN_CHUNK)
    ]


def capacity_column(inventory_table):
    """SQL ``(total - reserved) * allocation_ratio`` of an inventories table (or alias).

    The SQL form of ``placement.capacity.capacity``, left unrounded: compared
    with an integer amount of at least 1 it answers as the rounded capacity does
    (see that module), and rounding in SQL is not portable (CAST to an integer
    rounds to nearest on PostgreSQL, toward zero on SQLite). The translator's
    score bounds want it unrounded anyway: the scorer divides by the product.
    """
    return (
        inventory_table.c.total - inventory_table.c.reserved
    ) * inventory_table.c.allocation_ratio


# The statements the write path runs on every request are built once, in two forms: "a
# column is one of a list's values" is an IN list, or on PostgreSQL ``= ANY`` of one
# array (SQLAlchemy then renders no parameter per value, and the text stays the same: a
# gang's claim names hundreds of providers).
OneOf = Callable[[Any, str, Any], Any]


def in_list(column, name: str, _item_type):
    return column.in_(bindparam(name, expanding=True))


def in_array(column, name: str, item_type):
    return column == any_(bindparam(name, type_=postgresql.ARRAY(item_type)))


class OneOfStatement:
    """A statement ``build(one_of)`` makes, in both forms; ``of(conn)`` picks one."""

    def __init__(self, build: Callable[[OneOf], Any]) -> None:
        self.listed, self.arrayed = build(in_list), build(in_array)

    def of(self, conn: Connection):
        return self.arrayed if conn.dialect.name == "postgresql" else self.listed
