"""Every write a search can see moves its provider's revision, whoever makes it.

Each worker's copy of the providers reads again the providers logged as changed
(migrations 0003 and 0008), and the log is written by triggers on
``resource_providers``. This service's own writes always touch that row (a generation
or revision bump, migration 0004), but a write that does not would be missed until
the worker restarted: an ``allocations`` row deleted by an operator's SQL, an
inventory fixed by hand, or a write of an upstream Placement still serving the same
database during a switch (its ``DELETE /allocations/{consumer}`` moves no
generation).

So a trigger on each table a search reads bumps the revision of the provider its row
belongs to, in the writer's transaction: the bump is logged like any other provider
change, and moves the provider's version, so every worker reads the provider again
on its next request.

* ``inventories``, ``allocations``, ``resource_provider_traits``,
  ``resource_provider_aggregates``: the row's provider (the old one and the new one
  when an update moves a row).
* ``traits`` and ``placement_aggregates`` (a name or uuid changed by hand): every
  provider that has the trait or is in the aggregate.
* ``device_topologies`` (a device node's document): the root provider of the node
  (named as the node).
* ``resource_classes``: none needed; every request reads the class names.

This service's own writes bump the provider first, so the triggers' updates take no
lock it does not hold already; they add one in-server row update per row written.
(MySQL's cascaded foreign-key deletes fire no triggers: they only follow a deleted
provider, which is logged by its own delete.)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# table -> (the provider column of resource_providers, the table's column naming it):
# the providers of a row. (A device node's root provider is named as the node.)
PROVIDER_ROWS = {
    "inventories": ("id", "resource_provider_id"),
    "allocations": ("id", "resource_provider_id"),
    "resource_provider_traits": ("id", "resource_provider_id"),
    "resource_provider_aggregates": ("id", "resource_provider_id"),
    "device_topologies": ("name", "node_name"),
}
# table -> the providers that share one of its rows (NEW: the row updated).
SHARED_ROWS = {
    "traits": "id IN (SELECT resource_provider_id FROM resource_provider_traits"
    " WHERE trait_id = NEW.id)",
    "placement_aggregates": "id IN (SELECT resource_provider_id"
    " FROM resource_provider_aggregates WHERE aggregate_id = NEW.id)",
}
EVENTS = {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}
BUMP = "UPDATE resource_providers SET revision = revision + 1 WHERE "


def _triggers():
    """(table, event, trigger name, the UPDATE statement) of every trigger."""
    for table, (provider_column, column) in PROVIDER_ROWS.items():
        for event, rows in EVENTS.items():
            # An update bumps the row's provider before and after, once each.
            named = ", ".join(f"{row}.{column}" for row in rows)
            condition = f"{provider_column} IN ({named})"
            if provider_column == "name":
                condition += " AND parent_provider_id IS NULL"
            yield table, event, f"{table}_{event.lower()}_moves_provider", BUMP + condition
    for table, condition in SHARED_ROWS.items():
        # Inserted or deleted, such a row has no provider yet (or any more, the foreign
        # keys see to it): only an update concerns providers.
        yield table, "UPDATE", f"{table}_update_moves_providers", BUMP + condition


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for table, event, name, body in _triggers():
        if dialect == "postgresql":
            op.execute(
                f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$"
                f" BEGIN {body}; RETURN NULL; END $$"
            )
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON {table}"
                f" FOR EACH ROW EXECUTE FUNCTION {name}()"
            )
        elif dialect == "mysql":
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN {body}; END"
            )
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
            op.execute(f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN {body}; END")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for table, _event, name, _body in _triggers():
        if dialect == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
