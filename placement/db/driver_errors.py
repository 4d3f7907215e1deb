"""An error met on the driver's own cursor, reported as SQLAlchemy reports its own.

A few reads go through the driver's cursor, below SQLAlchemy (the copy's check of what
changed, ``placement.data.provider_world``): building SQLAlchemy's rows would cost more
than the query. An error there would reach the caller as the driver's, and SQLAlchemy
would never learn of it. That matters for a lost connection: the pool pings no connection
at checkout (``placement.db.engine``), and relies on the first statement that fails to
say the connection is dead. So such an error is handed to SQLAlchemy, which then does
what it does for a statement of its own: the error wrapped (``DBAPIError``, with
``connection_invalidated`` when the connection was lost), the connection invalidated, and
the pool's connections opened before it replaced at their next checkout (one dead
connection usually means the server restarted or went away, and took the others too).
"""

from typing import NoReturn

from sqlalchemy import Connection


def raise_as_sqlalchemy(
    conn: Connection, error: BaseException, statement: str, cursor=None
) -> NoReturn:
    """Raise ``error``, met on ``conn``'s driver connection running ``statement``, as
    SQLAlchemy raises the errors of the statements it runs itself (see the module).

    SQLAlchemy's only way in is private: ``Connection._handle_dbapi_exception``, which
    every statement it runs goes through when it fails
    (``tests/functional/test_lost_connections.py`` fails if it changes). Its public
    pieces would not do: ``Connection.invalidate`` drops this connection and leaves the
    others, and ``Engine.dispose`` would swap the pool from under those who hold it
    (the metrics sample it)."""
    conn._handle_dbapi_exception(error, statement, None, cursor, None)
