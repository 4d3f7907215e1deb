"""Each provider moved once per statement, not once per row: multi-row writes stay cheap.

Migration 0009's triggers move (bump the revision of, and so log) the provider of
every row written to a table a search reads, whoever writes it. They did it row by
row: a gang's claim inserts some 2,300 allocation rows on a few hundred providers,
and each row bumped and logged its provider again, although the claim had bumped
each of them already. The guarantee stays; the work is done once per provider:

* PostgreSQL: statement-level triggers read the rows the statement wrote (its
  transition tables, ``REFERENCING NEW TABLE`` / ``OLD TABLE``) and bump each of
  their distinct providers once, in id order (as the service locks providers), so
  a statement logs one entry per provider it touched. This service's writers bump
  the providers of the rows they write before writing them, and that bump says so
  for the rest of its transaction (the transaction-local setting ``MOVED_FIRST``,
  ``placement.data.allocations.lock_providers``): a provider the transaction has
  logged already is then not bumped again, and a claim logs nothing beyond its
  own bumps.
* MySQL and MariaDB have row triggers only. A row's provider is not bumped again
  when this transaction has logged it already, which the trigger can only tell in
  this service's write transactions: each starts by locking the log's state row
  (``placement.db.mysql``) and setting the session variable ``LOGGED_FROM`` to 0;
  the log's triggers (0008's, which this revision extends) then put there the
  position of the transaction's first entry. While it holds the state row, every
  entry from that position on is its own. The variable is set to NULL as the
  transaction ends, so any other transaction (an operator's, upstream's, a
  migration's) finds it NULL, and its rows bump their providers one by one, as
  before. A savepoint rolled back
  takes its entries with it, and the next row bumps its provider again. (A change
  to a device node's document, a trait or an aggregate, rare and never many rows
  at once, is left as 0009 made it.)
* SQLite: the triggers stay 0009's. They cannot tell one statement or transaction
  from the next (no session state a trigger can read), and there the bump is an
  in-process write, cheap next to a server round trip.

The log gets an index by provider and position (``LOGGED_BY``), on every backend (one
schema), for the question "logged already by this transaction?".

The downgrade puts 0009's triggers, and 0008's, back.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30
"""

import importlib.util
import pathlib

from alembic import op

from placement.db import ddl

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# What this service's writers say to the triggers (see above): on MySQL a session
# variable, on PostgreSQL a transaction-local setting.
LOGGED_FROM = "@placement_logged_from"
MOVED_FIRST = "placement.providers_moved_first"
# Whether a provider is logged by a transaction, found at once (MySQL's triggers ask it
# for each row; on PostgreSQL a statement asks it of all its rows at once).
LOGGED_BY = "ix_provider_changes_provider_id_transaction_id"


def _revision(file_name: str):
    """The module of an earlier revision (0008's log triggers, 0009's that these replace)."""
    path = pathlib.Path(__file__).with_name(file_name)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROW_BY_ROW = _revision("0009_every_write_moves_the_provider.py")
# table -> (the column of resource_providers naming the provider, the table's column
# naming it): the providers of a row, as 0009 has them.
PROVIDER_ROWS = ROW_BY_ROW.PROVIDER_ROWS
# table -> (link table, its column naming the row): the providers that share a row, and
# so are moved when it is updated (a trait renamed, an aggregate's uuid changed).
# Inserted or deleted, such a row has no provider yet (or any more: the foreign keys
# see to it).
SHARED_ROWS = {
    "traits": ("resource_provider_traits", "trait_id"),
    "placement_aggregates": ("resource_provider_aggregates", "aggregate_id"),
}
# event -> the rows it concerns: PostgreSQL's transition tables, MySQL's row names.
EVENTS = ROW_BY_ROW.EVENTS
TRANSITION_TABLES = {"OLD": "old_rows", "NEW": "new_rows"}


def _triggers():
    """(table, event, trigger name, the rows concerned, ``which``, ``named_by``) of every
    trigger. ``which(rows, statement)`` is the condition on ``resource_providers`` that
    selects the providers of ``rows``: of the transition tables of a statement-level
    trigger, or of NEW and OLD in a row trigger. ``named_by`` is the table's column
    naming its row's provider by id (None when a row names it otherwise)."""
    for table, (provider_column, column) in PROVIDER_ROWS.items():
        for event, rows in EVENTS.items():
            name = f"{table}_{event.lower()}_moves_providers_once"
            named_by = column if provider_column == "id" else None
            yield table, event, name, rows, _named_by(provider_column, column), named_by
    for table, (link, column) in SHARED_ROWS.items():
        name = f"{table}_update_moves_providers_once"
        yield table, "UPDATE", name, ("NEW",), _sharing(link, column), None


