"""Schema changes for the migrations that a second run finds done.

MySQL and MariaDB commit each DDL statement by itself: a revision stopped halfway
(a statement refused, a process killed) leaves its first tables, indexes and
columns behind, and Alembic still records the revision before it. Run again, the
revision must skip what is there and do the rest. (PostgreSQL and SQLite roll a
failed revision back whole: nothing is left, so the checks find nothing.)

A table or index found is taken as the revision made it: MySQL 8 and MariaDB create
a table, an index or a column in one step, so none is found half-made.
"""

import sqlalchemy as sa
from alembic import op


def _inspector() -> sa.Inspector:
    return sa.inspect(op.get_bind())


def create_table(name: str, *columns, **kwargs) -> sa.Table:
    """``op.create_table``, unless the table exists; the table either way."""
    if _inspector().has_table(name):
        return sa.Table(name, sa.MetaData(), *[c for c in columns if isinstance(c, sa.Column)])
    return op.create_table(name, *columns, **kwargs)


def create_index(name: str, table: str, columns: list[str], **kwargs) -> None:
    """``op.create_index``, unless the table has an index of that name."""
    if any(index["name"] == name for index in _inspector().get_indexes(table)):
        return
    op.create_index(name, table, columns, **kwargs)


def add_column(table: str, column: sa.Column) -> None:
    """``op.add_column``, unless the table has a column of that name."""
    if any(found["name"] == column.name for found in _inspector().get_columns(table)):
        return
    op.add_column(table, column)


def insert_missing(table: sa.Table, rows: list[dict], key: str = "id") -> None:
    """Insert the rows whose ``key`` is not in the table yet."""
    present = set(op.get_bind().execute(sa.select(table.c[key])).scalars())
    missing = [row for row in rows if row[key] not in present]
    if missing:
        op.bulk_insert(table, missing)
