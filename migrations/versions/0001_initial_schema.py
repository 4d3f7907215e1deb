"""Initial schema: providers, classes, inventories, traits, aggregates,
consumers and allocations.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from placement.db import ddl

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _timestamps():
    return [
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    ]


def _id():
    return sa.Column("id", Id, primary_key=True, autoincrement=True)


def upgrade() -> None:
    ddl.create_table(
        "resource_providers",
        _id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("root_provider_id", Id, nullable=True),
        sa.Column("parent_provider_id", Id, nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["root_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_providers_root_provider_id",
        ),
        sa.ForeignKeyConstraint(
            ["parent_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_providers_parent_provider_id",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_resource_providers"),
        sa.UniqueConstraint("uuid", name="uq_resource_providers_uuid"),
        sa.UniqueConstraint("name", name="uq_resource_providers_name"),
    )
    ddl.create_index(
        "ix_resource_providers_root_provider_id", "resource_providers", ["root_provider_id"]
    )
    ddl.create_index(
        "ix_resource_providers_parent_provider_id", "resource_providers", ["parent_provider_id"]
    )

    for name in ("resource_classes", "traits"):
        ddl.create_table(
            name,
            _id(),
            sa.Column("name", sa.String(255), nullable=False),
            *_timestamps(),
            sa.PrimaryKeyConstraint("id", name=f"pk_{name}"),
            sa.UniqueConstraint("name", name=f"uq_{name}_name"),
        )

    ddl.create_table(
        "inventories",
        _id(),
        sa.Column("resource_provider_id", Id, nullable=False),
        sa.Column("resource_class_id", Id, nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("reserved", sa.Integer(), nullable=False),
        sa.Column("min_unit", sa.Integer(), nullable=False),
        sa.Column("max_unit", sa.Integer(), nullable=False),
        sa.Column("step_size", sa.Integer(), nullable=False),
        sa.Column(
            "allocation_ratio",
            # 8-byte on MySQL too (its FLOAT has 4: 0.9 would read back as 0.8999999762)
            sa.Float().with_variant(mysql.DOUBLE(asdecimal=False), "mysql"),
            nullable=False,
        ),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_inventories_resource_provider_id",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["resource_class_id"],
            ["resource_classes.id"],
            name="fk_inventories_resource_class_id",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_inventories"),
        sa.UniqueConstraint(
            "resource_provider_id",
            "resource_class_id",
            name="uq_inventories_resource_provider_id",
        ),
    )
    ddl.create_index("ix_inventories_resource_class_id", "inventories", ["resource_class_id"])

    ddl.create_table(
        "resource_provider_traits",
        sa.Column("resource_provider_id", Id, nullable=False),
        sa.Column("trait_id", Id, nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_provider_traits_resource_provider_id",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["trait_id"], ["traits.id"], name="fk_resource_provider_traits_trait_id"
        ),
        sa.PrimaryKeyConstraint(
            "resource_provider_id", "trait_id", name="pk_resource_provider_traits"
        ),
    )
    ddl.create_index(
        "ix_resource_provider_traits_trait_id", "resource_provider_traits", ["trait_id"]
    )

    ddl.create_table(
        "placement_aggregates",
        _id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_placement_aggregates"),
        sa.UniqueConstraint("uuid", name="uq_placement_aggregates_uuid"),
    )

    ddl.create_table(
        "resource_provider_aggregates",
        sa.Column("resource_provider_id", Id, nullable=False),
        sa.Column("aggregate_id", Id, nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_provider_aggregates_resource_provider_id",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["aggregate_id"],
            ["placement_aggregates.id"],
            name="fk_resource_provider_aggregates_aggregate_id",
        ),
        sa.PrimaryKeyConstraint(
            "resource_provider_id", "aggregate_id", name="pk_resource_provider_aggregates"
        ),
    )
    ddl.create_index(
        "ix_resource_provider_aggregates_aggregate_id",
        "resource_provider_aggregates",
        ["aggregate_id"],
    )

    for name in ("projects", "users"):
        ddl.create_table(
            name,
            _id(),
            sa.Column("external_id", sa.String(255), nullable=False),
            *_timestamps(),
            sa.PrimaryKeyConstraint("id", name=f"pk_{name}"),
            sa.UniqueConstraint("external_id", name=f"uq_{name}_external_id"),
        )

    ddl.create_table(
        "consumer_types",
        _id(),
        sa.Column("name", sa.String(255), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_consumer_types"),
        sa.UniqueConstraint("name", name="uq_consumer_types_name"),
    )

    ddl.create_table(
        "consumers",
        _id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("project_id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("consumer_type_id", Id, nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], name="fk_consumers_project_id"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_consumers_user_id"),
        sa.ForeignKeyConstraint(
            ["consumer_type_id"],
            ["consumer_types.id"],
            name="fk_consumers_consumer_type_id",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_consumers"),
        sa.UniqueConstraint("uuid", name="uq_consumers_uuid"),
    )
    ddl.create_index("ix_consumers_project_id_user_id", "consumers", ["project_id", "user_id"])

    ddl.create_table(
        "allocations",
        _id(),
        sa.Column("resource_provider_id", Id, nullable=False),
        sa.Column("consumer_id", Id, nullable=False),
        sa.Column("resource_class_id", Id, nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_allocations_resource_provider_id",
        ),
        sa.ForeignKeyConstraint(
            ["consumer_id"],
            ["consumers.id"],
            name="fk_allocations_consumer_id",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["resource_class_id"],
            ["resource_classes.id"],
            name="fk_allocations_resource_class_id",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_allocations"),
        sa.UniqueConstraint(
            "consumer_id",
            "resource_provider_id",
            "resource_class_id",
            name="uq_allocations_consumer_id",
        ),
    )
    ddl.create_index(
        "ix_allocations_resource_provider_id_resource_class_id",
        "allocations",
        ["resource_provider_id", "resource_class_id"],
    )
    ddl.create_index("ix_allocations_resource_class_id", "allocations", ["resource_class_id"])


def downgrade() -> None:
    for name in (
        "allocations",
        "consumers",
        "consumer_types",
        "users",
        "projects",
        "resource_provider_aggregates",
        "placement_aggregates",
        "resource_provider_traits",
        "inventories",
        "traits",
        "resource_classes",
        "resource_providers",
    ):
        op.drop_table(name)