def _named_by(provider_column: str, column: str):
    def which(rows, statement: bool) -> str:
        if statement:
            named = " UNION ".join(f"SELECT {column} FROM {TRANSITION_TABLES[r]}" for r in rows)
        else:
            named = ", ".join(f"{row}.{column}" for row in rows)
        if provider_column == "name":
            return f"name IN ({named}) AND parent_provider_id IS NULL"
        return f"id IN ({named})"

    return which


def _sharing(link: str, column: str):
    def which(rows, statement: bool) -> str:
        (row,) = rows
        shared = f"IN (SELECT id FROM {TRANSITION_TABLES[row]})" if statement else f"= {row}.id"
        return f"id IN (SELECT resource_provider_id FROM {link} WHERE {column} {shared})"

    return which


def _postgresql(table: str, event: str, name: str, rows, which, _named_by) -> list[str]:
    referencing = " ".join(f"{row} TABLE AS {TRANSITION_TABLES[row]}" for row in rows)
    # The providers' rows are locked in id order first (the sort returns them so), as
    # the service's writers lock them: two writers of many rows cannot deadlock.
    return [
        f"""
        CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            moved_first bigint;  -- this transaction, if its writer moves providers first
        BEGIN
            IF current_setting('{MOVED_FIRST}', true) = 'on' THEN
                moved_first := pg_current_xact_id()::text::bigint;
            END IF;
            UPDATE resource_providers SET revision = resource_providers.revision + 1
              FROM (SELECT id FROM resource_providers
                     WHERE {which(rows, True)}
                       AND NOT EXISTS (SELECT 1 FROM provider_changes
                                        WHERE transaction_id = moved_first
                                          AND provider_id = resource_providers.id)
                     ORDER BY id FOR NO KEY UPDATE) AS moved
             WHERE resource_providers.id = moved.id;
            RETURN NULL;
        END $$
        """,
        f"DROP TRIGGER IF EXISTS {name} ON {table}",
        f"""
        CREATE TRIGGER {name} AFTER {event} ON {table}
        REFERENCING {referencing}
        FOR EACH STATEMENT EXECUTE FUNCTION {name}()
        """,
    ]


def _mysql(table: str, event: str, name: str, rows, which, named_by) -> list[str]:
    bump = "UPDATE resource_providers SET revision = revision + 1 WHERE "
    if named_by is None:
        # (a device node's document, a trait or an aggregate changed by hand: rare, and
        # never many rows at once)
        body = f"{bump}{which(rows, False)}"
    else:
        # Each provider not logged by this transaction yet; or, where that is not known
        # (LOGGED_FROM NULL) or nothing is logged yet (0), every one, as 0009 did. (The
        # log is read in a statement of its own: the bump's nested trigger writes it.)
        unless_logged = "".join(
            f"""
            IF NOT EXISTS (SELECT 1 FROM provider_changes FORCE INDEX ({LOGGED_BY})
                            WHERE transaction_id >= {LOGGED_FROM}
                              AND provider_id = {row}.{named_by}) THEN
                {bump}id = {row}.{named_by};
            END IF;"""
            for row in rows
        )
        body = f"""BEGIN
            IF {LOGGED_FROM} IS NULL OR {LOGGED_FROM} = 0 THEN
                {bump}{which(rows, False)};
            ELSE{unless_logged}
            END IF;
        END"""
    return [
        f"DROP TRIGGER IF EXISTS {name}",
        f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW {body}",
    ]


_STATEMENTS = {"postgresql": _postgresql, "mysql": _mysql}


def _logging_mysql(noting: bool) -> list[str]:
    """MySQL: the triggers that log a provider's change (migration 0008's), noting the
    first position a write transaction of this service logs (``noting``), or not."""
    log_change = _revision("0008_provider_changes_on_mysql.py")
    statements = []
    for name, (event, row) in log_change.TRIGGERS.items():
        created = log_change._log_change(name, event, row)
        if noting:
            insert = "INSERT INTO provider_changes"
            assert created.count(insert) == 1
            created = created.replace(
                insert,
                f"IF {LOGGED_FROM} = 0 THEN SET {LOGGED_FROM} = reached; END IF;\n        {insert}",
            )
        statements += [f"DROP TRIGGER IF EXISTS {name}", created]
    return statements


def upgrade() -> None:
    ddl.create_index(LOGGED_BY, "provider_changes", ["provider_id", "transaction_id"])
    dialect = op.get_bind().dialect.name
    statements = _STATEMENTS.get(dialect)
    if statements is None:
        return
    ROW_BY_ROW.downgrade()
    for trigger in _triggers():
        for statement in statements(*trigger):
            op.execute(statement)
    if dialect == "mysql":
        for statement in _logging_mysql(noting=True):
            op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect not in _STATEMENTS:
        op.drop_index(LOGGED_BY, table_name="provider_changes")
        return
    if dialect == "mysql":
        for statement in _logging_mysql(noting=False):
            op.execute(statement)
    for table, _event, name, *_how in _triggers():
        if dialect == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    ROW_BY_ROW.upgrade()
    op.drop_index(LOGGED_BY, table_name="provider_changes")
