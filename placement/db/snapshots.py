"""A read's one snapshot of the database, opened on PostgreSQL only when the read needs it.

A request that must see one consistent picture of the database (``routes.Runs.ONE_SNAPSHOT``:
the searches over the copy of the providers) reads at REPEATABLE READ. Most such requests
read one thing only: whether anything changed since the copy's last request (the change
log, ``data.provider_world.changes_since``), then answer from the copy. One statement sees
one snapshot at any level, so on PostgreSQL such a request runs without a transaction
(*deferred*): no BEGIN, which psycopg waits for before it sends anything else, and no
ROLLBACK. The snapshot is opened when the request reads more:

- by the copy itself (``open``), when the log says something changed: it then reads what
  changed again inside the snapshot;
- by any other statement of the request (a name the copy does not hold, a topology
  document): the snapshot opens before it, and the copy's check (``verify_when_opened``)
  runs again inside it. When nothing changed between the two checks, the snapshot holds
  what the copy holds, and the request goes on in it. Otherwise the request's reads so far
  and its later ones would not be of one moment: ``SnapshotMoved`` is raised before the
  statement runs, and the request is run again from its start with the snapshot opened
  before its first read (``reading_one_snapshot(conn, deferred=False)``).

SQLite's transactions cost no round trip, and MySQL's level is set for one transaction
with a statement of its own (``placement.db.mysql``): both read in their snapshot from the
start, as before.
"""

from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from sqlalchemy import Connection, Engine, event

SNAPSHOT_TRANSACTION_OPTION = "placement_snapshot"  # MySQL: this transaction reads one snapshot
DEFERRED_SNAPSHOT_OPTION = "placement_deferred_snapshot"


class SnapshotMoved(Exception):
    """The database changed between a deferred read's check and its next statement: run
    the request again, its snapshot opened from the start."""


@dataclass
class _Deferred:
    opened: bool = False
    # Run inside the snapshot as it opens: whether it still holds what was checked.
    verify: Callable[[Connection], bool] | None = None


def reading_one_snapshot(conn: Connection, deferred: bool = False) -> Connection:
    """``conn`` set so that what its request reads is one consistent picture of every
    table, whatever commits meanwhile. On PostgreSQL, ``deferred``: the snapshot opens
    when the request reads more than its check (see the module); else at its first
    statement (REPEATABLE READ). SQLite's transactions always read one picture. On MySQL
    the level is set for that one transaction (``SET TRANSACTION``, by
    ``placement.db.mysql``), not for the session, which would cost a statement to set and
    another to put back on every request."""
    if conn.dialect.name == "postgresql":
        if deferred:
            return conn.execution_options(
                isolation_level="AUTOCOMMIT", **{DEFERRED_SNAPSHOT_OPTION: _Deferred()}
            )
        return conn.execution_options(isolation_level="REPEATABLE READ")
    if conn.dialect.name == "mysql":
        return conn.execution_options(**{SNAPSHOT_TRANSACTION_OPTION: True})
    return conn


def is_deferred(conn: Connection) -> bool:
    """Whether ``conn``'s snapshot is deferred and not opened yet: its statements so far
    each saw a snapshot of their own."""
    deferred = conn.get_execution_options().get(DEFERRED_SNAPSHOT_OPTION)
    return deferred is not None and not deferred.opened


def verify_when_opened(conn: Connection, verify: Callable[[Connection], bool]) -> None:
    """Should the request read more, ``verify`` runs inside the snapshot first (through the
    driver's own cursor): False raises ``SnapshotMoved``."""
    deferred = conn.get_execution_options().get(DEFERRED_SNAPSHOT_OPTION)
    if deferred is not None and not deferred.opened:
        deferred.verify = verify


def open_snapshot(conn: Connection) -> None:
    """Open ``conn``'s deferred snapshot: its next statement begins a REPEATABLE READ
    transaction (ended by the request's rollback). Nothing to do on a connection that is
    not deferred."""
    deferred = conn.get_execution_options().get(DEFERRED_SNAPSHOT_OPTION)
    if deferred is None or deferred.opened:
        return
    deferred.opened = True
    # Set on the driver's connection, which is between statements (autocommit): psycopg
    # sends BEGIN ISOLATION LEVEL REPEATABLE READ before the next one. The pool puts the
    # connection's own level back as it returns (it was changed through SQLAlchemy).
    driver = conn.connection.dbapi_connection
    driver.autocommit = False  # type: ignore[union-attr]
    driver.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # type: ignore[union-attr]
    if deferred.verify is not None and not deferred.verify(conn):
        raise SnapshotMoved()


def open_before_other_reads(engine: Engine) -> None:
    """On ``engine`` (PostgreSQL), open a deferred snapshot before any statement sent
    through SQLAlchemy (the copy's check goes through the driver's own cursor)."""

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn, _cursor, _statement, _parameters, _context, _executemany):
        if is_deferred(conn):
            open_snapshot(conn)
