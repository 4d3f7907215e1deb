"""Engine construction for SQLite (embedded default), PostgreSQL and MySQL/MariaDB.

SQLite gets foreign keys, WAL and a busy timeout, and its transactions are
begun explicitly: a write transaction starts with ``BEGIN IMMEDIATE`` so that
concurrent writers from several worker processes queue on the write lock
instead of failing when a read lock is upgraded.

MySQL and MariaDB (``mysql+pymysql://``, as the deployment tools write it; a
bare ``mysql://`` gets PyMySQL too) are set up in ``placement.db.mysql``.

A connection leaving the pool is not pinged first: that was a round trip on every
request. A connection lost while it sat in the pool (the database restarted, a Galera
node failed over to another, a proxy or an idle timeout closed it) is found by the
first statement sent on it, and SQLAlchemy reports it so
(``DBAPIError.connection_invalidated``), dropping that connection and the pool's older
ones with it (the copy's reads through the driver's cursor too:
``placement.db.driver_errors``). Whoever takes a pooled connection therefore either
runs its work again once, on a new connection, when the connection turns out to be
lost (the requests, ``placement.endpoints``; the readiness probe,
``Services.check_ready``), or takes a new connection for each use
(``make_engine(..., reuse_connections=False)``: the commands).
"""

import logging
import os
import time
import weakref

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from placement.db import mysql
from placement.db.options import DatabaseOptions
from placement.db.snapshots import SNAPSHOT_TRANSACTION_OPTION, open_before_other_reads

LOG = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30000
WRITE_TRANSACTION_OPTION = "placement_write"


def reading_statement_by_statement(conn: Connection) -> Connection:
    """``conn`` set for a request that only reads and needs no one snapshot of its reads
    (each statement sees what committed before it, as at READ COMMITTED). On PostgreSQL
    its statements run without a transaction around them: no BEGIN to wait for and no
    COMMIT. MySQL would spend a statement to leave autocommit and another to come back,
    and SQLite's transaction is what gives its reads one picture: both are left alone."""
    if conn.dialect.name == "postgresql":
        return conn.execution_options(isolation_level="AUTOCOMMIT")
    return conn


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(
    url: str, options: DatabaseOptions | None = None, reuse_connections: bool = True
) -> Engine:
    """Create the engine for ``url``; the SQLite file's folder is created. Without
    ``reuse_connections``, each ``connect()`` opens a new connection to the server (and
    closing it closes that one): no connection waits in a pool to be lost (a SQLite
    file cannot be, and keeps its pool)."""
    engine = _make_engine(url, options or DatabaseOptions(), reuse_connections)
    _ENGINES.add(engine)
    return engine


def _make_engine(url: str, options: DatabaseOptions, reuse_connections: bool) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _make_sqlite_engine(url)
    pool: dict = {"poolclass": NullPool}
    if reuse_connections:
        pool = {
            "pool_size": options.max_pool_size,
            "max_overflow": options.max_overflow,
            "pool_recycle": options.connection_recycle_time,
        }
    if parsed.get_backend_name() == "mysql":
        return mysql.make_engine(
            parsed,
            WRITE_TRANSACTION_OPTION,
            SNAPSHOT_TRANSACTION_OPTION,
            sql_mode=options.mysql_sql_mode,
            **pool,
        )
    if parsed.get_backend_name() == "postgresql":
        # Upstream's configuration files name psycopg2 (or no driver, which is psycopg2
        # too): the same database, through the driver this service ships.
        parsed = parsed.set(drivername="postgresql+psycopg")
    engine = create_engine(parsed, future=True, **pool)
    open_before_other_reads(engine)
    return engine


# Every engine made here that is still in use, for a forked child to drop their pools.
_ENGINES: "weakref.WeakSet[Engine]" = weakref.WeakSet()


def _drop_the_pools_inherited() -> None:
    for engine in list(_ENGINES):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_drop_the_pools_inherited)


def wait_until_reachable(engine: Engine, options: DatabaseOptions, sleep=time.sleep) -> None:
    """Connect once, trying again ``max_retries`` times (-1: forever) ``retry_interval``
    seconds apart while the database cannot be reached, as upstream does at start (a
    service started with its database, or during a cluster's restart). The last error
    is raised."""
    attempt = 0
    while True:
        try:
            with engine.connect():
                return
        except OperationalError as exc:
            attempt += 1
            if 0 <= options.max_retries < attempt:
                raise
            LOG.warning(
                "The database cannot be reached (attempt %d): %s; trying again in %d s",
                attempt,
                exc.orig,
                options.retry_interval,
            )
            sleep(options.retry_interval)


def _make_sqlite_engine(url: str) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        folder = os.path.dirname(os.path.abspath(database))
        os.makedirs(folder, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Take transaction control away from the driver; "begin" below emits it.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        if connection.get_execution_options().get(WRITE_TRANSACTION_OPTION):
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            connection.exec_driver_sql("BEGIN")

    return engine
