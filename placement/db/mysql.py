"""MySQL and MariaDB, alone or as a Galera cluster: the engine and what it expects.

What a connection is set to, and why:

* **Characters: utf8mb4, whatever the URL says.** The deployment tools write
  ``?charset=utf8``, which is MySQL's 3-byte UTF-8: a name with a 4-byte character
  (an emoji, a rare CJK ideograph) would be refused or stored as ``????``. The
  service stores what the client sent, so the connection always speaks utf8mb4 and
  the tables are created in it, with a collation that compares names exactly
  (``collation``).
* **READ COMMITTED**, as PostgreSQL's default: a write locks a provider's row and
  then reads its usage, and that read must see every allocation committed before
  the lock was granted. Under InnoDB's REPEATABLE READ a plain read after the lock
  would still read the snapshot of the transaction's first read. The views that
  read one consistent picture of many tables (``routes.SNAPSHOT_VIEWS``) ask for
  REPEATABLE READ themselves; InnoDB starts that snapshot at the first read, not at
  ``BEGIN``, which is as good: everything such a view reads comes after it.
* **A strict ``sql_mode``** (upstream's default, ``TRADITIONAL``): a value that does
  not fit is an error, never silently truncated.
* **Galera**: a read on one node may not yet see a commit certified on another. With
  ``wsrep_sync_wait`` at 1 a node first applies every write the cluster committed
  before the read began, so a worker whose connection moves between nodes reads
  what the last node it used already showed it. Set on every connection where
  ``wsrep_on`` is ON.

Writers queue on the change log's state row (``lock_for_write``): see
``placement.data.provider_world`` for why the log needs it on MySQL.
"""

import logging

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateTable

LOG = logging.getLogger(__name__)

CHARSET = "utf8mb4"
DEFAULT_SQL_MODE = "TRADITIONAL"
GALERA_SYNC_WAIT = 1  # causal reads: SELECT, SHOW and BEGIN wait for the cluster's commits

# Error numbers (server and client) and what they mean here.
DEADLOCK = 1213  # a deadlock victim, or on Galera a write set that failed certification
LOCK_WAIT_TIMEOUT = 1205
CONTENTION_ERRORS = frozenset({DEADLOCK, LOCK_WAIT_TIMEOUT})
# 1047: a Galera node outside the primary component ("WSREP has not yet prepared node
# for application use"); 1053: server shutdown; 2002/2003/2006/2013: no server, gone, lost.
UNREACHABLE_ERRORS = frozenset({1047, 1053, 1927, 2002, 2003, 2006, 2013, 2055})


# The change log's state row, taken first by every write transaction (migration 0008).
# The triggers are told that this transaction is one of this service's (migration 0013):
# 0 in the session variable, until its first entry in the log puts its position there.
# While the transaction holds the row, every entry from that position on is its own, and
# a provider logged there already is not bumped again for each row written.
LOGGED_FROM = "@placement_logged_from"
QUEUE_WRITERS = f"SELECT 0 INTO {LOGGED_FROM} FROM provider_changes_state WHERE id = 1 FOR UPDATE"
# Sent as each write transaction ends (before its COMMIT or ROLLBACK): the session forgets
# what the transaction told the triggers, so that no later transaction on the connection
# (a read, an operator's, a test's) is taken for one of this service's writes.
FORGET_LOGGED_FROM = f"SET {LOGGED_FROM} = NULL"


def make_engine(
    url: URL,
    write_option: str,
    snapshot_option: str,
    sql_mode: str = DEFAULT_SQL_MODE,
    **pool_options,
) -> Engine:
    """The engine for a ``mysql://`` or ``mysql+pymysql://`` URL. A transaction begun
    on a connection with the execution option ``write_option`` queues behind the other
    writers first: the triggers that log provider changes lock the log's state row,
    and a writer that took provider rows before waiting for it could deadlock with
    one that holds it and wants them. One begun with ``snapshot_option`` runs at
    REPEATABLE READ (that transaction only)."""
    url = url.set(drivername="mysql+pymysql").update_query_dict({"charset": CHARSET})
    engine = create_engine(url, isolation_level="READ COMMITTED", future=True, **pool_options)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        try:
            if sql_mode:
                cursor.execute("SET SESSION sql_mode = %s", (sql_mode,))
            if is_galera(cursor):
                cursor.execute(
                    f"SET SESSION wsrep_sync_wait = GREATEST(@@wsrep_sync_wait, {GALERA_SYNC_WAIT})"
                )
        finally:
            cursor.close()

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def _on_end(connection):
        if not connection.get_execution_options().get(write_option):
            return
        if connection.invalidated:  # lost mid-transaction: the session, marker too, is gone
            return
        dbapi_connection = connection.connection.dbapi_connection
        try:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute(FORGET_LOGGED_FROM)
            finally:
                cursor.close()
        except Exception:
            if dbapi_connection.open:  # (a lost connection is not used again)
                raise

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        options = connection.get_execution_options()
        if options.get(snapshot_option):
            # Before the transaction's first statement, which starts it.
            connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if options.get(write_option):
            connection.exec_driver_sql(QUEUE_WRITERS)

    return engine


