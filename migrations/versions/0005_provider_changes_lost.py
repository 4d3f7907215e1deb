"""Provider changes lost: deleting entries the log still vouches for starts it over.

A reader of the change log (migration 0003) trusts that every change after
its position is still in the log, unless ``pruned_below`` says the log was
pruned past it. Entries deleted otherwise (``TRUNCATE provider_changes``, with
or without ``RESTART IDENTITY``; a ``DELETE`` of the newest entries; on SQLite
a ``DELETE`` of them all) would leave every reader's copy without changes it
never read, for as long as nothing else touches those providers. So such a
delete gives the log a new ``incarnation``, in the deleting transaction: the
next reader finds another log and reads every provider again.

What still deletes entries without that: the log's own pruning (it moves
``pruned_below`` past them first, on SQLite; on PostgreSQL its delete runs
inside its trigger), and any delete of entries already below ``pruned_below``
(no reader depends on them: a reader below ``pruned_below`` reads everything).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

POSTGRESQL_UPGRADE = [
    """
    CREATE FUNCTION provider_changes_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE provider_changes_state SET incarnation = gen_random_uuid()::text;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER provider_changes_truncated
    BEFORE TRUNCATE ON provider_changes
    FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_truncated()
    """,
    # Depth 1: a statement of a client's, not the pruning trigger's own delete.
    """
    CREATE FUNCTION provider_changes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF pg_trigger_depth() = 1 AND EXISTS (
            SELECT 1 FROM deleted_entries
             WHERE transaction_id >= (SELECT pruned_below FROM provider_changes_state)
        ) THEN
            UPDATE provider_changes_state SET incarnation = gen_random_uuid()::text;
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER provider_changes_deleted
    AFTER DELETE ON provider_changes
    REFERENCING OLD TABLE AS deleted_entries
    FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_deleted()
    """,
]

POSTGRESQL_DOWNGRADE = [
    "DROP TRIGGER provider_changes_deleted ON provider_changes",
    "DROP FUNCTION provider_changes_deleted()",
    "DROP TRIGGER provider_changes_truncated ON provider_changes",
    "DROP FUNCTION provider_changes_truncated()",
]

# SQLite has no TRUNCATE, and a DELETE without WHERE of a table with triggers deletes
# row by row, so this trigger sees every entry deleted.
SQLITE_UPGRADE = [
    """
    CREATE TRIGGER provider_changes_deleted AFTER DELETE ON provider_changes
    WHEN OLD.id >= (SELECT pruned_below FROM provider_changes_state)
    BEGIN
        UPDATE provider_changes_state SET incarnation = lower(hex(randomblob(16)));
    END
    """,
]

SQLITE_DOWNGRADE = ["DROP TRIGGER provider_changes_deleted"]


# (upgrade, downgrade) by dialect. MySQL has no statement or TRUNCATE triggers: its
# readers count the entries they read instead (0008, ``placement.data.provider_world``).
_STATEMENTS = {
    "postgresql": (POSTGRESQL_UPGRADE, POSTGRESQL_DOWNGRADE),
    "sqlite": (SQLITE_UPGRADE, SQLITE_DOWNGRADE),
    "mysql": ([], []),
}


def upgrade() -> None:
    for statement in _STATEMENTS[op.get_bind().dialect.name][0]:
        op.execute(statement)


def downgrade() -> None:
    for statement in _STATEMENTS[op.get_bind().dialect.name][1]:
        op.execute(statement)
