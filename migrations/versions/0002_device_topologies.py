"""Device topologies: the devices and NVLinks of a device node (placement.devices).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from placement.db import ddl

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    ddl.create_table(
        "device_topologies",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("node_name", sa.String(200), nullable=False),
        # MEDIUMTEXT on MySQL: its TEXT holds 64 KiB
        sa.Column("document", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_device_topologies"),
        sa.UniqueConstraint("node_name", name="uq_device_topologies_node_name"),
    )


def downgrade() -> None:
    op.drop_table("device_topologies")