def is_galera(cursor) -> bool:
    """Whether the server is a Galera node (``wsrep_on``; MySQL has no such variable)."""
    cursor.execute("SHOW VARIABLES LIKE 'wsrep_on'")
    row = cursor.fetchone()
    return row is not None and str(row[1]).upper() in ("1", "ON")


def error_number(exc: BaseException | None) -> int | None:
    """The MySQL error number of a DBAPI error (PyMySQL's first argument)."""
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def is_contention(exc: BaseException | None) -> bool:
    return error_number(exc) in CONTENTION_ERRORS


def lost_a_race(exc: BaseException | None) -> bool:
    """Whether ``exc`` (a DBAPI error, wrapped by SQLAlchemy or not) comes of a lost race:
    a deadlock or a lock wait timeout, or on Galera a failed certification. Inside a
    savepoint the error that surfaces is another: InnoDB (and Galera's abort of a
    conflicting transaction) rolls the whole transaction back, savepoints with it, so the
    ROLLBACK TO SAVEPOINT that follows fails (1305) while the deadlock is handled; the
    deadlock is then found down the chain of errors being handled."""
    for _ in range(10):
        if exc is None:
            return False
        if is_contention(getattr(exc, "orig", None) or exc):
            return True
        exc = exc.__context__
    return False


def is_unreachable(exc: BaseException | None) -> bool:
    return error_number(exc) in UNREACHABLE_ERRORS


# Every table is created in utf8mb4 with a binary collation that keeps trailing spaces
# (NO PAD): names compare exactly as on PostgreSQL and SQLite, so "compute1",
# "Compute1" and "compute1 " are three providers, and CUSTOM_A and CUSTOM_a two traits.
# MySQL's default collations would make each pair collide (case-insensitive, PAD SPACE).
MARIADB_COLLATION = "utf8mb4_nopad_bin"
MYSQL_COLLATION = "utf8mb4_0900_bin"


def collation(dialect) -> str:
    return MARIADB_COLLATION if getattr(dialect, "is_mariadb", False) else MYSQL_COLLATION


@compiles(CreateTable, "mysql")
def _create_table_exactly(element, compiler, **kw):
    """CREATE TABLE with InnoDB, utf8mb4 and the exact collation, unless the table names
    its own options (every migration's tables get them without repeating them)."""
    text = compiler.visit_create_table(element, **kw)
    if "CHARSET" in text.upper():
        return text
    return (
        f"{text.rstrip()} ENGINE=InnoDB DEFAULT CHARSET={CHARSET}"
        f" COLLATE={collation(compiler.dialect)}"
    )


# What the service needs of a MySQL server or a Galera node, checked at start
# (``server_warnings``): each as (variable, the values that do, why).
EXPECTED_SETTINGS = (
    (
        "innodb_autoinc_lock_mode",
        {"2"},
        "Galera needs interleaved auto-increment locks (2): with another mode, concurrent "
        "inserts on two nodes may deadlock or fail certification",
    ),
    (
        "binlog_format",
        {"ROW"},
        "Galera replicates rows only; statement-based replication of the change log's "
        "triggers would hand out positions differently on each node",
    ),
)


def server_warnings(conn) -> list[str]:
    """What is amiss with the server for this service, in words for the log (empty when
    nothing is). Checked at start: a Galera node that is not ready, not in the primary
    component, or set up against Galera's requirements."""
    variables = {
        str(name).lower(): str(value)
        for name, value in conn.exec_driver_sql(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN"
            " ('wsrep_on', 'innodb_autoinc_lock_mode', 'binlog_format', 'wsrep_sync_wait')"
        )
    }
    if variables.get("wsrep_on", "OFF").upper() not in ("ON", "1"):
        return []
    status = {
        str(name).lower(): str(value)
        for name, value in conn.exec_driver_sql(
            "SHOW GLOBAL STATUS WHERE Variable_name IN"
            " ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_cluster_size')"
        )
    }
    warnings = []
    if status.get("wsrep_ready", "OFF").upper() != "ON":
        warnings.append("this Galera node is not ready (wsrep_ready is not ON)")
    if status.get("wsrep_cluster_status", "").lower() != "primary":
        warnings.append(
            f"this Galera node is outside the primary component "
            f"(wsrep_cluster_status = {status.get('wsrep_cluster_status')})"
        )
    for name, good, why in EXPECTED_SETTINGS:
        if variables.get(name, "").upper() not in good:
            warnings.append(f"{name} = {variables.get(name)}: {why}")
    return warnings
