"""Device node trait: the root of every device node carries CUSTOM_GROUP_RESOURCES_DEVICE_NODE.

A device node's tree is written by the translator's sync, so its root carries
the translator's node trait too; the translator's searches must leave it to the
device routes. They used to tell device nodes by their stored topology document
(a read of ``device_topologies`` on every search); the trait says it on the tree
itself, where the searches' copy of the providers sees it. Imports set it from
now on; this revision sets it on the device nodes already imported, and moves
their revision so that running copies read them again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

import datetime

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TRAIT = "CUSTOM_GROUP_RESOURCES_DEVICE_NODE"

traits = sa.table("traits", sa.column("id"), sa.column("name"), sa.column("created_at"))
provider_traits = sa.table(
    "resource_provider_traits",
    sa.column("resource_provider_id"),
    sa.column("trait_id"),
    sa.column("created_at"),
)
providers = sa.table(
    "resource_providers",
    sa.column("id"),
    sa.column("name"),
    sa.column("parent_provider_id"),
    sa.column("revision"),
)
documents = sa.table("device_topologies", sa.column("node_name"))


def upgrade() -> None:
    conn = op.get_bind()
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    trait_id = conn.execute(sa.select(traits.c.id).where(traits.c.name == TRAIT)).scalar()
    if trait_id is None:
        conn.execute(sa.insert(traits).values(name=TRAIT, created_at=now))
        trait_id = conn.execute(sa.select(traits.c.id).where(traits.c.name == TRAIT)).scalar()
    # The roots named like a stored topology that lack the trait.
    roots = (
        conn.execute(
            sa.select(providers.c.id)
            .join(documents, documents.c.node_name == providers.c.name)
            .where(
                providers.c.parent_provider_id.is_(None),
                ~sa.exists().where(
                    provider_traits.c.resource_provider_id == providers.c.id,
                    provider_traits.c.trait_id == trait_id,
                ),
            )
        )
        .scalars()
        .all()
    )
    for root_id in roots:
        conn.execute(
            sa.insert(provider_traits).values(
                resource_provider_id=root_id, trait_id=trait_id, created_at=now
            )
        )
        conn.execute(
            sa.update(providers)
            .where(providers.c.id == root_id)
            .values(revision=providers.c.revision + 1)
        )


def downgrade() -> None:
    conn = op.get_bind()
    trait_id = conn.execute(sa.select(traits.c.id).where(traits.c.name == TRAIT)).scalar()
    if trait_id is None:
        return
    conn.execute(sa.delete(provider_traits).where(provider_traits.c.trait_id == trait_id))
    conn.execute(sa.delete(traits).where(traits.c.id == trait_id))
