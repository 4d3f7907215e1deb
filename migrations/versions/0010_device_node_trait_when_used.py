"""Device node trait only where device nodes are: drop CUSTOM_GROUP_RESOURCES_DEVICE_NODE
when no provider carries it.

0006 created the trait on every database, so a database that never held a device
node listed a custom trait that upstream's does not. An import creates the trait
when it needs it (``devices.importing._sync_traits``), so an unused one can go;
a database whose device nodes carry it keeps it. The downgrade does nothing: the
code before this revision creates the trait on import too.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TRAIT = "CUSTOM_GROUP_RESOURCES_DEVICE_NODE"

traits = sa.table("traits", sa.column("id"), sa.column("name"))
provider_traits = sa.table("resource_provider_traits", sa.column("trait_id"))


def upgrade() -> None:
    op.execute(
        sa.delete(traits).where(
            traits.c.name == TRAIT,
            ~sa.exists().where(provider_traits.c.trait_id == traits.c.id),
        )
    )


def downgrade() -> None:
    pass
