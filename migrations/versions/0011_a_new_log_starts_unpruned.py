"""SQLite: a change log that starts over starts with nothing pruned.

On SQLite a reader's position in the change log is an entry id. Deleting entries the
log still vouches for gives the log a new incarnation (migration 0005), and every
reader reads everything again. But ``pruned_below`` stayed where the last pruning
put it, and once the ids restart (``DELETE FROM sqlite_sequence``, or a file restored
from before), every new position lies below it: each reader would then read every
provider again on every request until the ids caught up, tens of thousands of writes
later. A new log has had nothing pruned: the trigger now says so too.

(On PostgreSQL positions are transaction ids and on MySQL a counter kept in the
state row: neither restarts with the entries' ids.)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TRIGGER = """
    CREATE TRIGGER provider_changes_deleted AFTER DELETE ON provider_changes
    WHEN OLD.id >= (SELECT pruned_below FROM provider_changes_state)
    BEGIN
        UPDATE provider_changes_state
           SET incarnation = lower(hex(randomblob(16))){reset};
    END
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS provider_changes_deleted")
        op.execute(TRIGGER.format(reset=", pruned_below = 0"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS provider_changes_deleted")
        op.execute(TRIGGER.format(reset=""))
