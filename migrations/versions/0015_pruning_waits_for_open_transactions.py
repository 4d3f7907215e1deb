"""PostgreSQL: the change log is not pruned past a transaction still running.

On PostgreSQL a reader's place in the change log (migration 0003) is the oldest
transaction running when it read it (its snapshot's xmin): entries of that one and
later ones may still become visible. A transaction left open anywhere on the server
(an idle session, a long dump of another database) holds every reader's place there.
The pruner deleted the oldest entries whatever they were, and said so
(``pruned_below``, one past the newest transaction it deleted from); once that passed
such a transaction, every reader stood below it and read every provider's version
again on every request, until the transaction ended.

The pruner now deletes only entries of transactions older than every one running as
it prunes (its snapshot's xmin): ``pruned_below`` never passes a running transaction,
and a reader held back by one keeps reading only what it has not seen
(``placement.data.provider_world``). While such a transaction lasts the log keeps
the entries written since it began; they are pruned at the first pruning after it
ends.

(SQLite has one writer at a time and MySQL hands out positions in commit order,
migration 0008: neither has a reader held back by another transaction.)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

KEEP = 50000  # entries kept, as migration 0003 set

PRUNER = """
    CREATE OR REPLACE FUNCTION prune_provider_changes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF pg_try_advisory_xact_lock(hashtext('provider_changes_state')) THEN
            WITH gone AS (
                DELETE FROM provider_changes WHERE id <= NEW.id - {keep}{older}
                RETURNING transaction_id
            )
            UPDATE provider_changes_state
               SET pruned_below = GREATEST(
                   pruned_below, (SELECT max(transaction_id) + 1 FROM gone)
               );
        END IF;
        RETURN NULL;
    END $$
"""

OLDER_THAN_EVERY_RUNNING_ONE = (
    " AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PRUNER.format(keep=KEEP, older=OLDER_THAN_EVERY_RUNNING_ONE))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PRUNER.format(keep=KEEP, older=""))
