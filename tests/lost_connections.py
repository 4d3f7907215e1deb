"""Connections the database server drops under a running service, for the tests.

No connection is pinged as it leaves the pool (``placement.db.engine``): the tests hold
several in the pool (``pool_several_connections``), have the server drop them
(``kill_connections``) or restart, and check that no request sees it.
"""

import time

from sqlalchemy import Engine

from placement.db.engine import make_engine

POOLED = 3


def pool_several_connections(engine: Engine) -> None:
    """``POOLED`` connections opened and back in ``engine``'s pool: a request that met
    one dropped connection, then another, would fail."""
    held = [engine.connect() for _ in range(POOLED)]
    for conn in held:
        conn.exec_driver_sql("SELECT 1")
    for conn in held:
        conn.close()


def kill_connections(engine: Engine, only: int | None = None) -> None:
    """Have the server drop every connection to ``engine``'s database (or only the one of
    id ``only``), and wait until they are gone."""
    killer = make_engine(engine.url.render_as_string(hide_password=False))
    try:
        # (each statement its own transaction: PostgreSQL reads pg_stat_activity once per
        # transaction)
        with killer.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if engine.dialect.name == "postgresql":
                others = (
                    "SELECT pid FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                kill = "SELECT pg_terminate_backend({}, 10000)"
            else:
                others = (
                    "SELECT id FROM information_schema.processlist"
                    " WHERE db = DATABASE() AND id <> CONNECTION_ID()"
                )
                kill = "KILL {}"
            ids = [only] if only is not None else conn.exec_driver_sql(others).scalars().all()
            for id_ in ids:
                conn.exec_driver_sql(kill.format(int(id_)))
            for _ in range(200):
                if not set(ids) & set(conn.exec_driver_sql(others).scalars().all()):
                    return
                time.sleep(0.05)
            raise AssertionError(f"connections {ids} still open")
    finally:
        killer.dispose()
