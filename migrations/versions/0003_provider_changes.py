"""Provider changes: a log of the providers whose row changed, written by triggers.

Every insert, update and delete of a ``resource_providers`` row (each write a
candidate search can see bumps the provider's generation, see
``placement.replica.world``) appends the provider's id to
``provider_changes``, in the writer's own transaction. So each worker's copy
of the providers reads what changed since its last request instead of every
provider's version.

Where a reader stands in the log (``placement.data.provider_world``):

* PostgreSQL: each entry carries the id of the transaction that wrote it. A
  reader remembers the oldest transaction still running when it last read
  (its snapshot's xmin) and next reads the entries from that transaction
  on: transactions may commit out of the order of their entries, and any
  entry it could not see yet belongs to a transaction at or after that one.
* SQLite: writers queue on one lock, so entries commit in id order and a
  reader reads the ids after the last it saw.

The log is pruned by a trigger on it: at every ``PRUNE_EVERY``-th entry, the
entries older than the last ``KEEP`` are deleted and
``provider_changes_state.pruned_below`` moves past the positions deleted. A
reader whose position lies below it reads every provider's version again.
The prune runs inside the write whose entry hits the multiple (deleting
``PRUNE_EVERY`` rows costs that write tens of milliseconds); on PostgreSQL it
is skipped while another prune's transaction is open, and an id burnt by a
rolled-back writer skips one too: the log keeps at least ``KEEP`` entries,
and the next prune catches up.

``provider_changes_state.incarnation`` names this log: a reader that finds
another one (the log re-created, or, on PostgreSQL, ``resource_providers``
truncated, which no row trigger sees) or finds its position gone back (a
backup restored) drops its copy and reads everything again.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import uuid

import sqlalchemy as sa
from alembic import op

from placement.db import ddl

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

KEEP = 50000
PRUNE_EVERY = 10000

POSTGRESQL_UPGRADE = [
    """
    CREATE FUNCTION log_provider_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO provider_changes (provider_id, transaction_id)
        VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END,
                pg_current_xact_id()::text::bigint);
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER resource_providers_changed
    AFTER INSERT OR UPDATE OR DELETE ON resource_providers
    FOR EACH ROW EXECUTE FUNCTION log_provider_change()
    """,
    # One pruner at a time (the advisory lock): another one running skips its turn.
    f"""
    CREATE FUNCTION prune_provider_changes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF pg_try_advisory_xact_lock(hashtext('provider_changes_state')) THEN
            WITH gone AS (
                DELETE FROM provider_changes WHERE id <= NEW.id - {KEEP}
                RETURNING transaction_id
            )
            UPDATE provider_changes_state
               SET pruned_below = GREATEST(
                   pruned_below, (SELECT max(transaction_id) + 1 FROM gone)
               );
        END IF;
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE TRIGGER provider_changes_prune
    AFTER INSERT ON provider_changes
    FOR EACH ROW WHEN (NEW.id % {PRUNE_EVERY} = 0) EXECUTE FUNCTION prune_provider_changes()
    """,
    # TRUNCATE fires no row trigger: the log starts over under a new name.
    """
    CREATE FUNCTION start_provider_changes_over() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE provider_changes_state SET incarnation = gen_random_uuid()::text;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER resource_providers_truncated
    BEFORE TRUNCATE ON resource_providers
    FOR EACH STATEMENT EXECUTE FUNCTION start_provider_changes_over()
    """,
]

POSTGRESQL_DOWNGRADE = [
    "DROP TRIGGER resource_providers_truncated ON resource_providers",
    "DROP FUNCTION start_provider_changes_over()",
    "DROP TRIGGER provider_changes_prune ON provider_changes",
    "DROP FUNCTION prune_provider_changes()",
    "DROP TRIGGER resource_providers_changed ON resource_providers",
    "DROP FUNCTION log_provider_change()",
]

SQLITE_UPGRADE = [
    """
    CREATE TRIGGER resource_providers_inserted AFTER INSERT ON resource_providers
    BEGIN INSERT INTO provider_changes (provider_id) VALUES (NEW.id); END
    """,
    """
    CREATE TRIGGER resource_providers_updated AFTER UPDATE ON resource_providers
    BEGIN INSERT INTO provider_changes (provider_id) VALUES (NEW.id); END
    """,
    """
    CREATE TRIGGER resource_providers_deleted AFTER DELETE ON resource_providers
    BEGIN INSERT INTO provider_changes (provider_id) VALUES (OLD.id); END
    """,
    f"""
    CREATE TRIGGER provider_changes_prune AFTER INSERT ON provider_changes
    WHEN NEW.id % {PRUNE_EVERY} = 0
    BEGIN
        UPDATE provider_changes_state SET pruned_below = max(pruned_below, NEW.id - {KEEP} + 1);
        DELETE FROM provider_changes WHERE id <= NEW.id - {KEEP};
    END
    """,
]

SQLITE_DOWNGRADE = [
    "DROP TRIGGER provider_changes_prune",
    "DROP TRIGGER resource_providers_deleted",
    "DROP TRIGGER resource_providers_updated",
    "DROP TRIGGER resource_providers_inserted",
]


# (upgrade, downgrade) by dialect. MySQL's log positions need a counter this revision
# does not have: its triggers come with it, in 0008.
_STATEMENTS = {
    "postgresql": (POSTGRESQL_UPGRADE, POSTGRESQL_DOWNGRADE),
    "sqlite": (SQLITE_UPGRADE, SQLITE_DOWNGRADE),
    "mysql": ([], []),
}


def upgrade() -> None:
    ddl.create_table(
        "provider_changes",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("provider_id", Id, nullable=False),
        sa.Column("transaction_id", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_provider_changes"),
        sqlite_autoincrement=True,
    )
    ddl.create_index("ix_provider_changes_transaction_id", "provider_changes", ["transaction_id"])
    state = ddl.create_table(
        "provider_changes_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pruned_below", sa.BigInteger(), nullable=False),
        sa.Column("incarnation", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_provider_changes_state"),
    )
    ddl.insert_missing(state, [{"id": 1, "pruned_below": 0, "incarnation": str(uuid.uuid4())}])
    for statement in _STATEMENTS[op.get_bind().dialect.name][0]:
        op.execute(statement)


def downgrade() -> None:
    for statement in _STATEMENTS[op.get_bind().dialect.name][1]:
        op.execute(statement)
    op.drop_table("provider_changes_state")
    op.drop_index("ix_provider_changes_transaction_id", table_name="provider_changes")
    op.drop_table("provider_changes")
