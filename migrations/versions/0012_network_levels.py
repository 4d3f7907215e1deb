"""The network as levels, and gangs: where each node sits, and consumers claimed together.

``network_levels``: the levels, broad to narrow (position 0 the broadest).
``network_domains``: each node's domain at each level (by the level's position).
``gang_members``: the consumers of each gang, released together.

The searches read these tables in their request's transaction (no worker keeps a
copy of them), so every write reaches every worker's next answer without a trigger.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

from placement.db import ddl

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    ddl.create_table(
        "network_levels",
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("position", name="pk_network_levels"),
        sa.UniqueConstraint("name", name="uq_network_levels_name"),
    )
    ddl.create_table(
        "network_domains",
        sa.Column("node_name", sa.String(200), nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("domain", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("node_name", "position", name="pk_network_domains"),
    )
    ddl.create_index(
        "ix_network_domains_position_domain", "network_domains", ["position", "domain"]
    )
    ddl.create_table(
        "gang_members",
        sa.Column("gang_uuid", sa.String(36), nullable=False),
        sa.Column("member", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("consumer_uuid", sa.String(36), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("gang_uuid", "member", name="pk_gang_members"),
        sa.UniqueConstraint("consumer_uuid", name="uq_gang_members_consumer_uuid"),
    )


def downgrade() -> None:
    op.drop_table("gang_members")
    op.drop_table("network_domains")
    op.drop_table("network_levels")
