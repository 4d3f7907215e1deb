"""Kubernetes pod groups: the gang reserved for each group, and who took its members.

``pod_group_reservations``: one row per pod group whose first pod's bind reserved a
gang (``gang_members``): the group's key, what its pods ask, and when the reservation
was made (it is released after ``[k8s] gang_reservation_timeout`` where its pods never
came).
``pod_group_members``: each member of such a gang, its node, the devices it holds
(the pod annotation a pod taking it is given), and the pod that took it (none yet: the
member's consumer is a placeholder).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

from placement.db import ddl

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    ddl.create_table(
        "pod_group_reservations",
        sa.Column("gang_uuid", sa.String(36), nullable=False),
        sa.Column("pod_group", sa.String(255), nullable=False),
        sa.Column("member_request", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("gang_uuid", name="pk_pod_group_reservations"),
        sa.UniqueConstraint("pod_group", name="uq_pod_group_reservations_pod_group"),
    )
    ddl.create_index(
        "ix_pod_group_reservations_created_at", "pod_group_reservations", ["created_at"]
    )
    ddl.create_table(
        "pod_group_members",
        sa.Column("gang_uuid", sa.String(36), nullable=False),
        sa.Column("member", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("node_name", sa.String(200), nullable=False),
        sa.Column("device_allocated", sa.Text(), nullable=False),
        sa.Column("pod_uid", sa.String(36), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("gang_uuid", "member", name="pk_pod_group_members"),
        sa.UniqueConstraint("pod_uid", name="uq_pod_group_members_pod_uid"),
    )


def downgrade() -> None:
    op.drop_table("pod_group_members")
    op.drop_table("pod_group_reservations")
