"""Provider changes on MySQL and MariaDB: log positions handed out in commit order.

The change log (migration 0003) needs, on every backend, a position per entry
such that a reader that read up to some position never later finds an entry
below it. PostgreSQL has the snapshot's oldest running transaction for that;
InnoDB has nothing as exact: auto-increment ids are taken at insert and commit
in any order (a reader that saw id 8 may later find 7 committed), an InnoDB
transaction id is local to one server (a Galera node applies another node's
write set under an id of its own), ``information_schema.innodb_trx`` is a cache
refreshed at most every 0.1 s, and a Galera node's ``auto_increment_increment``
leaves gaps that never fill.

So on MySQL the position is a counter, ``provider_changes_state.last_position``,
that each entry's trigger increments in the writer's transaction. The increment
locks the state row until the writer commits or rolls back, so:

* positions commit in their own order: the next writer gets the next position
  only once the one before has committed (or rolled back, taking its increment
  back with it), and a reader's snapshot holds exactly positions 1 to
  ``last_position``, none missing. On Galera the same holds cluster-wide: two
  nodes that hand out one position both update the state row, and certification
  lets only one of them commit (the other gets a deadlock error and retries);
  each node commits write sets in the cluster's order, so every snapshot is a
  prefix of it.
* positions are dense, so a reader can tell that entries were lost: it counts the
  entries from its position on and compares with ``last_position``
  (``placement.data.provider_world``). That replaces migration 0005's triggers,
  which MySQL cannot have (no statement or TRUNCATE triggers).

The cost: writers that change providers queue on one row. The service takes that
row first in each write transaction (``placement.db.mysql``), so its writers wait
in turn instead of deadlocking on provider rows taken in different orders. A
cluster should send the writes to one node (what kolla-ansible's ProxySQL and
openstack-ansible's HAProxy do by default); writes through several nodes at once
stay correct but fail certification and are retried.

Pruning is the trigger's, at every ``PRUNE_EVERY``-th position, in the writing
transaction: entries at or below ``position - KEEP`` are deleted and
``pruned_below`` moves past them.

On PostgreSQL and SQLite the new column stays 0.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

from placement.db import ddl

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

KEEP = 50000
PRUNE_EVERY = 10000

# One trigger per event (MySQL has no AFTER INSERT OR UPDATE OR DELETE).
TRIGGERS = {
    "resource_providers_inserted": ("INSERT", "NEW"),
    "resource_providers_updated": ("UPDATE", "NEW"),
    "resource_providers_deleted": ("DELETE", "OLD"),
}


def _log_change(name: str, event: str, row: str) -> str:
    return f"""
    CREATE TRIGGER {name} AFTER {event} ON resource_providers FOR EACH ROW
    BEGIN
        DECLARE reached BIGINT;
        UPDATE provider_changes_state SET last_position = last_position + 1 WHERE id = 1;
        SELECT last_position INTO reached FROM provider_changes_state WHERE id = 1;
        INSERT INTO provider_changes (provider_id, transaction_id) VALUES ({row}.id, reached);
        IF reached % {PRUNE_EVERY} = 0 THEN
            UPDATE provider_changes_state
               SET pruned_below = GREATEST(pruned_below, reached - {KEEP} + 1)
             WHERE id = 1;
            DELETE FROM provider_changes WHERE transaction_id <= reached - {KEEP};
        END IF;
    END
    """


def upgrade() -> None:
    ddl.add_column(
        "provider_changes_state",
        sa.Column("last_position", sa.BigInteger(), nullable=False, server_default="0"),
    )
    if op.get_bind().dialect.name != "mysql":
        return
    # Positions start after the entries already there (none, unless re-run).
    op.execute(
        "UPDATE provider_changes_state SET last_position ="
        " (SELECT COALESCE(MAX(transaction_id), 0) FROM provider_changes) WHERE id = 1"
    )
    for name, (event, row) in TRIGGERS.items():
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute(_log_change(name, event, row))


def downgrade() -> None:
    if op.get_bind().dialect.name == "mysql":
        for name in TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("ALTER TABLE provider_changes_state DROP COLUMN last_position")
