"""Small SQL helpers shared by the data layer, portable across SQLite and PostgreSQL."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite


def insert_ignoring_conflicts(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], returning=None
):
    """INSERT rows, silently skipping those that hit a unique constraint.

    With ``returning`` (a column), returns the values of the inserted rows.
    """
    if not rows:
        return []
    dialect = sqlite if conn.dialect.name == "sqlite" else postgresql
    statement = dialect.insert(table).values(list(rows)).on_conflict_do_nothing()
    if returning is not None:
        return [row[0] for row in conn.execute(statement.returning(returning))]
    conn.execute(statement)
    return []
