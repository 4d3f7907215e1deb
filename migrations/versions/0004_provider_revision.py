"""Provider revision: a provider's version changes with writes that keep its generation.

Upstream leaves the provider generation alone on a few writes a candidate
search still sees: DELETE /allocations/{consumer_uuid} (the providers it
frees) and PUT /resource_providers/{uuid}/aggregates before 1.19. Clients hold
generations across those writes, so they must not move here either; these
writes bump ``revision`` instead, which is part of the version each worker's
copy of the providers compares (``placement.data.provider_world``), and its
UPDATE is logged by the 0003 trigger like any other.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

from placement.db import ddl

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    ddl.add_column(
        "resource_providers",
        sa.Column("revision", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    # A plain DROP COLUMN (SQLite 3.35+ has it): a batch rebuild of the table
    # would drop the 0003 triggers on it.
    op.execute("ALTER TABLE resource_providers DROP COLUMN revision")
