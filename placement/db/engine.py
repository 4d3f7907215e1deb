"""Engine construction for SQLite (embedded default), PostgreSQL and MySQL/MariaDB.

SQLite gets foreign keys, WAL and a busy timeout, and its transactions are
begun explicitly: a write transaction starts with ``BEGIN IMMEDIATE`` so that
concurrent writers from several worker processes queue on the write lock
instead of failing when a read lock is upgraded.

MySQL and MariaDB (``mysql+pymysql://``, as the deployment tools write it; a
bare ``mysql://`` gets PyMySQL too) are set up in ``placement.db.mysql``.
"""

import os

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from placement.db import mysql

SQLITE_BUSY_TIMEOUT_MS = 30000
WRITE_TRANSACTION_OPTION = "placement_write"


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str) -> Engine:
    """Create the engine for ``url``; the SQLite file's folder is created."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _make_sqlite_engine(url)
    if parsed.get_backend_name() == "mysql":
        return mysql.make_engine(parsed, WRITE_TRANSACTION_OPTION)
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return create_engine(parsed, pool_pre_ping=True, future=True)


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
